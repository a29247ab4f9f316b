"""A cell larger than the host can give is skipped before anything is
allocated: what a cell needs (kernels/families/variants.yaml, kept equal to the C
kernel table), what the host can give (MemAvailable, cgroup v1/v2 limits,
read from a fake /proc and /sys), and the skip through measure_cell."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO
from membench.measure import harness as measure
from membench.measure import memory
from membench.plan import variants
from membench.core.atomic_files import contract_problems, read_jsonl
from test_measure import ONE_NODE, fake_harness, request

TABLE = variants.load_variants(REPO / "kernels" / "families" / "variants.yaml")
GiB = 2**30


def model(family):
    return variants.families(TABLE)[family]["memory"]


def fake_host(root: Path, available: int, cgroup: str = "0::/\n", files: dict | None = None) -> Path:
    """A /proc and /sys tree: MemAvailable, this process's cgroup line(s),
    and any cgroup or node files given as {relative path: text}."""
    (root / "proc" / "self").mkdir(parents=True)
    (root / "proc" / "meminfo").write_text(
        f"MemTotal:       {2 * available // 1024} kB\nMemFree:        {available // 2048} kB\n"
        f"MemAvailable:   {available // 1024} kB\nHugePages_Free:        0\n"
    )
    (root / "proc" / "self" / "cgroup").write_text(cgroup)
    (root / "sys" / "fs" / "cgroup").mkdir(parents=True)
    for rel, text in (files or {}).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_memory_model_matches_the_c_kernel_table():
    """arrays = narrays of each family's row in kernels/families/kernel_table.c; the
    load threads' arrays = reads + writes of the loaded op's row, as
    kernels/families/loaded.c maps them."""
    table_c = (REPO / "kernels" / "families" / "kernel_table.c").read_text()
    rows = dict(re.findall(r'\{\.name = "(\w+)", \.narrays = (\d+)', table_c))
    assert set(rows) == set(variants.families(TABLE))
    for family in rows:
        assert model(family)["arrays"] == int(rows[family]), family
    # kernels/families/loaded.c maps reads + writes arrays per load thread for its op
    assert "lo.narr = k->reads + k->writes;" in (REPO / "kernels" / "families" / "loaded.c").read_text()
    loaded_rows = re.findall(r'\{\.family = "loaded", \.op = "(\w+)",([^}]*)\}', table_c)
    load_arrays = {
        op: sum(int(n) for n in re.findall(r"\.(?:reads|writes) = (\d+)", body)) for op, body in loaded_rows
    }
    assert model("loaded")["load_arrays"] == load_arrays == {
        "triad": 3, "read": 1, "r1w0": 1, "r3w1": 4, "r2w1": 3, "r1w1": 2, "r2w1nt": 3}


def test_what_a_cell_needs_per_family():
    size = GiB
    assert memory.cell_need(model("stream"), size, 4, ("triad",)).bytes == 3 * GiB
    assert memory.cell_need(model("readonly"), size, 4, ("sum",)).bytes == GiB
    assert memory.cell_need(model("daxpy"), size, 4, ("daxpy",)).bytes == 2 * GiB
    assert memory.cell_need(model("chase"), size, 1, ("random",)).bytes == GiB + GiB // 64 * 4
    assert memory.cell_need(model("chase"), size, 1, ("random",), spacing=256).bytes == GiB + GiB // 256 * 4
    loaded = memory.cell_need(model("loaded"), size, 3, ("triad",))
    assert loaded.bytes == GiB + 2 * 3 * GiB + GiB // 16 and "2 load threads x 3" in loaded.parts
    assert memory.cell_need(model("loaded"), size, 3, ("read",)).bytes == GiB + 2 * GiB + GiB // 16


# (family, harness arguments, threads, ops, size): the chase at 128 MiB with a
# pointer per 64-byte line has an 8 MiB visiting order (2 MiB at its default
# 256-byte spacing), more than the tolerance below, so it must be counted.
REAL_RUNS = [
    ("stream", ["--op", "copy"], 1, ("copy",), 64 * 2**20),
    ("chase", ["--sweep-from", str(128 * 2**20), "--spacing", "64"], 1, ("random", "stride"), 128 * 2**20),
    ("loaded", ["--op", "triad"], 2, ("triad",), 32 * 2**20),
    ("loaded", ["--op", "read"], 2, ("read",), 32 * 2**20),
]


@pytest.fixture(scope="module")
def binaries(variant_builds):
    """The default variant of each family run below, built as the build rule builds it."""
    families = sorted({run[0] for run in REAL_RUNS})
    variant_builds.build([(family, "default") for family in families])
    return {family: variant_builds.binary(family) for family in families}


@pytest.mark.parametrize(("family", "args", "threads", "ops", "size"), REAL_RUNS, ids=lambda v: str(v))
def test_the_estimate_matches_what_the_harness_really_holds(binaries, family, args, threads, ops, size):
    """Peak resident memory of a real run against the estimate: at most the
    binary's own few MiB above it, never below (else the check would let
    through a cell that does not fit)."""
    probe = (
        "import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL); "
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)"
    )
    argv = [str(binaries[family]), "--size", str(size), "--ntimes", "2", "--threads", str(threads), *args]
    peak = int(subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True, check=True).stdout)
    spacing = int(args[args.index("--spacing") + 1]) if "--spacing" in args else 256  # the default
    need = memory.cell_need(model(family), size, threads, ops, spacing).bytes
    assert need <= peak <= need + 6 * 2**20, (need, peak)


def test_mem_available_is_the_limit_without_a_cgroup_limit(tmp_path):
    root = fake_host(tmp_path, 8 * GiB, "4:memory:/job\n0::/\n", {
        "sys/fs/cgroup/memory/job/memory.limit_in_bytes": "9223372036854771712\n",
        "sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n",
    })  # fmt: skip
    host = memory.host_memory(root)
    assert host.available == 8 * GiB and host.source == "MemAvailable in /proc/meminfo"


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_a_cgroup_limit_below_mem_available_is_the_limit(tmp_path, version):
    """Under SLURM the job's memory cgroup binds first: limit minus what the
    cgroup holds (inactive page cache counts as free)."""
    if version == "v2":
        cgroup, base = "0::/slurm/job_7/step_0\n", "sys/fs/cgroup/slurm/job_7"
        files = {f"{base}/memory.max": f"{4 * GiB}\n", f"{base}/memory.current": f"{GiB}\n",
                 f"{base}/memory.stat": f"anon {GiB // 2}\ninactive_file {GiB // 2}\n",
                 f"{base}/step_0/memory.max": "max\n", "sys/fs/cgroup/slurm/memory.max": "max\n"}  # fmt: skip
        name = "memory.max"
    else:
        cgroup, base = "7:cpuacct,memory:/slurm/job_7\n", "sys/fs/cgroup/memory/slurm/job_7"
        files = {f"{base}/memory.limit_in_bytes": f"{4 * GiB}\n", f"{base}/memory.usage_in_bytes": f"{GiB}\n",
                 f"{base}/memory.stat": f"cache {GiB // 2}\ntotal_inactive_file {GiB // 2}\n"}  # fmt: skip
        name = "memory.limit_in_bytes"
    host = memory.host_memory(fake_host(tmp_path, 100 * GiB, cgroup, files))
    assert host.available == 4 * GiB - GiB // 2
    assert name in host.source and "job_7" in host.source


def measure_oversize(tmp_path, root, req):
    """measure_cell with a harness that leaves a mark if it ever starts."""
    binary = fake_harness(tmp_path, f"touch {tmp_path}/started; exit 0")
    topology = tmp_path / "topology.json"
    topology.write_text(json.dumps(ONE_NODE))
    out = tmp_path / "runs" / "r0.jsonl"
    records = measure.measure_cell(
        str(binary), str(topology), str(out), str(tmp_path / "log"),
        request=req, experiment="e", cell_id="e/stream-default/x", host_root=root,
    )  # fmt: skip
    assert read_jsonl(out) == json.loads(json.dumps(records))
    assert all(contract_problems(r) == [] for r in records)
    return records


def test_a_cell_larger_than_the_host_is_skipped_with_both_numbers(tmp_path):
    """The issue's case: --size 60GiB of STREAM (three arrays) on a machine
    with about 120 GiB available. Nothing starts, so nothing is allocated."""
    root = fake_host(tmp_path / "host", 120 * GiB)
    records = measure_oversize(tmp_path, root, request(size=60 * GiB, ops=("copy", "triad")))
    assert [r["status"] for r in records] == ["skipped", "skipped"]
    reason = records[0]["reason"]
    assert "180 GiB" in reason and str(180 * GiB) in reason and "3 x 60 GiB" in reason
    assert "120 GiB" in reason and "MemAvailable" in reason
    assert records[0]["memory_needed_bytes"] == 180 * GiB and records[0]["memory_available_bytes"] == 120 * GiB
    assert not (tmp_path / "started").exists()


def test_the_job_cgroup_limit_skips_what_mem_available_would_allow(tmp_path):
    base = "sys/fs/cgroup/slurm/job_7"
    root = fake_host(tmp_path / "host", 100 * GiB, "0::/slurm/job_7\n", {
        f"{base}/memory.max": f"{4 * GiB}\n", f"{base}/memory.current": "0\n",
    })  # fmt: skip
    records = measure_oversize(tmp_path, root, request(size=2 * GiB))
    assert all(r["status"] == "skipped" for r in records)
    assert "6 GiB" in records[0]["reason"] and "4 GiB" in records[0]["reason"]
    assert "memory.max" in records[0]["reason"] and not (tmp_path / "started").exists()


def test_a_short_bound_node_is_a_note_never_a_skip(tmp_path):
    """A node's sysfs MemFree under-reports on some machines: the cell runs
    (within the system-wide limit) and its records carry the note."""
    root = fake_host(tmp_path / "host", 100 * GiB, "0::/\n", {
        "sys/devices/system/node/node0/meminfo": f"Node 0 MemTotal: {GiB // 1024} kB\nNode 0 MemFree: {GiB // 2048} kB\n",
    })  # fmt: skip
    records = measure_oversize(tmp_path, root, request(size=GiB, policy="bind:0"))
    assert (tmp_path / "started").exists()  # it ran
    assert all(r["status"] != "skipped" for r in records)
    assert all("node(s) 0 report 512 MiB free" in r["memory_note"] for r in records)
    assert "note: bind:0" in (tmp_path / "log").read_text()


def test_the_real_host_skips_an_oversize_cell_without_starting_it(tmp_path):
    """On this machine's own /proc: arrays of all of MemAvailable each."""
    available = memory.host_memory().available
    assert available and available > 0
    records = measure_oversize(tmp_path, Path("/"), request(size=available))
    assert all(r["status"] == "skipped" and ("MemAvailable" in r["reason"] or "cgroup" in r["reason"]) for r in records)
    assert not (tmp_path / "started").exists()
