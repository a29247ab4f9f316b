# A run within a budget: the input functions of its planned rounds (the
# checkpoint plan_next_round and rule measure_planned_round in measure.smk;
# common.smk's stored_runs and run_start.smk's start_run call them only when
# measuring).
# Functions only, no rules (Snakemake's lint keeps the two apart).


def budget_key(system):
    """Names a run's planned rounds (membench.plan.budget.key)."""
    digests = [ROUND_INPUTS.study_digest(system, k) for k in range(ROUNDS)]
    return budget.key(digests, CONFIG, CELLS)


def planned_path(system, k, kind):
    """kind "plan": round k's plan (the checkpoint's output, a study);
    "manifest": the manifest of its measurements."""
    prefix = "plan" if kind == "plan" else "a"
    return f"results/{system}/rounds/{prefix}{k}-{budget_key(system)}.json"


def manifests_before(wildcards):
    """What round k's plan is drawn from: every round before it."""
    k = int(wildcards.round)
    return round_manifests(wildcards.system) + [
        planned_path(wildcards.system, j, "manifest") for j in range(ROUNDS, k)
    ]


def stored_planned_manifests(system):
    """The planned rounds' manifests already written (start_run checks them
    as it checks the fixed rounds')."""
    if BUDGET_S is None:
        return []
    folder = Path(f"results/{system}/rounds")
    return [str(p) for p in sorted(folder.glob(f"a*-{budget_key(system)}.json"))]


def planned_manifests(system):
    """The planned rounds' manifests, as far as the plans go: a plan that
    measures nothing (every finding decided, or the budget spent) ends them."""
    out = []
    for k in range(ROUNDS, ALL_ROUNDS):
        plan = checkpoints.plan_next_round.get(
            system=system, round=k, key=budget_key(system)
        ).output[0]
        if not json.loads(Path(plan).read_text())["requests"]:
            break
        out.append(planned_path(system, k, "manifest"))
    return out
