rule collect_runs:
    input:
        run_files,
    output:
        "results/{system}/measurements.csv",
    log:
        "logs/collect_runs/{system}.log",
    conda:
        "../../envs/python.yaml"
    resources:
        machine=1,
    script:
        "../scripts/collect_runs.py"


rule analyse_measurements:
    input:
        expand("results/{system}/measurements.csv", system=SYSTEMS),
    output:
        cells="results/summary/cells.csv",
        problems="results/summary/problems.csv",
    log:
        "logs/analyse_measurements.log",
    conda:
        "../../envs/python.yaml"
    resources:
        machine=1,
    script:
        "../scripts/analyse_measurements.py"


rule plot_figures:
    input:
        cells="results/summary/cells.csv",
        measurements=expand("results/{system}/measurements.csv", system=SYSTEMS),
    output:
        scaling="results/figures/{experiment}-scaling.svg",
        histogram="results/figures/{experiment}-histogram.svg",
    log:
        "logs/plot_figures/{experiment}.log",
    conda:
        "../../envs/python.yaml"
    resources:
        machine=1,
    script:
        "../scripts/plot_figures.py"
