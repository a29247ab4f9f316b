"""The report assembled from synthetic results of a 2-node machine with
several policies, a chase sweep and a read-only ladder: every table and
section that depends on the data appears, with numbers computed from it."""

import json
import math

import pandas as pd
import pytest
from markupsafe import Markup

from membench.report import render
from report_context import ENVIRONMENT, context_of, stored_row
from membench.analyse import stats

TOPOLOGY = {
    "cpu_model": "Fake 2-node", "cpu_flags": ["avx2"], "cores": 4, "packages": 2, "llc_bytes": 2**20, "line_bytes": 64,
    "cpus": [{"cpu": c, "core": c % 2, "package": c // 2, "node": c // 2, "siblings": [c]} for c in range(4)],
    "nodes": [
        {"node": 0, "cpus": [0, 1], "memory_bytes": 2**34, "distances": [10, 21]},
        {"node": 1, "cpus": [2, 3], "memory_bytes": 2**34, "distances": [21, 10]},
    ],
    "caches": [{"level": 3, "type": "Unified", "size_bytes": 2**20, "line_bytes": 64, "shared_cpus": [0, 1]}],
}  # fmt: skip


def record(**values):
    return stored_row({"arrays": 3}, **values)


@pytest.fixture(scope="module")
def html():
    rows = []
    for gbps in (10.0, 12.0):
        rows.append(record(gbps=gbps))
        rows.append(record(cell="numa/r", policy_requested="remote", policy="bind:1", gbps=gbps / 2, page_nodes='{"1": 1.0}'))
        rows.append(record(cell="numa/i", policy_requested="interleave:all", policy="interleave:all", gbps=gbps * 0.8,
                           page_nodes='{"0": 0.4, "1": 0.6}', placement_problems="asked interleave:all, pages on n0 40%"))  # fmt: skip
        for ws, ns in ((2**14, 1.5), (2**30, 100.0 + gbps)):
            rows.append(record(experiment="lat", cell="lat/c", kernel="chase", op="random", threads_requested=1, threads=1,
                               gbps=math.nan, gbps_wa=math.nan, ns_per_load=ns, working_set_bytes=ws, size_bytes=ws,
                               chase_group_requested=262144))  # fmt: skip
        read_only = dict(bytes_per_iter=8, bytes_per_iter_wa=8, bytes_read_per_iter=8, bytes_written_per_iter=0, arrays=1)
        rows.append(record(experiment="ladder", cell="ladder/v1", kernel="readonly", variant="v001", op="sum", threads=1,
                           gbps=gbps, gbps_wa=gbps, feature_sw_prefetch=False, feature_vector_bits=64, **read_only))  # fmt: skip
        rows.append(record(experiment="ladder", cell="ladder/v4", kernel="readonly", variant="v004", op="sum", threads=1,
                           gbps=gbps + 5, gbps_wa=gbps + 5, feature_sw_prefetch=True, feature_vector_bits=64, **read_only))  # fmt: skip
    cells = stats.summarise_cells(pd.DataFrame(rows))
    config = {
        "experiments": {
            "numa": {"kernel": "stream", "policy": ["default", "remote", "interleave:all"]},
            "lat": {"kernel": "chase"},
            "ladder": {"kernel": "readonly"},
        }
    }
    context = context_of(
        config=config,
        cells=cells,
        problems=stats.problem_cells(pd.DataFrame(rows)),
        figures={"numa": {"scaling": "<svg id='s'></svg>"}},
        systems={"box": {"topology": TOPOLOGY, "environment": ENVIRONMENT}},
        provenance={"membench_version": "t", "commit": "abc", "config_hash": "h", "snakemake_version": "9", "rendered_at": "now"},
    )
    env = render.make_environment(render.TEMPLATE_DIR)
    return env.get_template("report.html.j2").render(**context, stylesheet=Markup(""))


def test_distance_matrix_and_memory_per_node(html):
    assert "box: node distances" in html and "<td>21</td>" in html and "16 GiB" in html


def test_placement_table_shows_local_remote_interleave(html):
    assert "Bandwidth by memory placement" in html
    assert "remote → bind:1" in html and "5.50 (5.00 – 6.00)" in html  # mean (min – max) of the remote runs


def test_mismatch_is_shown_next_to_the_numbers(html):
    assert "⚠ 2 of 2 runs: asked interleave:all" in html


def test_little_law_uses_the_idle_latency_at_the_largest_working_set(html):
    # triad at 2 threads: 11 GB/s mean by the STREAM count, 13 GB/s of traffic with write-allocate, of
    # which 3/4 reads (b, c and a's write-allocate read; the kernel table's bytes as recorded): 9.75 GB/s
    # x 111 ns mean (chase at 1 GiB) = 1082 bytes = 16.9 lines of 64 B; the 3.25 GB/s of write-backs beside
    assert "111.0 ns" in html and "1082 bytes" in html and "16.9 cache lines" in html
    assert "<b>9.75 GB/s</b>" in html and "3.25 GB/s write-backs" in html
    assert "<b>11.00 GB/s</b> by the STREAM count" in html
    assert "Idle latency per system, placement and page size" in html
    # the latency is named with its group size and shown with its spread
    # one sweep point: no plateau, so the largest working set, named as such (no rule said)
    assert "idle chase, 4k pages, 256 KiB groups, spacing not recorded, local, 1 GiB (median of 2 runs" in html
    assert "<td>256 KiB</td><td>spacing not recorded</td><td>111.0</td><td>2</td><td>110.0–112.0</td><td>-0.9 %/+0.9 %</td><td>1 GiB</td>" in html.replace("\n", "")


def test_mccalpin_tables(html):
    assert "Versions and their features" in html and "Effective concurrency, cache lines in flight" in html
    assert "<td>v004</td><td>64</td><td>Y</td><td>16.00 (15.00 – 17.00)</td>" in html.replace("\n", "")
    assert "<th>vector bits</th><th>SW prefetch</th>" in html


def test_remote_bandwidth_has_no_matching_latency_and_says_so(html):
    assert "no idle latency measured on box with remote placement" in html


# ------------------------------------------------------------ placement


@pytest.fixture(scope="module")
def colfax_html():
    """Affinity none vs spread at 2 threads, 8 runs each: none has two modes
    (the oversubscribed runs are the slow ones), spread one."""
    from membench.store import collect
    from membench.analyse import modes

    rows = []
    for repeat in range(8):
        slow = repeat < 3
        rows.append(record(experiment="colfax", cell="colfax/none", affinity="none", affinity_requested="none", gbps=6.0 + repeat * 0.01 if slow else 10.0 + repeat * 0.01,
                           cpus="[0, 0]" if slow else "[0, 1]", cpus_start="[0, 0]" if slow else "[0, 1]", repeat=repeat))  # fmt: skip
        rows.append(record(experiment="colfax", cell="colfax/spread", affinity="spread", affinity_requested="spread", gbps=11.0 + repeat * 0.01,
                           cpus="[0, 2]", cpus_start="[0, 2]", page_nodes='{"0": 0.5, "1": 0.5}', repeat=repeat))  # fmt: skip
    table = collect.records_table(rows, {"box": TOPOLOGY})
    cells = stats.summarise_cells(table)
    context = context_of(
        config={"experiments": {"colfax": {"kernel": "stream", "affinity": ["none", "spread"]}}},
        cells=cells,
        problems=stats.problem_cells(table),
        figures={"colfax": {"placement": "<svg id='p'></svg>"}},
        systems={"box": {"topology": TOPOLOGY, "environment": ENVIRONMENT}},
        provenance={"membench_version": "t", "commit": "abc", "config_hash": "h", "snakemake_version": "9", "rendered_at": "now"},
        modes=modes.modes_table(table, stats.CELL_KEYS),
    )
    env = render.make_environment(render.TEMPLATE_DIR)
    return env.get_template("report.html.j2").render(**context, stylesheet=Markup(""))


def test_modes_table_says_what_explains_the_modes(colfax_html):
    assert "Modes and what explains them (triad)" in colfax_html
    assert "explained by oversubscribed CPUs: oversubscribed CPUs 1 (3 of 8 runs) slower" in colfax_html
    assert "every run has the same placement by every recorded factor" in colfax_html  # the spread cell


def test_colfax_before_after_table(colfax_html):
    assert "Affinity none → spread" in colfax_html
    # none: mean of 6.00..6.02 (3 runs) and 10.03..10.07 (5 runs); spread 11.00..11.07
    assert "<td>8.5 → 11.0 (+29%)</td>" in colfax_html  # the mean
    assert "<td>6.0 → 11.0 (+83%)</td>" in colfax_html  # the worst run, min


def test_cells_list_placement_classes_not_cpu_lists(colfax_html):
    assert "oversubscribed CPUs 0 ×5, 1 ×3" in colfax_html
    assert "[0, 1]" not in colfax_html and "CPUs obtained" not in colfax_html


def test_node_cpu_lists_are_ranges():
    assert render.cpu_ranges([0, 1, 2, 3, 8, 10, 11]) == "0-3,8,10-11"
    assert render.cpu_ranges([]) == ""
