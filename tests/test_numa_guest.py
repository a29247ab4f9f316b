"""Placement proven on a real multi-node kernel: a Linux guest under QEMU
(TCG) with 2 and with 4 NUMA nodes and a distance matrix (tools/numa_guest),
and a 2-socket x 2-core x 2-thread guest (two nodes, SMT siblings) where
close, spread, node:N, threads "cores" and cpus: lists must put each thread
on the CPU config/README.md says.

Per layout the guest boots twice:
  1. probe: it prints its own sysfs/procfs files; membench.probe.topology reads
     them on the host (read_topology on that tree) and the test checks the
     topology is the one QEMU was asked for (nodes, CPUs per node, memory,
     distances);
  2. cases: every case is a membench.measure.harness.Request resolved against that
     guest topology by membench.measure.harness.resolve (so `policy remote` becomes
     bind:<farthest node> through remote_node, as in the pipeline) and
     turned into harness arguments by membench.measure.harness.harness_argv; the
     statically linked harness runs them inside the guest and its JSON
     records come back on a second serial port between marker lines.

The assertions are on the records: the CPU each thread ran on and its node,
and the node histogram of the sampled pages (move_pages), against what was
asked. Success needs the guest's DONE marker, not only QEMU's exit status.

Needs qemu-system-x86, busybox-static, gcc and apt (the kernel comes from
`apt-get download linux-image-amd64`, cached under ~/.cache/membench or
$MEMBENCH_CACHE); `make test-deps` installs the packages. Without them the
test is skipped, with the reason; with MEMBENCH_REQUIRE_GUEST=1 (CI) it
fails instead.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))

from membench.probe import topology  # noqa: E402
from membench.plan import c2c_pairs
from membench.measure import harness as measure
from numa_guest import guest, image  # noqa: E402

SIZE = 1 << 20  # bytes per array: 256 pages of 4 KiB, 768 sampled in all
SPILL_SIZE = 80 * 2**20  # bytes per array of the spill cases (2node: node 0 has 224 MiB)
NTIMES = 2
MIB = 2**20


# ---------------------------------------------------------------- cases
# name -> (threads, CPU list, policy, init). CPU lists are explicit so each
# thread's node is known from the layout; thread 0 comes first.

CASES = {
    "2node": {
        "bind": (2, [0, 2], "bind:1", "parallel"),
        "interleave": (2, [0, 1], "interleave:all", "parallel"),
        "preferred": (1, [2], "preferred:1", "parallel"),
        "remote": (2, [1, 3], "remote", "parallel"),
        "local": (1, [3], "local", "parallel"),
        "serial": (2, [1, 0], "default", "serial"),
        "parallel": (2, [1, 0], "default", "parallel"),
        # ORNL's spill: one thread on node 0, preferred:0, 3 x 80 MiB, more
        # than node 0's 224 MiB has free: the arrays spill to node 1
        "spill_parallel": (1, [0], "preferred:0", "parallel", SPILL_SIZE),
        "spill_serial_arrays": (1, [0], "preferred:0", "serial-arrays", SPILL_SIZE),
    },
    "4node": {
        "bind": (1, [0], "bind:3", "parallel"),
        "bind_two": (2, [0, 3], "bind:1,2", "parallel"),
        "interleave": (4, [0, 1, 2, 3], "interleave:all", "parallel"),
        "interleave_list": (2, [0, 2], "interleave:1,3", "parallel"),
        "preferred": (1, [0], "preferred:2", "parallel"),
        "remote": (1, [0], "remote", "parallel"),
        "remote_from_1": (1, [1], "remote", "parallel"),
        "remote_from_0_1": (2, [0, 1], "remote", "parallel"),
        "remote_from_1_2": (2, [1, 2], "remote", "parallel"),
        "local": (1, [2], "local", "parallel"),
        "serial": (2, [3, 0], "default", "serial"),
        "parallel": (2, [3, 0], "default", "parallel"),
    },
}


def make_request(layout: guest.Layout, threads: int, cpus: list[int], policy: str, init: str, size: int = SIZE) -> measure.Request:
    return measure.Request(
        system=f"guest-{layout.name}",
        kernel="stream",
        variant="default",
        ops=("triad",),
        threads=threads,
        affinity="cpus:" + ",".join(map(str, cpus)),
        policy=policy,
        pages="4k",
        init=init,
        size=size,
        ntimes=NTIMES,
        repeat=0,
    )


# ------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def guest_parts(tmp_path_factory):
    """Kernel (cached), harness (built from this checkout), base initramfs."""
    try:
        tools = image.require_tools()
        started = time.monotonic()
        kernel = image.fetch_kernel()
        fetched = time.monotonic() - started
    except image.Unavailable as exc:
        print(f"numa guest unavailable: {exc}")
        if os.environ.get("MEMBENCH_REQUIRE_GUEST"):  # CI: must run for real
            pytest.fail(f"numa guest unavailable and MEMBENCH_REQUIRE_GUEST is set: {exc}")
        pytest.skip(f"numa guest unavailable: {exc}")
    work = tmp_path_factory.mktemp("numa_guest")
    harness = image.build_harness(work / "harness")
    base = image.base_initramfs(harness, tools["busybox"])
    print(f"\nguest kernel {kernel} (fetch/cache {fetched:.1f}s), initramfs {base}")
    return kernel, base, work


@pytest.fixture(scope="module", params=["2node", "4node"])
def booted(request, guest_parts, option_listings):
    """(layout, guest topology, {case: (Request, resolved, records, run)})."""
    kernel, base, work = guest_parts
    layout = guest.LAYOUTS[request.param]
    probe = guest.boot(layout, [], kernel=kernel, base_initrd=base, workdir=work / layout.name, dump_sysfs=True)
    assert probe.up_seconds is not None and probe.done and probe.returncode == 0, probe.explain()
    root = probe.write_root(work / layout.name / "root")
    topo = topology.read_topology(root)
    env = topology.read_environment(root)

    allowed = [c["cpu"] for c in topo["cpus"]]
    plan, argvs = {}, []
    for name, case in CASES[layout.name].items():
        req = make_request(layout, *case)
        resolved, reason = measure.resolve(req, topo, allowed)
        assert reason is None, (name, reason)
        plan[name] = (req, resolved)
        argvs.append(measure.harness_argv("/bin/harness", req, resolved, option_listings["stream"])[1:])
    run = guest.boot(layout, argvs, kernel=kernel, base_initrd=base, workdir=work / layout.name)
    assert run.done and run.returncode == 0, run.explain()
    print(
        f"\nguest {layout.name}: probe boot {probe.seconds:.1f}s (up {probe.up_seconds:.1f}s), "
        f"cases boot {run.seconds:.1f}s (up {run.up_seconds:.1f}s, {len(argvs)} cases)"
    )
    results = {}
    for index, name in enumerate(plan, start=1):
        req, resolved = plan[name]
        assert run.exit_codes.get(index) == 0, (name, run.cases.get(index), run.stderr.get(index))
        results[name] = (req, resolved, run.records[index])
        print(f"  {name}: {run.records[index][0]['policy']} cpus={run.records[index][0]['cpus']} "
              f"cpu_nodes={run.records[index][0]['cpu_nodes']} page_nodes={run.records[index][0]['page_nodes']}")
    return layout, topo, env, results


# ---------------------------------------------------------------- helpers


def only_record(results, name) -> dict:
    req, resolved, records = results[name]
    assert len(records) == 1, records
    return records[0]


def pages(record) -> dict[int, float]:
    return {int(node): frac for node, frac in record["page_nodes"].items()}


def assert_ran_as_asked(layout, results, name):
    """The record is ok and valid, and each thread ran on its CPU and node."""
    req, resolved, _ = results[name]
    r = only_record(results, name)
    cpus = topology.parse_cpulist(req.affinity.removeprefix("cpus:"))
    assert r["status"] == "ok" and r["valid"] is True, r
    assert r["threads"] == req.threads and r["init"] == req.init
    assert r["policy"] == resolved["policy"]
    assert r["cpus"] == r["cpus_start"] == cpus, r
    assert r["cpu_nodes"] == [layout.node_of(c) for c in cpus], r
    assert r["migrated"] is False
    assert r["pages_sampled"] >= 3 * SIZE // 4096
    assert sum(r["page_nodes"].values()) == pytest.approx(1.0)
    return r


# ------------------------------------------------------------------ tests


def test_guest_topology_is_what_qemu_was_asked(booted):
    layout, topo, env, _ = booted
    assert [n["node"] for n in topo["nodes"]] == list(range(layout.nnodes))
    assert [n["cpus"] for n in topo["nodes"]] == [sorted(c) for c in layout.node_cpus]
    assert [n["distances"] for n in topo["nodes"]] == [list(row) for row in layout.distances]
    for node, mib in zip(topo["nodes"], layout.node_mib):
        # MemTotal leaves out what firmware and the kernel image reserve.
        assert 0.6 * mib * MIB < node["memory_bytes"] <= mib * MIB, (node, mib)
    assert {c["cpu"]: c["node"] for c in topo["cpus"]} == {c: layout.node_of(c) for c in range(layout.ncpus)}
    assert (topo["cores"], topo["packages"]) == (layout.ncpus, layout.ncpus)  # sockets=N, cores=1
    assert env["numa_balancing"] == 0  # numa_balancing=disable: nothing migrates pages behind us


def test_bind(booted):
    layout, _, _, results = booted
    for name in [n for n in results if n.startswith("bind")]:
        r = assert_ran_as_asked(layout, results, name)
        wanted = set(topology.parse_cpulist(r["policy"].removeprefix("bind:")))
        assert set(pages(r)) <= wanted, (name, r["page_nodes"])
        assert not {layout.node_of(c) for c in r["cpus"]} & wanted  # the threads are elsewhere
        if len(wanted) == 1:
            assert pages(r) == {wanted.pop(): 1.0}
        else:
            # Several nodes: the kernel takes, for each thread's first touch,
            # the node of the set nearest to the thread's node (its zonelist
            # order); parallel init gives each thread an equal share.
            nearest = [min(wanted, key=lambda n: (layout.distances[t][n], n)) for t in r["cpu_nodes"]]
            expected = {n: nearest.count(n) / len(nearest) for n in set(nearest)}
            assert pages(r) == pytest.approx(expected, abs=0.05), (name, r["page_nodes"])


def test_interleave_spreads_evenly(booted):
    layout, _, _, results = booted
    for name in [n for n in results if n.startswith("interleave")]:
        r = assert_ran_as_asked(layout, results, name)
        spec = r["policy"].removeprefix("interleave:")
        nodes = list(range(layout.nnodes)) if spec == "all" else topology.parse_cpulist(spec)
        got = pages(r)
        assert set(got) == set(nodes), (name, got)
        for node in nodes:
            assert got[node] == pytest.approx(1 / len(nodes), abs=0.05), (name, got)


def test_preferred(booted):
    layout, _, _, results = booted
    r = assert_ran_as_asked(layout, results, "preferred")
    node = int(r["policy"].removeprefix("preferred:"))
    assert node not in r["cpu_nodes"]
    assert pages(r) == {node: 1.0}


def test_local(booted):
    layout, _, _, results = booted
    r = assert_ran_as_asked(layout, results, "local")
    assert pages(r) == {r["cpu_nodes"][0]: 1.0}


def test_remote_binds_to_the_farthest_node(booted):
    layout, topo, _, results = booted
    for name in [n for n in results if n.startswith("remote")]:
        req, resolved, _ = results[name]
        r = assert_ran_as_asked(layout, results, name)
        thread_nodes = set(r["cpu_nodes"])
        far = layout.farthest_from(thread_nodes)  # by hand, from the QEMU matrix
        assert measure.remote_node(thread_nodes, topo) == far, name
        assert req.policy == "remote" and resolved["policy"] == f"bind:{far}", name
        assert r["policy"] == f"bind:{far}"
        assert pages(r) == {far: 1.0}, (name, r["page_nodes"])


def test_serial_init_puts_pages_on_the_initialising_thread(booted):
    layout, _, _, results = booted
    serial = assert_ran_as_asked(layout, results, "serial")
    parallel = assert_ran_as_asked(layout, results, "parallel")
    assert serial["policy"] == parallel["policy"] == "default"
    first, second = serial["cpu_nodes"]
    assert first != second  # the threads span two nodes
    # Serial first touch: thread 0 touches everything -> its node only.
    assert pages(serial) == {first: 1.0}
    # Parallel first touch, static schedule: each thread's half on its node.
    got = pages(parallel)
    assert set(got) == {first, second}
    assert got[first] == pytest.approx(0.5, abs=0.05) and got[second] == pytest.approx(0.5, abs=0.05)


def test_serial_arrays_spill_at_different_indices(booted):
    """ORNL's spill (config/ornl_spill.yaml): under preferred:0 the arrays
    outgrow node 0. Filled element by element (parallel, here one thread:
    a[j], b[j], c[j] together) every array spills at the same index, so each
    holds the same share on node 1; filled array by array (serial-arrays)
    a stays on node 0 and the spill lands on the arrays filled last."""
    layout, _, _, results = booted
    if "spill_serial_arrays" not in results:
        pytest.skip(f"the spill cases run in the 2-node guest, not {layout.name}")
    spill = {}
    for name in ("spill_parallel", "spill_serial_arrays"):
        r = assert_ran_as_asked(layout, results, name)
        assert set(pages(r)) == {0, 1}, (name, r["page_nodes"])  # it spilled
        spill[name] = {array: nodes.get("1", 0.0) for array, nodes in r["array_page_nodes"].items()}
        print(f"  {name}: share of each array's pages on node 1: {spill[name]}")
    parallel, arrays = spill["spill_parallel"], spill["spill_serial_arrays"]
    assert set(parallel) == set(arrays) == {"a", "b", "c"}
    # element-major: the same share of every array on node 1
    assert max(parallel.values()) - min(parallel.values()) < 0.1, parallel
    # array-major: a on node 0, c (filled last) mostly on node 1
    assert arrays["a"] < 0.05 and arrays["c"] > 0.5 and arrays["a"] <= arrays["b"] <= arrays["c"], arrays
    assert arrays["c"] - arrays["a"] > 0.5 > max(parallel.values()) - min(parallel.values())


# ------------------------------------------------ thread placement with SMT
# The 2-socket x 2-core x 2-thread guest (guest.TWO_SOCKETS_SMT): node 0 =
# socket 0 = CPUs 0-3, core 0 = CPUs 0 and 1 (QEMU puts siblings next to
# each other), core 1 = CPUs 2 and 3; node 1 = CPUs 4-7 likewise. Each case:
# (threads, affinity, the CPU of each thread by config/README.md), by hand.
SMT_CASES = {
    # close: (node, package, core, SMT sibling) order, so siblings fill first
    "close": (4, "close", [0, 1, 2, 3]),
    # spread: round-robin over nodes, one thread per physical core before any sibling
    "spread": (4, "spread", [0, 4, 2, 6]),
    "spread_all": (8, "spread", [0, 4, 2, 6, 1, 5, 3, 7]),
    # node:N: the CPUs of node N, one per core first; threads "node" = its cores
    "node": ("node", "node:1", [4, 6]),
    "node_siblings": (3, "node:1", [4, 6, 5]),
    # threads "cores": one per physical core (4 here), placed by the affinity
    "cores_spread": ("cores", "spread", [0, 4, 2, 6]),
    "cores_close": ("cores", "close", [0, 1, 2, 3]),
    # cpus: thread i on the i-th CPU of the list
    "cpus": (3, "cpus:5,1,6", [5, 1, 6]),
}


@pytest.fixture(scope="module")
def smt_booted(guest_parts, option_listings):
    """(layout, guest topology, {case: record}) for the SMT guest."""
    kernel, base, work = guest_parts
    layout = guest.TWO_SOCKETS_SMT
    probe = guest.boot(layout, [], kernel=kernel, base_initrd=base, workdir=work / layout.name, dump_sysfs=True)
    assert probe.up_seconds is not None and probe.done and probe.returncode == 0, probe.explain()
    topo = topology.read_topology(probe.write_root(work / layout.name / "root"))
    allowed = [c["cpu"] for c in topo["cpus"]]
    argvs = []
    for name, (threads, affinity, _) in SMT_CASES.items():
        req = measure.Request(
            system="guest-smt", kernel="stream", variant="default", ops=("triad",), threads=threads,
            affinity=affinity, policy="default", pages="4k", init="parallel", size=SIZE, ntimes=NTIMES, repeat=0,
        )  # fmt: skip
        resolved, reason = measure.resolve(req, topo, allowed)
        assert reason is None, (name, reason)
        argvs.append(measure.harness_argv("/bin/harness", req, resolved, option_listings["stream"])[1:])
    run = guest.boot(layout, argvs, kernel=kernel, base_initrd=base, workdir=work / layout.name)
    assert run.done and run.returncode == 0, run.explain()
    print(f"\nguest {layout.name}: probe boot {probe.seconds:.1f}s, cases boot {run.seconds:.1f}s ({len(argvs)} cases)")
    records = {}
    for index, name in enumerate(SMT_CASES, start=1):
        assert run.exit_codes.get(index) == 0, (name, run.cases.get(index), run.stderr.get(index))
        (records[name],) = run.records[index]
        print(f"  {name}: cpus={records[name]['cpus']} bound={records[name]['cpus_bound']}")
    return layout, topo, records


def test_smt_guest_topology(smt_booted):
    layout, topo, _ = smt_booted
    assert (topo["packages"], topo["cores"], len(topo["cpus"])) == (2, 4, 8)
    for cpu in topo["cpus"]:
        socket, core, _ = layout.socket_core_thread(cpu["cpu"])
        assert cpu["package"] == socket and cpu["node"] == socket
        assert sorted(cpu["siblings"]) == [2 * (cpu["cpu"] // 2), 2 * (cpu["cpu"] // 2) + 1]


@pytest.mark.parametrize("name", list(SMT_CASES))
def test_threads_land_where_config_readme_says(smt_booted, name):
    layout, _, records = smt_booted
    r = records[name]
    expected = SMT_CASES[name][2]
    assert r["status"] == "ok" and r["valid"] is True, r
    assert r["threads"] == len(expected)
    assert r["cpus_bound"] == expected and r["cpus"] == r["cpus_start"] == expected, r
    assert r["cpu_nodes"] == [layout.node_of(c) for c in expected]
    assert r["migrated"] is False


def test_placement_classes_read_the_guest_topology(smt_booted):
    from membench.store import placement_classes

    _, topo, records = smt_booted
    machine = placement_classes.Machine(topo)

    def classes(name):
        r = records[name]
        return placement_classes.classify(machine, r["cpus"], r["cpus_start"], r["page_nodes"], r["hugepage_fraction"])

    close, spread = classes("close"), classes("spread")
    assert (close["threads_per_node"], close["smt_shared_cores"], close["node_imbalance"]) == ("4+0", 2, 4)
    assert (spread["threads_per_node"], spread["smt_shared_cores"], spread["node_imbalance"]) == ("2+2", 0, 0)
    assert close["page_locality"] == spread["page_locality"] == "local"  # parallel first touch
    assert classes("spread_all")["smt_shared_cores"] == 4


# ------------------------------------------- cache-to-cache pair classes
# The same SMT guest: CPUs 0,1 are SMT siblings (core 0 of socket 0), 0,2
# cores of socket 0 (QEMU gives each core its own L2 and each socket one
# L3: same_l3, the same package), 0,4 sockets 0 and 1. Each sampled class's
# pair is resolved from the probed guest topology as the pipeline does and
# measured by the c2c harness inside the guest; the classes the records get
# (membench.plan.c2c_pairs.pair_keys) must be those the layout says, by hand.
C2C_SPECS = ("smt:0", "same_l3:0", "other_package:0")


@pytest.fixture(scope="module")
def c2c_booted(guest_parts, smt_booted, option_listings):
    _, base, work = guest_parts
    kernel = guest_parts[0]
    layout, topo, _ = smt_booted
    binary = image.build_harness(work / "harness-c2c", family="c2c")
    allowed = [c["cpu"] for c in topo["cpus"]]
    argvs, requests = [], {}
    for spec in C2C_SPECS:
        req = measure.Request(
            system="guest-smt", kernel="c2c", variant="default", ops=("cas", "two_line"), threads=2,
            affinity="none", policy="default", pages="4k", init="parallel", size=SIZE, ntimes=NTIMES, repeat=0,
            pair=spec, pairs_per_class=1, c2c_samples=3, c2c_roundtrips=200,
        )  # fmt: skip
        resolved, reason = measure.resolve(req, topo, allowed)
        assert reason is None, (spec, reason)
        requests[spec] = req
        argvs.append(measure.harness_argv("/bin/harness-c2c", req, resolved, option_listings["c2c"]))
    run = guest.boot(layout, argvs, kernel=kernel, base_initrd=base, workdir=work / "c2c", binaries={"harness-c2c": binary})
    assert run.done and run.returncode == 0, run.explain()
    records = {}
    for index, spec in enumerate(C2C_SPECS, start=1):
        assert run.exit_codes.get(index) == 0, (spec, run.cases.get(index), run.stderr.get(index))
        records[spec] = [{**r, **c2c_pairs.pair_keys(r, topo, spec)} for r in run.records[index]]
    return layout, topo, records


def test_c2c_classes_in_the_smt_guest(c2c_booted):
    layout, topo, records = c2c_booted
    # every class of the guest: SMT siblings, the same package (one L3) and the other package
    assert {c for c, pairs in c2c_pairs.pairs_by_class(topo).items() if pairs} == {"smt", "same_l3", "other_package"}
    for spec, recs in records.items():
        assert [r["op"] for r in recs] == ["cas", "two_line"]
        for r in recs:
            a, b = r["cpu_a"], r["cpu_b"]
            (sa, ca, _), (sb, cb, _) = layout.socket_core_thread(a), layout.socket_core_thread(b)
            by_hand = "smt" if (sa, ca) == (sb, cb) else "same_l3" if sa == sb else "other_package"
            assert r["pair_class"] == by_hand == spec.partition(":")[0], r
            assert (r["cpu_a_ran"], r["cpu_b_ran"]) == (a, b) and r["cpus"] == [a, b]
            assert (r["cpu_a_package"], r["cpu_b_package"]) == (sa, sb)
            assert r["status"] == "ok" and r["valid"] and r["handoffs"] == r["handoffs_expected"], r
            assert r["handoff_ns"] > 0
