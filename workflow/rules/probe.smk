rule probe_system:
    output:
        topology="results/{system}/topology.json",
        environment="results/{system}/environment.json",
    log:
        "logs/probe_system/{system}.log",
    conda:
        "../../envs/python.yaml"
    resources:
        machine=1,
        slurm_partition=slurm_setting("partition"),
        constraint=slurm_setting("constraint"),
        slurm_account=slurm_setting("account"),
    params:
        root="/",
    script:
        "../scripts/probe_system.py"
