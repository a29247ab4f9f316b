#!/usr/bin/env python3
"""membench's idle latency vs multichase's, side by side (`make bench`; not a test).

Effective concurrency is bandwidth x idle latency, so membench's idle
latency must agree with the tool HPC engineers compare with. Two
comparisons, 4 KiB pages and transparent huge pages:

  A (membench)                                   B (multichase)
  chase --op random --size 1GiB --pages 4k       multichase -m 1g -s 256
  chase --op random --size 1GiB --pages thp      multichase -m 1g -s 256 -H

Like with like:
- the same pointer spacing: membench's default --spacing is multichase's
  default stride, one pointer per 256 bytes (--spacing S gives both tools
  S: `--spacing 64` compares one pointer per cache line on both sides);
  multichase's latency itself depends on it (-s 64 reads lower than
  -s 256), so a comparison at different spacings is not like with like;
- the same working set (1 GiB) and locality: membench's default group is
  multichase's default TLB locality, 256 KiB (64 pages) visited in random
  order, the groups in random order;
- the same pages: multichase madvises MADV_NOHUGEPAGE without -H and
  MADV_HUGEPAGE with it, membench --pages 4k / thp do the same (membench's
  obtained huge-page fraction is printed);
- a statistic of the whole working set: multichase reports the best of 5
  samples of 0.5 s (each covers most of its 1 GiB cycle); membench's
  ns_per_load is the stretch-min-mean (issue 20): it walks its cycle at
  least 3 times from the same start, cut into the same ~10 ms stretches,
  and sums each stretch's fastest walk, so every region of the working set
  counts once and only temporal noise is removed. The best single chunk
  (the old statistic, which picked the fastest region and read 5-10 % low)
  and the best walk are printed beside it;
- the same CPU: both processes are confined to one CPU (--cpu, default the
  last allowed one) and each pins its thread there, at the same niceness
  (--nice; on a shared machine a negative one keeps neighbours from
  preempting either tool's samples);
- the same sitting: A and B interleaved, the order alternating pair by pair
  (AB, BA, ...), at least five pairs; the ratio A/B of each pair, their
  median and spread (min - max) are reported, and each tool's own
  repetition spread (min / median / max, +-% of the median).

- a pointer on a pseudo-random line of its slot on both sides (pointers all
  at slot starts read 0.45 of multichase at 256); multichase's "mixer"
  repeats every 64 slots, membench hashes the line from the slot index so
  every cache set is used (issue 30): at 1 GiB both are far past the caches.

What still differs: at --spacing 64 membench visits its slots in two
passes, even lines then odd ones, against the adjacent-line prefetcher;
multichase has one pass. From 128 bytes on, no two slots share a 128-byte
pair and membench takes one pass too (two read 8 % high at 256).

multichase is built from ../shared/ref/multichase (relative to the
repository root; --multichase-src to change) in a temporary copy; when it
is not there this prints that and exits 0 without a result. membench's
chase is built with the pipeline's build command.
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

from membench_build import REPO, build_one, load_table, log  # bench/, beside this script
from membench.analyse import chase_stats

DEFAULT_SRC = REPO.parent / "shared" / "ref" / "multichase"
GIB = 2**30
TARGET = (0.97, 1.03)


def pinned(cpu, nice):
    """Confine the child to one CPU, at the same niceness for both tools."""

    def setup():
        os.sched_setaffinity(0, {cpu})
        if nice:
            os.nice(nice)

    return setup


def build_multichase(src: Path, outdir: Path) -> Path:
    """A copy of the reference tree, built there (the reference stays
    untouched)."""
    tree = outdir / "multichase"
    shutil.copytree(src, tree)
    proc = subprocess.run(["make", "-C", str(tree), "multichase"], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"build of multichase in {tree} failed:\n{proc.stdout}{proc.stderr}")
    return tree / "multichase"


def run_membench(binary: Path, pages: str, cpu: int, nice: int, spacing: int) -> dict:
    argv = [str(binary), "--op", "random", "--size", str(GIB), "--sweep-from", str(GIB), "--pages", pages,
            "--spacing", str(spacing)]
    proc = subprocess.run(argv, capture_output=True, text=True, preexec_fn=pinned(cpu, nice))
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}:\n{proc.stderr}")
    rec = json.loads(proc.stdout.splitlines()[0])
    if (rec["status"] != "ok" or rec["valid"] is not True or rec["group_bytes"] != 256 * 2**10
            or rec.get("latency_statistic") != chase_stats.STATISTIC or rec.get("pointer_spacing_bytes") != spacing):
        raise SystemExit(f"membench record is not a valid 256 KiB-group chase at spacing {spacing}: {rec}")
    return rec


def run_multichase(binary: Path, pages: str, cpu: int, nice: int, spacing: int) -> float:
    argv = [str(binary), "-m", "1g", "-s", str(spacing), *(["-H"] if pages == "thp" else [])]
    proc = subprocess.run(argv, capture_output=True, text=True, preexec_fn=pinned(cpu, nice))
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}:\n{proc.stdout}{proc.stderr}")
    return float(proc.stdout.split()[-1])  # ns per load, best sample


def spread(values: list[float]) -> str:
    mid = statistics.median(values)
    low, high = min(values), max(values)
    return f"{low:.1f} / {mid:.1f} / {high:.1f} ns ({100 * (low / mid - 1):+.1f} % / {100 * (high / mid - 1):+.1f} %)"


def compare(membench: Path, multichase: Path, pages: str, pairs: int, cpu: int, nice: int, spacing: int) -> dict:
    flag = " -H" if pages == "thp" else ""
    log(f"\n1 GiB, {pages} pages, pointer spacing {spacing} B, CPU {cpu}{f', nice {nice}' if nice else ''}")
    log(f"  A = {membench.name} --op random --size {GIB} --sweep-from {GIB} --pages {pages} --spacing {spacing}")
    log(f"  B = multichase -m 1g -s {spacing}{flag}")
    a_ns, b_ns, ratios = [], [], []
    for i in range(pairs):
        if i % 2 == 0:
            rec = run_membench(membench, pages, cpu, nice, spacing)
            b = run_multichase(multichase, pages, cpu, nice, spacing)
        else:
            b = run_multichase(multichase, pages, cpu, nice, spacing)
            rec = run_membench(membench, pages, cpu, nice, spacing)
        a = rec["ns_per_load"]
        a_ns.append(a), b_ns.append(b), ratios.append(a / b)
        alt = chase_stats.alternatives(rec)
        log(f"  pair {i + 1} ({'AB' if i % 2 == 0 else 'BA'}): membench {a:7.2f} ns ({rec['latency_statistic']}; "
            f"best chunk {alt['best-chunk']:.2f}, best walk {alt['best-walk']:.2f}, median chunk {alt['median-chunk']:.2f}; "
            f"{rec['walks']} walks x {rec['stretches']} stretches, {rec['stretches_confirmed']} confirmed, "
            f"huge pages {rec['hugepage_fraction']:.2f}, core {rec.get('core_ghz') or float('nan'):.2f} GHz)"
            f"   multichase {b:7.2f} ns   ratio {a / b:.3f}")
    med = statistics.median(ratios)
    verdict = "in" if TARGET[0] <= med <= TARGET[1] else "OUT OF"
    log(f"  median ratio {med:.3f}   spread {min(ratios):.3f} - {max(ratios):.3f}   ({verdict} range {TARGET[0]}-{TARGET[1]})")
    log(f"  membench repetitions   min / median / max {spread(a_ns)}")
    log(f"  multichase repetitions min / median / max {spread(b_ns)}")
    best = min(a_ns) / min(b_ns)
    log(f"  best vs best (each tool's fastest repetition) {best:.3f}")
    busy = max(b_ns) > 1.1 * min(b_ns) or max(a_ns) > 1.1 * min(a_ns)
    if busy:
        log("  note: a tool's repetitions spread > 10 %: neighbours disturbed some samples (noise only adds time);"
            " the best-vs-best ratio compares the undisturbed values")
    return {"pages": pages, "spacing": spacing, "median": med, "low": min(ratios), "high": max(ratios), "best": best,
            "in_range": verdict == "in", "busy": busy}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pairs", type=int, default=9, help="A/B pairs per page size (>= 5)")
    ap.add_argument("--pages", default="4k,thp", help="comma list of 4k, thp")
    ap.add_argument("--cpu", type=int, help="the CPU both tools run on (default: the last allowed)")
    ap.add_argument("--multichase-src", type=Path, default=DEFAULT_SRC, help=f"default {DEFAULT_SRC}")
    ap.add_argument("--nice", type=int, default=0,
                    help="niceness of both tools (negative needs root: on a shared machine, fewer preemptions)")
    ap.add_argument("--spacing", type=int, default=256,
                    help="pointer spacing of both tools: membench --spacing, multichase -s (default 256, both defaults)")
    ap.add_argument("--strict", action="store_true", help="exit 1 when a median ratio is out of range")
    args = ap.parse_args()
    if args.pairs < 5:
        ap.error("--pairs must be at least 5")
    pages = args.pages.split(",")
    if not set(pages) <= {"4k", "thp"}:
        ap.error(f"--pages {args.pages!r}: allowed 4k, thp")
    if not (args.multichase_src / "multichase.c").is_file():
        print(f"skipped: multichase sources not found at {args.multichase_src} (--multichase-src)")
        return 0
    cpu = args.cpu if args.cpu is not None else max(os.sched_getaffinity(0))
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="membench-multichase-") as tmp:
        log("building membench chase-default and multichase ...")
        membench = build_one(load_table(), "chase", "default", Path(tmp))
        multichase = build_multichase(args.multichase_src, Path(tmp))
        log(f"host: {os.uname().nodename}, {len(os.sched_getaffinity(0))} CPUs; "
            f"THP {Path('/sys/kernel/mm/transparent_hugepage/enabled').read_text().strip()}")
        rows = [compare(membench, multichase, p, args.pairs, cpu, args.nice, args.spacing) for p in pages]
    log("\nsummary (ratio = membench ns_per_load (stretch-min-mean) / multichase ns (best sample), 1 GiB, 256 KiB groups, "
        f"one pointer per {args.spacing} B on both sides)")
    log(f"{'pages':6s} {'median':>7s} {'spread':>15s} {'best/best':>9s}  target {TARGET[0]}-{TARGET[1]} (median)")
    for row in rows:
        log(f"{row['pages']:6s} {row['median']:7.3f} {row['low']:7.3f} - {row['high']:5.3f} {row['best']:9.3f}"
            f"  {'in range' if row['in_range'] else 'OUT OF RANGE'}{' (busy machine)' if row['busy'] else ''}")
    log(f"total time {time.monotonic() - started:.0f} s")
    return 1 if args.strict and not all(row["in_range"] for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
