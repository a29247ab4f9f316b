"""What is stored against what the config asks. Reads results/ only;
nothing is measured, built or written, so it is safe while a run goes on.

`make status`: per system, the repetitions stored out of the config's total
and the time left at the pace of the rounds finished so far.
`make plan` (--plan): each cell with repetitions to measure (new, or stored
for another request, naming the knob), and what is kept.
With a budget, the fixed rounds are counted as the config's, then one line
says what the planned rounds did (membench.plan.budget).
"""

import argparse
import sys
from pathlib import Path

from membench.core import layout
from membench.plan import budget, checks, config_limits, grammar, rounds, variants
from membench.store import progress, to_measure

REPO = Path(__file__).resolve().parents[2]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--configfile", default=str(REPO / "config" / "config.yaml"))
    parser.add_argument("--directory", default=".", help="the run directory (holding results/)")
    parser.add_argument("--plan", action="store_true", help="what a run would measure, and why (make plan)")
    args = parser.parse_args(argv)
    table = variants.load_variants(REPO / "kernels" / "families" / "variants.yaml")
    try:
        raw = config_limits.read_config(args.configfile)
        config, cells = checks.load(raw, REPO / "workflow" / "schemas" / "config.schema.yaml", table)
    except grammar.ConfigError as error:
        print(error, file=sys.stderr)
        return 2
    results = Path(args.directory) / "results"
    within_budget = budget.seconds(config.get("budget")) is not None
    fixed = budget.with_fixed_repeats(cells, config) if within_budget else cells
    if args.plan:
        print(f"membench plan: {args.configfile} into {results}/")
    for system in grammar.system_names(config):
        if args.plan:
            print("\n".join(to_measure.plan_lines(fixed, system, results, table)))
        else:
            print(progress.system_progress(fixed, system, results, table).line() + (" (the fixed rounds)" if within_budget else ""))
        if within_budget:  # the rest goes where answers are undecided, as far as the budget goes
            key = rounds.budget_key(config, cells, table, system)
            print(budget.planned_line(system, budget.planned_rounds(layout.rounds_dir(results, system), key), cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
