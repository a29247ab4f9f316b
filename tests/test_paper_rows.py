"""The papers' rows beside this machine's, by value (issue 50, item 5).

Planted studies go through the findings stage's own answers
(membench.findings.answers, latency_answers) and then the papers' rows
(membench.findings.papers); every "this machine" value is computed again
here from the planted runs, by hand, and must match: the right cell, op
and thread step beside each paper's own, "same direction" only for
effects, and the rows that cannot compare saying why.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from membench.findings import answers, latency_answers, papers

PAPERS = papers.load_papers()


def gmean_ratio(base: list[float], new: list[float]) -> float:
    """An effect as evidence.effect has it, written again: the ratio of geometric means."""
    return math.exp(np.mean(np.log(new)) - np.mean(np.log(base)))


def row(rows: list[dict], what: str) -> dict:
    return next(r for r in rows if r["what"] == what)


# ------------------------------------------------------------------ a planted bandwidth study


def study(gbps: dict[tuple, list[float]], nodes: int = 1, cpus: int = 16, kernel: str = "stream") -> tuple[pd.DataFrame, pd.DataFrame]:
    """cells and runs of one experiment: gbps maps (threads, affinity, op)
    to the runs' GB/s; every run puts one thread per CPU at `cpus` threads."""
    cells, runs = [], []
    for (threads, affinity, op), values in gbps.items():
        cell = f"{kernel}_t{threads}_{affinity}"
        cells.append({"experiment": "e", "cell": cell, "kernel": kernel, "op": op, "threads": threads, "affinity": affinity, "affinity_requested": affinity,
                      "variant": "default", "n_ok": len(values), "gbps_median": float(np.median(values))})  # fmt: skip
        for value in values:
            runs.append({"experiment": "e", "cell": cell, "op": op, "threads": threads, "affinity": affinity, "affinity_requested": affinity, "gbps": value,
                         "oversubscribed_cpus": 0, "memory_nodes": str(list(range(nodes)))})  # fmt: skip
    return pd.DataFrame(cells), pd.DataFrame(runs)


COLFAX_RUNS = {
    (1, "none", "copy"): [10.0, 10.4, 9.8], (1, "none", "triad"): [11.0, 11.2, 10.9],
    (1, "close", "copy"): [9.0, 9.1, 9.3], (1, "close", "triad"): [10.0, 10.1, 10.2],
    (16, "none", "copy"): [80.0, 60.0, 72.0], (16, "none", "triad"): [90.0, 70.0, 88.0],
    (16, "close", "copy"): [70.0, 71.0, 69.0], (16, "close", "triad"): [85.0, 84.0, 86.0],
    (16, "spread", "copy"): [75.0, 76.0, 74.0], (16, "spread", "triad"): [60.0, 61.0, 59.0],
}  # fmt: skip


def colfax_rows(cpus: int, nodes: int = 1) -> list[dict]:
    cells, runs = study(COLFAX_RUNS, nodes=nodes)
    finding = answers.bandwidth_answer("colfax", cells, runs, None, pd.DataFrame(), cpus)
    return papers.beside(finding, PAPERS, {}, None)


def test_colfax_compares_the_most_threads_in_the_papers_op():
    """64 CPUs (16 threads are not all of them): the placements differ, so
    the rows compare; every value is copy at 16 threads, never 1 thread."""
    rows = colfax_rows(cpus=64)
    none16 = COLFAX_RUNS[(16, "none", "copy")]
    spread = row(rows, "none → spread (scatter): change of the mean")
    change = 100 * (gmean_ratio(none16, COLFAX_RUNS[(16, "spread", "copy")]) - 1)
    assert spread["this_value"] == pytest.approx(change)
    assert spread["paper_value"] == 20 and spread["same_direction"] is (change > 0)
    assert spread["comparison"] == ("yes" if change > 0 else "no")
    close = row(rows, "none → close (compact) at many threads")
    assert close["this_value"] == pytest.approx(100 * (gmean_ratio(none16, COLFAX_RUNS[(16, "close", "copy")]) - 1))
    assert close["paper_value"] == pytest.approx(100 * (20 / 67 - 1)) and close["same_direction"] is True
    cv = row(rows, "run-to-run spread without pinning (std / mean)")
    assert cv["this_value"] == pytest.approx(100 * np.std(none16, ddof=1) / np.mean(none16))
    assert cv["paper_value"] == pytest.approx(100 * 6 / 67) and cv["same_direction"] is None
    assert "16 threads (the most), copy" in spread["note"]


def test_colfax_placements_on_the_same_cpus_are_not_applicable():
    """16 threads on a 16-CPU one-node machine: none, close and spread ran
    on the same CPUs, so no row reads as a reversal."""
    rows = colfax_rows(cpus=16)
    for what in ("none → spread (scatter): change of the mean", "none → close (compact) at many threads"):
        assert row(rows, what)["comparison"] == "not applicable: one node, the same CPUs"
        assert row(rows, what)["same_direction"] is None
    assert row(colfax_rows(cpus=16, nodes=2), "none → close (compact) at many threads")["comparison"] == "not applicable: the same CPUs"


def test_colfax_without_copy_takes_the_last_op():
    only_triad = {k: v for k, v in COLFAX_RUNS.items() if k[2] == "triad"}
    cells, runs = study(only_triad)
    rows = papers.beside(answers.bandwidth_answer("colfax", cells, runs, None, pd.DataFrame(), 64), PAPERS, {}, None)
    expected = 100 * (gmean_ratio(only_triad[(16, "none", "triad")], only_triad[(16, "close", "triad")]) - 1)
    assert row(rows, "none → close (compact) at many threads")["this_value"] == pytest.approx(expected)


# ------------------------------------------------------------------ Sun: the same thread step


SUN_RUNS = {(1, "close", "xor"): [20.0, 21.0, 22.0], (2, "close", "xor"): [39.0, 41.0, 40.0], (16, "close", "xor"): [120.0, 130.0, 125.0]}


def test_sun_rows_set_1_to_2_beside_1_to_2_and_1_to_n_only_where_both_have_n():
    cells, runs = study(SUN_RUNS, kernel="xor")
    rows = papers.beside(answers.bandwidth_answer("sun", cells, runs, None, pd.DataFrame(), 16), PAPERS, {}, None)
    two = gmean_ratio(SUN_RUNS[(1, "close", "xor")], SUN_RUNS[(2, "close", "xor")])
    sixteen = gmean_ratio(SUN_RUNS[(1, "close", "xor")], SUN_RUNS[(16, "close", "xor")])
    by_step = {}
    for r in rows:
        step = int(r["what"].split("→ ")[1].split()[0])
        by_step.setdefault(step, []).append(r)
    assert sorted(by_step) == [2, 16]
    assert len(by_step[2]) == 5  # every machine of the table has a 1 → 2 range
    assert all(r["this_value"] == pytest.approx(two) for r in by_step[2])
    assert all(r["this_value"] == pytest.approx(sixteen) for r in by_step[16])
    assert {r["paper_system"] for r in by_step[16]} == {"sfe2900", "st5x20"}
    sfv = row(rows, "1 → 2 threads (sfv40z)")
    assert sfv["paper_value"] == pytest.approx(8.210 / 3.998) and "1.08–2.05×" in sfv["note"]


def test_sun_without_two_threads_says_so_on_the_1_to_2_rows():
    planted = {k: v for k, v in SUN_RUNS.items() if k[0] != 2}
    cells, runs = study(planted, kernel="xor")
    rows = papers.beside(answers.bandwidth_answer("sun", cells, runs, None, pd.DataFrame(), 16), PAPERS, {}, None)
    one_two = [r for r in rows if "1 → 2 threads" in r["what"]]
    assert len(one_two) == 5 and all(r["this_value"] is None and r["comparison"] == "not measured here" for r in one_two)
    assert all("2 threads not measured (1 → 16)" in r["note"] for r in one_two)


# ------------------------------------------------------------------ ORNL: measurable or said not to be


def test_ornl_on_one_node_is_not_measurable():
    cells, runs = study({(1, "close", "daxpy"): [17.0, 17.5, 17.2], (16, "close", "daxpy"): [130.0, 135.0, 132.0]}, kernel="daxpy")
    rows = papers.beside(answers.bandwidth_answer("ornl", cells, runs, None, pd.DataFrame(), 16), PAPERS, {}, None)
    assert rows[0]["comparison"] == "not measurable: one NUMA node; config/ornl_spill.yaml on two or more"
    assert rows[0]["this_value"] is None and rows[0]["same_direction"] is None


def ornl_finding(sizes: dict[str, list[float]]) -> dict:
    cells, runs = [], []
    for i, (size, values) in enumerate(sizes.items()):
        cell = f"s{i}"
        cells.append({"experiment": "e", "cell": cell, "kernel": "stream", "op": "triad", "threads": 8, "affinity": "close", "affinity_requested": "close",
                      "size_requested": size, "size_bytes": 2 ** (30 + 2 * i), "n_ok": 3, "gbps_median": float(np.median(values))})  # fmt: skip
        runs += [{"experiment": "e", "cell": cell, "op": "triad", "gbps": v, "memory_nodes": "[0, 1]"} for v in values]
    return answers.bandwidth_answer("ornl", pd.DataFrame(cells), pd.DataFrame(runs), None, pd.DataFrame(), 16)


def test_ornl_on_two_nodes_sets_the_first_decided_fall_beside_the_spill():
    sizes = {"1GiB": [20.0, 20.2, 19.9], "4GiB": [19.9, 20.1, 20.0], "16GiB": [17.0, 17.1, 16.9]}
    spill = papers.beside(ornl_finding(sizes), PAPERS, {}, None)[0]
    assert spill["this_value"] == pytest.approx(100 * (gmean_ratio(sizes["4GiB"], sizes["16GiB"]) - 1))
    assert spill["paper_value"] == -15 and spill["same_direction"] is True


def test_ornl_a_step_decided_the_same_is_no_fall():
    """1 -> 4 GiB is 0.3 % lower and decided the same within the 2 % margin:
    decided, yet not where bandwidth first falls (4 -> 16 GiB is)."""
    sizes = {"1GiB": [20.0, 20.05, 19.95], "4GiB": [19.94, 19.99, 19.89], "16GiB": [17.0, 17.1, 16.9]}
    finding = ornl_finding(sizes)
    same = next(d for d in finding["details"] if d["label"] == "size 1 GiB → 4 GiB")
    assert same["answer"] == "same" and same["decided"] and same["value"] < 1
    assert finding["text"].startswith("bandwidth first falls at size 4 GiB → 16 GiB: ")
    spill = papers.beside(finding, PAPERS, {}, None)[0]
    assert spill["this_value"] == pytest.approx(100 * (gmean_ratio(sizes["4GiB"], sizes["16GiB"]) - 1))


# ------------------------------------------------------------------ McCalpin: ratios and steps


# Each version and the one it changes by one feature, written from McCalpin's post (lines 9-24 of the seed).
MCCALPIN_STEPS = {"v002": "v001", "v003": "v002", "v004": "v003", "v005": "v004", "v006": "v005", "v007": "v006",
                  "v008": "v007", "v009": "v008", "v010": "v009", "v011": "v010", "v012": "v011", "v013": "v010",
                  "v014": "v011", "v015": "v012"}  # fmt: skip


def test_mccalpin_ratios_and_steps_are_this_machines_by_value():
    rng = np.random.default_rng(5)
    versions = {f"v{i:03d}": float(rng.uniform(3, 15)) for i in range(1, 16)}
    rows = papers.beside({"paper": "mccalpin", "details": []}, PAPERS, versions, None)
    his = {n["variant"]: n["value"] for n in PAPERS["mccalpin"]["numbers"] if n.get("system") == "shanghai_2s" and n.get("variant")}
    for version in versions:
        if version == "v001":
            continue
        ratio = row(rows, f"{version} / v001")
        assert ratio["this_value"] == pytest.approx(versions[version] / versions["v001"]), version
        assert ratio["paper_value"] == pytest.approx(his[version] / his["v001"])
        step = next(r for r in rows if r["what"].startswith(f"step {version} / "))
        parent = MCCALPIN_STEPS[version]
        assert step["what"].startswith(f"step {version} / {parent} ")
        assert step["this_value"] == pytest.approx(versions[version] / versions[parent]), version
        assert step["paper_value"] == pytest.approx(his[version] / his[parent])
        assert step["same_direction"] == ((his[version] > his[parent]) == (versions[version] > versions[parent]))


# ------------------------------------------------------------------ AWS: cycles, effects only


def test_aws_hierarchy_rows_are_cycles_and_never_a_direction():
    levels = {"clock": {"ghz": 2.5}, "rows": [{"level": name, "per_pages": {"4k": {"ns": ns, "cycles": ns * 2.5}}}
                                                for name, ns in (("L1", 1.6), ("L2", 5.2), ("L3", 20.4))]}  # fmt: skip
    finding = {"paper": "aws-latency", "value": 110.0, "details": []}
    rows = papers.beside(finding, PAPERS, {}, levels)
    for name, ns in (("L1", 1.6), ("L2", 5.2), ("L3", 20.4)):
        assert row(rows, f"{name} latency")["this_value"] == pytest.approx(ns * 2.5)
        assert row(rows, f"{name} latency")["same_direction"] is None
        assert row(rows, f"{name} latency")["comparison"].startswith("not an effect")
    memory = row(rows, "local memory latency")
    assert memory["this_value"] == 110.0 and memory["same_direction"] is None
    assert row(rows, "remote / local memory latency")["comparison"].startswith("not measurable")


def c2c_study(handoffs: dict[tuple[str, str], list[float]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    classes = pd.DataFrame([{"op": op, "pair_class": c, "records": len(v)} for (op, c), v in handoffs.items()])
    runs = pd.DataFrame([{"cell": f"c_{op}", "op": op, "pair_class": c, "handoff_ns": x} for (op, c), v in handoffs.items() for x in v])
    return classes, runs


HANDOFFS = {("dirty", "same_l3"): [40.0, 42.0, 41.0], ("clean", "same_l3"): [50.0, 52.0, 51.0],
            ("dirty", "same_package"): [90.0, 95.0, 92.0], ("two_line", "same_l3"): [100.0, 104.0, 102.0]}  # fmt: skip


def test_aws_c2c_rows_are_cycles_of_the_same_l3_class_at_the_measured_clock():
    classes, runs = c2c_study(HANDOFFS)
    finding = latency_answers.c2c_answer(classes, runs)
    rows = papers.beside(finding, PAPERS, {}, {"clock": {"ghz": 3.0}, "rows": []})
    modified = row(rows, "load of a line modified in another core")
    assert modified["this_value"] == pytest.approx(np.median(HANDOFFS[("dirty", "same_l3")]) * 3.0)
    assert modified["paper_value"] == 65 and modified["same_direction"] is None
    assert row(rows, "load of a line clean in another core")["this_value"] == pytest.approx(51.0 * 3.0)
    ratio = row(rows, "clean (shared) over modified line hand-off")
    assert ratio["this_value"] == pytest.approx(51.0 / 41.0) and ratio["paper_value"] == pytest.approx(75 / 65)
    assert ratio["same_direction"] is True
    no_clock = papers.beside(finding, PAPERS, {}, None)
    assert row(no_clock, "load of a line modified in another core")["this_value"] is None


# ------------------------------------------------------------------ the report's words


def test_every_row_says_its_comparison_in_words():
    cells, runs = study(COLFAX_RUNS)
    rows = papers.beside(answers.bandwidth_answer("colfax", cells, runs, None, pd.DataFrame(), 64), PAPERS, {}, None)
    rows += papers.beside({"paper": "mccalpin", "details": []}, PAPERS, {"v001": 3.0, "v002": 2.0}, None)
    for r in rows:
        expected = {True: "yes", False: "no"}.get(r["same_direction"])
        assert r["comparison"] == expected or (r["same_direction"] is None and r["comparison"] != "yes")


def test_one_node_is_read_from_threads_per_node_where_the_records_name_no_nodes():
    cells, runs = study(COLFAX_RUNS)
    runs = runs.drop(columns="memory_nodes").assign(threads_per_node=runs["threads"])
    rows = papers.beside(answers.bandwidth_answer("colfax", cells, runs, None, pd.DataFrame(), 16), PAPERS, {}, None)
    assert row(rows, "none → close (compact) at many threads")["comparison"] == "not applicable: one node, the same CPUs"
    split = runs.assign(threads_per_node=runs["threads"] / 2)  # threads on two nodes: not one node
    rows = papers.beside(answers.bandwidth_answer("colfax", cells, split, None, pd.DataFrame(), 16), PAPERS, {}, None)
    assert row(rows, "none → close (compact) at many threads")["comparison"] == "not applicable: the same CPUs"


# ------------------------------------------------------------------ loaded latency: what it lost


def loaded_study(points: dict[int, list[tuple[float, float]] | None]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """delay -> undisturbed runs as (ns, GB/s), or None: its 3 ok runs all
    disturbed (the cell keeps their medians, ns_median_all / gbps_median_all)."""
    cells, runs = [], []
    for delay, values in points.items():
        cell = f"d{delay}"
        lost = values is None
        cells.append({"cell": cell, "op": "triad", "load_delay_requested": delay, "n_ok": 3,
                      "ns_median_all": 140.0 + delay if lost else np.nan, "gbps_median_all": 30.0 - delay / 10 if lost else np.nan})  # fmt: skip
        runs += [{"cell": cell, "ns_per_load": ns, "gbps": gbps} for ns, gbps in values or []]
    return pd.DataFrame(cells), pd.DataFrame(runs, columns=["cell", "ns_per_load", "gbps"])


def test_loaded_latency_never_calls_a_lighter_point_the_heaviest_load():
    """delay 0 and 50 all disturbed (the Zen 2 guest's sitting): the answer
    is delay 10's, said as the heaviest undisturbed, with the lost points'
    bound first; the paper's row says it is at a lighter load."""
    cells, runs = loaded_study({0: None, 10: [(120.0, 3.6), (124.0, 3.5)], 50: None})
    idle = pd.Series([117.0, 118.0, 119.0])
    found = latency_answers.loaded_answer(cells, runs, idle)
    assert found["text"].startswith("heaviest loads: every run disturbed (delay 0: every one of 3 runs disturbed; "
                                    "latency at most 140.0 ns at the 30.0 GB/s they reached)")
    assert "delay 50" not in found["text"].split("; the heaviest undisturbed")[0]  # 50 is lighter than 10
    assert "the heaviest undisturbed, delay 10" in found["text"] and not found["text"].startswith("at ")
    assert found["value"] == pytest.approx(122.0)
    ratio = next(d for d in found["details"] if d["label"] == "loaded against idle latency")
    assert ratio["value"] == pytest.approx(gmean_ratio([117.0, 118.0, 119.0], [120.0, 124.0]))
    paper_row = papers.beside(found, PAPERS, {}, None)[0]
    assert paper_row["this_value"] == pytest.approx(ratio["value"]) and "lighter load" in paper_row["note"]


def test_loaded_latency_with_its_heaviest_point_kept_says_the_load():
    cells, runs = loaded_study({0: [(230.0, 93.0), (234.0, 94.0)], 10: [(180.0, 80.0), (185.0, 81.0)], 50: None})
    found = latency_answers.loaded_answer(cells, runs, None)
    assert found["text"].startswith("at 93.5 GB/s of load: 232.0 ns") and "disturbed" not in found["text"]


def test_loaded_latency_with_every_point_disturbed_gives_the_bounds():
    cells, runs = loaded_study({0: None, 10: None})
    found = latency_answers.loaded_answer(cells, runs, None)
    assert found["value"] is None and found["text"].startswith("heaviest loads: every run disturbed (delay 0")
    assert "latency at most 150.0 ns at the 29.0 GB/s they reached" in found["text"]
