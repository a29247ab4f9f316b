"""Per-cell statistics on a small table with known answers."""

import math

import pandas as pd
import pytest

from membench.analyse import stats

BASE = dict(
    system="s", experiment="e", cell="e/stream-default/c", kernel="stream", variant="default", op="triad",
    threads_requested="all", affinity="close", policy_requested="default", pages="4k", init="parallel",
    size_requested="auto", threads=2, size_bytes=4096, policy="default", reason=None, gbps_wa=1.0,
    hugepage_fraction=0.0, migrated=False, page_nodes='{"0": 1.0}',
)  # fmt: skip


def table(rows):
    return pd.DataFrame([{**BASE, **row} for row in rows])


def test_summary_of_ok_repetitions():
    frame = table(
        [
            {"status": "ok", "gbps": 10.0, "cpus": "[0, 1]"},
            {"status": "ok", "gbps": 12.0, "cpus": "[0, 1]"},
            {"status": "ok", "gbps": 14.0, "cpus": "[1, 0]", "migrated": True},
            {"status": "failed", "gbps": None, "cpus": None, "reason": "validation failed"},
        ]
    )
    (row,) = stats.summarise_cells(frame).to_dict("records")
    assert (row["n_ok"], row["n_failed"], row["n_skipped"]) == (3, 1, 0)
    assert row["gbps_mean"] == pytest.approx(12.0)
    assert row["gbps_std"] == pytest.approx(2.0)  # sample std (ddof=1)
    assert (row["gbps_min"], row["gbps_median"], row["gbps_max"]) == (10.0, 12.0, 14.0)
    assert row["placement_classes"] == "not classified (no topology.json)"  # raw CPU lists are not listed
    assert row["migrated_runs"] == 1


def test_a_single_repetition_has_no_std():
    (row,) = stats.summarise_cells(table([{"status": "ok", "gbps": 9.0, "cpus": "[0]"}])).to_dict("records")
    assert math.isnan(row["gbps_std"]) and row["gbps_mean"] == 9.0


def test_cells_without_ok_runs_have_counts_but_no_numbers():
    frame = table([{"status": "skipped", "gbps": None, "cpus": None, "reason": "no node 1"}] * 2)
    (row,) = stats.summarise_cells(frame).to_dict("records")
    assert row["n_skipped"] == 2 and row["n_ok"] == 0
    assert "gbps_mean" not in row or math.isnan(row["gbps_mean"])


def test_problem_cells_group_by_reason():
    frame = table(
        [
            {"status": "skipped", "reason": "no node 1", "gbps": None, "cpus": None},
            {"status": "skipped", "reason": "no node 1", "gbps": None, "cpus": None},
            {"status": "ok", "gbps": 3.0, "cpus": "[0]"},
        ]
    )
    problems = stats.problem_cells(frame).to_dict("records")
    assert problems == [
        {"system": "s", "experiment": "e", "cell": "e/stream-default/c", "status": "skipped", "reason": "no node 1", "records": 2}
    ]
    assert stats.problem_cells(frame[frame["status"] == "ok"]).empty


def test_placement_classes_with_counts_when_classified():
    frame = table(
        [
            {"status": "ok", "gbps": 10.0, "cpus": "[0, 1]", "threads_per_node": "2", "oversubscribed_cpus": 0},
            {"status": "ok", "gbps": 11.0, "cpus": "[0, 1]", "threads_per_node": "2", "oversubscribed_cpus": 0},
            {"status": "ok", "gbps": 8.0, "cpus": "[0, 0]", "threads_per_node": "2", "oversubscribed_cpus": 1},
        ]
    )
    (row,) = stats.summarise_cells(frame).to_dict("records")
    assert row["placement_classes"] == "threads per node 2 ×3; oversubscribed CPUs 0 ×2, 1 ×1"


def test_distinct_patterns_are_bounded():
    frame = table([{"status": "ok", "gbps": 1.0, "cpus": "[0]", "placement_problems": f"note {i}"} for i in range(10)])
    (row,) = stats.summarise_cells(frame).to_dict("records")
    assert row["placement_notes"].count(" x1") == 3 and row["placement_notes"].endswith("7 more x7")


def test_placement_mismatches_are_counted_per_cell():
    frame = table(
        [
            {"status": "ok", "gbps": 10.0, "cpus": "[0, 1]", "placement_problems": None},
            {"status": "ok", "gbps": 11.0, "cpus": "[0, 0]", "placement_problems": "asked close (bound [0, 1]), threads ended on [0, 0]"},
        ]
    )
    (row,) = stats.summarise_cells(frame).to_dict("records")
    assert row["placement_mismatches"] == 1
    assert row["placement_notes"] == "asked close (bound [0, 1]), threads ended on [0, 0] x1"
