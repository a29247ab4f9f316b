#!/usr/bin/env python3
"""What the pipeline itself costs, beside the floor of a bare Snakefile
measured in the same sitting (`make bench`; not a test).

1. Time between consecutive measurements: the default config's matrix (every
   cell and repeat, so the same jobs) with tiny sizes and few iterations, run
   in a private copy of the workflow; from the records' t_start/t_end: the
   median gap between one measurement's end and the next one's start (the
   harness's own start-up and exit count as pipeline). Goal: <= 0.1 s.
2. Planning a paper-sized study: `snakemake -n` of config/colfax_stream.yaml
   at repeats 1000 (27,000 repetitions), against a bare Snakefile with the
   same number of jobs and membench's shape (each job's two inputs made by
   rules of their own, as a round's binary and topology are; one output, a
   log, a lambda param, a resource each), the median of three runs of each
   side by side. Goal: <= 1.3 x the bare floor and <= 1 GB peak RSS; and
   <= 0.25 x the bare Snakefile with one job per repetition (27,000 jobs,
   the floor of the former design; issue 53).
3. A no-op rerun of the default config (1. leaves it complete): Goal <= 3 s.

Prints a table and exits non-zero when a goal is missed.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "workflow" / "scripts"))

from membench.core.atomic_files import read_jsonl  # noqa: E402

SNAKEMAKE = Path(sys.executable).parent / "snakemake"
WORKFLOW_PARTS = ["Snakefile", "workflow", "kernels", "reports", "profiles", "config", "envs"]
TINY_SIZES = {"chase": "1MiB", "loaded": "4MiB"}  # others: 4 MiB per array
# The floor has membench's shape: each job's inputs come from rules of their
# own, as a round's binary (compile) and topology (probe) do, so the ratio
# is membench's own cost beside Snakemake's for the same graph.
BARE_SNAKEFILE = """\
N = {jobs}
rule all:
    input: expand("out/{{i}}.txt", i=range(N))
rule binary:
    output: "bin/harness"
    shell: "touch {{output}}"
rule topology:
    output: "topology.json"
    shell: "touch {{output}}"
rule one:
    input: binaries=lambda wildcards: ["bin/harness"], topology="topology.json"
    output: "out/{{i}}.txt"
    log: "logs/{{i}}.log"
    params: value=lambda wildcards: int(wildcards.i) * 2
    resources: machine=1
    shell: "touch {{output}}"
"""


def copy_workflow(dest: Path) -> Path:
    dest.mkdir(parents=True)
    for part in WORKFLOW_PARTS:
        src = REPO / part
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, dest / part)
    return dest


def timed(argv: list[str], cwd: Path) -> tuple[float, float, str]:
    """Wall seconds, peak RSS (MB) and output of one command."""
    started = time.monotonic()
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.monotonic() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(argv)} failed in {cwd}:\n{output[-3000:]}")
    return seconds, usage.ru_maxrss / 1024, output


def tiny_default_config() -> dict:
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    config["system"] = "bench"
    config["ntimes"] = 2
    for experiment in config["experiments"].values():
        experiment["size"] = [TINY_SIZES.get(experiment["kernel"], "4MiB")]
        experiment["ntimes"] = 2
    config["experiments"]["latency"]["sweep_from"] = "512KiB"
    return config


def measurement_gaps(workdir: Path) -> tuple[list[float], int]:
    spans = []
    for path in (workdir / "results").glob("*/runs/**/*.jsonl"):
        ok = [r for r in read_jsonl(path) if r.get("t_start") is not None]
        if ok:
            spans.append((min(r["t_start"] for r in ok), max(r["t_end"] for r in ok)))
    spans.sort()
    return [b[0] - a[1] for a, b in zip(spans, spans[1:])], len(spans)


def planned_jobs(output: str) -> int:
    match = re.search(r"^total\s+(\d+)\s*$", output, re.M)
    if not match:
        raise SystemExit(f"no job count in the dry run's output:\n{output[-2000:]}")
    return int(match.group(1))


def bare_dry_run(root: Path, jobs: int) -> tuple[float, float]:
    bare = root / f"bare-{jobs}"
    bare.mkdir(parents=True)
    (bare / "Snakefile").write_text(BARE_SNAKEFILE.format(jobs=jobs - 3))  # + all, binary, topology
    seconds, rss, output = timed([str(SNAKEMAKE), "-n", "--cores", "1", "--quiet", "rules"], bare)
    assert planned_jobs(output) == jobs, output[-1000:]
    return seconds, rss


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=1000, help="repeats of the Colfax config (default 1000)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary run directory")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="membench-overhead-"))
    rows, missed = [], []

    def row(what, value, floor, goal_ok, goal):
        rows.append((what, value, floor, goal))
        if not goal_ok:
            missed.append(what)

    try:
        # 1. the default config's jobs, tiny sizes
        work = copy_workflow(root / "default")
        (work / "bench.yaml").write_text(yaml.safe_dump(tiny_default_config()))
        run_seconds, _, _ = timed([str(SNAKEMAKE), "--cores", "2", "--configfile", "bench.yaml"], work)
        gaps, measurements = measurement_gaps(work)
        gap = statistics.median(gaps)
        row(f"median gap between measurements ({measurements} of them)", f"{gap:.3f} s", "", gap <= 0.1, "<= 0.1 s")
        row("  mean / max gap", f"{statistics.mean(gaps):.3f} / {max(gaps):.3f} s", "", True, "")
        # 3. the no-op rerun of the same (complete) run
        noop, _, output = timed([str(SNAKEMAKE), "--cores", "2", "--configfile", "bench.yaml"], work)
        assert "Nothing to be done" in output, output[-2000:]
        row("no-op rerun of the default config", f"{noop:.2f} s", "", noop <= 3, "<= 3 s")
        # 2. planning the 27,000-repetition study, and the bare floor beside it
        colfax = copy_workflow(root / "colfax")
        plan_argv = [str(SNAKEMAKE), "-n", "--cores", "1", "--quiet", "rules", "--configfile", "config/colfax_stream.yaml",
                     "--config", f"repeats={args.repeats}"]  # fmt: skip
        # side by side, three times each: the median of each (one sitting
        # moves a 2 s dry run by 10 %)
        plans, bares = [], []
        for attempt in range(3):
            plan_seconds, plan_rss, output = timed(plan_argv, colfax)
            plans.append(plan_seconds)
            bares.append(bare_dry_run(root / f"floor-{attempt}", planned_jobs(output)))
        jobs, plan_seconds = planned_jobs(output), statistics.median(plans)
        bare_seconds, bare_rss = statistics.median(t for t, _ in bares), max(rss for _, rss in bares)
        ratio = plan_seconds / bare_seconds
        row(f"dry run, Colfax at repeats {args.repeats} ({jobs} jobs)", f"{plan_seconds:.2f} s",
            f"{bare_seconds:.2f} s", ratio <= 1.3, f"<= 1.3 x floor (x {ratio:.2f})")  # fmt: skip
        row("  its peak RSS", f"{plan_rss:.0f} MB", f"{bare_rss:.0f} MB", plan_rss <= 1024, "<= 1024 MB")
        repetitions = 27 * args.repeats
        per_rep_seconds, per_rep_rss = bare_dry_run(root, repetitions + 1)
        per_rep_ratio = plan_seconds / per_rep_seconds
        row(f"  bare Snakefile, one job per repetition ({repetitions + 1} jobs)", f"x {per_rep_ratio:.2f}",
            f"{per_rep_seconds:.2f} s, {per_rep_rss:.0f} MB", per_rep_ratio <= 0.25, "<= 0.25 x it")  # fmt: skip
    finally:
        if args.keep:
            print(f"kept: {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)

    print(f"\nPipeline overhead (membench vs a bare Snakefile, same sitting; default-config run took {run_seconds:.0f} s)")
    print(f"{'':62} {'membench':>12} {'bare floor':>18}  goal")
    for what, value, floor, goal in rows:
        print(f"{what:62} {value:>12} {floor:>18}  {goal}")
    if missed:
        print("missed: " + "; ".join(missed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
