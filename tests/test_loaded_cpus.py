"""Loaded latency keeps the chaser's core free of load (issue 30): for
every affinity the load threads run off the chasing CPU's core and its SMT
siblings, on dev16's topology (16 CPUs, no SMT), the 64-CPU 2-socket SMT
fixture (siblings c and c + 32) and the 2-socket SMT guest of
tests/test_numa_guest.py (2 sockets x 2 cores x 2 threads, siblings 2k and
2k + 1)."""

import json
import sys
from pathlib import Path

import pytest

from membench.measure import harness, loaded_cpus
from membench.probe import topology as probe

FIXTURES = Path(__file__).resolve().parent / "fixtures"
sys.path.insert(0, str(FIXTURES / "topology"))
import sysfs_tree  # noqa: E402


def dev16() -> dict:
    return json.loads((FIXTURES / "dev16" / "topology.json").read_text())


@pytest.fixture(scope="module")
def smt64(tmp_path_factory) -> dict:
    return probe.read_topology(sysfs_tree.write_fixture("two-socket-smt", tmp_path_factory.mktemp("smt64")))


def smt_guest() -> dict:
    """The QEMU guest of test_numa_guest's SMT boot: -smp 8,sockets=2,cores=2,threads=2."""
    cpus = [{"cpu": c, "package": c // 4, "node": c // 4, "core": (c % 4) // 2, "siblings": [c - c % 2, c - c % 2 + 1],
             "l2_id": c // 2, "l3_id": c // 4} for c in range(8)]  # fmt: skip
    return {"cpus": cpus, "nodes": [{"node": n, "cpus": list(range(4 * n, 4 * n + 4)), "memory_bytes": 1 << 30, "distances": [10, 20] if n == 0 else [20, 10]} for n in (0, 1)],
            "caches": [], "llc_bytes": 16 << 20, "line_bytes": 64, "packages": 2}  # fmt: skip


def request(threads, affinity) -> harness.Request:
    return harness.Request(system="s", kernel="loaded", variant="default", ops=("triad",), threads=threads, affinity=affinity,
                           policy="default", pages="4k", init="parallel", size=1 << 29, ntimes=3, repeat=0)  # fmt: skip


def cpus_of(resolved: dict) -> list[int]:
    return probe.parse_cpulist(resolved["affinity"].removeprefix("cpus:"))


AFFINITIES = ["none", "close", "spread", "node:0"]


@pytest.mark.parametrize("affinity", AFFINITIES)
@pytest.mark.parametrize("threads", ["all", "cores", 2])
@pytest.mark.parametrize("name", ["dev16", "smt64", "smt_guest"])
def test_load_threads_never_share_the_chasers_core(name, threads, affinity, smt64):
    topo = {"dev16": dev16, "smt_guest": smt_guest}.get(name, lambda: smt64)()
    allowed = sorted(c["cpu"] for c in topo["cpus"])
    resolved, why = harness.resolve(request(threads, affinity), topo, allowed)
    assert why is None, why
    cpus = cpus_of(resolved)
    chaser, load = cpus[0], cpus[1:]
    assert resolved["threads"] == len(cpus) >= 2 and len(set(cpus)) == len(cpus)
    core = loaded_cpus.siblings(chaser, topo)
    assert not core & set(load), (chaser, core, load)
    if threads == "all":  # every CPU off the chaser's core loads
        expected = len(allowed) - len(core) if not affinity.startswith("node:") else len([c for c in topo["cpus"] if c["node"] == 0]) - len(core)
        assert len(load) == expected


def test_close_on_smt_skips_the_sibling_and_keeps_the_order(smt64):
    """close puts thread 1 on CPU 0's sibling (32) for bandwidth cells; a
    loaded cell takes the next core instead."""
    allowed = list(range(64))
    assert loaded_cpus.affinity_order("close", allowed, smt64)[:3] == [0, 32, 1]
    resolved, why = harness.resolve(request(3, "close"), smt64, allowed)
    assert why is None and cpus_of(resolved) == [0, 1, 33]
    guest = smt_guest()
    resolved, _ = harness.resolve(request("all", "close"), guest, list(range(8)))
    assert cpus_of(resolved) == [0, 2, 3, 4, 5, 6, 7]


def test_an_explicit_count_that_needs_a_sibling_is_not_run():
    guest = smt_guest()
    resolved, why = harness.resolve(request(2, "cpus:0,1"), guest, list(range(8)))
    assert why and "off the core of CPU 0" in why and "[1]" in why
    resolved, why = harness.resolve(request(8, "close"), guest, list(range(8)))
    assert why and "7 load threads" in why and "gives 6" in why
