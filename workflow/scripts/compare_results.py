#!/usr/bin/env python3
"""Compare two result sets: `make compare BASE=<dir> NEW=<dir>` (README,
"Comparing two result sets"). Exit code 1 when any cell is worse, 2 on bad
input, 0 otherwise. Either side may be ref:NAME, a published machine of
references/machines (docs/bundle.md): ratios and conditions, no verdict,
exit 0 once compared."""

import argparse
import json
import os
import re
import sys
from pathlib import Path

# Small linear algebra (the modes' density estimate) in one thread: OpenBLAS
# threads only spin against each other on a loaded machine (3x slower here).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

sys.path.insert(0, str(Path(__file__).resolve().parent))

from membench.compare.match import KNOBS, SideError, parse_side, systems_in  # noqa: E402
from membench.core import layout, results_files  # noqa: E402
from membench.store.stored import StoredRunsError  # noqa: E402
from membench.compare.output import run_compare  # noqa: E402
from membench.compare import reference  # noqa: E402
from membench.plan import knobs as knob_table  # noqa: E402


def _head(path: Path) -> str:
    """The first 20,000 characters of a run file; "" for one that is not a
    regular file (the record check then names it, without hanging on a FIFO)."""
    try:
        with results_files.open_binary(path, results_files.system_root(path)) as fh:
            return fh.read(20000).decode(errors="replace")
    except OSError:
        return ""


def side_file_problems(base: str, new: str) -> list[str]:
    """The system files of each side that are there but not JSON objects;
    run files of another system under a side's system folder."""
    problems = []
    for label, spec in (("BASE", base), ("NEW", new)):
        results, system = parse_side(spec)
        for name in [system] if system else systems_in(results):
            for path in (layout.environment_path(results, name), layout.topology_path(results, name)):
                if not path.is_file():
                    continue
                try:
                    data = json.loads(path.read_text())
                except (OSError, ValueError) as exc:
                    problems.append(f"{label} {path}: not JSON ({exc}); copy it whole from where the runs were measured")
                    continue
                if not isinstance(data, dict):
                    problems.append(f"{label} {path}: a JSON {type(data).__name__}, not an object; copy it whole")
            others = sorted({
                m.group(1)
                for f in layout.run_files(results, name)
                for m in [re.search(r'"system": "([^"]*)"', _head(f))]
                if m and m.group(1) != name
            })
            if others:
                problems.append(f"{label} {layout.runs_dir(results, name)} holds records of another system ({', '.join(others)}); "
                                "move them to results/<their system>/runs/")
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("base", help="BASE: a run directory, a results directory, either as DIR:SYSTEM, or ref:NAME (a published machine)")
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
    known = {knob_table.knob_word(k) for k in KNOBS} | set(KNOBS)
    unknown = [k for k in ignore if k not in known]
    if unknown:
        print(f"compare: IGNORE {','.join(unknown)}: no such knob; knobs: {', '.join(sorted(known))}", file=sys.stderr)
        return 2
    if any(s.startswith("ref:") and not Path(s).exists() for s in (args.base, args.new)):
        return compare_with_published(args.base, args.new, args.out)
    try:
        damaged = side_file_problems(args.base, args.new)
    except SideError as exc:
        damaged = [str(exc)]
    if damaged:
        print("\n".join(f"compare: {p}" for p in damaged), file=sys.stderr)
        return 2
    try:
        result, code = run_compare(args.base, args.new, args.out, threshold=args.threshold / 100,
                                   confidence=args.confidence / 100, ignore=ignore, html=not args.no_html,
                                   keep_disturbed=args.keep_disturbed)
    except (SideError, StoredRunsError) as exc:
        print(f"compare: {exc}", file=sys.stderr)
        return 2
    except (OSError, ValueError, KeyError) as exc:  # bad input never reads as "worse" (exit 1)
        print(f"compare: bad input ({type(exc).__name__}: {exc}); nothing was compared", file=sys.stderr)
        return 2
    print((args.out / "compare.txt").read_text(), end="")
    return code


def compare_with_published(base: str, new: str, out: Path) -> int:
    """A run against a published machine (ref:NAME): ratios and conditions,
    no verdict, so exit 0 once compared; 2 on bad input."""
    try:
        reference.compare_with_reference(base, new, out)
    except (reference.ReferenceError, SideError, StoredRunsError) as exc:
        print(f"compare: {exc}", file=sys.stderr)
        return 2
    print((out / "reference.txt").read_text(), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
