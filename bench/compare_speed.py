#!/usr/bin/env python3
"""make compare at the Colfax study's size (`make bench`; not a test):
two 27,000-repetition studies (config/colfax_stream.yaml at repeats: 1000
on a 4-socket, 120-CPU node, tools/synthetic_runs.py), NEW with fresh 1 %
noise on every record and one cell 5 % slower, compared by
workflow/scripts/compare_results.py with every output (HTML included).
Generated first, untimed; then timed: wall time, CPU time (user + system
of the process and its children) and its peak RSS, against the targets.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))

import synthetic_runs  # noqa: E402

TARGETS = {"wall_s": 30.0, "peak_rss_mb": 2048.0}
SLOW = "t16_close"  # the planted change: this cell's runs 5 % slower on NEW
MEASURE = """
import json, resource, subprocess, sys, time
start = time.monotonic()
rc = subprocess.call(sys.argv[1:], stdout=open("compare.log", "w"), stderr=subprocess.STDOUT)
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"rc": rc, "wall_s": time.monotonic() - start, "cpu_s": usage.ru_utime + usage.ru_stime,
                  "peak_rss_mb": usage.ru_maxrss / 1024}))
"""


def make_studies(work: Path, repeats: int) -> tuple[Path, Path]:
    base, new = work / "base", work / "new"
    config = REPO / "config" / "colfax_stream.yaml"
    synthetic_runs.write_study(config, synthetic_runs.MACHINES["4x15x2"], base, "colfax", repeats)
    shutil.copytree(base, new)
    rng = random.Random(1)
    for path in (new / "results" / "colfax" / "runs").glob("**/r*.jsonl"):
        slow = 0.95 if SLOW in str(path) else 1.0
        records = [json.loads(line) for line in path.read_text().splitlines()]
        for record in records:
            if record.get("gbps") is not None:
                scale = slow * math.exp(rng.gauss(0, 0.01))
                record["gbps"] *= scale
                record["gbps_wa"] *= scale
        path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in records))
    return base, new


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=1000)
    parser.add_argument("--keep", action="store_true", help="keep the studies and outputs (printed)")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="membench-bench-compare-"))
    try:
        base, new = make_studies(work, args.repeats)
        runs = sum(1 for _ in (base / "results").glob("*/runs/**/r*.jsonl"))
        argv = [sys.executable, "-c", MEASURE, sys.executable, str(REPO / "workflow" / "scripts" / "compare_results.py"),
                str(base), str(new), "--out", str(work / "out")]  # fmt: skip
        r = json.loads(subprocess.run(argv, cwd=work, capture_output=True, text=True, check=True).stdout)
        print(f"make compare on two studies of {runs} repetitions each (config/colfax_stream.yaml, 4 x 15 x 2 CPUs)")
        if r["rc"] not in (0, 1):
            print((work / "compare.log").read_text()[-3000:])
            print(f"compare failed (rc {r['rc']})")
            return 1
        data = json.loads((work / "out" / "compare.json").read_text())
        planted = {row["verdict"] for row in data["rows"] if SLOW in row["cell"] and row["placement_class"] == "all"}
        ok_wall, ok_rss = r["wall_s"] <= TARGETS["wall_s"], r["peak_rss_mb"] <= TARGETS["peak_rss_mb"]
        print(f"  wall {r['wall_s']:.1f} s (<= {TARGETS['wall_s']:.0f}: {'ok' if ok_wall else 'OVER'}), CPU {r['cpu_s']:.1f} s, "
              f"peak RSS {r['peak_rss_mb']:.0f} MB (<= {TARGETS['peak_rss_mb']:.0f}: {'ok' if ok_rss else 'OVER'}); "
              f"{len(data['rows'])} rows: {data['counts']}; planted 5 % slower cell: {sorted(planted)}; exit code {r['rc']}")  # fmt: skip
        html_mb = (work / "out" / "compare.html").stat().st_size / 1e6
        print(f"  compare.html {html_mb:.2f} MB")
        return 0 if ok_wall and ok_rss and r["rc"] == 1 else 1
    finally:
        if args.keep:
            print(f"  kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
