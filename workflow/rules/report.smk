rule render_report:
    input:
        cells="results/summary/cells.csv",
        problems="results/summary/problems.csv",
        modes="results/summary/modes.csv",
        c2c_classes="results/summary/c2c_classes.csv",
        figures=report_figures(),
        topology=expand("results/{system}/topology.json", system=SYSTEMS),
        environment=expand("results/{system}/environment.json", system=SYSTEMS),
        template=from_workdir(REPO / "reports" / "report.html.j2"),
        stylesheet=from_workdir(REPO / "reports" / "report.css"),
        code=PACKAGE_SOURCES,
    output:
        "results/report.html",
    log:
        "logs/render_report.log",
    conda:
        "../../envs/python.yaml"
    resources:
        machine=1,
    params:
        config=CONFIG,
        experiments=EXPERIMENTS,
        systems=SYSTEMS,
        provenance=provenance(),
        stored=not_shown(),
    script:
        "../scripts/render_report.py"
