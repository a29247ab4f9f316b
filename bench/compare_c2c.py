#!/usr/bin/env python3
"""membench's cache-to-cache latency vs core-to-core-latency, side by side
(`make bench`; not a test).

core-to-core-latency (crates.io, `cargo install core-to-core-latency`) is
the tool users reach for to draw core-to-core heat maps. Two comparisons
on one CPU pair (default: the first two allowed CPUs), matching methods:

  A (membench c2c)                         B (core-to-core-latency)
  --op cas       one line, both threads     test 1 (-b 1): CAS on a single
                 spin on compare-and-swap   shared cache line
  --op two_line  store one line, spin       test 2 (-b 2): single writer,
                 loading the other          single reader, two lines

Like with like:
- the same pair, each tool pinning its two threads there (membench
  --affinity cpus:a,b; B --cores a,b);
- the same work per sample: 1000 round trips per sample, 300 samples (B's
  defaults); both time a sample around its round trips and report half the
  round trip per sample;
- the same statistic, two ways: B prints only the mean over its samples
  (its --csv matrix); membench's record gives the median, and its
  per-sample times (`seconds`), from which the mean is taken here. On a
  shared machine a mean is dominated by the samples in which a thread was
  preempted (milliseconds against tens of ns), so B is also run as
  --single-runs processes of one sample each (`1000 1`: the mean of one
  sample is that sample), whose median is B's median of samples. The
  target is checked on the median ratio (membench median / B median of
  samples); the mean ratio is printed beside it;
- the same sitting: A and B interleaved, the order alternating pair by pair
  (AB, BA, ...), at least five pairs; the ratio A/B of each pair, their
  median and spread (min - max) are printed against the target 0.9 - 1.1.

B is installed with `cargo install core-to-core-latency` (crates.io) when
it is not on PATH or in ~/.cargo/bin; without cargo this prints that and
exits 0 without a result.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from membench_build import build_one, load_table, log  # bench/, beside this script

TOOL = "core-to-core-latency"
TARGET = (0.9, 1.1)
ROUNDTRIPS, SAMPLES = 1000, 300
TESTS = {"cas": "1", "two_line": "2"}


def find_cargo() -> str | None:
    return shutil.which("cargo") or next((str(p) for p in [Path.home() / ".cargo/bin/cargo"] if p.is_file()), None)


def find_tool() -> str | None:
    return shutil.which(TOOL) or next((str(p) for p in [Path.home() / ".cargo/bin" / TOOL] if p.is_file()), None)


def install_tool() -> str | None:
    tool = find_tool()
    if tool:
        return tool
    cargo = find_cargo()
    if not cargo:
        return None
    log(f"installing {TOOL} with {cargo} install {TOOL} (crates.io) ...")
    proc = subprocess.run([cargo, "install", TOOL], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"cargo install {TOOL} failed:\n{proc.stderr[-3000:]}")
    return find_tool()


def run_membench(binary: Path, op: str, a: int, b: int) -> tuple[float, float]:
    """(mean, median) ns per hand-off over the samples of one run."""
    argv = [str(binary), "--op", op, "--threads", "2", "--affinity", f"cpus:{a},{b}", "--size", str(1 << 20),
            "--samples", str(SAMPLES), "--roundtrips", str(ROUNDTRIPS)]  # fmt: skip
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}:\n{proc.stdout}{proc.stderr}")
    rec = json.loads(proc.stdout.splitlines()[0])
    if rec["status"] != "ok" or rec["valid"] is not True or (rec["cpu_a_ran"], rec["cpu_b_ran"]) != (a, b):
        raise SystemExit(f"membench record is not a valid pinned c2c measurement: {rec}")
    per_sample = [s * 1e9 / rec["handoffs_per_sample"] for s in rec["seconds"]]
    return statistics.mean(per_sample), rec["handoff_ns"]


def run_tool(tool: str, op: str, a: int, b: int, samples: int = SAMPLES) -> float:
    """B's mean ns for the pair: the one number of its --csv matrix."""
    argv = [tool, str(ROUNDTRIPS), str(samples), "--cores", f"{a},{b}", "-b", TESTS[op], "--csv"]
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    cells = [c for line in proc.stdout.splitlines() for c in line.split(",") if c.strip()]
    values = [float(c) for c in cells]
    if len(values) != 1:
        raise SystemExit(f"{' '.join(argv)}: expected one value in its CSV, got {proc.stdout!r}")
    return values[0]


def run_b(tool: str, op: str, a: int, b: int, singles: int) -> tuple[float, float]:
    """(mean of SAMPLES samples, median of `singles` one-sample runs)."""
    mean = run_tool(tool, op, a, b)
    return mean, statistics.median(run_tool(tool, op, a, b, 1) for _ in range(singles))


def compare(binary: Path, tool: str, op: str, a: int, b: int, pairs: int, singles: int) -> dict:
    log(f"\nCPUs {a},{b}: membench c2c --op {op}  vs  {TOOL} test {TESTS[op]} "
        f"({ROUNDTRIPS} round trips x {SAMPLES} samples; B's median from {singles} one-sample runs)")  # fmt: skip
    ratios, mean_ratios, a_ns, b_ns = [], [], [], []
    for i in range(pairs):
        if i % 2 == 0:
            (a_mean, a_med), (b_mean, b_med) = run_membench(binary, op, a, b), run_b(tool, op, a, b, singles)
        else:
            b_mean, b_med = run_b(tool, op, a, b, singles)
            a_mean, a_med = run_membench(binary, op, a, b)
        a_ns.append(a_med), b_ns.append(b_med), ratios.append(a_med / b_med), mean_ratios.append(a_mean / b_mean)
        log(f"  pair {i + 1} ({'AB' if i % 2 == 0 else 'BA'}): membench median {a_med:7.1f} ns (mean {a_mean:8.1f})"
            f"   {TOOL} median {b_med:7.1f} ns (mean {b_mean:8.1f})   ratio {a_med / b_med:.3f} (means {a_mean / b_mean:.3f})")  # fmt: skip
    med = statistics.median(ratios)
    inside = TARGET[0] <= med <= TARGET[1]
    log(f"  median ratio {med:.3f}   spread {min(ratios):.3f} - {max(ratios):.3f}   "
        f"({'in' if inside else 'OUT OF'} range {TARGET[0]}-{TARGET[1]}); ratio of means {statistics.median(mean_ratios):.3f} "
        f"(spread {min(mean_ratios):.3f} - {max(mean_ratios):.3f})")  # fmt: skip
    return {"op": op, "median": med, "low": min(ratios), "high": max(ratios), "in_range": inside,
            "a": statistics.median(a_ns), "b": statistics.median(b_ns), "means": statistics.median(mean_ratios)}  # fmt: skip


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pairs", type=int, default=7, help="A/B pairs per op (>= 5)")
    ap.add_argument("--single-runs", type=int, default=15, help="one-sample runs of B per pair (its median)")
    ap.add_argument("--cpus", help="the CPU pair a,b (default: the first two allowed)")
    ap.add_argument("--ops", default="cas,two_line", help="comma list of cas, two_line")
    ap.add_argument("--strict", action="store_true", help="exit 1 when a median ratio is out of range")
    args = ap.parse_args()
    if args.pairs < 5:
        ap.error("--pairs must be at least 5")
    ops = args.ops.split(",")
    if not set(ops) <= set(TESTS):
        ap.error(f"--ops {args.ops!r}: allowed cas, two_line")
    allowed = sorted(os.sched_getaffinity(0))
    a, b = map(int, args.cpus.split(",")) if args.cpus else (allowed + [None])[:2]
    if b is None:
        print("skipped: a CPU pair needs two allowed CPUs")
        return 0
    tool = install_tool()
    if not tool:
        print(f"skipped: cargo not found (PATH, ~/.cargo/bin): cannot install {TOOL}; https://rustup.rs")
        return 0
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="membench-c2c-") as tmp:
        log("building membench c2c-default ...")
        binary = build_one(load_table(), "c2c", "default", Path(tmp))
        log(f"host: {os.uname().nodename}, {len(allowed)} CPUs; {TOOL}: {tool}")
        rows = [compare(binary, tool, op, a, b, args.pairs, args.single_runs) for op in ops]
    log(f"\nsummary (ratio = membench median / {TOOL} median of samples, ns per hand-off = half round trip, CPUs {a},{b})")
    log(f"{'op':9s} {'membench':>9s} {TOOL:>20s} {'median':>7s} {'spread':>15s} {'means':>6s}  target {TARGET[0]}-{TARGET[1]} (median)")
    for row in rows:
        log(f"{row['op']:9s} {row['a']:6.1f} ns {row['b']:17.1f} ns {row['median']:7.3f} {row['low']:7.3f} - "
            f"{row['high']:5.3f} {row['means']:6.3f}  {'in range' if row['in_range'] else 'OUT OF RANGE'}")  # fmt: skip
    log(f"total time {time.monotonic() - started:.0f} s")
    return 1 if args.strict and not all(row["in_range"] for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
