"""Where a run's time went, read from Snakemake's own log of it
(.snakemake/log/<newest>.snakemake.log): planning (from Snakemake's start to
its first job), compile, probe, rounds, collect, figures, render, and the
wall time of each phase's jobs together (jobs of one phase that overlap are
counted once). `make run` prints it at the end, with the install's time
when .venv was made by it; bench/device_default_run.sh too.
"""

import argparse
import re
import sys
from datetime import datetime
from pathlib import Path

PHASES = {
    "build_harness": "compile",
    "build_kernel": "compile",
    "probe_system": "probe",
    "measure_round": "rounds",
    "measure_planned_round": "rounds",
    # a run within a budget: each planned round drawn from the findings so far
    "plan_next_round": "round planning",
    "collect_runs": "collect",
    "analyse_measurements": "collect",
    "plot_figure": "figures",
    "render_report": "render",
}
ORDER = ["install", "planning", "compile", "probe", "rounds", "round planning", "collect", "figures", "render", "other"]
STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$")
STARTED = re.compile(r"^(?:local)?(?:rule|checkpoint) (\w+):$")
JOBID = re.compile(r"^\s+jobid: (\d+)$")
FINISHED = re.compile(r"^Finished jobid: (\d+) \(Rule: (\w+)\)$")
HEADER_DATE = re.compile(r"^\s+Date: (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)$")


def _union(intervals: list[tuple[float, float]]) -> float:
    total, end = 0.0, None
    for a, b in sorted(intervals):
        if end is None or a > end:
            total, end = total + (b - a), b
        elif b > end:
            total, end = total + (b - end), b
    return total


def breakdown(text: str) -> dict[str, float]:
    """Seconds per phase from one Snakemake log's text (1 s resolution)."""
    began, now, last = None, None, None
    starts: dict[str, tuple[str, float]] = {}
    pending_rule = None
    spans: dict[str, list[tuple[float, float]]] = {}
    for line in text.splitlines():
        if (m := HEADER_DATE.match(line)) and began is None:
            began = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S").timestamp()
        elif m := STAMP.match(line):
            now = datetime.strptime(m.group(1), "%a %b %d %H:%M:%S %Y").timestamp()
            last = now
        elif m := STARTED.match(line):
            pending_rule = m.group(1)
        elif (m := JOBID.match(line)) and pending_rule and now is not None:
            starts[m.group(1)] = (pending_rule, now)
            pending_rule = None
        elif (m := FINISHED.match(line)) and m.group(1) in starts and now is not None:
            rule, start = starts.pop(m.group(1))
            spans.setdefault(PHASES.get(rule, "other"), []).append((start, now))
    out = {phase: _union(intervals) for phase, intervals in spans.items()}
    first = min((a for intervals in spans.values() for a, _ in intervals), default=None)
    if began is not None and first is not None:
        out["planning"] = first - began
    if began is not None and last is not None:
        out["snakemake"] = last - began
    return out


def newest_log(directory: Path) -> Path | None:
    logs = sorted((directory / ".snakemake" / "log").glob("*.snakemake.log"))
    return logs[-1] if logs else None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--directory", default=".")
    parser.add_argument("--install-seconds", type=float, default=None, help="the install's time, when this run made .venv")
    args = parser.parse_args(argv)
    log = newest_log(Path(args.directory))
    if log is None:
        print("time breakdown: no Snakemake log under .snakemake/log", file=sys.stderr)
        return 0
    phases = breakdown(log.read_text(errors="replace"))
    if args.install_seconds:
        phases["install"] = args.install_seconds
    parts = [f"{phase} {phases[phase]:.0f} s" for phase in ORDER if phases.get(phase)]
    total = f"; Snakemake {phases['snakemake']:.0f} s in all" if "snakemake" in phases else ""
    print(f"Time: {', '.join(parts)}{total} (jobs of a phase that overlap counted once; from {log})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
