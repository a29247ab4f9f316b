"""Effective concurrency from the right (bandwidth, latency) pair."""

import math

import pandas as pd
import pytest

from membench.analyse import concurrency


def cell(**values):
    base = dict(
        system="a", experiment="e", cell="c", kernel="stream", variant="default", op="triad", threads=2,
        policy_requested="default", pages="4k", affinity="close", affinity_requested="close", n_ok=3, gbps_mean=20.0, gbps_wa_mean=math.nan,
        gbps_read_mean=20.0, gbps_write_mean=math.nan,
        ns_mean=math.nan, ns_median=math.nan, ns_min=math.nan, ns_max=math.nan, working_set_bytes=math.nan,
        chase_group_requested=None,
    )  # fmt: skip
    return {**base, **values}


def chase(ns, ws, **values):
    fields = dict(
        kernel="chase", op="random", cell=f"lat-{ns}", gbps_mean=math.nan, gbps_read_mean=math.nan, ns_mean=ns + 1, ns_median=ns,
        ns_min=0.98 * ns, ns_max=1.03 * ns, working_set_bytes=ws, chase_group_requested=262144,
    )  # fmt: skip
    return cell(**{**fields, **values})


CELLS = pd.DataFrame(
    [
        cell(),
        cell(cell="remote", policy_requested="remote"),
        cell(cell="thp", pages="thp", threads=1, gbps_mean=10.0, gbps_read_mean=10.0),
        cell(cell="other-system", system="b"),
        chase(5.0, 2**15),  # L1-sized: not the idle latency
        chase(100.0, 2**30),  # the largest working set, 4k, local
        chase(80.0, 2**30, pages="thp"),
        chase(150.0, 2**30, policy_requested="remote"),
        chase(999.0, 2**30, kernel="chase", op="stride"),  # prefetchable contrast, never used
    ]
)


@pytest.fixture(scope="module")
def table():
    return concurrency.effective_concurrency(CELLS, {"a": 64, "b": 64}).set_index("cell")


def test_little_law_with_the_local_idle_latency(table):
    row = table.loc["c"]
    assert row["latency_ns"] == 100.0
    assert row["bytes_in_flight"] == pytest.approx(2000.0)  # 20 GB/s x 100 ns
    assert row["lines_in_flight"] == pytest.approx(2000.0 / 64)
    assert row["lines_per_thread"] == pytest.approx(2000.0 / 64 / 2)
    assert "4k" in row["latency_source"] and "local" in row["latency_source"] and row["latency_cell"] == "lat-100.0"


def test_remote_bandwidth_uses_remote_latency(table):
    assert table.loc["remote", "latency_ns"] == 150.0


def test_page_size_is_matched(table):
    row = table.loc["thp"]
    assert row["latency_ns"] == 80.0 and row["lines_in_flight"] == pytest.approx(10.0 * 80.0 / 64)


def test_missing_latency_is_said_not_invented(table):
    row = table.loc["other-system"]
    assert math.isnan(row["lines_in_flight"]) and math.isnan(row["latency_ns"])
    assert "no idle latency measured on b" in row["latency_source"]


def test_latency_cells_are_not_bandwidth_rows(table):
    assert not any(name.startswith("lat-") for name in table.index)


@pytest.mark.parametrize(
    ("policy", "placement"),
    [("default", "local"), ("local", "local"), ("interleave:all", "interleave"), ("interleave:0,1", "interleave"), ("remote", "remote"), ("bind:1", "bind:1")],
)
def test_placement_class(policy, placement):
    assert concurrency.placement_class(policy) == placement


def test_loaded_latency_gives_a_second_column():
    loaded = [
        cell(kernel="loaded", op="triad", cell="load-d0", load_delay_requested=0, ns_median=180.0, ns_min=180.0, ns_max=180.0, size_bytes=2**29, chase_group_requested=262144),
        cell(kernel="loaded", op="triad", cell="load-d100", load_delay_requested=100, ns_median=120.0, ns_min=120.0, ns_max=120.0, size_bytes=2**29, chase_group_requested=262144,
             gbps_mean=5.0),  # fmt: skip
        cell(kernel="loaded", op="read", cell="load-read", load_delay_requested=0, ns_median=150.0, ns_min=150.0, ns_max=150.0, size_bytes=2**29, chase_group_requested=262144,
             gbps_mean=12.0),  # same delay, lighter load: not the heaviest  # fmt: skip
    ]
    cells = pd.concat([CELLS.assign(load_delay_requested=0, size_bytes=0), pd.DataFrame(loaded)], ignore_index=True)
    table = concurrency.effective_concurrency(cells, {"a": 64, "b": 64}).set_index("cell")
    row = table.loc["c"]
    assert row["latency_ns"] == 100.0 and row["loaded_latency_ns"] == 180.0  # the heaviest load
    assert row["lines_in_flight_loaded"] == pytest.approx(20.0 * 180.0 / 64)
    assert "load-d0" in row["loaded_latency_source"]
    assert not any(name.startswith("load-") for name in table.index)  # loaded cells are not bandwidth rows
    assert "no loaded latency" in table.loc["other-system", "loaded_latency_source"]


def test_latency_names_its_group_and_spread(table):
    source = table.loc["c", "latency_source"]
    assert source.startswith("idle chase, 4k pages, 256 KiB groups, spacing not recorded, local, 1 GiB"), source
    assert "median of 3 runs; 98.0–103.0 ns (-2.0 %/+3.0 %)" in source, source


def test_default_group_is_preferred_over_other_groups():
    """A full random cycle (TLB misses included) or small groups are other
    numbers; the reference tools' 256 KiB groups feed Little's law when
    measured, and a config without them still gets its own group named."""
    others = [
        chase(300.0, 2**30, chase_group_requested="full", cell="lat-full"),
        chase(70.0, 2**30, chase_group_requested="65536", cell="lat-64k"),
    ]
    cells = pd.concat([CELLS, pd.DataFrame(others)], ignore_index=True)
    row = concurrency.effective_concurrency(cells, {"a": 64, "b": 64}).set_index("cell").loc["c"]
    assert row["latency_ns"] == 100.0 and row["latency_cell"] == "lat-100.0"
    only_full = cells[~cells["cell"].isin(["lat-100.0", "lat-64k"])]
    row = concurrency.effective_concurrency(only_full, {"a": 64, "b": 64}).set_index("cell").loc["c"]
    assert row["latency_ns"] == 300.0 and "one random cycle (full)" in row["latency_source"]
    # a full cycle swept further than the default groups still does not
    # stand in for them: the group is chosen before the working set
    further = pd.DataFrame([chase(250.0, 2**32, chase_group_requested="full", cell="lat-full-4g")])
    row = concurrency.effective_concurrency(pd.concat([cells, further], ignore_index=True), {"a": 64, "b": 64})
    assert row.set_index("cell").loc["c", "latency_ns"] == 100.0


def test_write_allocate_reads_are_in_flight_write_backs_are_not():
    """A STREAM triad moving 20 GB/s by the STREAM count moves 26.7 GB/s of
    memory traffic with write-allocate: 20 GB/s of reads (b, c and the
    write-allocate read of a), which Little's law counts, and 6.7 GB/s of
    posted write-backs, shown beside it."""
    wa = cell(cell="wa", gbps_wa_mean=80 / 3, gbps_read_mean=20.0, gbps_write_mean=20 / 3)
    cells = pd.concat([CELLS, pd.DataFrame([wa])], ignore_index=True)
    row = concurrency.effective_concurrency(cells, {"a": 64, "b": 64}).set_index("cell").loc["wa"]
    assert row["gbps"] == 20.0 and row["traffic_gbps"] == pytest.approx(20.0)
    assert row["write_traffic_gbps"] == pytest.approx(20 / 3)
    assert row["bytes_in_flight"] == pytest.approx(20.0 * 100.0)


def test_fallback_page_size_is_the_smallest_measured():
    latencies = pd.DataFrame(
        [
            {"system": "a", "placement": "local", "pages": "thp", "ns": 80.0, "working_set_bytes": 2**30, "source": "t"},
            {"system": "a", "placement": "local", "pages": "hugetlb-1g", "ns": 70.0, "working_set_bytes": 2**30, "source": "g"},
        ]
    )
    assert concurrency._match(latencies, "a", "local", "4k")["pages"] == "thp"


def test_little_law_counts_reads_not_write_backs():
    """Read traffic (reads + write-allocate reads, as the harness recorded
    from the kernel table) x latency: Sun's xor moves as many bytes back
    as it reads, and its lines in flight are half of its total traffic's;
    the write-backs stand beside it."""
    from membench.analyse.stats import traffic_split

    runs = pd.DataFrame({"gbps_wa": [60.0, 40.0], "bytes_per_iter": [2000, 3000], "bytes_per_iter_wa": [2000, 4000],
                         "bytes_read_per_iter": [1000, 3000], "bytes_written_per_iter": [1000, 1000]})  # xor, triad
    split = traffic_split(runs)
    assert list(split["gbps_read"]) == [30.0, 30.0] and list(split["gbps_write"]) == [30.0, 10.0]
    # older records: with write-allocate the reads are the STREAM count; without it the split is unknown
    older = traffic_split(runs.drop(columns=["bytes_read_per_iter", "bytes_written_per_iter"]))
    assert math.isnan(older["gbps_read"][0]) and list(older["gbps_read"][1:]) == [30.0] and older["gbps_write"][1] == 10.0
    xor = pd.DataFrame([cell(kernel="xor", op="xor", gbps_mean=60.0, gbps_wa_mean=60.0, gbps_read_mean=30.0, gbps_write_mean=30.0),
                        cell(cell="old", kernel="xor", op="xor", gbps_read_mean=math.nan), chase(100.0, 2**30)])  # fmt: skip
    ec = concurrency.effective_concurrency(xor, {"a": 64}).set_index("cell")
    assert ec.loc["c", "bytes_in_flight"] == pytest.approx(3000.0)  # 30 GB/s read x 100 ns, not 60 x 100
    assert ec.loc["c", "write_traffic_gbps"] == 30.0
    assert math.isnan(ec.loc["old", "lines_in_flight"]) and "read traffic not recorded" in ec.loc["old", "latency_source"]


def test_idle_latency_names_its_spacing_prefers_the_default_and_is_flagged_short_of_eight_llc():
    """Several spacings at the largest working set: the default 256 B is
    the idle latency, named; at 1 GiB with one pointer per 256 B a 300 MiB
    LLC (dev16) is not passed 8 times: flagged wherever it is quoted."""
    cells = pd.DataFrame([cell(), chase(90.0, 2**30, chase_spacing_requested=64, cell="s64"),
                          chase(100.0, 2**30, chase_spacing_requested=256, cell="s256")])  # fmt: skip
    (latency,) = [row for _, row in concurrency.idle_latencies(cells, {"a": 300 * 2**20}).iterrows()]
    assert latency["ns"] == 100.0 and latency["spacing"] == "256 B"
    assert latency["flag"].startswith("⚑ 256 MiB of lines, short of 8 × the LLC")
    source = concurrency.effective_concurrency(cells, {"a": 64}, {"a": 300 * 2**20}).iloc[0]["latency_source"]
    assert "one pointer per 256 B" in source and "⚑" in source
    (latency,) = [row for _, row in concurrency.idle_latencies(cells, {"a": 32 * 2**20}).iterrows()]
    assert latency["flag"] is None  # 256 MiB of lines = 8 x 32 MiB: far enough


def test_loaded_points_are_compared_by_read_traffic():
    """r2w1nt's 30 GB/s STREAM count reads 20 GB/s from memory; triad's 24
    GB/s reads 24 (write-allocate included): triad is the heavier load."""
    assert concurrency.read_share("triad") == 1.0 and concurrency.read_share("r1w1") == 1.0
    assert concurrency.read_share("r2w1nt") == pytest.approx(2 / 3) and concurrency.read_share("r1w1", "nt-avx512") == 0.5
    loaded = [cell(kernel="loaded", op="r2w1nt", cell="nt", gbps_mean=30.0, ns_median=150.0, ns_min=149, ns_max=151, size_bytes=2**29),
              cell(kernel="loaded", op="triad", cell="triad", gbps_mean=24.0, ns_median=140.0, ns_min=139, ns_max=141, size_bytes=2**29)]  # fmt: skip
    (heaviest,) = [row for _, row in concurrency.loaded_latencies(pd.DataFrame(loaded)).iterrows()]
    assert heaviest["source"] == "triad"


def test_a_cell_whose_every_run_was_disturbed_feeds_nothing_and_breaks_nothing():
    """Every run of the only loaded cell disturbed (issue 32): its numbers
    are NaN; the loaded latency has no point to choose, and says nothing."""
    loaded = pd.DataFrame([cell(kernel="loaded", op="triad", cell="l", gbps_mean=math.nan, ns_median=math.nan,
                                ns_min=math.nan, ns_max=math.nan, size_bytes=2**29)])  # fmt: skip
    assert concurrency.loaded_latencies(loaded).empty
