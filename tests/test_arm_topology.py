"""Planning and the probe on real Arm topologies (tests/fixtures/topology/
arm-*.yaml): hwloc's Kunpeng 920 capture (2 packages x 2 dies, a NUMA node
and a 32 MiB L3 each), Graviton3 (one 32 MiB L3, SVE-256), Grace (two
114 MiB L3s, SVE2 at 128 bits, 64 KiB pages) and Altra (no L3 in sysfs).
Each: the probe names the CPU from its MIDR fields, the cells resolve on
it (threads all, size auto), and c2c pairs get their locality classes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "topology"
sys.path.insert(0, str(FIXTURES))

import sysfs_tree  # noqa: E402
from membench.measure import harness  # noqa: E402
from membench.plan import c2c_pairs  # noqa: E402
from membench.probe import topology  # noqa: E402

MiB = 2**20

# name -> (cpu_model, sve bits, base page, LLC instances, LLC bytes each, classes present)
ARM = {
    "arm-kunpeng920-2p4n": ("Kunpeng 920 (TaiShan v110) (0x48/0xd01)", 0, 4096, 4, 32 * MiB,
                            {"same_l3", "same_package", "other_package"}),
    "arm-graviton3-c7g16x": ("Neoverse V1 (0x41/0xd40)", 256, 4096, 1, 32 * MiB, {"same_l3"}),
    "arm-grace-superchip": ("Neoverse V2 (0x41/0xd4f)", 128, 65536, 2, 114 * MiB, {"same_l3", "other_package"}),
    "arm-altra-q80": ("Neoverse N1 (0x41/0xd0c)", 0, 4096, 80, 1 * MiB, {"same_package"}),
}  # fmt: skip


@pytest.fixture(scope="module")
def probed(tmp_path_factory):
    return {name: topology.read_topology(sysfs_tree.write_fixture(name, tmp_path_factory.mktemp(name)))
            for name in ARM}  # fmt: skip


@pytest.mark.parametrize("name", sorted(ARM))
def test_the_probe_reads_arm_cpuinfo(probed, name):
    topo = probed[name]
    model, sve, page, count, each, _ = ARM[name]
    assert topo["cpu_model"] == model and topo["arch"] == "aarch64"
    assert topo["sve_vector_bits"] == sve and ("sve" in topo["cpu_flags"]) == (sve > 0)
    assert topo["base_page_bytes"] == page and topo["thp_bytes"] == page * page // 8
    assert "atomics" in topo["cpu_flags"] and "asimd" in topo["cpu_flags"]
    assert topo["llc_count"] == count and topo["llc_total_bytes"] == count * each


@pytest.mark.parametrize("name", sorted(ARM))
def test_cells_plan_and_size_auto(probed, name):
    topo = probed[name]
    allowed = [c["cpu"] for c in topo["cpus"]]
    request = harness.Request(
        system=name, kernel="stream", variant="nt-neon", ops=("triad",), threads="all", affinity="spread",
        policy="default", pages="4k", init="parallel", size="auto", ntimes=2, repeat=0,
    )  # fmt: skip
    resolved, reason = harness.resolve(request, topo, allowed)
    assert reason is None, reason
    assert resolved["threads"] == len(allowed)
    # STREAM's rule over every LLC instance (Altra: the L2s sysfs shows)
    assert resolved["size"] == max(4 * topo["llc_total_bytes"], 256 * MiB)


@pytest.mark.parametrize("name", sorted(ARM))
def test_c2c_pairs_are_classified(probed, name):
    topo = probed[name]
    classes = {cls for cls, pairs in c2c_pairs.pairs_by_class(topo).items() if pairs}
    assert classes == ARM[name][5]
    for cls in classes:
        [(a, b)] = c2c_pairs.sample(topo, 1, (cls,))[cls]
        cpus = {c["cpu"]: c for c in topo["cpus"]}
        assert c2c_pairs.classify(cpus[a], cpus[b]) == cls


def test_kunpeng_dies_are_nodes_with_their_own_l3(probed):
    """Two dies per package: a pair across dies of one package is
    same_package, and the remote node of node 0 is the farthest (33)."""
    topo = probed["arm-kunpeng920-2p4n"]
    cpus = {c["cpu"]: c for c in topo["cpus"]}
    assert c2c_pairs.classify(cpus[0], cpus[31]) == "same_l3"
    assert c2c_pairs.classify(cpus[0], cpus[32]) == "same_package"
    assert c2c_pairs.classify(cpus[0], cpus[64]) == "other_package"
    assert harness.remote_node({0}, topo) == 3
