"""In cache or past the caches (membench.analyse.caches): a cell's arrays
against the last-level cache its runs' CPUs share, and what an in-cache
cell may not feed (the first screen's bandwidth, % of peak, concurrency at
the peak)."""

from __future__ import annotations

import math

import pandas as pd

from membench.analyse import caches, stats
from membench.findings import headline
from membench.store import collect

MiB = 2**20
TOPOLOGY = {
    "cpus": [{"cpu": c, "node": 0, "package": 0, "core": c} for c in range(4)],
    "nodes": [{"node": 0, "cpus": [0, 1, 2, 3], "memory_bytes": 2**34, "distances": [10]}],
    # two L3s of 32 MiB: CPUs 0-1 share one, 2-3 the other
    "cache_instances": [{"level": 3, "type": "Unified", "id": i, "size_bytes": 32 * MiB, "cpus": [2 * i, 2 * i + 1]} for i in range(2)],
    "llc_bytes": 32 * MiB,
}


def run(cell, size, cpus, gbps, **extra):
    return {
        "system": "box", "experiment": "e", "cell": cell, "kernel": "stream", "variant": "default", "op": "triad",
        "threads_requested": len(cpus), "threads": len(cpus), "affinity": "close", "affinity_requested": "close", "policy_requested": "default",
        "policy": "default", "pages": "4k", "init": "parallel", "size_requested": size, "size_bytes": size, "arrays": 3,
        "status": "ok", "reason": None, "gbps": gbps, "gbps_wa": gbps * 4 / 3, "bytes_per_iter": 24, "bytes_per_iter_wa": 32,
        "bytes_read_per_iter": 24, "bytes_written_per_iter": 8, "cpus": cpus, "cpus_start": cpus, "page_nodes": {"0": 1.0},
        "cpu_nodes": [0] * len(cpus), "migrated": False, "hugepage_fraction": 0.0, "memory_nodes": [0], **extra,
    }  # fmt: skip


def table(records):
    return collect.records_table(records, {"box": TOPOLOGY})


def test_collect_records_the_llc_the_runs_cpus_share():
    rows = table([run("one-l3", 8 * MiB, [0, 1], 90.0), run("two-l3s", 8 * MiB, [1, 2], 90.0)])
    assert list(rows["llc_usable_bytes"]) == [32 * MiB, 64 * MiB]


def test_a_cell_is_in_cache_when_its_arrays_fit_that_llc():
    cells = stats.summarise_cells(table([
        run("small", 8 * MiB, [0, 1], 100.0),  # 24 MiB of arrays in 32 MiB
        run("spread", 16 * MiB, [0, 2], 80.0),  # 48 MiB in the two L3s' 64 MiB
        run("one-l3", 16 * MiB, [0, 1], 50.0),  # 48 MiB over one L3's 32 MiB
        run("big", 256 * MiB, [0, 1], 30.0),
    ])).set_index("cell")  # fmt: skip
    # 48 MiB over one 32 MiB L3 is 1.5 x: near the caches, short of the 4 x that is past them (issue 38)
    assert list(cells["cache"]) == [caches.IN_CACHE, caches.IN_CACHE, caches.NEAR_CACHES, caches.PAST_CACHES]
    assert cells.loc["small", "footprint_bytes"] == 24 * MiB and cells.loc["spread", "llc_usable_bytes"] == 64 * MiB
    assert caches.cache_fit(math.nan, 1.0) is None and caches.cache_fit(1.0, math.nan) is None


def test_in_cache_cells_feed_no_headline_and_carry_their_mark():
    cells = stats.summarise_cells(table([run("small", 8 * MiB, [0, 1], 101.4), run("auto", 256 * MiB, [0, 1], 31.8),
                                         run("one", 8 * MiB, [0], 60.0)]))  # fmt: skip
    peaks = headline.peak_per_family(cells)
    assert [(p["cell"], p["gbps"]) for p in peaks] == [("auto", 31.8)]
    assert headline.single_thread(cells) is None  # the only 1-thread cell ran in cache
    marked = caches.mark_in_cache(cells).set_index("cell")["size_requested"]
    assert marked["small"] == f"{8 * MiB} ◇ in cache" and marked["auto"] == 256 * MiB
    note = caches.note(cells)
    assert note.startswith("2 cells are short of 4 × the last-level cache") and "left out of the first screen" in note


def test_latency_kernels_and_unknown_caches_are_not_judged():
    records = [run("lat", 8 * MiB, [0], 1.0, kernel="chase")]
    assert "cache" not in stats.summarise_cells(table(records))
    no_topology = stats.summarise_cells(collect.records_table([run("x", 8 * MiB, [0], 1.0)]))
    assert no_topology["cache"].isna().all()
    assert not caches.in_cache(pd.DataFrame({"x": [1]})).any()


def test_a_cell_at_twice_the_llc_feeds_no_headline():
    """Issue 38: past the caches starts at 4 x the usable LLC (STREAM's
    rule, size: auto's), not 1 x: a cell at 2 x still has lines that hit."""
    cells = stats.summarise_cells(table([
        run("twice", 22 * MiB, [0, 1], 90.0),  # 66 MiB of arrays over one 32 MiB L3: about 2 x
        run("four", 44 * MiB, [0, 1], 40.0),  # 132 MiB, past 4 x: past the caches
    ])).set_index("cell")  # fmt: skip
    assert cells.loc["twice", "cache"] == caches.NEAR_CACHES and cells.loc["four", "cache"] == caches.PAST_CACHES
    assert list(caches.past_caches(cells).index) == ["four"]
    assert caches.mark_in_cache(cells.reset_index()).set_index("cell").loc["twice", "size_requested"].endswith("◇ near the caches")
    assert caches.cache_fit(2.0, 1.0) == caches.NEAR_CACHES and caches.cache_fit(4.0, 1.0) == caches.PAST_CACHES
