"""Measure failed repetitions again (`make remeasure-failed`): move every
stored repetition with a `failed` record aside to
results/<system>/superseded/failed/ (kept, never overwritten), so that the
next `make run` measures those repetitions again and keeps the rest
(membench.measure.remeasure). Nothing is moved in a system a round is
measuring now."""

import argparse
import sys
from pathlib import Path

from membench.core import layout
from membench.core.store_errors import StoreError
from membench.measure import remeasure


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--directory", default=".", help="the run directory (holding results/)")
    parser.add_argument("--system", action="append", help="only this system (repeatable); default every system")
    args = parser.parse_args(argv)
    results = Path(args.directory) / "results"
    # a runs/ that is a link is never followed (docs/results-safety.md)
    systems = [layout.system_dir(results, name) for name in layout.systems_with_runs(results)
               if not layout.runs_dir(results, name).is_symlink()]
    if args.system:
        systems = [s for s in systems if s.name in args.system]
    rc, total = 0, 0
    for system_dir in systems:
        try:
            moved = remeasure.move_failed_aside(system_dir)
        except (remeasure.Busy, StoreError, OSError) as error:
            print(f"{system_dir.name}: nothing moved: {error}", file=sys.stderr)
            rc = 1
            continue
        total += len(moved)
        if moved:
            print(f"{system_dir.name}: {len(moved)} failed repetition(s) moved aside to {system_dir}/superseded/failed/:")
            for path, _ in moved:
                print(f"  {path.relative_to(layout.runs_dir(results, system_dir.name))}")
    if total:
        print("the next run (make run, with the same CONFIG and RESULTS) measures them again and keeps the rest")
    elif rc == 0:
        print(f"no failed repetition stored under {results}: nothing moved")
    return rc


if __name__ == "__main__":
    sys.exit(main())
