"""Tests of the C measurement harness (kernels/harness/, family stream).

The binary is compiled once per session with the pipeline's build command
(conftest.stream_binary) into a temporary folder.  Arrays are tiny so every test takes well under a second,
except the THP one (64 MiB arrays).
"""

import json
import os
import subprocess
from pathlib import Path

import pytest

from membench import SCHEMA_VERSION
from membench.core import disturbance
from membench.probe.topology import thp_mode

REPO = Path(__file__).resolve().parents[1]
KERNELS = REPO / "kernels"
SMALL = ["--size", "1048576", "--ntimes", "3"]
STREAM_OPS = ["copy", "scale", "add", "triad"]

ALLOWED = sorted(os.sched_getaffinity(0))
SYS_NODE = Path("/sys/devices/system/node")
SYS_CPU = Path("/sys/devices/system/cpu")

# key -> accepted types for an ok record (the record contract + harness extras)
OK_TYPES = {
    "schema": int, "system": str, "kernel": str, "variant": str, "op": str,
    "threads": int, "affinity": str, "policy": str, "pages": str, "init": str,
    "size_bytes": int, "array_elements": int, "arrays": int, "ntimes": int,
    "repeat": int, "status": str, "reason": type(None), "gbps": float,
    "gbps_mean": float, "gbps_wa": float, "bytes_per_iter": int,
    "bytes_per_iter_wa": int, "seconds": list, "valid": bool,
    "max_rel_error": float, "cpus": list, "cpus_start": list, "cpu_nodes": list,
    "migrated": bool, "page_nodes": dict, "pages_sampled": int,
    "hugepage_fraction": float, "t_start": float, "t_end": float,
    "timer_resolution_ns": int, "timer_granularity_ns": int, "min_ticks": float,
    "host": str, "pid": int, "compiler": str, "cflags": str,
    "harness_version": str,
}


def _reject_constant(name):
    raise ValueError(f"non-JSON constant {name} in output")


def parse_lines(stdout):
    """Every stdout line must be one JSON object (no NaN/Infinity)."""
    records = []
    for line in stdout.splitlines():
        assert line.strip(), "empty line on stdout"
        obj = json.loads(line, parse_constant=_reject_constant)
        assert isinstance(obj, dict)
        records.append(obj)
    return records


@pytest.fixture(scope="module")
def harness(stream_binary):
    """Built by conftest exactly as the build rule builds it (no warnings)."""
    return stream_binary


def run(binary, *args, timeout=60):
    proc = subprocess.run([str(binary), *args], capture_output=True, text=True,
                          timeout=timeout)
    return proc.returncode, parse_lines(proc.stdout), proc.stderr


# ---------------------------------------------------------------- topology

def _read_int(path, default):
    try:
        return int(Path(path).read_text().strip())
    except (OSError, ValueError):
        return default


def _cpu_node(cpu):
    nodes = sorted(SYS_CPU.glob(f"cpu{cpu}/node[0-9]*"))
    return int(nodes[0].name[4:]) if nodes else 0


def _topology():
    """(cpu, node, (package, die, core), smt) for the allowed CPUs."""
    rows = []
    for cpu in ALLOWED:
        topo = SYS_CPU / f"cpu{cpu}" / "topology"
        core = (_read_int(topo / "physical_package_id", 0), _read_int(topo / "die_id", 0),
                _read_int(topo / "core_id", cpu))
        rows.append((cpu, _cpu_node(cpu), core))
    out = []
    for cpu, node, core in rows:
        smt = sum(1 for c, n, k in rows if (n, k) == (node, core) and c < cpu)
        out.append((cpu, node, core, smt))
    return out


def close_order():
    """(node, package, die, core, SMT index): siblings of a core are adjacent."""
    return [t[0] for t in sorted(_topology(), key=lambda t: (t[1], t[2], t[3], t[0]))]


def spread_order():
    """Round-robin over nodes; inside a node every core once before siblings."""
    per_node = {}
    for t in sorted(_topology(), key=lambda t: (t[1], t[3], t[2], t[0])):
        per_node.setdefault(t[1], []).append(t[0])
    groups = [per_node[n] for n in sorted(per_node)]
    order, rnd = [], 0
    while len(order) < len(ALLOWED):
        order += [g[rnd] for g in groups if rnd < len(g)]
        rnd += 1
    return order


def nodes_with_memory():
    try:
        text = (SYS_NODE / "has_memory").read_text().strip()
    except OSError:
        return [0]
    nodes = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        nodes += range(int(lo), int(hi or lo) + 1)
    return nodes


# ------------------------------------------------------------------- tests

def test_records_say_what_could_have_disturbed_them(harness):
    """Every thread's involuntary switches over the timed loop, steal on its
    CPUs, other runnable tasks, the clock before and after; a kernel that
    cannot tell gives null (not recorded), never 0 (quiet)."""
    rc, recs, err = run(harness, *SMALL, "--threads", "2", "--affinity", "close")
    assert rc == 0, err
    for r in recs:
        assert len(r["disturb_nivcsw"]) == 2 and all(type(n) is int and n >= 0 for n in r["disturb_nivcsw"])
        assert r["disturb_timed_s"] > 0
        assert len(r["disturb_wait_s"]) == 2 and all(w >= 0 for w in r["disturb_wait_s"])
        assert r["disturb_steal_s"] is None or r["disturb_steal_s"] >= 0
        assert r["disturb_steal_cpus"] == r["cpus_start"]
        assert type(r["disturb_others_running"]) is int
        assert r["disturb_core_ghz"] is None or len(r["disturb_core_ghz"]) == 2
        assert disturbance.verdict(r)[0] is not None  # recorded; what marks a run: the spinner test below
    env = {**os.environ, "MEMBENCH_TEST_NO_THREAD_COUNTERS": "1", "MEMBENCH_TEST_NO_STEAL": "1"}
    proc = subprocess.run([str(harness), *SMALL], capture_output=True, text=True, timeout=60, env=env)
    for r in parse_lines(proc.stdout):
        assert r["disturb_nivcsw"] is None and r["disturb_wait_s"] is None and r["disturb_steal_s"] is None and r["disturb_others_running"] is None
        if r["disturb_core_ghz"] is None:  # nothing the rule reads: not recorded, never quiet
            assert disturbance.verdict(r) == (None, ["not recorded"])
        assert disturbance.label({**r, "disturb_core_ghz": None}) == "not recorded"


def test_records_follow_the_contract(harness):
    rc, recs, err = run(harness, *SMALL, "--repeat", "4", "--system", "testbox")
    assert rc == 0, err
    assert [r["op"] for r in recs] == STREAM_OPS
    for r in recs:
        for key, typ in OK_TYPES.items():
            assert key in r, key
            assert isinstance(r[key], typ), (key, r[key])
        assert r["schema"] == SCHEMA_VERSION
        assert r["kernel"] == "stream" and r["variant"] == "default"
        assert r["system"] == "testbox" and r["repeat"] == 4
        assert r["status"] == "ok" and r["valid"] is True
        assert r["max_rel_error"] <= 1e-13
        assert r["gbps"] > 0 and r["gbps_mean"] > 0 and r["gbps_wa"] >= r["gbps"]
        assert r["gbps_mean"] <= r["gbps"] * (1 + 1e-12)
        # STREAM's rate: the bytes it counts over the best kept iteration (the first is dropped).
        assert r["gbps"] == pytest.approx(r["bytes_per_iter"] / min(r["seconds"]) / 1e9, rel=1e-9)
        assert r["gbps_wa"] == pytest.approx(r["bytes_per_iter_wa"] / min(r["seconds"]) / 1e9, rel=1e-9)
        assert r["gbps_mean"] == pytest.approx(r["bytes_per_iter"] / (sum(r["seconds"]) / len(r["seconds"])) / 1e9, rel=1e-9)
        assert len(r["seconds"]) == r["ntimes"] - 1 == 2
        assert all(isinstance(s, float) and s > 0 for s in r["seconds"])
        assert r["t_start"] < r["t_end"]
        assert r["size_bytes"] == 1048576 and r["array_elements"] == 131072
        assert r["arrays"] == 3
        assert len(r["cpus"]) == len(r["cpus_start"]) == len(r["cpu_nodes"]) == r["threads"]
        assert set(r["cpus"]) <= set(ALLOWED)
        assert r["pages_sampled"] > 0
        assert abs(sum(r["page_nodes"].values()) - 1.0) < 1e-9
        assert 0.0 <= r["hugepage_fraction"] <= 1.0
        assert r["harness_version"] == "1" and r["cflags"] == "-O3 -march=native"
    # STREAM byte counting: copy/scale 2 arrays, add/triad 3; +1 write-allocate
    n8 = 131072 * 8
    assert [r["bytes_per_iter"] for r in recs] == [2 * n8, 2 * n8, 3 * n8, 3 * n8]
    assert [r["bytes_per_iter_wa"] for r in recs] == [3 * n8, 3 * n8, 4 * n8, 4 * n8]
    # the placement fields are per process: identical in every record
    for key in ("cpus", "page_nodes", "hugepage_fraction", "t_start", "t_end", "pid"):
        assert len({json.dumps(r[key]) for r in recs}) == 1, key
    assert "Function" in err  # human summary on stderr


def test_corrupt_fails_validation(harness):
    rc, recs, _ = run(harness, *SMALL, "--test-corrupt")
    assert rc == 1
    assert len(recs) == 4
    for r in recs:
        assert r["status"] == "failed"
        assert r["valid"] is False
        assert "validation" in r["reason"]
        assert r["max_rel_error"] > 1e-13
        assert r["gbps"] is None


@pytest.mark.parametrize("ops", ["triad", "scale", "add,copy", "triad,scale,copy"])
def test_op_subsets_validate(harness, ops):
    rc, recs, err = run(harness, *SMALL, "--op", ops)
    assert rc == 0, err
    assert [r["op"] for r in recs] == ops.split(",")
    assert all(r["status"] == "ok" and r["valid"] is True for r in recs)


@pytest.mark.skipif(len(ALLOWED) < 2, reason="needs 2 allowed CPUs")
@pytest.mark.parametrize("affinity,order", [("close", close_order), ("spread", spread_order)])
def test_affinity_two_threads(harness, affinity, order):
    rc, recs, err = run(harness, *SMALL, "--threads", "2", "--affinity", affinity)
    assert rc == 0, err
    expected = order()[:2]
    for r in recs:
        assert r["threads"] == 2 and r["affinity"] == affinity
        assert r["cpus"] == r["cpus_start"] == r["cpus_bound"] == expected
        assert r["migrated"] is False
        assert r["cpu_nodes"] == [_cpu_node(c) for c in expected]


ORDER_DRIVER = r"""
#include <stdio.h>
#include "placement.h"
/* 2 nodes x 2 cores x 2 SMT siblings, Linux-style numbering: siblings n+4 */
static const int topo[8][5] = { /* cpu, node, package, die, core */
    {0, 0, 0, 0, 0}, {1, 0, 0, 0, 1}, {2, 1, 1, 0, 0}, {3, 1, 1, 0, 1},
    {4, 0, 0, 0, 0}, {5, 0, 0, 0, 1}, {6, 1, 1, 0, 0}, {7, 1, 1, 0, 1}};
int main(void)
{
    for (int kind = MB_AFF_CLOSE; kind <= MB_AFF_SPREAD; kind++) {
        mb_cpu_t c[8];
        int plan[8];
        for (int i = 0; i < 8; i++) {
            c[i].cpu = topo[i][0]; c[i].node = topo[i][1]; c[i].package = topo[i][2];
            c[i].die = topo[i][3]; c[i].core = topo[i][4];
        }
        mb_rank_smt(c, 8);
        mb_order_cpus(c, 8, (mb_affinity_kind_t)kind, 8, plan);
        for (int i = 0; i < 8; i++)
            printf("%d%c", plan[i], i == 7 ? '\n' : ',');
    }
    return 0;
}
"""


def test_close_and_spread_order_on_a_two_node_smt_topology(tmp_path):
    src = tmp_path / "order.c"
    src.write_text(ORDER_DRIVER)
    exe = tmp_path / "order"
    subprocess.run(["gcc", "-std=gnu11", "-O1", "-Wall", "-Wextra", f"-I{KERNELS / 'harness'}",
                    str(src), *(str(KERNELS / "harness" / f) for f in ("sysfs.c", "cpus.c", "mempolicy.c", "pages.c", "observe.c")), "-o", str(exe)],
                   check=True, capture_output=True, text=True)
    close, spread = subprocess.run([str(exe)], check=True, capture_output=True,
                                   text=True).stdout.split()
    # close: node by node, siblings of a core adjacent
    assert close == "0,4,1,5,2,6,3,7"
    # spread: alternate nodes; every core once before any second sibling
    assert spread == "0,2,1,3,4,6,5,7"


def test_affinity_cpu_list_one_thread(harness):
    cpu = ALLOWED[-1]
    rc, recs, err = run(harness, *SMALL, "--threads", "1", "--affinity", f"cpus:{cpu}")
    assert rc == 0, err
    for r in recs:
        assert r["cpus"] == r["cpus_start"] == [cpu]
        assert r["affinity"] == f"cpus:{cpu}"


def test_affinity_none_makes_no_binding_claim(harness):
    rc, recs, err = run(harness, *SMALL, "--threads", "1", "--affinity", "none")
    assert rc == 0, err
    for r in recs:
        assert r["cpus_bound"] is None
        assert len(r["cpus"]) == 1 and r["cpus"][0] in ALLOWED


def test_affinity_cpu_not_allowed_is_skipped(harness):
    missing = max(ALLOWED) + 1
    rc, recs, _ = run(harness, *SMALL, "--threads", "1", "--affinity", f"cpus:{missing}")
    assert rc == 3
    assert all(r["status"] == "skipped" and str(missing) in r["reason"] for r in recs)


def test_pages_4k_has_no_huge_pages(harness):
    rc, recs, err = run(harness, *SMALL, "--pages", "4k")
    assert rc == 0, err
    assert all(r["hugepage_fraction"] == 0.0 for r in recs)


@pytest.mark.skipif(thp_mode() in ("never", None), reason="THP disabled")
def test_pages_thp_gets_huge_pages(harness):
    rc, recs, err = run(harness, "--size", str(64 << 20), "--ntimes", "2",
                        "--op", "copy", "--pages", "thp")
    assert rc == 0, err
    assert recs[0]["hugepage_fraction"] > 0.0
    assert recs[0]["pages"] == "thp"


def _hugetlb_free(kb):
    d = Path(f"/sys/kernel/mm/hugepages/hugepages-{kb}kB")
    return _read_int(d / "free_hugepages", 0) - _read_int(d / "resv_hugepages", 0)


@pytest.mark.skipif(_hugetlb_free(2048) >= 3, reason="2 MiB huge pages are reserved here")
def test_hugetlb_without_reserved_pages_is_skipped(harness):
    rc, recs, _ = run(harness, *SMALL, "--pages", "hugetlb-2m")
    assert rc == 3
    assert len(recs) == 4
    for r in recs:
        assert r["status"] == "skipped"
        assert "nr_hugepages" in r["reason"]
        assert "needs 3" in r["reason"]  # 3 arrays x one 2 MiB page
        assert r["gbps"] is None and r["valid"] is None and r["seconds"] == []
        assert r["pages"] == "hugetlb-2m" and r["t_start"] <= r["t_end"]


@pytest.mark.skipif((SYS_NODE / "node7").exists(), reason="node 7 exists here")
def test_bind_to_missing_node_is_skipped(harness):
    rc, recs, _ = run(harness, *SMALL, "--policy", "bind:7")
    assert rc == 3
    assert all(r["status"] == "skipped" and "node 7" in r["reason"] for r in recs)
    assert all(r["policy"] == "bind:7" for r in recs)


@pytest.mark.skipif(len(ALLOWED) >= 64, reason="64 CPUs allowed here")
def test_more_threads_than_cpus_is_skipped(harness):
    rc, recs, _ = run(harness, *SMALL, "--threads", "64")
    assert rc == 3
    assert [r["op"] for r in recs] == STREAM_OPS
    for r in recs:
        assert r["status"] == "skipped" and r["threads"] == 64
        assert "64 threads" in r["reason"]
        assert r["cpus"] == [] and r["page_nodes"] == {}


@pytest.mark.parametrize("args,allowed", [
    (["--pages", "3k"], "hugetlb-2m"),
    (["--affinity", "everywhere"], "spread"),
    (["--affinity", "cpus:3-1"], "cpus:LIST"),
    (["--policy", "bind:x"], "interleave:all"),
    (["--policy", "preferred:0,1"], "preferred:N"),
    (["--init", "lazy"], "parallel, serial"),
    (["--threads", "0"], ">= 1"),
    (["--threads", "two"], ">= 1"),
    (["--ntimes", "1"], ">= 2"),
    (["--size", "12MB"], "bytes"),
    (["--size", "4"], "bytes"),
    (["--op", "triad,fma"], "copy, scale, add, triad"),
    (["--op", "triad,triad"], "at most once"),
    (["--repeat", "x"], "integer"),
])
def test_bad_values_are_usage_errors(harness, args, allowed):
    proc = subprocess.run([str(harness), *SMALL, *args], capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert args[0] in proc.stderr and args[1] in proc.stderr
    assert allowed in proc.stderr


@pytest.mark.parametrize("args", [["--bogus"], ["--threads"], ["stray"]])
def test_unknown_options_are_usage_errors(harness, args):
    proc = subprocess.run([str(harness), *args], capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert args[0] in proc.stderr


@pytest.mark.skipif(nodes_with_memory() != [0], reason="expects a one-node machine")
@pytest.mark.parametrize("policy", ["default", "bind:0", "local", "interleave:all",
                                    "preferred:0"])
def test_page_nodes_on_one_node(harness, policy):
    rc, recs, err = run(harness, *SMALL, "--policy", policy)
    assert rc == 0, err
    for r in recs:
        assert r["page_nodes"] == {"0": 1.0}
        assert r["pages_sampled"] == 3 * 256  # 1 MiB = 256 pages per array
        assert r["policy"] == policy


def _overcommit_mode():
    return _read_int("/proc/sys/vm/overcommit_memory", 1)


@pytest.mark.skipif(_overcommit_mode() == 1, reason="overcommit would accept the mapping")
def test_unexpected_error_is_failed(harness):
    # 2^50 bytes per array: the 4k mmap itself fails (ENOMEM) -> failed, exit 1
    rc, recs, _ = run(harness, "--size", str(1 << 50), "--op", "copy,triad")
    assert rc == 1
    assert [r["op"] for r in recs] == ["copy", "triad"]
    for r in recs:
        assert r["status"] == "failed" and "mmap" in r["reason"]
        assert r["gbps"] is None and r["seconds"] == []
        assert r["t_start"] <= r["t_end"]


def test_serial_init_runs(harness):
    rc, recs, err = run(harness, *SMALL, "--init", "serial", "--threads", "1")
    assert rc == 0, err
    assert all(r["init"] == "serial" and r["valid"] for r in recs)


def test_strings_are_json_escaped(harness):
    name = 'lab "A"\\rack\t1 \u00e9'
    rc, recs, err = run(harness, *SMALL, "--op", "copy", "--system", name,
                        "--variant", "v\"2")
    assert rc == 0, err
    assert recs[0]["system"] == name
    assert recs[0]["variant"] == 'v"2'


def test_size_rounds_down_to_whole_doubles(harness):
    rc, recs, err = run(harness, "--size", "1048579", "--ntimes", "2", "--op", "copy")
    assert rc == 0, err
    assert recs[0]["size_bytes"] == 1048576 and recs[0]["array_elements"] == 131072


def test_list_and_help_come_from_the_table(harness):
    for flag in ("--list", "--help"):
        proc = subprocess.run([str(harness), flag], capture_output=True, text=True)
        assert proc.returncode == 0
        for op in STREAM_OPS:
            assert op in proc.stdout
    listing = subprocess.run([str(harness), "--list"], capture_output=True, text=True).stdout
    assert "a[j] = b[j] + s*c[j]" in listing
