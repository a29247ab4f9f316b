"""What a run would measure, and why (`make plan CONFIG=...`): per system,
each cell with repetitions to measure (new, or stored for another request,
naming the knob), and the time it would take at the pace of the rounds
stored. Reads results/ only; nothing is measured, built or written."""

import argparse
import sys
from pathlib import Path

import yaml

from membench.core import layout
from membench.plan import budget, checks, grammar, rounds, variants
from membench.store import to_measure

REPO = Path(__file__).resolve().parents[2]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--configfile", default=str(REPO / "config" / "config.yaml"))
    parser.add_argument("--directory", default=".", help="the run directory (holding results/)")
    args = parser.parse_args(argv)
    with open(args.configfile) as fh:
        raw = yaml.safe_load(fh)
    table = variants.load_variants(REPO / "kernels" / "families" / "variants.yaml")
    try:
        config, cells = checks.load(raw, REPO / "workflow" / "schemas" / "config.schema.yaml", table)
    except grammar.ConfigError as error:
        print(error, file=sys.stderr)
        return 2
    results = Path(args.directory) / "results"
    print(f"membench plan: {args.configfile} into {results}/")
    within_budget = budget.seconds(config.get("budget")) is not None
    fixed = budget.with_fixed_repeats(cells, config) if within_budget else cells
    for system in grammar.system_names(config):
        print("\n".join(to_measure.plan_lines(fixed, system, results, table)))
        if within_budget:  # later rounds are planned from the findings, within the budget
            key = rounds.budget_key(config, cells, table, system)
            print(budget.planned_line(system, budget.planned_rounds(layout.rounds_dir(results, system), key), cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
