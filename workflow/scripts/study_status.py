"""How far a study has come (`make status CONFIG=...`): per system, the
repetitions stored out of the config's total and the time left at the pace
of the rounds finished so far. Reads results/ only; safe while a run goes on.
"""

import argparse
import sys
from pathlib import Path

from membench.core import layout
from membench.plan import budget, checks, config_limits, rounds
from membench.plan import grammar
from membench.store import progress
from membench.plan import variants

REPO = Path(__file__).resolve().parents[2]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--configfile", default=str(REPO / "config" / "config.yaml"))
    parser.add_argument("--directory", default=".", help="the run directory (holding results/)")
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
    for system in grammar.system_names(config):
        print(progress.system_progress(fixed, system, results, table).line() + (" (the fixed rounds)" if within_budget else ""))
        if within_budget:  # the rest goes where answers are undecided, as far as the budget goes
            key = rounds.budget_key(config, cells, table, system)
            print(budget.planned_line(system, budget.planned_rounds(layout.rounds_dir(results, system), key), cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
