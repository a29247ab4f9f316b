# One job per repetition of a cell: a separate process each time (placement
# varies run to run), adding a repeat measures only the new repetition, and
# an interrupted run keeps every repetition already written. The machine=100
# resource (limit 100 in profiles/default) keeps measurements from ever
# overlapping each other or any other job.
rule measure:
    input:
        binary=cell_binary,
        topology="results/{system}/topology.json",
    output:
        "results/{system}/runs/{cell}/r{repeat}.jsonl",
    log:
        "logs/measure/{system}/{cell}/r{repeat}.log",
    priority: measure_priority
    conda:
        "../../envs/python.yaml"
    resources:
        machine=100,
        slurm_partition=slurm_setting("partition"),
        constraint=slurm_setting("constraint"),
        slurm_account=slurm_setting("account"),
    params:
        request=measure_request,
        experiment=lambda wildcards: CELLS_BY_ID[wildcards.cell].experiment,
    script:
        "../scripts/measure_cell.py"
