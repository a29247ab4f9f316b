"""Node x node matrices: the config shorthand (node:each, bind:each), its
expansion per system at measure time, the skip reasons of memory-only and
CPU-only nodes, and the report's tables and heat map at 1, 8 and 16 nodes
(synthetic records shaped like the harness's, through the real collect,
summary and matrix code). The QEMU guest proves the same on a real kernel
(tests/test_numa_guest.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from membench.plan import checks
from membench.measure import harness as measure
from membench.plan import node_pairs
from membench.plan import rounds
from membench.plan import variants
from membench.store.collect import records_table
from membench.analyse.concurrency import idle_latencies
from membench.plan.grammar import ConfigError, expand
from membench.figures.node_heatmap import matrix_svg
from membench.analyse.node_matrix import experiment_matrices
from membench.findings.locality_tables import table_context
from membench.analyse.stats import problem_cells, summarise_cells

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
TABLE = variants.load_variants(REPO / "kernels" / "families" / "variants.yaml")
MATRIX_CONFIG = REPO / "config" / "numa_matrix.yaml"


def make_topology(nodes: int, cpus_per_node: int = 2, memory_only: tuple[int, ...] = (), cpu_only: tuple[int, ...] = ()) -> dict:
    """nodes NUMA nodes; memory_only nodes have no CPUs, cpu_only no memory."""
    cpus, node_list, cpu = [], [], 0
    for node in range(nodes):
        mine = [] if node in memory_only else list(range(cpu, cpu + cpus_per_node))
        cpu += len(mine)
        cpus += [{"cpu": c, "node": node, "package": node, "core": c, "siblings": [c]} for c in mine]
        node_list.append(
            {
                "node": node,
                "cpus": mine,
                "memory_bytes": 0 if node in cpu_only else 16 * 2**30,
                "distances": [10 if n == node else 20 for n in range(nodes)],
            }
        )
    return {"cpu_model": "synthetic", "cpu_flags": [], "cpus": cpus, "nodes": node_list, "caches": [],
            "llc_bytes": 32 * 2**20, "line_bytes": 64, "cores": cpu, "packages": nodes}  # fmt: skip


def load_matrix_config(mixes: bool = False) -> tuple[dict, list]:
    """config/numa_matrix.yaml; by default its two matrices only (the mixes
    per pair are tested by test_the_matrix_config_holds_the_five_mixes_per_pair)."""
    import yaml

    config = yaml.safe_load(MATRIX_CONFIG.read_text())
    if not mixes:
        config["experiments"].pop("mix_matrix")
    return checks.load(config, SCHEMA, TABLE)


def test_the_matrix_config_holds_the_five_mixes_per_pair():
    _, cells = load_matrix_config(mixes=True)
    mixes = [c for c in cells if c.experiment == "mix_matrix"]
    assert mixes and all(c.kernel == "mix" and c.affinity == "node:each" and c.policy == "bind:each" for c in mixes)
    concrete = node_pairs.expand_pairs(mixes, make_topology(4))
    assert len(concrete) == 16 and {c.policy for c in concrete} == {f"bind:{j}" for j in range(4)}


# ------------------------------------------------------------ expansion


def test_numa_matrix_config_is_valid_and_keeps_each_cells_until_the_probe():
    config, cells = load_matrix_config()
    assert {c.experiment for c in cells} == {"latency_matrix", "bandwidth_matrix"}
    assert all(c.affinity == "node:each" and c.policy == "bind:each" for c in cells)
    assert node_pairs.expand_pairs(cells, None) == []  # nothing to name before the probe


@pytest.mark.parametrize("nodes", [1, 2, 4, 8, 16])
def test_each_by_each_is_every_pair_rows_outer(nodes):
    _, cells = load_matrix_config()
    topology = make_topology(nodes)
    concrete = node_pairs.expand_pairs(cells, topology)
    assert len(concrete) == 2 * nodes * nodes and len({c.id for c in concrete}) == len(concrete)
    chase = [c for c in concrete if c.kernel == "chase"]
    assert [(c.affinity, c.policy) for c in chase] == [(f"node:{i}", f"bind:{j}") for i in range(nodes) for j in range(nodes)]


def test_one_axis_each_gives_a_row_or_a_column():
    config = {
        "experiments": {
            "row": {"kernel": "chase", "affinity": ["node:1"], "policy": ["bind:each"], "size": ["64MiB"]},
            "diagonal": {"kernel": "chase", "affinity": ["node:each"], "policy": ["local"], "size": ["64MiB"]},
        }
    }
    _, cells = checks.load(config, SCHEMA, TABLE)
    concrete = node_pairs.expand_pairs(cells, make_topology(3))
    row = [(c.affinity, c.policy) for c in concrete if c.experiment == "row"]
    assert row == [("node:1", "bind:0"), ("node:1", "bind:1"), ("node:1", "bind:2")]
    assert [(c.affinity, c.policy) for c in concrete if c.experiment == "diagonal"] == [
        ("node:0", "local"), ("node:1", "local"), ("node:2", "local"),
    ]  # fmt: skip


def test_each_pair_is_its_own_request():
    """The pair (affinity node:I, policy bind:J) is in the request digest:
    a stored repetition of one pair never stands in for another."""
    _, cells = load_matrix_config()
    concrete = node_pairs.expand_pairs(cells, make_topology(2))
    digests = {rounds.digest(rounds.cell_request(c, "s", 0, TABLE)) for c in concrete}
    assert len(digests) == len(concrete)
    request = rounds.cell_request(concrete[1], "s", 0, TABLE)
    assert (request["affinity"], request["policy"]) == ("node:0", "bind:1")


def test_the_round_expands_pairs_from_the_topology():
    import yaml

    config, cells = load_matrix_config()
    study = json.loads(rounds.RoundInputs(config, cells, TABLE).study("s", 0))
    for nodes, count in ((4, 32), (1, 2)):
        plan = rounds.plan_of_study(study, "s", 0, make_topology(nodes))
        assert len(plan.members) == count
        # each pair's id and request as the config's cells give them
        concrete = node_pairs.expand_pairs(cells, make_topology(nodes))
        assert sorted((m.id, m.request_digest) for m in plan.members) == sorted(
            (c.id, rounds.digest(rounds.cell_request(c, "s", 0, TABLE))) for c in concrete)
    assert rounds.plan_of_study(study, "s", 0, None).members == []  # not probed: no pair to name


def test_bad_pair_configs_are_all_named_at_once():
    config = {
        "experiments": {
            "m": {"kernel": "readonly", "variants": ["v006"], "threads": ["all", "cores", "node"],
                  "affinity": ["node:each"], "policy": ["bind:every"]},
            "n": {"kernel": "chase", "affinity": ["node:any"], "policy": ["bind:each"]},
        }
    }  # fmt: skip
    with pytest.raises(ConfigError) as error:
        checks.load(config, SCHEMA, TABLE)
    text = str(error.value)
    assert "experiments.m.threads[0]: 'all' is not allowed with affinity node:each" in text
    assert "experiments.m.threads[1]: 'cores' is not allowed with affinity node:each" in text
    assert "experiments.m.policy[0]: 'bind:every' is not allowed; allowed: " in text and "bind:each" in text
    assert "experiments.n.affinity[0]: 'node:any' is not allowed" in text and "node:each" in text
    assert "(4 problems)" in text


# -------------------------------------------------- resolve on odd nodes


def request(affinity: str, policy: str, threads="node", kernel="readonly") -> measure.Request:
    return measure.Request(
        system="s", kernel=kernel, variant="v006", ops=("sum",), threads=threads, affinity=affinity,
        policy=policy, pages="4k", init="parallel", size=2**20, ntimes=2, repeat=0,
    )  # fmt: skip


def test_memory_only_row_and_cpu_only_column_are_skipped_with_reasons():
    topo = make_topology(4, memory_only=(3,), cpu_only=(2,))
    allowed = [c["cpu"] for c in topo["cpus"]]
    _, reason = measure.resolve(request("node:3", "bind:0"), topo, allowed)
    assert reason == "affinity node:3: no usable CPUs on node 3 (nodes with CPUs: [0, 1, 2])"
    _, reason = measure.resolve(request("node:0", "bind:2"), topo, allowed)
    assert reason == "policy bind:2: NUMA node 2 has no memory (a node of CPUs only)"
    resolved, reason = measure.resolve(request("node:1", "bind:3"), topo, allowed)
    assert reason is None and resolved == {"threads": 2, "size": 2**20, "policy": "bind:3", "affinity": "cpus:2,3"}


def test_node_smt_takes_the_siblings_node_one_per_core():
    topo = make_topology(2, cpus_per_node=4)
    for cpu in topo["cpus"]:  # two cores per node, two siblings each
        cpu["core"] = cpu["cpu"] // 2
        cpu["siblings"] = [2 * (cpu["cpu"] // 2), 2 * (cpu["cpu"] // 2) + 1]
    allowed = list(range(8))
    # the node's CPUs, one per core first; thread i takes the i-th
    resolved, _ = measure.resolve(request("node:1", "bind:0", "node"), topo, allowed)
    assert (resolved["threads"], resolved["affinity"]) == (2, "cpus:4,6,5,7")
    resolved, _ = measure.resolve(request("node:1", "bind:0", "node-smt"), topo, allowed)
    assert (resolved["threads"], resolved["affinity"]) == (4, "cpus:4,6,5,7")


# ------------------------------------------- records -> tables -> figure


def fake_records(cell, topo: dict, repeat: int, *, misplace: bool = False) -> list[dict]:
    """What the harness would write for one pair: skipped with the reason
    measure.resolve gives, else an ok record whose pages sit on node J
    (or, misplaced, half on another node) and whose threads ran on node I."""
    allowed = [c["cpu"] for c in topo["cpus"]]
    req = measure.Request(**rounds.cell_request(cell, "big", repeat, TABLE))
    resolved, reason = measure.resolve(req, topo, allowed)
    if reason:
        records = measure._placeholder_records(req, resolved, "skipped", reason)
    else:
        node_of = {c["cpu"]: c["node"] for c in topo["cpus"]}
        cpus = [int(c) for c in resolved["affinity"].removeprefix("cpus:").split(",")][: resolved["threads"]]
        home = int(resolved["policy"].removeprefix("bind:"))
        pages = {str(home): 0.5, str((home + 1) % len(topo["nodes"])): 0.5} if misplace else {str(home): 1.0}
        distance = topo["nodes"][node_of[cpus[0]]]["distances"][home]
        base = {
            "schema": 1, "system": "big", "kernel": cell.kernel, "variant": cell.variant, "threads": len(cpus),
            "affinity": resolved["affinity"], "policy": resolved["policy"],
            "pages": "4k", "init": "parallel", "size_bytes": resolved["size"], "repeat": repeat, "status": "ok",
            "reason": None, "valid": True, "cpus": cpus, "cpus_start": cpus, "cpus_bound": cpus,
            "cpu_nodes": [node_of[c] for c in cpus], "page_nodes": pages, "hugepage_fraction": 0.0,
            "migrated": False, "t_start": 0.0, "t_end": 1.0,
        }  # fmt: skip
        if cell.kernel == "chase":
            records = [{**base, "op": "random", "working_set_bytes": resolved["size"], "ns_per_load": 5.0 * distance + repeat}]
        else:
            # a read kernel: every byte it moves is read (as the harness records from its table)
            records = [{**base, "op": "sum", "gbps": 400.0 / distance + repeat, "gbps_wa": 400.0 / distance + repeat,
                        "bytes_per_iter": 8000, "bytes_per_iter_wa": 8000, "bytes_read_per_iter": 8000,
                        "bytes_written_per_iter": 0}]  # fmt: skip
    for record in records:
        record.update(experiment=cell.experiment, cell=cell.id, threads_requested=cell.threads,
                      affinity_requested=cell.affinity, policy_requested=cell.policy, size_requested=cell.size,
                      chase_group_requested=cell.chase_group if cell.kernel == "chase" else None,
                      memory_nodes=[n["node"] for n in topo["nodes"] if n["memory_bytes"]])  # fmt: skip
    return records


def summarised(topo: dict, repeats: int = 3, misplace: tuple[str, ...] = ()) -> tuple[pd.DataFrame, pd.DataFrame]:
    _, cells = load_matrix_config()
    concrete = node_pairs.expand_pairs(cells, topo)
    records = [
        r
        for cell in concrete
        for k in range(repeats)
        for r in fake_records(cell, topo, k, misplace=k == 0 and (cell.affinity, cell.policy) in misplace)
    ]
    table = records_table(records, {"big": topo})
    return summarise_cells(table), problem_cells(table)


@pytest.mark.parametrize("nodes", [8, 16])
def test_matrices_at_8_and_16_nodes_with_odd_nodes(nodes):
    memory_only, cpu_only = (nodes - 1,), (nodes - 2,)
    topo = make_topology(nodes, memory_only=memory_only, cpu_only=cpu_only)
    cells, problems = summarised(topo, misplace=(("node:0", "bind:1"),))
    for experiment, metric in (("latency_matrix", "ns"), ("bandwidth_matrix", "GB/s")):
        (m,) = experiment_matrices(cells, problems, {"big": topo}, experiment)
        assert m.metric == metric and m.status.shape == (nodes, nodes)
        assert list(m.status.index) == list(m.status.columns) == list(range(nodes))
        mem_row, cpu_col = memory_only[0], cpu_only[0]
        assert (m.status.loc[mem_row] == "skipped").all()  # the memory-only node's row
        assert (m.status[cpu_col] == "skipped").all()  # the CPU-only node's column
        assert m.status.loc[0, mem_row] == "ok"  # its memory is a column like any other
        assert m.status.loc[0, 1] == "mismatch" and "1 of 3 runs placed otherwise" in m.note.loc[0, 1]
        ok = m.status == "ok"
        assert int(ok.sum().sum()) == (nodes - 1) * (nodes - 1) - 1
        assert m.row_notes == {mem_row: "no CPUs (memory only: CXL, HBM or similar)"}
        assert m.column_notes == {cpu_col: "no memory (CPUs only)"}
        # the median of repetitions 0, 1, 2 (value + repeat): the model's value + 1
        local = 50.0 + 1 if metric == "ns" else 40.0 + 1
        assert m.median.loc[2, 2] == pytest.approx(local)
        context = table_context(m)
        assert [c["node"] for c in context["columns"]] == list(range(nodes))
        assert context["rows"][2]["cells"][2]["local"] and context["rows"][2]["cells"][2]["value"]
        # one footnote per distinct reason: the row's, the column's, the mismatch
        assert len(context["footnotes"]) == 3, context["footnotes"]
        texts = [f["text"] for f in context["footnotes"]]
        assert any(f"no usable CPUs on node {mem_row}" in t for t in texts)
        assert any(f"NUMA node {cpu_col} has no memory" in t for t in texts)
        svg = matrix_svg([m], f"{experiment}-matrix")
        assert svg.startswith("<svg") and len(svg) < 1_500_000
        width = float(svg.split('width="', 1)[1].split("pt", 1)[0])
        assert width < 700  # bounded: 9 in at most


def test_one_node_matrix_is_the_idle_latency_the_report_shows():
    topo = make_topology(1)
    cells, problems = summarised(topo, repeats=5)
    (m,) = experiment_matrices(cells, problems, {"big": topo}, "latency_matrix")
    assert m.status.shape == (1, 1) and m.status.loc[0, 0] == "ok"
    idle = idle_latencies(cells)
    (row,) = idle[idle["placement"] == "bind:0 from node:0"].to_dict("records")
    assert m.median.loc[0, 0] == row["ns"] == 52.0  # 50 + the median repeat
    assert (m.low.loc[0, 0], m.high.loc[0, 0]) == (row["ns_min"], row["ns_max"]) == (50.0, 54.0)


def test_a_bandwidth_pair_takes_the_latency_of_its_own_pair():
    """Little's law per pair: node:0/bind:1 uses the remote chase from
    node 0, not the local one from node 1 that binds to the same node."""
    from membench.analyse.concurrency import effective_concurrency

    topo = make_topology(2)
    cells, _ = summarised(topo)
    ec = effective_concurrency(cells, {"big": 64})
    remote = ec[(ec["affinity"] == "node:0") & (ec["placement"] == "bind:1 from node:0")]
    assert list(remote["latency_ns"]) == [101.0]  # 5 ns x distance 20, + the median repeat
    local = ec[(ec["affinity"] == "node:1") & (ec["placement"] == "bind:1 from node:1")]
    assert list(local["latency_ns"]) == [51.0]


def test_report_renders_the_matrices_with_settings(tmp_path):
    from membench.report.render import make_environment
    from report_context import context_of

    topo = make_topology(4, memory_only=(3,))
    cells, problems = summarised(topo)
    import yaml

    config, _ = load_matrix_config()
    from membench.probe.topology import read_environment

    env = {**read_environment(), "numa_balancing": 1, "zone_reclaim_mode": 0, "thp_enabled": "madvise", "thp_defrag": "madvise",
           "hugepages": {"2048kB": {"nr": 0, "free": 0}}, "prefetchers": "unknown: the msr module is not loaded"}  # fmt: skip
    context = context_of(
        config=config, cells=cells, problems=problems, figures={}, systems={"big": {"topology": topo, "environment": env}},
        provenance={"membench_version": "test", "commit": "test", "config_hash": "0", "snakemake_version": "9",
                    "rendered_at": "now"},
    )  # fmt: skip
    (latency,) = [e for e in context["experiments"] if e["name"] == "latency_matrix"][0]["matrices"]
    assert "numa_balancing 1" in latency["settings"] and "prefetchers unknown: the msr module" in latency["settings"]
    assert latency["counts"] == {"ok": 12, "mismatch": 0, "disturbed": 0, "skipped": 4, "failed": 0, "missing": 0}
    template = make_environment(REPO / "reports").get_template("report.html.j2")
    html = template.render(**context, stylesheet="")
    assert html.count('<table class="node-matrix">') == 2
    assert "no CPUs (memory only: CXL, HBM or similar)" in html and "no usable CPUs on node 3" in html
    assert "hardware prefetchers" in html


def test_environment_records_prefetchers_without_touching_msrs(tmp_path):
    from membench.probe import prefetchers

    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/cpuinfo").write_text("vendor_id\t: GenuineIntel\n")
    assert prefetchers.prefetcher_state(tmp_path).startswith("unknown: the msr module is not loaded")
    (tmp_path / "proc/cpuinfo").write_text("vendor_id\t: AuthenticAMD\n")
    assert prefetchers.prefetcher_state(tmp_path) == "unknown: no documented prefetcher MSR read for CPU vendor AuthenticAMD"
    assert prefetchers.describe_intel(0) == "all four enabled (MSR 0x1a4 = 0x0)"
    assert prefetchers.describe_intel(0b0101) == "disabled: L2 streamer, L1 next line (DCU) (MSR 0x1a4 = 0x5)"
    # A readable fake MSR file: 8 bytes at offset 0x1a4.
    (tmp_path / "proc/cpuinfo").write_text("vendor_id\t: GenuineIntel\n")
    (tmp_path / "sys/module/msr").mkdir(parents=True)
    (tmp_path / "dev/cpu/0").mkdir(parents=True)
    (tmp_path / "dev/cpu/0/msr").write_bytes(b"\0" * 0x1A4 + (0b10).to_bytes(8, "little"))
    assert prefetchers.prefetcher_state(tmp_path) == "CPU 0: disabled: L2 adjacent line (MSR 0x1a4 = 0x2)"


def test_no_module_writes_system_settings():
    """membench reads numa_balancing, MSRs and huge-page counts; no source
    opens them for writing or loads a module."""
    sources = list((REPO / "workflow" / "scripts").rglob("*.py")) + list((REPO / "kernels").rglob("*.c"))
    for path in sources:
        text = path.read_text()
        assert "modprobe" not in text.replace("`modprobe msr`", ""), path
        for setting in ("numa_balancing", "nr_hugepages", "/msr"):
            for line in text.splitlines():
                if setting in line:
                    assert not any(w in line for w in ('"w"', "'w'", "O_WRONLY", "O_RDWR", '"wb"', "write_text(")), (path, line)


def test_first_screen_names_the_matrix_latencies_in_two_lines():
    from membench.findings.headline import idle_latency_entries

    topo = make_topology(8, memory_only=(7,))
    cells, _ = summarised(topo, repeats=1)
    entries = idle_latency_entries(idle_latencies(cells))
    assert [e["placement"].split(" (")[0] for e in entries] == ["node matrix, local pairs", "node matrix, remote pairs"]
    assert entries[0]["ns"] == 50.0 and entries[0]["placement"].endswith("(7: 50.0–50.0 ns)")
    assert entries[1]["ns"] == 100.0 and entries[1]["placement"].startswith("node matrix, remote pairs (49:")


def test_a_pair_whose_every_run_was_disturbed_shows_no_number():
    """Every run of a pair disturbed (issue 32): the matrix says so for that
    pair, marked with what disturbed it, and gives no median."""
    from membench.analyse import node_matrix

    status, note = node_matrix._status({"n_ok": 3, "n_disturbed": 3, "disturbed_by": "switched out x3"})
    assert status == "disturbed" and note == "every run disturbed: switched out x3"
    assert node_matrix._status({"n_ok": 3, "n_disturbed": 2})[0] == "ok"
    assert node_matrix._status({"n_ok": 3, "n_disturbed": float("nan")})[0] == "ok"
