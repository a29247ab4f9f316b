#!/usr/bin/env python3
"""membench's read:write mixes vs likwid-bench, side by side (`make bench`).

Each mix against the likwid-bench kernel with the same read and write
streams (likwid-bench -a; the kernels' .ptt definitions: LOADS / STORES per
element), at 1 and 2 threads, in interleaved pairs:

  membench mix op            likwid-bench -t            streams (loads:stores)
  r1w0   sum += a            load_<isa>                 1 : 0
  r3w1   w = a + b + c       triad_<isa>  A = B*C + D   3 : 1
  r2w1   w = a + s*b         stream_<isa> A = B*c + C   2 : 1
  r1w1   w = s*a             copy_<isa>   A = B         1 : 1
  r2w1nt w = a + s*b, NT     stream_mem_<isa>           2 : 1, non-temporal stores

Why these: the same number of load and store streams, the stores ordinary
(write-allocate) or non-temporal alike; arithmetic differs (a sum, an add,
an FMA), which at memory speed is free. likwid's `update` (A = A*s) is 1:1
too but writes the array it reads (no write-allocate), unlike r1w1; `sum`
and `load` both read one stream: `load` has no dependency chain at all, the
stricter reference. membench's variant is the explicit-vector one of
likwid's width: `avx512` with `_avx512` where the CPU has AVX-512F, else
`avx2` with `_avx` (both 256-bit); its r2w1nt streams at that width too.

Like with like (as bench/compare_likwid.py, whose helpers this uses): the
same working set (likwid's -w S0:<bytes>B:<threads> is the total over its
streams, membench's --size is per array), the same byte count (likwid's
MByte/s counts loads and stores once = membench's gbps, STREAM counting),
the same statistic (likwid: volume / total time, so membench's gbps_mean),
threads on the first CPUs of socket 0 on both sides (--affinity close), 4 KiB
pages. Pairs alternate AB, BA, ...; the ratio membench / likwid per pair,
their median and spread are printed against the target >= 1.00, and the
script exits 1 when a median is below it (--strict). Without likwid-bench
it says so and exits 1: `make bench` installs it from Debian's apt first.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from compare_likwid import ab_args, ab_parser, elements, run_likwid, run_membench  # noqa: E402
from membench_build import build, load_table, log  # noqa: E402

# op -> (likwid kernel base, read streams, write streams)
PAIRS = {
    "r1w0": ("load", 1, 0),
    "r3w1": ("triad", 3, 1),
    "r2w1": ("stream", 2, 1),
    "r1w1": ("copy", 1, 1),
    "r2w1nt": ("stream_mem", 2, 1),
}
TARGET = 1.00


def cpu_has(flag: str) -> bool:
    try:
        return f" {flag} " in f" {Path('/proc/cpuinfo').read_text().split('flags', 1)[1].splitlines()[0]} "
    except (OSError, IndexError):
        return False


def compare(op, binary, test, streams, total_bytes, threads, pairs, ntimes):
    n = elements(total_bytes, streams, threads)
    size, total = n * 8, n * 8 * streams
    log(f"\n{op} vs {test}: {threads} thread(s), {streams} x {size / 1e6:.1f} MB = {total / 1e6:.1f} MB")
    ratios = []
    for i in range(pairs):
        def a():
            return run_membench(binary, op, size, threads, ntimes)["gbps_mean"]

        def b():
            return run_likwid(test, total, threads, n)

        if i % 2 == 0:
            ra, rb = a(), b()
        else:
            rb = b()
            ra = a()
        ratios.append(ra / rb)
        log(f"  pair {i + 1} ({'AB' if i % 2 == 0 else 'BA'}): membench {ra:7.2f} GB/s   likwid {rb:7.2f} GB/s   ratio {ra / rb:.3f}")
    med = statistics.median(ratios)
    log(f"  median ratio {med:.3f}   spread {min(ratios):.3f} - {max(ratios):.3f}   ({'>=' if med >= TARGET else '<'} {TARGET:.2f})")
    return med, min(ratios), max(ratios)


def main():
    ap = ab_parser(__doc__.split("\n")[0])
    ap.add_argument("--bytes", type=int, default=1_200_000_000, help="working set, all streams (default 1.2 GB)")
    ap.add_argument("--threads", default="1,2", help="comma list (default 1,2)")
    ap.add_argument("--ops", default=",".join(PAIRS), help="mix ops to compare")
    ap.add_argument("--strict", action="store_true", help="exit 1 when a median ratio is below 1.00")
    args = ab_args(ap)
    if args is None:
        return 1
    wide = cpu_has("avx512f")
    variant, isa = ("avx512", "avx512") if wide else ("avx2", "avx")
    threads = sorted({int(t) for t in args.threads.split(",")})
    ncpu = len(os.sched_getaffinity(0))
    if max(threads) > ncpu:
        print(f"failed: {max(threads)} threads asked, {ncpu} CPUs allowed")
        return 1
    ops = args.ops.split(",")
    table = load_table()
    started = time.monotonic()
    rows = []
    with tempfile.TemporaryDirectory(prefix="membench-bench-") as tmp:
        binary = build(table, [("mix", variant)], Path(tmp))[("mix", variant)]
        log(f"host {os.uname().nodename}, {ncpu} CPUs; membench mix-{variant} vs likwid-bench *_{isa}; threads {threads}")
        for t in threads:
            for op in ops:
                base, reads, writes = PAIRS[op]
                test = f"{base}_{isa}"
                med, lo, hi = compare(op, binary, test, reads + writes, args.bytes, t, args.pairs, args.ntimes)
                rows.append((op, test, reads, writes, t, med, lo, hi))
    log("\nsummary (ratio = membench gbps_mean / likwid MByte/s*1e-3, same bytes counted; target >= 1.00)")
    log(f"{'mix':8s} {'likwid':18s} {'R:W':>5s} {'threads':>7s} {'median':>7s} {'spread':>15s}")
    below = []
    for op, test, reads, writes, t, med, lo, hi in rows:
        mark = "" if med >= TARGET else "   < 1.00"
        if mark:
            below.append(f"{op}@{t}")
        log(f"{op:8s} {test:18s} {reads:>3d}:{writes:<1d} {t:7d} {med:7.3f} {lo:7.3f} - {hi:5.3f}{mark}")
    log(f"total time {time.monotonic() - started:.0f} s")
    if below:
        log(f"below target: {', '.join(below)}")
    return 1 if below and args.strict else 0


if __name__ == "__main__":
    sys.exit(main())
