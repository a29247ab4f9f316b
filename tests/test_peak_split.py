"""The peak of a split placement (issue 38): a cell whose pages several
nodes hold is bound by the node that carries the largest share, node_gbps
/ share, not by the count of nodes holding pages."""

import math

import pandas as pd
import pytest

from membench.analyse import peak, stats

TWO_NODES = {"packages": 2, "line_bytes": 64, "nodes": [{"node": 0, "cpus": [0, 1]}, {"node": 1, "cpus": [2, 3]}]}


def record(**values):
    base = dict(
        system="box", experiment="spill", cell="spill/triad", kernel="stream", variant="default", op="triad",
        threads_requested=2, threads=2, affinity="close", policy_requested="default", policy="default", pages="4k",
        init="parallel", size_requested=2**30, size_bytes=2**30, status="ok", reason=None, gbps=82.5, gbps_wa=110.0,
        ns_per_load=math.nan, working_set_bytes=math.nan, hugepage_fraction=0.0, cpus="[0, 1]", migrated=False,
        placement_problems=None, bytes_per_iter=24, bytes_per_iter_wa=32, bytes_read_per_iter=24, bytes_written_per_iter=8,
    )  # fmt: skip
    return {**base, **values}


def shares_of(page_nodes: str) -> pd.Series:
    cells = stats.summarise_cells(pd.DataFrame([record(page_nodes=page_nodes) for _ in range(3)]))
    # 4 channels x 3200 MT/s x 8 B per node: 102.4 GB/s per node, 204.8 in all
    settings = {"peak": {"channels": 8, "mts": 3200, "sockets": 1}}
    return peak.cell_shares(cells, {"box": peak.system_peak("box", settings, TWO_NODES, {})}).iloc[0]


def test_a_94_6_split_is_bound_by_its_busiest_node():
    row = shares_of('{"0": 0.94, "1": 0.06}')
    assert row["peak_gbps"] == pytest.approx(102.4 / 0.94)  # 108.9 GB/s, not two nodes' 204.8
    assert row["peak_share"] == pytest.approx(110.0 / (102.4 / 0.94))  # about 101 %, not 53.7 %
    assert "the busiest 94 %" in row["peak_of"] and "2 of 2 nodes" in row["peak_of"]


def test_even_and_single_node_placements_keep_their_node_count():
    even = shares_of('{"0": 0.5, "1": 0.5}')
    assert even["peak_gbps"] == pytest.approx(204.8) and even["peak_of"] == "memory, 2 of 2 nodes"
    one = shares_of('{"0": 1.0}')
    assert one["peak_gbps"] == pytest.approx(102.4) and one["peak_of"] == "memory, 1 of 2 nodes"


def test_the_bound_is_the_median_over_runs():
    runs = pd.Series(['{"0": 0.94, "1": 0.06}', '{"0": 0.5, "1": 0.5}', '{"0": 0.8, "1": 0.2}', None])
    assert peak.page_node_bound(runs) == pytest.approx(1 / 0.8)
    assert math.isnan(peak.page_node_bound(pd.Series([None])))
