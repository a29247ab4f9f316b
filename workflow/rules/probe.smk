rule probe_system:
    output:
        topology="results/{system}/topology.json",
        environment="results/{system}/environment.json",
    log:
        "logs/probe_system/{system}.log",
    conda:
        "../../envs/python.yaml"
    resources:
        **SLURM_RESOURCES,
        machine=1,
    params:
        root="/",
    script:
        "../scripts/probe_system.py"
