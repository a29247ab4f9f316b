"""The report's context as the pipeline builds it: the findings stage's
derive(), through JSON as its files carry it, then the report's
build_context (tests that render a report from in-memory tables); and
what those tables are made of: a row of measurements.csv, a system's
environment."""

from __future__ import annotations

import json
import math

from membench.findings.document import derive
from membench.report.render import build_context


def context_of(*, figures: dict, provenance: dict, **tables) -> dict:
    derived = json.loads(json.dumps(derive(**tables)))
    return build_context(derived, figures, provenance)


ENVIRONMENT = {
    "hostname": "box", "kernel": "6.1", "virtualized": False, "thp_enabled": "madvise", "thp_defrag": "madvise",
    "hugepages": {}, "numa_balancing": 0, "zone_reclaim_mode": 0, "governor": None, "compiler": "gcc 12",
}  # fmt: skip
# An ok record of measurements.csv: triad of stream at 2 threads on box.
ROW = dict(
    system="box", experiment="numa", cell="numa/stream-default/x", kernel="stream", variant="default", op="triad",
    threads_requested=2, threads=2, affinity="close", affinity_requested="close", policy_requested="default", policy="default", pages="4k",
    init="parallel", size_requested=2**30, size_bytes=2**30, load_delay_requested=0, status="ok", reason=None,
    gbps=10.0, gbps_wa=13.0, ns_per_load=math.nan, working_set_bytes=math.nan, hugepage_fraction=0.0,
    # triad per element as the harness records it from the kernel table: 24 B by
    # STREAM's count (2 reads, 1 write), 32 with the write-allocate read, of
    # which 24 read and 8 written back
    bytes_per_iter=24, bytes_per_iter_wa=32, bytes_read_per_iter=24, bytes_written_per_iter=8,
    cpus="[0, 1]", page_nodes='{"0": 1.0}', migrated=False, placement_problems=None,
)  # fmt: skip


def stored_row(own: dict, **values) -> dict:
    """ROW with a test's own defaults (`own`) over it and `values` over both."""
    return {**ROW, **own, **values}
