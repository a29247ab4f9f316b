"""Every figure kind draws from synthetic results of two systems (the paths
a tiny single-machine run does not reach: several systems, size sweeps,
placement modes), and each states its units."""

import json

import numpy as np
import pandas as pd
import pytest

from membench.store import collect
from membench.figures import bandwidth
from membench.figures import distribution
from membench.plan import figure_kinds
from membench.figures import latency
from membench.store import placement_classes
from membench.analyse import stats

RNG = np.random.default_rng(7)


def records():
    rows = []
    for system in ("alpha", "beta"):
        for size in (2**20, 2**24, 2**30):
            for threads in (1, 2):
                for repeat in range(4):
                    cpus = "[0, 1]" if repeat % 2 else "[0, 0]"
                    for op in ("copy", "triad"):
                        rows.append(
                            dict(
                                system=system, experiment="e", cell=f"e/stream-default/t{threads}_s{size}", kernel="stream",
                                variant="default", op=op, threads_requested=threads, threads=threads, affinity="close", affinity_requested="close",
                                policy_requested="preferred:0", policy="preferred:0", pages="4k", pages_requested="4k",
                                init="parallel", size_requested=size, size_bytes=size, status="ok", reason=None,
                                gbps=float(10 * threads + RNG.normal(0, 1)), gbps_wa=1.0, hugepage_fraction=0.0,
                                cpus=cpus, page_nodes=json.dumps({"0": 0.5, "1": 0.5} if repeat % 2 else {"0": 1.0}),
                                migrated=False, load_delay_requested=0,
                            )
                        )  # fmt: skip
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def tables():
    measurements = records()
    return measurements, stats.summarise_cells(measurements)


@pytest.mark.parametrize("kind", ["scaling", "size"])
def test_cell_figures(tables, kind):
    _, cells = tables
    svg = {"scaling": bandwidth.scaling_svg, "size": bandwidth.size_svg}[kind](cells, f"t-{kind}")
    assert svg.startswith("<svg") and "GB/s = 1e9 B/s" in svg
    assert "alpha" in svg and "beta" in svg  # one series per system


# Two nodes of two CPUs each (CPU c on node c // 2), one core per CPU.
TOPOLOGY = {
    "cpus": [{"cpu": c, "core": c % 2, "package": c // 2, "node": c // 2, "siblings": [c]} for c in range(4)],
    "nodes": [{"node": 0, "cpus": [0, 1]}, {"node": 1, "cpus": [2, 3]}],
}


def test_histogram(tables):
    measurements, _ = tables
    svg = distribution.histogram_svg(measurements, "t-histogram")
    assert svg.startswith("<svg") and "1 GB/s bins" in svg and "threads = 2" in svg


def test_placement_figure_colours_runs_by_class(tables):
    measurements, _ = tables
    classified = collect.records_table(measurements.to_dict("records"), {"alpha": TOPOLOGY, "beta": TOPOLOGY})
    svg = distribution.placement_svg(classified, "t-placement")
    assert svg.startswith("<svg") and "log scale" in svg
    # [0, 0]: two threads on CPU 0, pages on node 0; [0, 1]: one each, half the pages remote
    assert "pages local · oversubscribed" in svg and "pages split · 1 thread/CPU" in svg
    assert "[0, 1]" not in svg and "<image" in svg  # no raw CPU lists; the dots are a raster layer


def test_placement_figure_legend_stays_bounded():
    rng = np.random.default_rng(1)
    rows = []
    for i in range(400):  # every run its own CPU list on 2 nodes x 2 CPUs, 4 threads
        cpus = [int(c) for c in rng.integers(0, 4, 4)]
        rows.append(dict(system="s", experiment="e", cell="e/c", kernel="stream", variant="default", op="triad",
                         threads=4, affinity="none", affinity_requested="none", policy="default", policy_requested="default", pages="4k", init="parallel",
                         size_requested="auto", status="ok", gbps=float(rng.normal(50, 5)), cpus=str(cpus),
                         cpus_start=str(cpus[::-1]), page_nodes=json.dumps({str(i % 2): 1.0}), hugepage_fraction=0.0,
                         migrated=True))  # fmt: skip
    table = collect.records_table(rows, {"s": TOPOLOGY})
    labels = placement_classes.figure_classes(table)
    assert 1 < labels.nunique() <= placement_classes.MAX_FIGURE_CLASSES
    svg = distribution.placement_svg(table, "t-many")
    assert svg.count(" runs)</text>") == labels.nunique()


def test_size_sweep_adds_the_spill_curve():
    assert "size" in figure_kinds.kinds_for({"kernel": "stream", "size": ["1GiB", "8GiB"]})
    assert "size" not in figure_kinds.kinds_for({"kernel": "stream", "size": ["auto"]})
    assert figure_kinds.kinds_for({"kernel": "chase", "size": ["1GiB", "2GiB"]}) == ("latency",)


def test_figures_of_nothing_say_so(tables):
    _, cells = tables
    svg = bandwidth.scaling_svg(cells.assign(n_ok=0), "t-empty")
    assert "no successful measurements" in svg


def test_svg_ids_differ_between_figures(tables):
    _, cells = tables
    first, second = bandwidth.scaling_svg(cells, "one"), bandwidth.scaling_svg(cells, "two")
    ids = lambda svg: set(__import__("re").findall(r'id="([^"]+)"', svg))  # noqa: E731
    assert ids(first) and not ids(first) & ids(second)  # both can be inlined in one page


def test_latency_figure_ticks_in_binary_units_and_one_curve_per_group():
    rows = [
        dict(system="alpha", experiment="lat", cell=f"lat/chase-default/g{group}", kernel="chase", variant="default",
             op="random", pages="4k", policy_requested="default", affinity="none", affinity_requested="none", chase_group_requested=group,
             working_set_bytes=2**k, n_ok=3, ns_mean=float(k), ns_median=float(k), ns_min=k - 0.5, ns_max=k + 0.5)
        for group in (262144, "full") for k in range(12, 31)
    ]  # fmt: skip
    caches = {"alpha": [{"level": 1, "size_bytes": 32768}]}
    svg = latency.latency_svg(pd.DataFrame(rows), caches, "t-latency")
    for label in ("4 KiB", "256 KiB", "16 MiB", "1 GiB"):
        assert f">{label}<" in svg, label
    assert "2^{" not in svg and "$2" not in svg  # no 2^n tick labels
    assert "chase_group=256 KiB" in svg and "chase_group=full" in svg
    assert "ns per load" in svg


def _drawers(tables):
    """Every figure kind (membench.figures.plot.KINDS), drawn from fixed
    inputs: name -> a function returning the SVG text."""
    from membench.analyse import c2c_summary
    from membench.analyse.node_matrix import experiment_matrices
    from membench.figures import c2c, node_heatmap
    from test_c2c import fake_records as c2c_records, synthetic
    from test_node_matrix import make_topology, summarised

    measurements, cells = tables
    classified = collect.records_table(measurements.to_dict("records"), {"alpha": TOPOLOGY, "beta": TOPOLOGY})
    ladder = measurements.assign(variant=[f"v{i % 5}" for i in range(len(measurements))])
    chase = pd.DataFrame([
        dict(system="alpha", experiment="lat", cell=f"lat/chase-default/g{k}", kernel="chase", variant="default",
             op="random", pages="4k", policy_requested="default", affinity="none", affinity_requested="none", chase_group_requested=262144,
             working_set_bytes=2**k, n_ok=3, ns_mean=float(k), ns_median=float(k), ns_min=k - 0.5, ns_max=k + 0.5)
        for k in range(12, 31)
    ])  # fmt: skip
    loaded = pd.DataFrame([
        dict(system="sys", experiment="lat", cell=f"lat/{op}/{d}", kernel="loaded", variant="default", op=op, threads=3,
             threads_requested=3, affinity="close", affinity_requested="close", policy_requested="default", pages="4k", size_requested=2**29,
             load_delay_requested=d, n_ok=2, gbps_mean=g, gbps_std=0.1, gbps_wa_mean=g * 1.5, ns_mean=ns, ns_std=1.0)
        for op in ("r1w1", "r2w1nt") for d, g, ns in ((0, 10.0, 128.0), (50, 4.0, 96.0))
    ])  # fmt: skip
    topo = make_topology(4)
    node_cells, problems = summarised(topo)
    matrices = experiment_matrices(node_cells, problems, {"big": topo}, "bandwidth_matrix")
    assert matrices
    c2c_topo = synthetic(packages=1, l3_per_package=2, l2_per_l3=2, cores_per_l2=1)
    cpus = [c["cpu"] for c in c2c_topo["cpus"]]
    pairs = c2c_summary.pair_table(c2c_records(c2c_topo, [(a, b) for i, a in enumerate(cpus) for b in cpus[i + 1 :]],
                                               lambda a, b: "all"))  # fmt: skip
    return {
        "scaling": lambda name: bandwidth.scaling_svg(cells, name),
        "size": lambda name: bandwidth.size_svg(cells, name),
        "ladder": lambda name: bandwidth.ladder_svg(ladder, name),
        "histogram": lambda name: distribution.histogram_svg(measurements, name),
        "placement": lambda name: distribution.placement_svg(classified, name),
        "latency": lambda name: latency.latency_svg(chase, {"alpha": [{"level": 1, "size_bytes": 32768}]}, name),
        "loaded": lambda name: latency.loaded_svg(loaded, name, {"sys": 64}),
        "matrix": lambda name: node_heatmap.matrix_svg(matrices, name),
        "handoff": lambda name: c2c.c2c_svg(pairs, "m", name),
    }


def test_every_figure_kind_draws_the_same_bytes_twice(tables):
    """A rerun changes nothing (issue 33): the ladder's dots are jittered
    by seaborn from numpy's global generator, drawn under a fixed seed;
    the global generator is left as it was."""
    from membench.figures import plot

    drawers = _drawers(tables)
    assert set(drawers) == set(plot.KINDS), "a figure kind without a determinism check"
    np.random.seed(123)
    before = np.random.get_state()[1].copy()
    for kind, draw in drawers.items():
        first, second = draw(f"t-{kind}"), draw(f"t-{kind}")
        assert "<svg" in first[:400], kind
        assert first == second, f"{kind}: two drawings of the same inputs differ"
    assert (np.random.get_state()[1] == before).all(), "the global generator is restored"
