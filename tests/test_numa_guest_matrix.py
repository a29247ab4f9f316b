"""The node x node matrices on a real multi-node kernel: QEMU guests
(tools/numa_guest) with 2 nodes, and with 4 CPU nodes plus a memory-only
node 4 (`-numa node,memdev=...` with no CPUs, as a CXL expander shows up).

config/numa_matrix.yaml is expanded against the guest's own topology (read
from its sysfs, as the probe would) by membench.plan.node_pairs, each pair is
resolved by membench.measure.harness.resolve exactly as a round does (the memory-
only node's row is skipped there, with its reason), and the pairs that run
go to the static chase and readonly harnesses inside the guest. Their
records then pass through the real collect, summary and matrix code.

Sizes are tiny (the guest is slow TCG and has 96-224 MiB per node): the
chase at 2 MiB and the read sum at 1 MiB per array, one repetition, two
iterations. What is proven is shape and placement, not speed: every pair
that runs has its threads on node I and every sampled page on node J.
Skipped without QEMU, like tests/test_numa_guest.py.
"""

from __future__ import annotations

import math
import os
import sys
import time
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))

from membench.core import disturbance  # noqa: E402
from membench.plan import families  # noqa: E402
from membench.plan import variants  # noqa: E402
from membench.plan import checks
from membench.measure import harness as measure
from membench.plan import node_pairs
from membench.plan import rounds
from membench.probe import topology
from membench.store.collect import records_table  # noqa: E402
from membench.analyse.node_matrix import experiment_matrices  # noqa: E402
from membench.findings.locality_tables import table_context  # noqa: E402
from membench.analyse.stats import problem_cells, summarise_cells  # noqa: E402
from numa_guest import guest, image  # noqa: E402

TABLE = variants.load_variants(REPO / "kernels" / "families" / "variants.yaml")
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
# The guest-sized overrides of config/numa_matrix.yaml (see the module doc).
TINY = {
    "latency_matrix": {"size": ["2MiB"], "sweep_from": "2MiB"},
    "bandwidth_matrix": {"size": ["1MiB"]},
}
FAMILIES = {"chase": "default", "readonly": "v006"}
# /bin/harness in the guest runs each case line; this wrapper, laid over the
# base image's harness, picks the family's binary by the line's first word.
WRAPPER = b'#!/bin/sh\nfamily=$1\nshift\nexec /bin/mb-$family "$@"\n'


def guest_config() -> tuple[dict, list]:
    config = yaml.safe_load((REPO / "config" / "numa_matrix.yaml").read_text())
    config.update(repeats=1, ntimes=2)
    # The mixes per pair take the bandwidth matrix's placement path (node:I
    # threads, bind:J pages); their -march=native build is not for an
    # emulated CPU, so the guest proves placement on the two matrices.
    config["experiments"].pop("mix_matrix")
    for name, changes in TINY.items():
        config["experiments"][name].update(changes)
    return checks.load(config, SCHEMA, TABLE)


@pytest.fixture(scope="module")
def guest_tools(tmp_path_factory):
    try:
        tools = image.require_tools()
        kernel = image.fetch_kernel()
    except image.Unavailable as exc:
        if os.environ.get("MEMBENCH_REQUIRE_GUEST"):
            pytest.fail(f"numa guest unavailable and MEMBENCH_REQUIRE_GUEST is set: {exc}")
        pytest.skip(f"numa guest unavailable: {exc}")
    work = tmp_path_factory.mktemp("numa_guest_matrix")
    entries = [("bin/harness", 0o100755, WRAPPER)]
    for family, variant in FAMILIES.items():
        binary = work / f"mb-{family}"
        image.build_harness(binary, REPO / "kernels", family, variant)
        entries.append((f"bin/mb-{family}", 0o100755, binary.read_bytes()))
    stream = image.build_harness(work / "harness")
    base = image.base_initramfs(stream, tools["busybox"]).read_bytes()
    # The kernel unpacks concatenated archives in order, a later file
    # replacing an earlier one (the base's harness by the wrapper).
    combined = work / "initramfs-matrix.cpio"
    combined.write_bytes(base + b"\0" * (-len(base) % 4) + image.cpio_newc(entries))
    return kernel, combined, work


def guest_records(run, plan) -> list[dict]:
    """The records of every pair: the harness's from the guest, or the
    skipped record measure.resolve's reason gives; with the keys a round
    adds (membench.measure.harness.measure_cell)."""
    out = []
    for index, (cell, req, resolved, reason, topo) in enumerate(plan):
        if reason:
            records = measure._placeholder_records(req, resolved, "skipped", reason)
        else:
            case = run.case_index[index]
            assert run.exit_codes.get(case) == 0, (cell.id, run.cases.get(case), run.stderr.get(case))
            records = run.records[case]
        for record in records:
            record.update(
                affinity_requested=req.affinity, experiment=cell.experiment, cell=cell.id, threads_requested=req.threads,
                size_requested=req.size, policy_requested=req.policy, pages_requested=req.pages_requested,
                chase_group_requested=req.chase_group if req.kernel == "chase" else None,
                memory_nodes=[n["node"] for n in topo["nodes"] if n["memory_bytes"]],
            )  # fmt: skip
        out += records
    return out


@pytest.fixture(scope="module", params=["2node", "4node-memonly"])
def matrix_run(request, guest_tools, option_listings):
    kernel, initrd, work = guest_tools
    layout = guest.LAYOUTS[request.param]
    started = time.monotonic()
    probe = guest.boot(layout, [], kernel=kernel, base_initrd=initrd, workdir=work / layout.name, dump_sysfs=True)
    assert probe.done and probe.returncode == 0, probe.explain()
    topo = topology.read_topology(probe.write_root(work / layout.name / "root"))
    _, cells = guest_config()
    system = f"guest-{layout.name}"
    allowed = [c["cpu"] for c in topo["cpus"]]
    plan, argvs, case_index = [], [], {}
    for cell in node_pairs.expand_pairs(cells, topo):
        req = measure.Request.of_dict(rounds.cell_request(cell, system, 0, TABLE))
        resolved, reason = measure.resolve(req, topo, allowed)
        if not reason:
            argvs.append([cell.kernel, *measure.harness_argv("/bin/harness", req, resolved, option_listings[cell.kernel])[1:]])
            case_index[len(plan)] = len(argvs)
        plan.append((cell, req, resolved, reason, topo))
    run = guest.boot(layout, argvs, kernel=kernel, base_initrd=initrd, workdir=work / layout.name, timeout=240)
    assert run.done and run.returncode == 0, run.explain()
    run.case_index = case_index
    records = guest_records(run, plan)
    table = records_table(records, {system: topo})
    cells_summary, problems = summarise_cells(table), problem_cells(table)
    print(f"\nguest {layout.name}: {len(plan)} pairs, {len(argvs)} run in the guest, "
          f"{time.monotonic() - started:.0f} s with both boots")  # fmt: skip
    matrices = {}
    for experiment in ("latency_matrix", "bandwidth_matrix"):
        (matrices[experiment],) = experiment_matrices(cells_summary, problems, {system: topo}, experiment)
        context = table_context(matrices[experiment])
        print(context["title"], "(tiny sizes, TCG: shape and placement, not speed)")
        print("  CPU\\mem " + " ".join(f"{c['node']:>13}" for c in context["columns"]))
        for row in context["rows"]:
            texts = [f"{c['value']} {c['mark']}".strip() if c["value"] else f"{c['status']} {c['mark']}" for c in row["cells"]]
            print(f"  {row['node']:>7} " + " ".join(f"{t:>13}" for t in texts))
        for note in context["footnotes"]:
            print(f"  {note['mark']} {note['text']}")
    return layout, topo, records, matrices


MATRIX_KERNEL = {"latency_matrix": "chase", "bandwidth_matrix": "readonly"}


def statuses_from_records(records: list[dict], kernel: str) -> dict[tuple[int, int], str]:
    """(node I, node J) -> the status each measured pair must have, from its
    own records: "disturbed" when the disturbed rule marks every run of the
    row the matrix shows (the chase's largest working set; the family's last
    op), else "ok"."""
    mine = [r for r in records if r["status"] == "ok" and r["kernel"] == kernel]
    if kernel == "chase":
        op = families.idle_latency()[1]
        mine = [r for r in mine if r["op"] == op]
        largest = {}
        for r in mine:
            largest[r["cell"]] = max(largest.get(r["cell"], 0), r["working_set_bytes"])
        mine = [r for r in mine if r["working_set_bytes"] == largest[r["cell"]]]
    else:
        last = {}
        for r in mine:
            last[r["cell"]] = r["op"]
        mine = [r for r in mine if r["op"] == last[r["cell"]]]
    pairs: dict[tuple[int, int], list[bool]] = {}
    for r in mine:
        pair = (int(r["affinity_requested"].removeprefix("node:")), int(r["policy_requested"].removeprefix("bind:")))
        pairs.setdefault(pair, []).append(disturbance.verdict(r)[0] is True)
    return {pair: "disturbed" if all(marks) else "ok" for pair, marks in pairs.items()}


def test_matrices_have_one_row_and_column_per_guest_node(matrix_run):
    layout, topo, _, matrices = matrix_run
    nodes = list(range(layout.nnodes))
    assert [n["node"] for n in topo["nodes"]] == nodes
    for matrix in matrices.values():
        assert list(matrix.status.index) == list(matrix.status.columns) == nodes


def test_every_pair_ran_on_node_i_with_pages_on_node_j(matrix_run):
    layout, _, records, matrices = matrix_run
    ok = [r for r in records if r["status"] == "ok"]
    cpu_nodes = [n for n, cpus in enumerate(layout.node_cpus) if cpus]
    assert len({r["cell"] for r in ok}) == 2 * len(cpu_nodes) * layout.nnodes  # every pair with CPUs ran
    for r in ok:
        i = int(r["affinity_requested"].removeprefix("node:"))
        j = int(r["policy_requested"].removeprefix("bind:"))
        assert r["valid"] is True and r["migrated"] is False, r
        assert set(r["cpu_nodes"]) == {i}, (r["cell"], r["cpu_nodes"])
        # the chase: one thread; the read sum (threads: node): every core of node I
        assert r["threads"] == (1 if r["kernel"] == "chase" else len(layout.node_cpus[i])), r["cell"]
        assert {int(n): f for n, f in r["page_nodes"].items()} == {j: 1.0}, (r["cell"], r["page_nodes"])
    all_disturbed = []
    for experiment, matrix in matrices.items():
        # verified placement: nothing marked otherwise; a pair is "disturbed" exactly when
        # the disturbed rule marks its every run (a busy host slows the guest), else "ok"
        expected = statuses_from_records(records, MATRIX_KERNEL[experiment])
        assert sorted(expected) == [(i, j) for i in cpu_nodes for j in range(layout.nnodes)], sorted(expected)
        shown = {pair: matrix.status.loc[pair] for pair in expected}
        assert shown == expected, (experiment, matrix.status)
        assert all(not math.isnan(matrix.median.loc[i, j]) for (i, j), s in expected.items() if s == "ok")
        if "ok" not in expected.values():
            all_disturbed.append(experiment)
    if all_disturbed:
        pytest.skip(f"every pair's every run disturbed (a busy host) in {', '.join(all_disturbed)}: "
                    "no pair's median checked there")  # fmt: skip


def test_memory_only_node_is_a_filled_column_and_a_skipped_row(matrix_run):
    layout, _, records, matrices = matrix_run
    memory_only = [n for n, cpus in enumerate(layout.node_cpus) if not cpus]
    if not memory_only:
        pytest.skip(f"{layout.name} has no memory-only node")
    (node,) = memory_only
    all_disturbed = []
    for experiment, matrix in matrices.items():
        assert (matrix.status.loc[node] == "skipped").all()
        assert set(matrix.note.loc[node]) == {
            f"affinity node:{node}: no usable CPUs on node {node} (nodes with CPUs: [0, 1, 2, 3])"
        }
        # measured from every CPU node; a pair whose every run the guest's busy host
        # disturbed is said so, with no number (issue 32)
        expected = statuses_from_records(records, MATRIX_KERNEL[experiment])
        column = matrix.status.loc[[0, 1, 2, 3], node]
        assert column.to_dict() == {i: expected[(i, node)] for i in (0, 1, 2, 3)}, (experiment, column)
        assert matrix.median.loc[[0, 1, 2, 3], node][column == "ok"].notna().all()
        assert matrix.row_notes == {node: "no CPUs (memory only: CXL, HBM or similar)"}
        if not (column == "ok").any():
            all_disturbed.append(experiment)
    if all_disturbed:
        pytest.skip(f"every pair into memory-only node {node} disturbed in every run (a busy host) in "
                    f"{', '.join(all_disturbed)}: no median of its column checked there")  # fmt: skip
