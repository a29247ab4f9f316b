rule collect_runs:
    input:
        runs=stored_runs,
        topology="results/{system}/topology.json",
        code=PACKAGE_SOURCES,
    output:
        "results/{system}/measurements.csv",
    log:
        "logs/collect_runs/{system}.log",
    conda:
        "../../envs/python.yaml"
    resources:
        machine=1,
    params:
        experiments=CONFIG["experiments"],
        variants=str(VARIANTS_FILE),
        report="results/report.html",
        stored=stored_fingerprint if FIGURES_ONLY else "",
    script:
        "../scripts/collect_runs.py"


rule analyse_measurements:
    input:
        measurements=expand("results/{system}/measurements.csv", system=SYSTEMS),
        code=PACKAGE_SOURCES,
    output:
        cells=SUMMARY["cells"],
        problems=SUMMARY["problems"],
        modes=SUMMARY["modes"],
        c2c_classes=SUMMARY["c2c_classes"],
        c2c_pairs=SUMMARY["c2c_pairs"],
    log:
        "logs/analyse_measurements.log",
    conda:
        "../../envs/python.yaml"
    resources:
        machine=1,
    script:
        "../scripts/analyse_measurements.py"


# Each experiment's finding and every number of the first screen and the
# terminal, as data (membench.findings); the report only formats them.
rule find_answers:
    input:
        cells=SUMMARY["cells"],
        problems=SUMMARY["problems"],
        modes=SUMMARY["modes"],
        c2c_classes=SUMMARY["c2c_classes"],
        measurements=expand("results/{system}/measurements.csv", system=SYSTEMS),
        topology=expand("results/{system}/topology.json", system=SYSTEMS),
        environment=expand("results/{system}/environment.json", system=SYSTEMS),
        papers=[
            from_workdir(p)
            for p in sorted((REPO / "references" / "papers").glob("*.yaml"))
        ],
        code=PACKAGE_SOURCES,
    output:
        findings=SUMMARY["findings"],
        findings_csv=SUMMARY["findings_csv"],
        sections=SUMMARY["sections"],
    log:
        "logs/find_answers.log",
    conda:
        "../../envs/python.yaml"
    resources:
        machine=1,
    params:
        config=CONFIG,
        systems=SYSTEMS,
        stored=stored_not_shown if FIGURES_ONLY else {},
    script:
        "../scripts/find_answers.py"


rule plot_figure:
    input:
        cells=SUMMARY["cells"],
        problems=SUMMARY["problems"],
        modes=SUMMARY["modes"],
        c2c_pairs=SUMMARY["c2c_pairs"],
        measurements=expand("results/{system}/measurements.csv", system=SYSTEMS),
        topology=expand("results/{system}/topology.json", system=SYSTEMS),
        environment=expand("results/{system}/environment.json", system=SYSTEMS),
        code=PACKAGE_SOURCES,
    output:
        "results/figures/{experiment}-{kind}.svg",
    log:
        "logs/plot_figure/{experiment}-{kind}.log",
    conda:
        "../../envs/python.yaml"
    resources:
        machine=1,
    params:
        peaks=figure_peaks,
    script:
        "../scripts/plot_figure.py"
