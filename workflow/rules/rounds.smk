# The rounds' inputs (measure.smk's rules): each round's study, binaries
# and manifest. Functions only, no rules; the planned rounds of a run
# within a budget are planned_rounds.smk's.
# Without a budget every round measures every cell with a repetition k;
# with one, rounds 0 .. ROUNDS-1 do, and rounds ROUNDS .. ALL_ROUNDS-1 are
# planned one after another from the findings so far (planned_rounds.smk).
BUDGET_S = budget.seconds(CONFIG.get("budget"))
ROUNDS = budget.fixed_rounds(CELLS, CONFIG)
ALL_ROUNDS = budget.all_rounds(CELLS) if BUDGET_S is not None else ROUNDS
ROUND_INPUTS = rounds.RoundInputs(CONFIG, CELLS, VARIANTS)
STUDIES = ".snakemake/membench/studies"
MEASURE_ROUND = from_workdir(REPO / "workflow" / "scripts" / "measure_round.py")
# The measure job's command: its rule's conda env under --sdm conda, else
# the interpreter running Snakemake (a shell job's PATH may lack the venv).
_CONDA = DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method
MEASURE_COMMAND = shlex.join(
    ["python" if _CONDA else sys.executable, str(MEASURE_ROUND)]
)


def round_manifests(system):
    return [
        layout.manifest_path(
            f"results/{system}", k, ROUND_INPUTS.study_digest(system, k)
        )
        for k in range(ROUNDS)
    ]


def round_binaries(wildcards):
    return ROUND_INPUTS.binaries(int(wildcards.round), f"bin/{wildcards.system}")


def round_study_file(wildcards):
    """Where start_run wrote the round's study (named by its content)."""
    return ROUND_INPUTS.study_file(
        wildcards.system, int(wildcards.round), STUDIES, write=False
    )


def write_studies():
    """Every fixed round's study, written by start_run where it is not
    yet (membench.plan.rounds.RoundInputs.study_file)."""
    for system in SYSTEMS:
        for k in range(ROUNDS):
            ROUND_INPUTS.study_file(system, k, STUDIES)
