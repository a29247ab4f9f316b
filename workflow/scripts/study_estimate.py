"""What `make run` will measure and about how long it will take on this
machine, printed before it starts; with --left, what is still to measure
(`make status`): the repetitions not stored yet under results/, at the
model times each family's pace stored so far on this machine (the model
alone for a family with none yet: membench.plan.estimate)."""

import argparse
import json
import os
import sys
from pathlib import Path

from membench.core import layout
from membench.findings import next_round
from membench.plan import budget, checks, config_limits, estimate, grammar, rounds, variants
from membench.probe import estimate_host

REPO = Path(__file__).resolve().parents[2]


def stored_left(cells, results: Path, systems: list[str]) -> dict[str, int]:
    """cell id -> repetitions with no run file yet, summed over systems."""
    left: dict[str, int] = {}
    for cell in cells:
        for system in systems:
            runs = layout.runs_dir(results, system)
            done = sum(Path(layout.run_path(runs, cell, k)).is_file() for k in range(cell.repeats))
            left[cell.id] = left.get(cell.id, 0) + cell.repeats - done
    return left


def stored_seconds(cells, results: Path, systems: list[str]) -> dict[str, list[float]]:
    """cell id -> the seconds of its stored repetitions (each run file's
    first start to last end, a process's start left out), over every system."""
    seconds: dict[str, list[float]] = {}
    for cell in cells:
        for system in systems:
            for path in (layout.runs_dir(results, system) / cell.id).glob(layout.RUN_GLOB):
                try:
                    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
                    took = max(r["t_end"] for r in records) - min(r["t_start"] for r in records)
                except (OSError, ValueError, KeyError, TypeError):
                    continue
                seconds.setdefault(cell.id, []).append(took)
    return seconds


def budget_spent(config: dict, cells, table: dict, results: Path, systems: list[str]) -> float:
    """Seconds of the budget the stored rounds spent (their manifests'), the
    whole budget once the planned rounds are over; 0 without a budget."""
    limit = budget.seconds(config.get("budget"))
    if limit is None:
        return 0.0
    spent, inputs = 0.0, rounds.RoundInputs(config, cells, table)
    for system in systems:
        key = rounds.budget_key(config, cells, table, system)
        folder = layout.rounds_dir(results, system)
        if budget.ended(budget.planned_rounds(folder, key), cells):
            return limit
        manifests = [Path(layout.manifest_path(str(layout.system_dir(results, system)), k, inputs.study_digest(system, k)))
                     for k in range(budget.fixed_rounds(cells, config))]  # fmt: skip
        spent += next_round.spent_seconds([str(m) for m in manifests + sorted(folder.glob(f"a*-{key}.json")) if m.is_file()])
    return spent


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--configfile", default=str(REPO / "config" / "config.yaml"))
    parser.add_argument("--directory", default=".", help="the run directory (holding results/)")
    parser.add_argument("--cores", default="all")
    parser.add_argument("--left", action="store_true", help="only what is not stored yet")
    parser.add_argument("--budget", help="the run's budget, over the config's (make run BUDGET=...)")
    args = parser.parse_args(argv)
    table = variants.load_variants(REPO / "kernels" / "families" / "variants.yaml")
    try:
        raw = config_limits.read_config(args.configfile)
        if args.budget:
            raw = {**raw, "budget": float(args.budget) if args.budget.replace(".", "", 1).isdigit() else args.budget}
        config, cells = checks.load(raw, REPO / "workflow" / "schemas" / "config.schema.yaml", table)
    except grammar.ConfigError as error:
        print(error, file=sys.stderr)
        return 2
    cores = len(os.sched_getaffinity(0)) if args.cores == "all" else int(args.cores)
    systems = grammar.system_names(config)
    results = Path(args.directory) / "results"
    host = estimate_host.this_host(table, results, systems)
    config = estimate.with_left_out(config, cells, host)  # as the workflow plans it
    left = stored_left(cells, results, systems) if args.left else None
    stored = stored_seconds(cells, results, systems) if args.left else None
    spent = budget_spent(config, cells, table, results, systems) if args.left else 0.0
    plan = estimate.estimate(cells, cores, host, left, stored=stored, config=config, spent_s=spent)
    heading = (
        f"Still to measure ({', '.join(systems)}), by the model:" if args.left
        else f"make run will measure {args.configfile} on {', '.join(systems)} ({cores} core{'s' * (cores != 1)}):"
    )
    print("\n".join(estimate.lines(plan, heading)))
    left_out = estimate.left_out_line(config, cells)
    if left_out:
        print(left_out)
    if budget.seconds(config.get("budget")) is not None and not args.left:
        print(decided_line(results, config, systems))
    return 0


def decided_line(results: Path, config: dict, systems: list[str]) -> str:
    """What the budget is likely to buy: the last run here's decided
    findings, when there was one; no number is promised before a round
    has measured (each planned round's line says how many are decided)."""
    experiments = len(config["experiments"])
    try:
        found = json.loads(layout.findings_path(results).read_text())["findings"]
        mine = [f for f in found if f.get("system") in systems]
    except (OSError, ValueError, KeyError, TypeError):
        mine = []
    last = (f"the last run in this folder decided {sum(bool(f.get('decided')) for f in mine)} of {len(mine)}"
            if mine else "how many get decided depends on this machine's noise")  # fmt: skip
    return f"  {experiments} experiments; {last}; each planned round's line says how many are decided so far"


if __name__ == "__main__":
    sys.exit(main())
