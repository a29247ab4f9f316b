"""Resolving a cell against a host, and turning any harness outcome into
records that keep the contract."""

import json
import os
import stat

import pytest

from membench.measure import auto_size
from membench.measure import harness as measure
from membench.core.atomic_files import contract_problems, read_jsonl

ONE_NODE = {
    "llc_bytes": 105 * 2**20,
    "cpus": [{"cpu": 0, "node": 0}, {"cpu": 1, "node": 0}],
    "nodes": [{"node": 0, "cpus": [0, 1], "memory_bytes": 2**34, "distances": [10]}],
}
FOUR_NODES = {
    "llc_bytes": 32 * 2**20,
    "cpus": [{"cpu": c, "node": c // 2} for c in range(8)],
    "nodes": [
        {"node": n, "cpus": [2 * n, 2 * n + 1], "memory_bytes": 2**34, "distances": row}
        for n, row in enumerate([[10, 12, 20, 22], [12, 10, 22, 20], [20, 22, 10, 12], [22, 20, 12, 10]])
    ],
}


def request(**overrides):
    values = dict(
        system="host", kernel="stream", variant="default", ops=("copy", "triad"), threads=1,
        affinity="none", policy="default", pages="4k", init="parallel", size=2**20, ntimes=3, repeat=0,
    )  # fmt: skip
    values.update(overrides)
    return measure.Request(**values)


def test_all_threads_and_auto_size_resolve_from_the_host():
    resolved, reason = measure.resolve(request(threads="all", size="auto"), ONE_NODE, [0, 1])
    assert reason is None
    assert resolved["threads"] == 2
    assert resolved["size"] == 4 * 105 * 2**20


def test_auto_size_has_a_floor_of_256_mib():
    assert auto_size.arrays_size({"llc_bytes": 2**20}) == 256 * 2**20
    assert auto_size.arrays_size({"llc_bytes": None}) == 256 * 2**20


@pytest.mark.parametrize(
    ("overrides", "fragment"),
    [
        ({"threads": 3}, "3 threads requested but only 2 CPUs"),
        ({"affinity": "cpus:0,5"}, "CPUs [5] are not available"),
        ({"threads": 2, "affinity": "cpus:1"}, "gives 1 CPUs for 2 threads"),
        ({"policy": "remote"}, "policy remote needs a memory node without threads"),
    ],
)
def test_cells_the_host_cannot_run_are_skipped_with_a_reason(overrides, fragment):
    _, reason = measure.resolve(request(**overrides), ONE_NODE, [0, 1])
    assert reason is not None and fragment in reason


def test_remote_binds_to_the_farthest_node_from_the_threads():
    resolved, reason = measure.resolve(request(policy="remote", affinity="cpus:0"), FOUR_NODES, list(range(8)))
    assert reason is None and resolved["policy"] == "bind:3"
    resolved, _ = measure.resolve(request(policy="remote", affinity="cpus:4", threads=1), FOUR_NODES, list(range(8)))
    assert resolved["policy"] == "bind:1"


def test_harness_argv_quotes_nothing_and_passes_every_knob(option_listings):
    argv = measure.harness_argv("/bin/h", request(system="a b;rm -rf /"), {"threads": 1, "size": 4096, "policy": "default", "affinity": "none"},
                                option_listings["stream"])
    assert argv[argv.index("--system") + 1] == "a b;rm -rf /"  # one argv element, no shell
    for flag in ("--op", "--threads", "--affinity", "--policy", "--pages", "--init", "--size", "--ntimes", "--repeat"):
        assert flag in argv


def test_the_chase_group_reaches_chase_and_loaded_only(option_listings):
    knobs = {"threads": 2, "size": 4096, "policy": "default", "affinity": "none"}
    for kernel, group, want in (("chase", "full", "full"), ("loaded", 65536, "65536"), ("chase", 262144, "262144")):
        argv = measure.harness_argv("/bin/h", request(kernel=kernel, chase_group=group), knobs, option_listings[kernel])
        assert argv[argv.index("--group") + 1] == want
    assert "--group" not in measure.harness_argv("/bin/h", request(chase_group="full"), knobs, option_listings["stream"])


def fake_harness(tmp_path, body: str, lists_options: str = ""):
    """A harness that runs `body` (and answers --list-options with the
    line `lists_options`, the conftest fixture, where given)."""
    path = tmp_path / "fake-harness"
    path.write_text("#!/bin/sh\n" + lists_options + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def run_cell(tmp_path, binary, req):
    topology = tmp_path / "topology.json"
    topology.write_text(json.dumps(ONE_NODE))
    out = tmp_path / "runs" / "r0.jsonl"
    records = measure.measure_cell(
        str(binary), str(topology), str(out), str(tmp_path / "log"),
        request=req, experiment="e", cell_id="e/stream-default/x",
    )  # fmt: skip
    assert read_jsonl(out) == json.loads(json.dumps(records))
    for record in records:
        assert contract_problems(record) == []
    return records


def test_a_crashing_harness_gives_failed_records(tmp_path, lists_options):
    binary = fake_harness(tmp_path, "echo boom >&2; exit 139", lists_options)
    records = run_cell(tmp_path, binary, request())
    assert [r["status"] for r in records] == ["failed", "failed"]
    assert "exited with code 139" in records[0]["reason"]
    assert "boom" in (tmp_path / "log").read_text()


def test_non_json_output_is_a_failure_not_a_silent_loss(tmp_path, lists_options):
    binary = fake_harness(tmp_path, "echo 'Function Best Rate'; exit 0", lists_options)
    records = run_cell(tmp_path, binary, request())
    assert all(r["status"] == "failed" and "non-JSON" in r["reason"] for r in records)


def test_unrunnable_cells_never_start_the_harness(tmp_path):
    binary = fake_harness(tmp_path, f"touch {tmp_path}/started; exit 0")
    records = run_cell(tmp_path, binary, request(threads=64))
    assert all(r["status"] == "skipped" for r in records)
    assert not (tmp_path / "started").exists()
    assert records[0]["threads_requested"] == 64 and records[0]["cell"] == "e/stream-default/x"


def test_binding_variables_of_the_caller_do_not_reach_the_harness(tmp_path, lists_options, monkeypatch):
    monkeypatch.setenv("OMP_PROC_BIND", "true")
    monkeypatch.setenv("OMP_PLACES", "cores")
    binary = fake_harness(tmp_path, "env > " + str(tmp_path / "env.txt") + "; exit 0", lists_options)
    run_cell(tmp_path, binary, request())
    env = (tmp_path / "env.txt").read_text()
    assert "OMP_PROC_BIND" not in env and "OMP_PLACES" not in env
    assert os.environ["OMP_PROC_BIND"] == "true"


SMT_TWO_NODES = {
    "llc_bytes": 2**25,
    "cpus": [
        {"cpu": cpu, "node": cpu // 4, "package": cpu // 4, "core": (cpu % 4) // 2, "siblings": [cpu - cpu % 2, cpu - cpu % 2 + 1]}
        for cpu in range(8)
    ],
    "nodes": [
        {"node": 0, "cpus": [0, 1, 2, 3], "memory_bytes": 2**34, "distances": [10, 21]},
        {"node": 1, "cpus": [4, 5, 6, 7], "memory_bytes": 2**34, "distances": [21, 10]},
    ],
}


def test_node_relative_affinity_and_thread_counts():
    allowed = list(range(8))
    resolved, reason = measure.resolve(request(affinity="node:1", threads="node"), SMT_TWO_NODES, allowed)
    assert reason is None
    assert resolved["affinity"] == "cpus:4,6,5,7"  # one per core first, then the SMT siblings
    assert resolved["threads"] == 2  # the cores of node 1
    assert measure.resolve(request(threads="cores"), SMT_TWO_NODES, allowed)[0]["threads"] == 4
    assert measure.resolve(request(threads="all"), SMT_TWO_NODES, allowed)[0]["threads"] == 8
    _, reason = measure.resolve(request(affinity="node:3"), SMT_TWO_NODES, allowed)
    assert "no usable CPUs on node 3" in reason


def test_remote_from_a_node_affinity():
    resolved, reason = measure.resolve(request(affinity="node:0", threads="node", policy="remote"), SMT_TWO_NODES, list(range(8)))
    assert reason is None and resolved["policy"] == "bind:1"
