#!/usr/bin/env python3
"""membench vs likwid-bench, side by side (`make bench`; not a test).

Three comparisons, each at 1 thread and at all threads:

  A (membench)                              B (likwid-bench)
  best readonly variant, op sum             -t load_avx512
  stream default, op triad                  -t stream_avx512
  best non-temporal stream variant, triad   -t stream_mem_avx512

Like with like:
- the same working set: likwid's -w S0:<bytes>B:<threads> is the total over
  its streams; membench's --size is per array, so A gets bytes/streams per
  array, the element count rounded so that likwid does not trim it (this
  script checks likwid's "Vector length" line against it);
- the same byte convention: likwid's MByte/s is 1e6 B/s counting loads and
  stores once (no write-allocate traffic), which is membench's gbps (STREAM
  counting, 1e9 B/s): readonly 8 B, triad 24 B per element on both sides;
- the same statistic: likwid reports data volume / total time over all its
  iterations, so A uses gbps_mean (bytes / mean time of the kept iterations),
  not best-of (printed too, for information);
- the same placement: threads pinned to the first hardware threads of
  socket 0 on both sides (likwid -w S0, membench --affinity close); 4 KiB
  pages on both sides (likwid does not madvise its buffers, THP is
  "madvise" here; membench --pages 4k, so large-page variants run on 4 KiB
  pages here, which is stated in the output);
- the same sitting: A and B interleaved, the order alternating pair by pair
  (AB, BA, AB ...), at least five pairs; the ratio A/B of each pair, their
  median and spread (min - max) are reported.

The best readonly and NT variants are chosen in the same sitting by a short
screening run (median of --screen-runs single-thread runs per candidate).

If likwid-bench is not installed, says so and exits 1 (`make bench`
installs it from Debian's apt first).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from membench_build import build, load_table, log  # bench/, beside this script
from membench.plan import variants

# The contenders (McCalpin's best: many pages per loop, with and without
# prefetch; the flat vector loop as the baseline) at SSE and AVX-512 widths.
READONLY_CANDIDATES = ["v006-avx512", "v009-avx512", "v012", "v012-avx512", "v015-avx512"]
NT_CANDIDATES = ["ntpf-avx512", "nt-avx512", "ntpf-avx2"]


def ab_parser(description: str) -> argparse.ArgumentParser:
    """The options of every comparison with likwid-bench: --pairs of A/B
    runs, --ntimes of membench; the caller adds its own."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--pairs", type=int, default=5, help="A/B pairs per cell (>= 5)")
    ap.add_argument("--ntimes", type=int, default=11, help="membench iterations per run")
    return ap


def ab_args(ap: argparse.ArgumentParser) -> argparse.Namespace | None:
    """The options parsed (--pairs below 5 refused); None, said, where
    likwid-bench is not installed."""
    args = ap.parse_args()
    if args.pairs < 5:
        ap.error("--pairs must be at least 5")
    if shutil.which("likwid-bench") is None:
        print("failed: likwid-bench not found (make bench installs it: apt-get install -y likwid)")
        return None
    return args


def run_membench(binary, op, size, threads, ntimes, extra=()):
    argv = [str(binary), "--op", op, "--size", str(size), "--threads", str(threads),
            "--affinity", "close", "--pages", "4k", "--ntimes", str(ntimes), *extra]
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}:\n{proc.stderr}")
    rec = json.loads(proc.stdout.splitlines()[0])
    assert rec["valid"] is True and rec["status"] == "ok"
    return rec


def run_likwid(test, total_bytes, threads, expect_elems):
    argv = ["likwid-bench", "-t", test, "-w", f"S0:{total_bytes}B:{threads}"]
    proc = subprocess.run(argv, capture_output=True, text=True)
    text = proc.stdout + proc.stderr
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}:\n{text}")
    rates = re.findall(r"^MByte/s:\s+([0-9.]+)", text, re.M)
    lengths = {int(m) for m in re.findall(r"Vector length (\d+)/", text)}
    if lengths != {expect_elems}:
        raise SystemExit(f"likwid-bench used vector length {lengths}, expected {expect_elems}:"
                         f"\n{text}")
    return float(rates[-1]) / 1000.0  # MByte/s (1e6) -> GB/s (1e9)


def elements(target_bytes, streams, threads):
    """Elements per array: a multiple of 64 x threads (likwid trims to a
    multiple of its loop stride and the thread count)."""
    quantum = 64 * threads
    return max(quantum, (target_bytes // (8 * streams)) // quantum * quantum)


def screen(binaries, family, candidates, op, size, runs, ntimes):
    log(f"screening {family} ({op}, 1 thread, {size / 1e6:.0f} MB per array, "
        f"median of {runs} runs, gbps_mean):")
    best, best_rate = None, 0.0
    for variant in candidates:
        rates = [run_membench(binaries[(family, variant)], op, size, 1, ntimes)["gbps_mean"]
                 for _ in range(runs)]
        rate = statistics.median(rates)
        log(f"  {variant:14s} {rate:7.2f} GB/s   ({', '.join(f'{r:.2f}' for r in rates)})")
        if rate > best_rate:
            best, best_rate = variant, rate
    log(f"  -> best: {best}")
    return best


def compare(name, binary, op, test, streams, target_bytes, threads, pairs, ntimes):
    n = elements(target_bytes, streams, threads)
    size = n * 8
    total = size * streams
    log(f"\n{name}: {threads} thread(s), {streams} x {size / 1e6:.1f} MB = "
        f"{total / 1e6:.1f} MB working set")
    log(f"  A = {binary.name} --op {op} --threads {threads} --affinity close --pages 4k")
    log(f"  B = likwid-bench -t {test} -w S0:{total}B:{threads}")
    ratios = []
    for i in range(pairs):
        def a():
            rec = run_membench(binary, op, size, threads, ntimes)
            return rec["gbps_mean"], rec["gbps"]

        def b():
            return run_likwid(test, total, threads, n)

        if i % 2 == 0:
            (ra, rbest), rb = a(), b()
        else:
            rb = b()
            ra, rbest = a()
        ratios.append(ra / rb)
        log(f"  pair {i + 1} ({'AB' if i % 2 == 0 else 'BA'}): membench {ra:7.2f} GB/s "
            f"(best-of {rbest:6.2f})   likwid {rb:7.2f} GB/s   ratio {ra / rb:.3f}")
    med = statistics.median(ratios)
    log(f"  median ratio {med:.3f}   spread {min(ratios):.3f} - {max(ratios):.3f}   "
        f"({'>=' if med >= 1.0 else '<'} 1.00)")
    return med, min(ratios), max(ratios)


def main():
    ap = ab_parser(__doc__.split("\n")[0])
    ap.add_argument("--readonly-bytes", type=int, default=1_000_000_000,
                    help="working set of the readonly comparison (default 1 GB)")
    ap.add_argument("--stream-bytes", type=int, default=1_200_000_000,
                    help="working set of the triad comparisons, all three arrays "
                         "(default 1.2 GB)")
    ap.add_argument("--screen-runs", type=int, default=3)
    ap.add_argument("--readonly-variant", help="skip the screening, use this variant")
    ap.add_argument("--nt-variant", help="skip the screening, use this variant")
    ap.add_argument("--threads", default="1,all", help="comma list; all = every CPU")
    args = ab_args(ap)
    if args is None:
        return 1

    ncpu = len(os.sched_getaffinity(0))
    threads = sorted({ncpu if t == "all" else int(t) for t in args.threads.split(",")})
    table = load_table()
    ro_cands = [args.readonly_variant] if args.readonly_variant else READONLY_CANDIDATES
    nt_cands = [args.nt_variant] if args.nt_variant else NT_CANDIDATES
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="membench-bench-") as tmp:
        need = [("readonly", v) for v in ro_cands] + [("stream", "default")] + \
               [("stream", v) for v in nt_cands]
        log(f"building {len(need)} binaries with the pipeline's build command ...")
        binaries = build(table, need, Path(tmp))
        log(f"host: {os.uname().nodename}, {ncpu} CPUs; threads {threads}")

        ro_size = elements(args.readonly_bytes, 1, 1) * 8
        st_size = elements(args.stream_bytes, 3, 1) * 8
        ro = ro_cands[0] if len(ro_cands) == 1 else screen(
            binaries, "readonly", ro_cands, "sum", ro_size, args.screen_runs, args.ntimes)
        nt = nt_cands[0] if len(nt_cands) == 1 else screen(
            binaries, "stream", nt_cands, "triad", st_size, args.screen_runs, args.ntimes)
        feat = variants.features(table, "readonly", ro)
        log(f"\nreadonly variant {ro}: {table['families']['readonly']['variants'][ro]['description']}"
            f"; features {feat} (run on 4 KiB pages here, like likwid)")

        rows = []
        for t in threads:
            for name, fv, op, test, streams, nbytes in (
                (f"readonly {ro}", ("readonly", ro), "sum", "load_avx512", 1,
                 args.readonly_bytes),
                ("stream triad (default)", ("stream", "default"), "triad", "stream_avx512", 3,
                 args.stream_bytes),
                (f"NT triad ({nt})", ("stream", nt), "triad", "stream_mem_avx512", 3,
                 args.stream_bytes),
            ):
                med, lo, hi = compare(name, binaries[fv], op, test, streams, nbytes, t,
                                      args.pairs, args.ntimes)
                rows.append((name, test, t, med, lo, hi))

    log("\nsummary (ratio = membench gbps_mean / likwid MByte/s*1e-3, same bytes counted)")
    log(f"{'A':28s} {'B':20s} {'threads':>7s} {'median':>7s} {'spread':>15s}")
    for name, test, t, med, lo, hi in rows:
        log(f"{name:28s} {test:20s} {t:7d} {med:7.3f} {lo:7.3f} - {hi:5.3f}"
            f"{'' if med >= 1.0 else '   < 1.00'}")
    log(f"total time {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
