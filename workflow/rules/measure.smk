# One job per round: repetition k of every cell of a system, measured one
# after the other in a shuffled order, each repetition a separate harness
# process whose file (results/<system>/runs/<cell>/r<k>.jsonl) is written
# atomically as soon as it is measured. The job's output is the round's
# manifest; the repetition files are not outputs, so Snakemake never deletes
# one, and the job keeps those already stored for the same request, binary
# and machine, judged by content (membench.measure.identity): adding a repeat, a
# cell, rerunning after an interruption, a move or --forceall measures only
# what is missing. The machine=100 resource (limit 100 in profiles/default) keeps
# measurements from ever overlapping each other or any other job. A plain
# command, not a script: no Snakemake starts inside the job.
rule measure_round:
    input:
        binaries=round_binaries,
        topology="results/{system}/topology.json",
    output:
        # named by the round's study too: another config's manifests in
        # the same results folder are never this job's outputs
        "results/{system}/rounds/r{round}-{study}.json",
    log:
        "logs/measure_round/{system}/r{round}-{study}.log",
    conda:
        "../../envs/python.yaml"
    resources:
        **SLURM_RESOURCES,
        machine=100,
    params:
        # The round's requests (rounds.RoundInputs.study), which the
        # manifest's name follows: a file, since as one shell argument it
        # would be capped at 128 KiB.
        study_file=round_study_file,
        command=MEASURE_COMMAND,
    shell:
        "{params.command} --study-file {params.study_file:q} --system {wildcards.system:q} --round {wildcards.round}"
        " --topology {input.topology:q} --manifest {output:q} --log {log:q} --parent-pid $PPID"


# A run within a budget (`budget:`): round k past min_repeats is planned
# from the findings of every round before it (membench.findings.next_round)
# and measures only the cells undecided findings rest on; a plan that
# measures nothing ends the run (common.smk, planned_manifests).
checkpoint plan_next_round:
    input:
        manifests=manifests_before,
        topology="results/{system}/topology.json",
        environment="results/{system}/environment.json",
        code=PACKAGE_SOURCES,
    output:
        "results/{system}/rounds/plan{round}-{key}.json",
    log:
        "logs/plan_next_round/{system}/r{round}-{key}.log",
    conda:
        "../../envs/python.yaml"
    resources:
        machine=1,
    params:
        config=CONFIG,
        variants=str(VARIANTS_FILE),
    script:
        "../scripts/plan_next_round.py"


rule measure_planned_round:
    input:
        binaries=round_binaries,
        topology="results/{system}/topology.json",
        study="results/{system}/rounds/plan{round}-{key}.json",
    output:
        "results/{system}/rounds/a{round}-{key}.json",
    log:
        "logs/measure_round/{system}/a{round}-{key}.log",
    conda:
        "../../envs/python.yaml"
    resources:
        **SLURM_RESOURCES,
        machine=100,
    params:
        command=MEASURE_COMMAND,
    shell:
        "{params.command} --study-file {input.study:q} --system {wildcards.system:q} --round {wildcards.round}"
        " --topology {input.topology:q} --manifest {output:q} --log {log:q} --parent-pid $PPID"
