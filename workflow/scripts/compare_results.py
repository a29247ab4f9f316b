#!/usr/bin/env python3
"""Compare two result sets: `make compare BASE=<dir> NEW=<dir>` (README,
"Comparing two result sets"). Exit code 1 when any cell is worse, 2 on bad
input, 0 otherwise."""

import argparse
import os
import sys
from pathlib import Path

# Small linear algebra (the modes' density estimate) in one thread: OpenBLAS
# threads only spin against each other on a loaded machine (3x slower here).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

sys.path.insert(0, str(Path(__file__).resolve().parent))

from membench.compare.match import SideError  # noqa: E402
from membench.store.stored import StoredRunsError  # noqa: E402
from membench.compare.output import run_compare  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("base", help="BASE: a run directory, a results directory, or either as DIR:SYSTEM")
    parser.add_argument("new", help="NEW: as BASE")
    parser.add_argument("--out", type=Path, default=Path("compare"), help="output directory (default: compare/)")
    parser.add_argument("--threshold", type=float, default=2.0,
                        help="a change smaller than this (percent) is no change (default 2)")
    parser.add_argument("--confidence", type=float, default=95.0, help="interval confidence, percent (default 95)")
    parser.add_argument("--ignore", default="", help="knobs left out of the match, comma-separated (e.g. pages)")
    parser.add_argument("--no-html", action="store_true", help="skip compare.html")
    parser.add_argument("--keep-disturbed", action="store_true",
                        help="keep the repetitions the disturbed rule marks (left out by default; README, "
                             "Disturbed repetitions)")
    args = parser.parse_args(argv)
    problems = []
    if not 0 < args.threshold < 100:
        problems.append(f"--threshold {args.threshold}: a percentage between 0 and 100 (exclusive)")
    if not 50 <= args.confidence < 100:
        problems.append(f"--confidence {args.confidence}: a percentage from 50 to below 100")
    if problems:
        parser.error("; ".join(problems))
    ignore = [k.strip() for k in args.ignore.split(",") if k.strip()]
    try:
        result, code = run_compare(args.base, args.new, args.out, threshold=args.threshold / 100,
                                   confidence=args.confidence / 100, ignore=ignore, html=not args.no_html,
                                   keep_disturbed=args.keep_disturbed)
    except (SideError, StoredRunsError) as exc:
        print(f"compare: {exc}", file=sys.stderr)
        return 2
    print((args.out / "compare.txt").read_text(), end="")
    return code


if __name__ == "__main__":
    sys.exit(main())
