"""What `make run` will measure and about how long it will take on this
machine, printed before it starts; with --left, what is still to measure
(`make status`): the repetitions not stored yet under results/, at the
seconds per repetition stored so far for each family (the model's for a
family with none yet: membench.plan.estimate)."""

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

from membench.core import layout
from membench.plan import checks, config_limits, estimate, grammar, variants

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


def stored_seconds(cells, results: Path, systems: list[str]) -> dict[str, float]:
    """family -> the median seconds of its stored repetitions (each run
    file's first start to last end), over every system."""
    seconds: dict[str, list[float]] = {}
    for cell in cells:
        for system in systems:
            for path in (layout.runs_dir(results, system) / cell.id).glob(layout.RUN_GLOB):
                try:
                    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
                    took = max(r["t_end"] for r in records) - min(r["t_start"] for r in records)
                except (OSError, ValueError, KeyError, TypeError):
                    continue
                seconds.setdefault(cell.kernel, []).append(took)
    return {family: statistics.median(values) for family, values in seconds.items()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--configfile", default=str(REPO / "config" / "config.yaml"))
    parser.add_argument("--directory", default=".", help="the run directory (holding results/)")
    parser.add_argument("--cores", default="all")
    parser.add_argument("--left", action="store_true", help="only what is not stored yet")
    args = parser.parse_args(argv)
    table = variants.load_variants(REPO / "kernels" / "families" / "variants.yaml")
    try:
        config, cells = checks.load(config_limits.read_config(args.configfile), REPO / "workflow" / "schemas" / "config.schema.yaml", table)
    except grammar.ConfigError as error:
        print(error, file=sys.stderr)
        return 2
    cores = len(os.sched_getaffinity(0)) if args.cores == "all" else int(args.cores)
    systems = grammar.system_names(config)
    left = stored_left(cells, Path(args.directory) / "results", systems) if args.left else None
    measured = stored_seconds(cells, Path(args.directory) / "results", systems) if args.left else None
    plan = estimate.estimate(cells, cores, left, measured=measured)
    heading = (
        f"Still to measure ({', '.join(systems)}), by the model:" if args.left
        else f"make run will measure {args.configfile} on {', '.join(systems)} ({cores} core{'s' * (cores != 1)}):"
    )
    print("\n".join(estimate.lines(plan, heading)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
