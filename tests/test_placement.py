"""Placement classes of single runs on a 2-socket SMT machine (2 x 4 cores
x 2 threads: CPU c and c + 8 are siblings, node = socket), with known
answers, and the figure's class labels staying few."""

import sys
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))

from membench.store import placement_classes  # noqa: E402
from membench.store import collect
from synthetic_runs import MACHINES  # noqa: E402

TOPOLOGY = MACHINES["2x4x2"].topology()
MACHINE = placement_classes.Machine(TOPOLOGY)


def classify(cpus, start=None, pages=None, huge=0.0):
    return placement_classes.classify(MACHINE, cpus, start if start is not None else cpus, pages or {"0": 1.0}, huge)


def test_the_synthetic_machine_numbers_cpus_as_linux_does():
    cpus = {c["cpu"]: c for c in TOPOLOGY["cpus"]}
    assert cpus[0]["siblings"] == [0, 8] and cpus[12]["siblings"] == [4, 12]
    assert [n["cpus"] for n in TOPOLOGY["nodes"]] == [[0, 1, 2, 3, 8, 9, 10, 11], [4, 5, 6, 7, 12, 13, 14, 15]]


def test_threads_per_node_and_package_and_imbalance():
    got = classify([0, 1, 2, 4], pages={"0": 0.75, "1": 0.25})
    assert got["threads_per_node"] == got["threads_per_package"] == "3+1"
    assert got["node_imbalance"] == 2
    assert classify([0, 1])["threads_per_node"] == "2+0" and classify([0, 1])["node_imbalance"] == 2
    assert classify([0, 4])["node_imbalance"] == 0


def test_smt_siblings_and_oversubscription_are_counted():
    got = classify([0, 8, 1, 9, 2])
    assert got["smt_shared_cores"] == 2 and got["oversubscribed_cpus"] == 0
    got = classify([3, 3, 5, 5, 6])
    assert got["oversubscribed_cpus"] == 2 and got["smt_shared_cores"] == 0  # one CPU twice is not SMT


def test_migrated_threads_compare_start_and_end():
    assert classify([0, 1, 2], start=[0, 5, 6])["migrated_threads"] == 2
    assert classify([0, 1, 2])["migrated_threads"] == 0


@pytest.mark.parametrize(
    "cpus, pages, expected",
    [
        ([0, 1], {"0": 1.0}, "local"),
        ([0, 1], {"1": 1.0}, "remote"),
        ([0, 4], {"0": 0.5, "1": 0.5}, "local"),  # threads on both nodes, half the pages each
        ([0, 4], {"0": 1.0}, "split"),  # every page on one of the two nodes
        ([0, 1], {"0": 0.5, "1": 0.5}, "split"),
        ([0, 1], {}, "not sampled"),
    ],
)
def test_page_locality_relative_to_the_thread_nodes(cpus, pages, expected):
    assert placement_classes.pages_class(pages, [MACHINE.node_of[c] for c in cpus])[0] == expected


@pytest.mark.parametrize("fraction, expected", [(0.0, "none"), (0.2, "< 50 %"), (0.7, "50-99 %"), (1.0, "all"), (None, "unknown")])
def test_hugepage_fraction_bins(fraction, expected):
    assert placement_classes.hugepage_bin(fraction) == expected


def test_counts_bin_in_powers_of_two():
    assert [placement_classes.count_bin(v) for v in (0, 1, 2, 3, 4, 7, 8, 200)] == ["0", "1", "2–3", "2–3", "4–7", "4–7", "8–15", "128–255"]


def frame(runs):
    rows = [
        {"system": "s", "status": "ok", "policy": "default", "pages": "4k", "affinity": "none", "threads": len(cpus), "cpus": str(cpus), "cpus_start": str(start), "page_nodes": pages,
         "hugepage_fraction": 0.0, "migrated": cpus != start}
        for cpus, start, pages in runs
    ]  # fmt: skip
    return collect.records_table(rows, {"s": TOPOLOGY})


def test_the_table_classifies_ok_rows_and_leaves_others_empty():
    ok = {"system": "s", "status": "ok", "policy": "default", "pages": "4k", "affinity": "none", "threads": 2,
          "cpus": [0, 1], "cpus_start": [0, 1], "page_nodes": {"0": 1.0}, "hugepage_fraction": 0.0}  # fmt: skip
    table = collect.records_table([{"system": "s", "status": "skipped"}, ok], {"s": TOPOLOGY})
    assert pd.isna(table["threads_per_node"][0]) and table["threads_per_node"][1] == "2+0"


def test_figure_classes_stay_few_and_keep_what_explains():
    node0 = [0, 1, 2, 3, 8, 9, 10, 11]
    runs = []
    for i in range(200):  # many distinct placements on node 0: SMT sharing, two on one CPU, migration
        cpus = [node0[i % 8], node0[(i // 8) % 8], node0[(i * 3) % 8], node0[(i * 5 + 1) % 8]]
        runs.append((cpus, cpus if i % 3 else [15, 14, 13, 12], '{"1": 1.0}' if i % 50 == 0 else '{"0": 1.0}'))
    table = frame(runs)
    labels = placement_classes.figure_classes(table, explaining=["page_locality"])
    assert labels.nunique() <= placement_classes.MAX_FIGURE_CLASSES
    assert labels.str.startswith("pages remote").sum() == 4  # the rare class that explains is named, not "other"
    assert placement_classes.figure_classes(frame([([0, 1], [0, 1], '{"0": 1.0}')] * 3)).unique().tolist() == ["same placement in every run"]


def test_placement_summary_is_classes_with_counts():
    table = frame([([0, 1], [0, 1], '{"0": 1.0}')] * 3 + [([0, 0], [0, 0], '{"0": 1.0}')])
    text = placement_classes.placement_summary(table)
    assert "threads per node 2+0 ×4" in text and "oversubscribed CPUs 0 ×3, 1 ×1" in text
    assert "[0, 1]" not in text  # raw lists stay in the records
