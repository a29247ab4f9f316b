"""The cache-to-cache family: the harness (kernels/families/c2c.c) on this machine's
CPU pair, the pair sampler on a 256-CPU topology (pair count, every class
covered, deterministic, fast), the config grammar and cells, the dry run's
pair statement, and the class / pair summaries and figure at 64 CPUs.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest

from membench.plan import c2c_pairs
from membench.analyse import c2c_summary
from membench.findings import locality_tables
from membench.plan import checks
from membench.measure import harness as measure
from membench.plan import rounds
from membench.plan import variants
from membench.figures.c2c import c2c_svg
from membench.plan.grammar import ConfigError
from membench.core.atomic_files import contract_problems

REPO = Path(__file__).resolve().parents[1]
KERNELS = REPO / "kernels"
TABLE = variants.load_variants(KERNELS / "families" / "variants.yaml")
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
ALLOWED = sorted(os.sched_getaffinity(0))
FAST = ["--threads", "2", "--size", str(1 << 20), "--samples", "5", "--roundtrips", "200"]


# ----------------------------------------------------------- topologies


def synthetic(packages=2, l3_per_package=4, l2_per_l3=8, cores_per_l2=2, threads=2) -> dict:
    """A topology.json of packages x L3 x L2 clusters x cores x SMT threads,
    numbered as Linux does (first threads of every core, then the second
    threads); node = package."""
    cores = []
    for p in range(packages):
        for l3 in range(l3_per_package):
            for l2 in range(l2_per_l3):
                for c in range(cores_per_l2):
                    cores.append((p, l3, l2, c))
    ncores = len(cores)
    cpus = []
    for t in range(threads):
        for k, (p, l3, l2, c) in enumerate(cores):
            cpus.append(
                {
                    "cpu": t * ncores + k, "core": k % (ncores // packages), "package": p, "node": p,
                    "siblings": [s * ncores + k for s in range(threads)],
                    "l2_id": (p * l3_per_package + l3) * l2_per_l3 + l2, "l3_id": p * l3_per_package + l3,
                }
            )  # fmt: skip
    return {
        "cpus": cpus,
        "nodes": [{"node": p, "cpus": [c["cpu"] for c in cpus if c["package"] == p], "memory_bytes": 1 << 34,
                   "distances": [10 if q == p else 32 for q in range(packages)]} for p in range(packages)],
        "caches": [{"level": 2, "type": "Unified", "size_bytes": 2 << 20, "line_bytes": 64, "shared_cpus": [0]}],
        "llc_bytes": 32 << 20, "line_bytes": 64, "packages": packages,
    }  # fmt: skip


def test_sampler_at_256_cpus():
    topo = synthetic()  # 2 x 4 x 8 x 2 x 2 = 256 CPUs
    assert len(topo["cpus"]) == 256
    c2c_pairs._pairs_by_class.cache_clear()
    started = time.monotonic()
    by_class = c2c_pairs.pairs_by_class(topo)
    elapsed = time.monotonic() - started
    counts = {name: len(pairs) for name, pairs in by_class.items()}
    # by hand: 128 cores of 2 threads; 64 L2 clusters of 4 CPUs (6 pairs,
    # 2 of them SMT); 8 L3s of 32 CPUs (496 pairs, minus their L2 pairs);
    # 2 packages of 128 CPUs (8128 pairs, minus their L3 pairs); 128 x 128
    assert counts == {"smt": 128, "same_l2": 64 * 4, "same_l3": 8 * (496 - 8 * 6),
                      "same_package": 2 * (8128 - 4 * 496), "other_package": 128 * 128}  # fmt: skip
    assert sum(counts.values()) == 256 * 255 // 2
    assert elapsed < 5, elapsed
    sample = c2c_pairs.sample(topo, 3)
    assert {name: len(p) for name, p in sample.items()} == dict.fromkeys(c2c_pairs.CLASSES, 3)
    by_cpu = {c["cpu"]: c for c in topo["cpus"]}
    for name, pairs in sample.items():
        assert len(set(pairs)) == 3 and all(c2c_pairs.classify(by_cpu[a], by_cpu[b]) == name for a, b in pairs)
        assert len({a for a, _ in pairs}) == 3  # first CPUs distinct: spread, not one corner
    # spread over the machine: the same_l3 sample sits in three different L3s
    assert len({by_cpu[a]["l3_id"] for a, _ in sample["same_l3"]}) == 3
    assert c2c_pairs.sample(topo, 3) == sample  # deterministic
    # resolving a cell is cheap once the topology is cached: 15 cells of the default
    started = time.monotonic()
    allowed = [c["cpu"] for c in topo["cpus"]]
    for spec in c2c_pairs.pair_specs("sample", 3, c2c_pairs.CLASSES):
        cpus, why = c2c_pairs.resolve(spec, 3, topo, allowed)
        assert why is None and len(cpus) == 2
    assert time.monotonic() - started < 2


def test_classes_without_a_level_are_skipped_with_the_reason():
    topo = synthetic(packages=1, l3_per_package=1, l2_per_l3=4, cores_per_l2=1, threads=1)
    allowed = [c["cpu"] for c in topo["cpus"]]
    assert c2c_pairs.resolve("same_l3:0", 2, topo, allowed) == ([0, 2], None)
    cpus, why = c2c_pairs.resolve("smt:0", 2, topo, allowed)
    assert cpus is None and "no CPU pair of class smt" in why and "classes present: same_l3" in why
    cpus, why = c2c_pairs.resolve("all", 2, synthetic(), list(range(256)))
    assert cpus is None and "at most 64 CPUs" in why and "256" in why


def test_pairs_all_above_64_cpus_is_a_config_error(tmp_path):
    config, cells = checks.load(
        {"system": "big", "experiments": {"matrix": {"kernel": "c2c", "pairs": "all"}}}, SCHEMA, TABLE
    )
    topo = tmp_path / "big" / "topology.json"
    topo.parent.mkdir()
    topo.write_text(json.dumps(synthetic()))
    (line,) = c2c_pairs.plan_lines(cells, ["big"], True, tmp_path)
    assert line.startswith("error: ") and "256 CPUs" in line and "up to 64" in line and "matrix" in line
    # 64 CPUs: allowed, and the dry run states the exact count
    topo.write_text(json.dumps(synthetic(l3_per_package=1, l2_per_l3=4, cores_per_l2=4)))
    assert c2c_pairs.plan_lines(cells, ["big"], True, tmp_path) == [
        f"membench c2c: system big: {64 * 63 // 2} CPU pairs in 1 c2c cell (from {topo})"
    ]


def test_config_cells_and_requests(option_listings):
    exp = {"kernel": "c2c", "pairs_per_class": 2, "pair_classes": ["smt", "other_package"], "size": ["4MiB"]}
    config, cells = checks.load({"system": "s", "experiments": {"c": exp, "st": {"kernel": "stream"}}}, SCHEMA, TABLE)
    c2c = [c for c in cells if c.kernel == "c2c"]
    assert [c.pair for c in c2c] == ["smt:0", "smt:1", "other_package:0", "other_package:1"]
    assert c2c[0].id == "c/c2c-default/psmt=0_default_variant_s4194304"
    request = rounds.cell_request(c2c[0], "s", 0, TABLE)
    assert (request["pair"], request["pairs_per_class"], request["c2c_samples"], request["c2c_roundtrips"]) == ("smt:0", 2, 100, 1000)
    stream = rounds.cell_request(next(c for c in cells if c.kernel == "stream"), "s", 0, TABLE)
    assert "pair" not in stream and "pairs" not in config["experiments"]["st"]  # other families' digests unchanged
    with pytest.raises(ConfigError) as err:
        checks.load({"experiments": {"c": {"kernel": "c2c", "threads": [2], "pairs": "every", "pair_classes": ["l9"]},
                                            "s": {"kernel": "stream", "pairs_per_class": 2}}}, SCHEMA, TABLE)  # fmt: skip
    text = str(err.value)
    for expected in ("experiments.c.threads", "experiments.c.pairs: 'every'", "sample, all", "experiments.c.pair_classes",
                     "experiments.s.pairs_per_class: 2 is a key of kernel c2c only"):  # fmt: skip
        assert expected in text, text
    # a sampled pair becomes the harness's two CPUs
    topo = synthetic()
    req = measure.Request(**{k: v for k, v in request.items() if k != "features"})
    resolved, why = measure.resolve(req, topo, list(range(256)))
    a, b = c2c_pairs.sample(topo, 2, ("smt",))["smt"][0]
    assert why is None and resolved["affinity"] == f"cpus:{a},{b}" and resolved["threads"] == 2
    argv = measure.harness_argv("bin/c2c-default", req, resolved, option_listings["c2c"])
    assert argv[argv.index("--samples") + 1] == "100" and argv[argv.index("--roundtrips") + 1] == "1000"


# --------------------------------------------------------------- harness


@pytest.fixture(scope="module")
def binary(variant_builds):
    return variant_builds.binary("c2c")


def run(binary, *args, env=None):
    proc = subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})  # fmt: skip
    return proc.returncode, [json.loads(line) for line in proc.stdout.splitlines()], proc.stderr


@pytest.mark.skipif(len(ALLOWED) < 2, reason="needs 2 CPUs")
def test_harness_measures_a_pair(binary):
    a, b = ALLOWED[:2]
    rc, records, err = run(binary, *FAST, "--affinity", f"cpus:{a},{b}")
    assert rc == 0, err
    assert [r["op"] for r in records] == ["cas", "two_line", "clean", "dirty"]
    for r in records:
        assert contract_problems(r) == [], r
        assert r["status"] == "ok" and r["valid"] is True
        assert (r["cpu_a"], r["cpu_b"], r["cpu_a_ran"], r["cpu_b_ran"]) == (a, b, a, b)
        assert r["handoffs"] == r["handoffs_expected"] > 0 and r["samples"] == 5 and len(r["seconds"]) == 5
        assert 0 < r["handoff_min_ns"] <= r["handoff_p10_ns"] <= r["handoff_ns"] <= r["handoff_p90_ns"]
        assert r["ns_per_load"] == r["handoff_ns"] and 1 < r["handoff_ns"] < 1e6
        assert r["sample_min_ns"] >= 20 * r["timer_granularity_ns"]
    assert records[2]["clean_lines"] == 64 and records[0]["clean_lines"] is None
    assert records[3]["clean_lines"] == 64 and records[3]["clean_flushed"] is None  # dirty: B's stores take the lines back
    assert records[2]["clean_flushed"] is (platform.machine() in ("x86_64", "i686")) and records[0]["clean_flushed"] is None


@pytest.mark.skipif(len(ALLOWED) < 2, reason="needs 2 CPUs")
def test_lost_handoff_and_coarse_timer_fail(binary):
    rc, records, _ = run(binary, *FAST, "--op", "cas,two_line", "--test-corrupt")
    assert rc == 1 and [r["status"] for r in records] == ["failed", "failed"]
    assert all("validation failed: hand-offs counted" in r["reason"] and r["handoff_ns"] is None for r in records)
    # a sample under 20 ticks is the clock's number, not the machine's: failed, never 0 ns
    rc, records, _ = run(binary, *FAST, "--op", "cas", env={"MEMBENCH_TEST_C2C_GRANULARITY_NS": "10000000"})
    assert rc == 1 and records[0]["status"] == "failed"
    assert "below the timer's resolution" in records[0]["reason"] and records[0]["ns_per_load"] is None


@pytest.mark.skipif(len(ALLOWED) < 2, reason="needs 2 CPUs")
def test_every_pair_of_the_team(binary):
    rc, records, err = run(binary, *FAST, "--op", "cas", "--samples", "3")
    assert rc == 0, err
    assert [(r["cpu_a"], r["cpu_b"]) for r in records] == [(ALLOWED[0], ALLOWED[1])]


# ------------------------------------------------------ summaries, figure


def fake_records(topo: dict, pairs: list[tuple[int, int]], spec, ops=("cas", "two_line")) -> pd.DataFrame:
    rows = []
    for rep in range(2):
        for op in ops:
            for a, b in pairs:
                record = {"cpu_a": a, "cpu_b": b}
                keys = c2c_pairs.pair_keys(record, topo, spec(a, b))
                base = {"smt": 10, "same_l2": 20, "same_l3": 40, "same_package": 80, "other_package": 160}[keys["pair_class"]]
                rows.append({"system": "s", "experiment": "m", "variant": "default", "kernel": "c2c", "op": op,
                             "status": "ok", "reason": None, "handoff_ns": base + rep, "handoff_p10_ns": base - 1,
                             "handoff_p90_ns": base + 5, **record, **keys})  # fmt: skip
    return pd.DataFrame(rows)


def test_class_table_and_heat_map_at_64_cpus():
    topo = synthetic(l3_per_package=2, l2_per_l3=4, cores_per_l2=2)  # 2 x 2 x 4 x 2 x 2 = 64 CPUs
    cpus = [c["cpu"] for c in topo["cpus"]]
    pairs = [(a, b) for i, a in enumerate(cpus) for b in cpus[i + 1 :]]
    table = fake_records(topo, pairs, lambda a, b: "all")
    classes = c2c_summary.class_table(table)
    assert list(classes["pair_class"].unique()) == list(c2c_pairs.CLASSES)  # nearest first
    cas = classes[classes["op"] == "cas"].set_index("pair_class")
    assert cas.loc["smt", "pairs"] == 32 and cas.loc["smt", "records"] == 64
    assert cas.loc["other_package", "handoff_ns_median"] == 160.5
    assert cas["pairs"].sum() == 64 * 63 // 2
    report = locality_tables.c2c_class_table(classes)
    assert len(report["rows"]) == 10 and report["rows"][0][:3] == ["smt", "cas", "10.5"]
    pair_rows = c2c_summary.pair_table(table)
    assert len(pair_rows) == 2 * 64 * 63 // 2 and pair_rows["full_matrix"].all()
    pair_rows = pd.read_csv(pd.io.common.StringIO(pair_rows.to_csv(index=False)))  # as the figure reads it
    svg = c2c_svg(pair_rows, "m", "m-handoff")
    assert svg.startswith("<?xml") or "<svg" in svg[:400]
    assert len(svg) < 1_500_000, len(svg)  # bounded: one image per op, not 4032 shapes


def test_class_figure_of_a_sample():
    topo = synthetic()
    sample = c2c_pairs.sample(topo, 3)
    table = fake_records(topo, [p for pairs in sample.values() for p in pairs], lambda a, b: "x:0")
    pair_rows = c2c_summary.pair_table(table)
    assert not pair_rows["full_matrix"].any() and len(pair_rows) == 2 * 15
    assert "<svg" in c2c_svg(pair_rows, "m", "m-handoff")[:400]


def test_hierarchy_rows_from_the_classes():
    topo = synthetic()
    sample = c2c_pairs.sample(topo, 2)
    classes = c2c_summary.class_table(fake_records(topo, [p for v in sample.values() for p in v], lambda a, b: "x:0"))
    rows = c2c_summary.hierarchy_rows(classes)["s"]
    two_line = c2c_summary.HIERARCHY_QUANTITIES["two_line"]
    assert list(rows) == [f"{two_line}: {where}" for where in c2c_summary.HIERARCHY_CLASSES.values()]
    assert rows[f"{two_line}: other package"]["ns"] == 160.5
    assert "c2c two_line" in rows[f"{two_line}: other package"]["derivation"]
    assert "2 other_package pair(s)" in rows[f"{two_line}: other package"]["derivation"]


def test_each_hierarchy_row_is_named_by_the_quantity_it_measures():
    """Issue 38: two_line (half a ping-pong round trip, c2clat's) stood in
    the row "modified in another core" beside clean (one dependent load);
    the HITM row is the dirty op's, one dependent load of a modified line,
    and a clean line only B read after the flush is Exclusive, not shared."""
    topo = synthetic()
    pairs = [p for v in c2c_pairs.sample(topo, 2).values() for p in v]
    classes = c2c_summary.class_table(fake_records(topo, pairs, lambda a, b: "x:0", ops=("two_line", "clean", "dirty")))
    rows = c2c_summary.hierarchy_rows(classes)["s"]
    assert list(rows)[:3] == [c2c_summary.hierarchy_label("dirty", c) for c in ("same_l3", "same_package", "other_package")]
    hitm = rows["c2c load, line modified in another core (dirty, MLC's HITM): same L3"]
    assert hitm["derivation"].startswith("c2c dirty") and hitm["ns"] == 40.5
    assert "c2c half round trip, modified line (two_line, c2clat's): same L3" in rows
    clean = [label for label in rows if "(clean" in label]
    assert clean and all("Exclusive in another core" in label and "shared" not in label for label in clean)
    assert len(rows) == 9 and len(set(rows)) == 9  # no two quantities share a label
    only = c2c_summary.hierarchy_rows(classes, op="clean")["s"]
    assert list(only) == clean


def test_clean_pairs_across_l3s_on_the_two_socket_smt_guest():
    """The 2-socket SMT guest (2 sockets x 2 cores x 2 threads, one L3 per
    socket): the sampled clean pairs include one across the L3s (another
    package), whose window A flushes before B reads it (clean_flushed), so
    the hand-off is a transfer from the other socket, not A's own L3."""
    cpus = [{"cpu": c, "package": c // 4, "node": c // 4, "core": (c % 4) // 2, "siblings": [c - c % 2, c - c % 2 + 1],
             "l2_id": c // 2, "l3_id": c // 4} for c in range(8)]  # fmt: skip
    topo = {"cpus": cpus, "packages": 2, "caches": [], "nodes": []}
    sample = c2c_pairs.sample(topo, 1)
    assert set(sample) >= {"smt", "same_l3", "other_package"}
    (a, b), = sample["other_package"]
    assert cpus[a]["l3_id"] != cpus[b]["l3_id"]
    assert c2c_pairs.classify(cpus[a], cpus[b]) == "other_package"


def test_the_class_table_says_how_many_samples_were_left_out_as_switched():
    topo = synthetic()
    sample = c2c_pairs.sample(topo, 1)
    table = fake_records(topo, [p for v in sample.values() for p in v], lambda a, b: "x:0")
    # records from before per-sample counting: not recorded, never "0 of"
    assert all(row[7] == "not recorded" for row in locality_tables.c2c_class_table(c2c_summary.class_table(table))["rows"])
    counted = table.assign(samples=50, samples_switched=[i % 3 for i in range(len(table))])
    classes = c2c_summary.class_table(counted)
    first = classes.iloc[0]
    mine = counted[(counted["op"] == first["op"]) & (counted["pair_class"] == first["pair_class"])]
    assert first["samples_switched"] == mine["samples_switched"].sum() and first["samples"] == 50 * len(mine)
    row = locality_tables.c2c_class_table(classes)["rows"][0]
    assert row[7] == f"{int(mine['samples_switched'].sum())} of {50 * len(mine)}"


def test_one_pair_split_into_modes_is_said_unexplained_different_pairs_are_not():
    topo = synthetic()
    sample = c2c_pairs.sample(topo, 2)
    table = fake_records(topo, [p for v in sample.values() for p in v], lambda a, b: "x:0")
    # pairs of one class differing is the pairs: no flag
    spread = table.copy()
    first = spread["pair_class"] == "same_l3"
    spread.loc[first, "handoff_ns"] *= (spread.loc[first, "cpu_b"] % 3 + 1).to_numpy()
    assert c2c_summary.class_table(spread)["modes_unexplained"].isna().all()
    # one pair's repetitions 5x apart (the guest's host moving its vCPUs):
    # said in the class table and in the hierarchy row
    (a, b) = sample["same_l3"][0]
    split = table.copy()
    one = (split["cpu_a"] == a) & (split["cpu_b"] == b) & (split["op"] == "two_line")
    split = pd.concat([split, split[one].assign(handoff_ns=[250.0, 246.0])], ignore_index=True)
    classes = c2c_summary.class_table(split)
    said = classes.set_index(["op", "pair_class"]).loc[("two_line", "same_l3"), "modes_unexplained"]
    assert said.startswith("40.5 ns x2, 248.0 ns x2 (pair ")
    classes = pd.read_csv(pd.io.common.StringIO(classes.to_csv(index=False)))  # as the report reads it
    row = c2c_summary.hierarchy_rows(classes)["s"][c2c_summary.hierarchy_label("two_line", "same_l3")]
    assert "UNEXPLAINED: repetitions split into modes 40.5 ns x2, 248.0 ns x2" in row["derivation"]
    assert any("modes, unexplained" in r[3] for r in locality_tables.c2c_class_table(classes)["rows"])


def test_a_shared_cache_class_at_the_memory_latency_is_flagged():
    """Issue 50: a 2-vCPU Zen 2 guest whose sysfs said one L3 read clean and
    dirty hand-offs of 108-140 ns against a memory latency of 115 ns (the
    host had put the vCPUs on different dies). Planted: same_l3 at 40 ns
    per transfer, other_package at 160; memory at 45 ns flags same_l3 (one
    transfer: 40 >= 0.8 x 45) but never a class that shares no cache, and
    two_line (2 transfers, 40 ns apiece the same)."""
    topo = synthetic()
    pairs = [p for v in c2c_pairs.sample(topo, 2).values() for p in v]
    table = fake_records(topo, pairs, lambda a, b: "x:0", ops=("clean", "dirty", "two_line"))
    table.loc[table["op"] == "two_line", "handoff_ns"] *= 2  # two transfers per hand-off
    classes = c2c_summary.class_table(table)
    flagged = c2c_summary.hierarchy_rows(classes, memory_ns={"s": 45.0})["s"]
    assert flagged[c2c_summary.hierarchy_label("dirty", "same_l3")]["flag"].startswith("same_l3 dirty 40.5 ns against a memory latency of 45.0 ns")
    assert "40.5 ns per transfer" in flagged[c2c_summary.hierarchy_label("two_line", "same_l3")]["flag"]
    assert "flag" not in flagged[c2c_summary.hierarchy_label("dirty", "other_package")]
    assert all("flag" not in row for row in c2c_summary.hierarchy_rows(classes, memory_ns={"s": 60.0})["s"].values())
    assert all("flag" not in row for row in c2c_summary.hierarchy_rows(classes)["s"].values())  # no memory latency: no judgement


def test_the_c2c_answer_flags_the_class_and_keeps_one_and_two_transfer_ops_apart():
    from membench.findings import latency_answers

    classes = pd.DataFrame([{"op": op, "pair_class": c, "records": 3} for op in ("clean", "two_line") for c in ("same_l3", "other_package")])
    values = {("clean", "same_l3"): 110.0, ("clean", "other_package"): 180.0, ("two_line", "same_l3"): 230.0, ("two_line", "other_package"): 400.0}
    runs = pd.DataFrame([{"cell": op, "op": op, "pair_class": c, "handoff_ns": v + d} for (op, c), v in values.items() for d in (-1, 0, 1)])
    found = latency_answers.c2c_answer(classes, runs, memory_ns=119.5)
    assert "clean 110.0 ns (same_l3) to 180.0 ns (other_package)" in found["text"]
    assert "two_line 230.0 ns (same_l3) to 400.0 ns (other_package), 2 transfers" in found["text"]
    assert "FLAG: same_l3 clean 110.0, same_l3 two_line 115.0 ns per transfer, about the memory latency (119.5 ns)" in found["text"]
    assert [d["pair_class"] for d in found["details"] if d.get("flag")] == ["same_l3", "same_l3"]
    assert "FLAG" not in latency_answers.c2c_answer(classes, runs)["text"]
    assert c2c_summary.memory_by_system(pd.DataFrame([{"system": "s", "placement": "interleave", "ns": 130.0},
                                                      {"system": "s", "placement": "local", "ns": 119.5}])) == {"s": 119.5}  # fmt: skip


def test_a_study_whose_every_c2c_cell_was_skipped_still_summarises():
    """A first answer within a small budget kept one c2c class this host
    lacks: every record skipped, no measured column at all (a default run
    with BUDGET=60s stopped in analyse on KeyError 'handoff_ns')."""
    from membench.analyse import c2c_summary

    skipped = pd.DataFrame([{"system": "vm", "experiment": "cache_to_cache", "variant": "default", "op": op,
                             "kernel": "c2c", "status": "skipped", "reason": "no SMT siblings", "pair_class": "smt",
                             "cell": "cache_to_cache/c2c-default/psmt=0_default_variant_s8388608"}
                            for op in ("cas", "clean")])  # fmt: skip
    classes = c2c_summary.class_table(skipped)
    assert len(classes) == 2 and (classes["records"] == 0).all() and (classes["n_skipped"] == 1).all()
    assert c2c_summary.pair_table(skipped).empty
