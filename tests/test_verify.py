"""Obtained vs requested placement: every kind of mismatch is flagged, and
what was asked for and obtained passes."""

import pytest

from membench.store.verify import placement_problems

OK = {
    "status": "ok", "policy": "default", "policy_requested": "default", "pages": "4k", "hugepage_fraction": 0.0,
    "affinity": "close", "threads": 2, "cpus": [0, 1], "cpus_bound": [0, 1], "cpu_nodes": [0, 0],
    "page_nodes": {"0": 1.0},
}  # fmt: skip


def check(**changes):
    return placement_problems({**OK, **changes})


def test_what_was_asked_passes():
    assert check() == []
    assert check(policy="bind:1", policy_requested="bind:1", page_nodes={"1": 1.0}) == []
    assert check(policy="bind:3", policy_requested="remote", page_nodes={"3": 1.0}) == []
    assert check(policy="interleave:0,1", policy_requested="interleave:0,1", page_nodes={"0": 0.5, "1": 0.5}) == []
    assert check(policy="interleave:all", policy_requested="interleave:all", memory_nodes=[0, 1], page_nodes={"0": 0.5, "1": 0.5}) == []
    assert check(policy="interleave:all", policy_requested="interleave:all", memory_nodes=[0]) == []  # one node: nothing to spread
    assert check(policy="preferred:1", policy_requested="preferred:1", page_nodes={"1": 0.95, "0": 0.05}) == []
    assert check(pages="thp", hugepage_fraction=0.97) == []
    assert check(affinity="cpus:1,0", cpus=[1, 0], cpus_bound=[1, 0]) == []
    assert check(affinity="none", cpus=[0, 0], cpus_bound=None) == []  # asked nothing


@pytest.mark.parametrize(
    ("changes", "fragment"),
    [
        ({"policy": "bind:1", "policy_requested": "bind:1"}, "asked bind:1, pages on node 0: 100%"),
        ({"policy": "bind:2", "policy_requested": "remote", "page_nodes": {"0": 0.4, "2": 0.6}}, "asked bind:2"),
        ({"policy": "interleave:0,1", "policy_requested": "interleave:0,1"}, "asked interleave:0,1"),
        ({"policy": "interleave:all", "policy_requested": "interleave:all", "page_nodes": {"0": 0.9, "1": 0.1}}, "interleave:all"),
        ({"policy": "preferred:1", "policy_requested": "preferred:1", "page_nodes": {"1": 0.5, "0": 0.5}}, "asked preferred:1"),
        ({"policy": "local", "policy_requested": "local", "cpu_nodes": [1, 1]}, "asked local (threads on nodes [1])"),
        ({"policy": "bind:0", "policy_requested": "bind:0", "page_nodes": {}}, "could not be sampled"),
        ({"policy": "interleave:all", "policy_requested": "interleave:all", "memory_nodes": [0, 1]}, "asked interleave:all, pages on node 0: 100%"),
        ({"pages": "thp", "hugepage_fraction": float("nan")}, "huge-page fraction unknown"),
        ({"pages": "thp", "hugepage_fraction": 0.1}, "asked thp, 10% huge pages"),
        ({"pages": "4k", "hugepage_fraction": 0.2}, "asked 4k pages, 20% huge pages"),
        ({"pages": "hugetlb-2m", "hugepage_fraction": 0.5}, "asked hugetlb-2m"),
        ({"cpus": [0, 0]}, "threads ended on [0, 0]"),
        ({"cpus_bound": None}, "were not bound"),
        ({"affinity": "cpus:1,0"}, "asked cpus:1,0, bound to [0, 1]"),
    ],
)
def test_mismatches_are_named(changes, fragment):
    problems = check(**changes)
    assert any(fragment in p for p in problems), problems


def test_records_that_did_not_run_have_nothing_to_check():
    assert placement_problems({"status": "skipped"}) == []


def test_json_text_from_the_csv_table_is_understood():
    assert check(page_nodes='{"1": 1.0}', policy="bind:1", policy_requested="bind:1", cpus="[0, 1]", cpus_bound="[0, 1]") == []
