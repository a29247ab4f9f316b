#!/usr/bin/env python3
"""How long an oversize cell takes to be skipped (`make bench`; not a test).

A STREAM cell whose three arrays are each as large as this host's
MemAvailable goes through measure_cell on the real /proc and /sys. The
harness is a stand-in that leaves a mark if it ever starts: the skip must
come before anything is allocated. Prints the median and the worst of the
in-process calls, and the wall time of a fresh Python process doing the
same (imports included, as a measure job pays them); exits 1 if a skip
takes a second or more, or if the harness started.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "workflow" / "scripts"))

from membench.core.text import size_text  # noqa: E402
from membench.measure import memory  # noqa: E402
from membench.measure import harness as measure

LIMIT_S = 1.0
CALLS = 20


def skip_once(work: Path, size: int) -> tuple[float, dict]:
    start = time.perf_counter()
    records = measure.measure_cell(
        str(work / "harness"), str(work / "topology.json"), str(work / "r0.jsonl"), str(work / "log"),
        request=measure.Request(
            system="bench", kernel="stream", variant="default", ops=("copy", "scale", "add", "triad"),
            threads=1, affinity="none", policy="default", pages="4k", init="parallel", size=size,
            ntimes=2, repeat=0,
        ),
        experiment="bench", cell_id="bench/stream-default/oversize",
    )  # fmt: skip
    return time.perf_counter() - start, records[0]


def main() -> int:
    size = memory.host_memory().available
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "harness").write_text(f"#!/bin/sh\ntouch {work}/started\nexit 1\n")
        (work / "harness").chmod(0o755)
        node = {"node": 0, "cpus": [0], "memory_bytes": 1, "distances": [10]}
        topology = {"llc_bytes": 0, "cpus": [{"cpu": 0, "node": 0}], "nodes": [node]}
        (work / "topology.json").write_text(json.dumps(topology))
        times, record = [], None
        for _ in range(CALLS):
            seconds, record = skip_once(work, size)
            times.append(seconds)
        fresh = (
            f"import sys, time; t = time.perf_counter(); sys.path.insert(0, {str(REPO / 'bench')!r}); "
            f"import oversize_skip; from pathlib import Path; oversize_skip.skip_once(Path({tmp!r}), {size}); "
            "print(time.perf_counter() - t)"
        )
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", fresh], check=True, capture_output=True)
        process_s = time.perf_counter() - start
        started = (work / "started").exists()
    print(f"oversize STREAM cell: 3 arrays x {size_text(size)} on this host")
    print(f"status {record['status']}: {record['reason']}")
    print(f"in-process skip: median {statistics.median(times) * 1e3:.1f} ms, worst {max(times) * 1e3:.1f} ms ({CALLS} calls)")
    print(f"fresh Python process (imports included): {process_s * 1e3:.0f} ms")
    print(f"harness started: {started}")
    ok = record["status"] == "skipped" and not started and max(max(times), process_s) < LIMIT_S
    print("PASS" if ok else f"FAIL (limit {LIMIT_S} s, no harness start)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
