"""The probe, on a fake 2-socket sysfs tree with SMT and on this machine."""

import os

import pytest

from membench.probe import topology


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture
def two_sockets(tmp_path):
    """2 packages x 2 cores x 2 SMT threads, one node per package."""
    root = tmp_path
    cpu_base = root / "sys/devices/system/cpu"
    write(cpu_base / "online", "0-7\n")
    for cpu in range(8):
        package, core = cpu // 4, (cpu % 4) // 2
        first = package * 4 + core * 2
        d = cpu_base / f"cpu{cpu}"
        write(d / "topology/core_id", f"{core}\n")
        write(d / "topology/physical_package_id", f"{package}\n")
        write(d / "topology/thread_siblings_list", f"{first}-{first + 1}\n")
        (d / f"node{package}").mkdir(parents=True)
    for index, (level, kind, size, shared) in enumerate(
        [(1, "Data", "48K", "0-1"), (1, "Instruction", "32K", "0-1"), (2, "Unified", "2048K", "0-1"), (3, "Unified", "30M", "0-3")]
    ):
        d = cpu_base / f"cpu0/cache/index{index}"
        for name, value in [("level", level), ("type", kind), ("size", size), ("shared_cpu_list", shared), ("coherency_line_size", 64)]:
            write(d / name, f"{value}\n")
    node_base = root / "sys/devices/system/node"
    for node, dist in [(0, "10 21"), (1, "21 10")]:
        write(node_base / f"node{node}/cpulist", f"{node * 4}-{node * 4 + 3}\n")
        write(node_base / f"node{node}/distance", dist + "\n")
        write(node_base / f"node{node}/meminfo", f"Node {node} MemTotal:       65536000 kB\n")
    write(root / "proc/cpuinfo", "model name\t: Fake Xeon\nflags\t\t: fpu sse2 avx2 avx512f\n")
    write(root / "sys/kernel/mm/transparent_hugepage/enabled", "always [madvise] never\n")
    write(root / "sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages", "16\n")
    write(root / "sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages", "8\n")
    write(root / "proc/sys/kernel/numa_balancing", "1\n")
    return root


def test_parse_cpulist():
    assert topology.parse_cpulist("0-3,8,10-11\n") == [0, 1, 2, 3, 8, 10, 11]
    assert topology.parse_cpulist("") == []


def test_parse_size_text():
    assert topology.parse_size_text("48K") == 48 * 1024
    assert topology.parse_size_text("105M") == 105 * 2**20
    with pytest.raises(ValueError):
        topology.parse_size_text("lots")


def test_two_socket_tree(two_sockets):
    topo = topology.read_topology(two_sockets)
    assert (len(topo["cpus"]), topo["cores"], topo["packages"]) == (8, 4, 2)
    # the tree gives only cpu0 caches: no cache ids for CPU 5
    assert topo["cpus"][5] == {"cpu": 5, "core": 0, "package": 1, "node": 1, "siblings": [4, 5], "l2_id": None, "l3_id": None}
    # cpu0: no sysfs id files here, so the first CPU of each cache's shared list
    assert (topo["cpus"][0]["l2_id"], topo["cpus"][0]["l3_id"]) == (0, 0)
    assert [n["distances"] for n in topo["nodes"]] == [[10, 21], [21, 10]]
    assert topo["nodes"][1]["memory_bytes"] == 65536000 * 1024
    assert topo["llc_bytes"] == 30 * 2**20 and topo["line_bytes"] == 64
    assert topo["cpu_model"] == "Fake Xeon" and "avx512f" in topo["cpu_flags"]


def test_cache_ids_name_the_l2_and_l3(two_sockets):
    """sysfs's cache id when present, for the c2c classes (membench.plan.c2c_pairs)."""
    for cpu in range(8):
        for index, (level, cache_id) in enumerate([(2, cpu // 2), (3, 10 + cpu // 4)]):
            d = two_sockets / f"sys/devices/system/cpu/cpu{cpu}/cache/index{5 + index}"
            write(d / "level", f"{level}\n"), write(d / "type", "Unified\n"), write(d / "id", f"{cache_id}\n")
    cpus = topology.read_cpus(two_sockets)
    assert [(c["l2_id"], c["l3_id"]) for c in cpus] == [(c // 2, 10 + c // 4) for c in range(8)]


def test_frequency_from_cpuinfo_or_cpufreq(two_sockets):
    freq = topology.read_frequency(two_sockets)
    assert freq["source"] is None and freq["mhz_median"] is None  # neither in the tree
    write(two_sockets / "proc/cpuinfo", "cpu MHz\t\t: 2600.000\ncpu MHz\t\t: 2400.000\n")
    assert topology.read_frequency(two_sockets)["mhz_min"] == 2400.0
    for cpu, khz in enumerate([3000000, 1200000, 3100000]):
        d = two_sockets / f"sys/devices/system/cpu/cpu{cpu}/cpufreq"
        write(d / "scaling_cur_freq", f"{khz}\n"), write(d / "scaling_governor", "performance\n")
        write(d / "scaling_max_freq", "3500000\n")
    freq = topology.read_frequency(two_sockets)
    assert (freq["source"], freq["mhz_min"], freq["mhz_median"], freq["mhz_max"]) == ("scaling_cur_freq", 1200, 3000, 3100)
    assert freq["governors"] == ["performance"] and freq["scaling_max_freq_mhz"] == 3500


def test_environment_of_the_tree(two_sockets):
    env = topology.read_environment(two_sockets)
    assert env["thp_enabled"] == "madvise"
    assert env["hugepages"] == {"2048kB": {"nr": 16, "free": 8}}
    assert env["numa_balancing"] == 1 and env["zone_reclaim_mode"] is None


def test_this_machine():
    topo = topology.read_topology()
    assert {c["cpu"] for c in topo["cpus"]} >= set(os.sched_getaffinity(0))
    assert topo["llc_bytes"] and topo["llc_bytes"] >= 2**20
    assert sum(len(n["cpus"]) for n in topo["nodes"]) == len(topo["cpus"])
