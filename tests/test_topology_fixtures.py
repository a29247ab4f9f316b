"""membench.probe.topology on captured and described multi-node machines
(tests/fixtures/topology): the AWS x1.32xlarge of the AWS paper, a 2-socket
machine with SMT, a 4-node layout with unequal distances, node ids with a
gap (POWER), and the sysfs of the 4-node QEMU guest captured from its real
kernel (tools/numa_guest). And harness.remote_node / resolve on them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "topology"
sys.path.insert(0, str(FIXTURES))

import sysfs_tree  # noqa: E402
from membench.probe import topology  # noqa: E402
from membench.measure import auto_size, harness

GiB = 2**30


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """name -> read_topology of that fixture's tree (written once)."""
    cache = {}

    def get(name):
        if name not in cache:
            root = sysfs_tree.write_fixture(name, tmp_path_factory.mktemp(name))
            cache[name] = (root, topology.read_topology(root))
        return cache[name][1]

    return get


def by_cpu(topo):
    return {c["cpu"]: c for c in topo["cpus"]}


def nodes(topo):
    return {n["node"]: n for n in topo["nodes"]}


# ------------------------------------------------- invariants of every tree


@pytest.mark.parametrize("name", sysfs_tree.fixture_names())
def test_every_fixture_is_consistent(tree, name):
    topo = tree(name)
    cpus = by_cpu(topo)
    node_cpus = [c for n in topo["nodes"] for c in n["cpus"]]
    assert sorted(node_cpus) == sorted(cpus), "every CPU in exactly one node"
    for n in topo["nodes"]:
        assert all(cpus[c]["node"] == n["node"] for c in n["cpus"])
        assert n["distances"][n["node"]] == 10
        for m in topo["nodes"]:
            assert n["distances"][m["node"]] == m["distances"][n["node"]] > 10 or m is n
    for c in cpus.values():
        assert c["cpu"] in c["siblings"]
        for s in c["siblings"]:  # siblings share a core and list each other
            assert cpus[s]["siblings"] == c["siblings"]
            assert (cpus[s]["package"], cpus[s]["core"], cpus[s]["node"]) == (c["package"], c["core"], c["node"])
    assert topo["cores"] == len({tuple(c["siblings"]) for c in cpus.values()})


# -------------------------------------------------------- (a) x1.32xlarge


def numactl_hardware(topo) -> list[list[str]]:
    """The lines `numactl --hardware` prints for this topology (without the
    free-memory lines, which are not topology), as whitespace tokens."""
    ids = [n["node"] for n in topo["nodes"]]
    lines = [f"available: {len(ids)} nodes ({sysfs_tree.format_list(ids)})"]
    for n in topo["nodes"]:
        lines.append(f"node {n['node']} cpus: " + " ".join(map(str, n["cpus"])))
        lines.append(f"node {n['node']} size: {n['memory_bytes'] // 2**20} MB")
    lines.append("node distances:")
    lines.append("node " + " ".join(map(str, ids)))
    for n in topo["nodes"]:
        lines.append(f"{n['node']}: " + " ".join(str(n["distances"][m]) for m in ids))
    return [line.split() for line in lines]


def test_x1_32xlarge_matches_the_papers_listing(tree):
    listing = (FIXTURES / "aws-x1.32xlarge.numactl.txt").read_text().splitlines()
    paper = [line.split() for line in listing[1:] if " free: " not in line]
    assert numactl_hardware(tree("aws-x1.32xlarge")) == paper


def test_x1_32xlarge(tree):
    topo = tree("aws-x1.32xlarge")
    assert len(topo["cpus"]) == 128 and topo["cores"] == 64 and topo["packages"] == 4
    node = nodes(topo)
    assert sorted(node) == [0, 1, 2, 3]
    for n in range(4):
        assert node[n]["cpus"] == [*range(16 * n, 16 * n + 16), *range(64 + 16 * n, 80 + 16 * n)]
        assert node[n]["distances"] == [10 if m == n else 20 for m in range(4)]
    assert [node[n]["memory_bytes"] // 2**20 for n in range(4)] == [491822, 491900, 491900, 491899]
    cpus = by_cpu(topo)
    for c in range(64):
        assert cpus[c]["siblings"] == cpus[c + 64]["siblings"] == [c, c + 64]
        assert cpus[c]["package"] == cpus[c]["node"] == c // 16
    assert topo["llc_bytes"] == 45 * 2**20 and topo["line_bytes"] == 64
    assert [c["size_bytes"] for c in topo["caches"]] == [32 * 1024, 32 * 1024, 256 * 1024, 45 * 2**20]
    # Equal distances: no node is farther than another; the lowest id wins.
    assert harness.remote_node({0}, topo) == 1
    assert harness.remote_node({0, 1, 2, 3}, topo) is None


# ------------------------------------------------ (b) 2 sockets with SMT


def test_two_socket_smt(tree):
    topo = tree("two-socket-smt")
    assert len(topo["cpus"]) == 64 and topo["cores"] == 32 and topo["packages"] == 2
    node = nodes(topo)
    assert node[0]["cpus"] == [*range(0, 16), *range(32, 48)]
    assert node[1]["cpus"] == [*range(16, 32), *range(48, 64)]
    assert [n["distances"] for n in topo["nodes"]] == [[10, 21], [21, 10]]
    assert node[0]["memory_bytes"] == 97406268 * 1024 and node[1]["memory_bytes"] == 99034172 * 1024
    cpus = by_cpu(topo)
    assert cpus[5]["siblings"] == cpus[37]["siblings"] == [5, 37]
    assert cpus[20] == {"cpu": 20, "core": 4, "package": 1, "node": 1, "siblings": [20, 52],
                        "l2_id": None, "l3_id": None}  # the fixture describes cpu0's caches only
    # Core ids have gaps (0-6, 8-14, 16-17): cores are counted, not read off the largest id.
    assert {cpus[c]["core"] for c in range(16)} == {*range(0, 7), *range(8, 15), 16, 17}
    assert topo["llc_bytes"] == 22 * 2**20
    assert topo["cpu_model"].startswith("Intel(R) Xeon(R) Gold 6130") and "avx512f" in topo["cpu_flags"]
    assert harness.remote_node({0}, topo) == 1 and harness.remote_node({1}, topo) == 0


# --------------------------------------- (c) 4 nodes, unequal distances


def test_four_nodes_unequal(tree):
    topo = tree("four-node-unequal")
    assert len(topo["cpus"]) == 16 and topo["cores"] == 16 and topo["packages"] == 4
    assert [n["cpus"] for n in topo["nodes"]] == [list(range(4 * n, 4 * n + 4)) for n in range(4)]
    assert [n["memory_bytes"] for n in topo["nodes"]] == [32 * GiB, 32 * GiB, 16 * GiB, 32 * GiB]
    assert [n["distances"] for n in topo["nodes"]] == [
        [10, 16, 22, 20],
        [16, 10, 16, 22],
        [22, 16, 10, 16],
        [20, 22, 16, 10],
    ]
    assert all(c["siblings"] == [c["cpu"]] for c in topo["cpus"])  # no SMT
    assert topo["llc_bytes"] == 6 * 2**20


@pytest.mark.parametrize(
    "threads_on, farthest",
    [({0}, 2), ({1}, 3), ({2}, 0), ({3}, 1), ({0, 1}, 3), ({2, 3}, 0), ({0, 3}, 1), ({0, 1, 2}, 3), ({0, 1, 2, 3}, None)],
)
def test_remote_node_picks_the_farthest(tree, threads_on, farthest):
    """Largest summed distance from the threads' nodes; ties ({0, 3}: 1 and 2
    both at 38) go to the lowest node id."""
    assert harness.remote_node(threads_on, tree("four-node-unequal")) == farthest


def test_remote_node_skips_nodes_without_memory(tree):
    topo = tree("four-node-unequal")
    memoryless = {**topo, "nodes": [{**n, "memory_bytes": 0} if n["node"] == 2 else n for n in topo["nodes"]]}
    assert harness.remote_node({0}, memoryless) == 3  # 2 is farther but holds no memory


def test_policy_remote_resolves_to_a_bind(tree):
    topo = tree("four-node-unequal")
    allowed = [c["cpu"] for c in topo["cpus"]]
    request = harness.Request(
        system="fixture", kernel="stream", variant="default", ops=("triad",), threads=4,
        affinity="cpus:4-7", policy="remote", pages="4k", init="parallel", size=2**20,
        ntimes=2, repeat=0,
    )  # fmt: skip
    resolved, reason = harness.resolve(request, topo, allowed)
    assert reason is None and resolved["policy"] == "bind:3"  # threads on node 1


# ------------------------------------------------ node ids with a gap


def test_node_ids_with_a_gap(tree):
    """Distances are indexed by node id even when the ids are 0 and 8."""
    topo = tree("power-nodes-0-8")
    node = nodes(topo)
    assert sorted(node) == [0, 8] and topo["packages"] == 2 and topo["cores"] == 8
    assert node[0]["distances"][0] == 10 and node[0]["distances"][8] == 40
    assert node[8]["distances"][0] == 40 and node[8]["distances"][8] == 10
    assert by_cpu(topo)[17]["siblings"] == [16, 17, 18, 19] and by_cpu(topo)[17]["node"] == 8
    assert harness.remote_node({0}, topo) == 8 and harness.remote_node({8}, topo) == 0


# ------------------------------------- captured from the 4-node QEMU guest


def test_captured_qemu_guest(tree):
    """tools/numa_guest's 4-node guest, as its Linux 6.1 kernel showed it."""
    topo = tree("qemu-4node-guest")
    assert [n["cpus"] for n in topo["nodes"]] == [[0], [1], [2], [3]]
    assert [n["distances"] for n in topo["nodes"]] == [
        [10, 16, 32, 22],
        [16, 10, 22, 28],
        [32, 22, 10, 16],
        [22, 28, 16, 10],
    ]
    assert [c["node"] for c in topo["cpus"]] == [0, 1, 2, 3]
    assert topo["packages"] == 4 and topo["cores"] == 4
    assert 150 * 2**20 < nodes(topo)[0]["memory_bytes"] <= 224 * 2**20
    assert all(100 * 2**20 < nodes(topo)[n]["memory_bytes"] <= 128 * 2**20 for n in (1, 2, 3))
    assert harness.remote_node({0}, topo) == 2 and harness.remote_node({1, 2}, topo) == 0


# ------------------------- (e) every cache instance: STREAM's 4 x all LLCs


def test_genoa_lists_twelve_l3s_and_auto_is_four_times_their_sum(tree):
    """An EPYC 9654 socket: 12 L3s of 32 MiB. `llc_bytes` keeps one (older
    readers); auto sizes each array at 4 x 384 MiB, not 4 x 32 MiB."""
    topo = tree("epyc-genoa-12-l3")
    l3 = [c for c in topo["cache_instances"] if c["level"] == 3]
    assert len(l3) == 12 and {c["size_bytes"] for c in l3} == {32 * 2**20}
    assert l3[1]["cpus"] == [*range(8, 16), *range(104, 112)]
    assert sorted(cpu for c in l3 for cpu in c["cpus"]) == list(range(192))
    assert len([c for c in topo["cache_instances"] if c["level"] == 2]) == 96
    assert topo["llc_bytes"] == 32 * 2**20 and topo["llc_count"] == 12
    assert topo["llc_total_bytes"] == topology.llc_total_bytes(topo) == 384 * 2**20
    assert auto_size.arrays_size(topo) == 4 * 384 * 2**20
    # A team's usable LLC: the instances its CPUs share.
    assert topology.llc_capacity(topo, [0, 1, 96]) == 32 * 2**20
    assert topology.llc_capacity(topo, [0, 8, 200]) == 64 * 2**20
    assert topology.llc_capacity(topo, range(192)) == 384 * 2**20


def test_two_sockets_give_auto_four_times_both_l3s(tree):
    topo = tree("two-socket-spr")
    l3 = [c for c in topo["cache_instances"] if c["level"] == 3]
    assert [c["cpus"] for c in l3] == [[*range(0, 56), *range(112, 168)], [*range(56, 112), *range(168, 224)]]
    assert topo["llc_total_bytes"] == 210 * 2**20 and topo["llc_count"] == 2
    assert auto_size.arrays_size(topo) == 4 * 210 * 2**20
    assert topology.llc_capacity(topo, range(56)) == 105 * 2**20


def test_a_topology_from_before_instances_keeps_its_one_llc():
    old = {"llc_bytes": 32 * 2**20, "caches": [{"level": 3, "type": "Unified", "size_bytes": 32 * 2**20, "shared_cpus": [0, 1]}],
           "cpus": [{"cpu": 0}, {"cpu": 1}]}  # fmt: skip
    assert topology.llc_total_bytes(old) == 32 * 2**20 and auto_size.arrays_size(old) == 256 * 2**20
    assert topology.llc_capacity(old, [1]) == 32 * 2**20
    assert topology.llc_total_bytes({"llc_bytes": None}) == 0
