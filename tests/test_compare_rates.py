"""make compare's promises measured (issue 39, 4, 6 and 8): the false-alarm
rate at small unequal n with unequal spreads, the gate read from
findings.json, a comparison of nothing never passing, no absurd interval,
a memory-size change never "not like for like", and a cell whose runs were
all disturbed said in one row."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from conftest import REPO  # noqa: E402

sys.path.insert(0, str(REPO / "tools"))

import synthetic_runs  # noqa: E402
from membench.compare import conditions, gate  # noqa: E402
from membench.compare import verdicts as row_verdicts  # noqa: E402
from membench.compare.output import NOTHING_DECIDED, run_compare  # noqa: E402
from membench.compare.rows import interval_text  # noqa: E402

SYSTEM = "two-socket"


def alarms(rng, draws: int, n_base: int, n_new: int, spreads: tuple[float, float], factor: float, rows: int) -> float:
    """Share of `draws` comparisons of `rows` gate rows, every row's true
    ratio `factor` (inside or on the threshold's edge: no change), in which
    any row was called worse or better."""
    called = 0
    for _ in range(draws):
        base = np.exp(rng.standard_normal((rows, n_base)) * spreads[0]) * 100
        new = np.exp(rng.standard_normal((rows, n_new)) * spreads[1]) * 100 * factor
        found = [{**row_verdicts.row_statistics(b, w), "_higher": True} for b, w in zip(base, new)]
        row_verdicts.decide_rows(found, threshold=0.02, confidence=0.95)
        called += any(r["verdict"] in ("worse", "better") for r in found)
    return called / draws


@pytest.mark.parametrize("n_base,n_new", [(2, 5), (3, 5), (5, 5)])
def test_false_alarms_stay_at_the_stated_rate_at_small_unequal_n(n_base, n_new):
    """The busy side has fewer undisturbed runs and the larger spread (3 %
    against 1 %). Every row sits on the threshold's edge (+2 %), where a
    false call is likeliest: over 300 draws of 20 rows, at most 5 % of
    comparisons call any row (Welch-Satterthwaite df: 2 vs 5 called ~22x
    the per-row rate; Hsu's min(n) - 1 keeps it). And 130 rows with no
    change at all."""
    rng = np.random.default_rng(100 * n_base + n_new)
    assert alarms(rng, 300, n_base, n_new, (0.03, 0.01), 1.02, 20) <= 0.05
    assert alarms(rng, 100, n_base, n_new, (0.03, 0.01), 1.0, 130) <= 0.05


def stated_power(text: str) -> tuple[int, int, int]:
    """(called at 2 %, called at 8.8 %, draws) as the README states them:
    "... called in 998 of 1000 synthetic draws at 2 % spread, but in 32 of
    1000 at a noisy guest's 8.8 %"."""
    flat = " ".join(text.split())
    found = re.search(r"called in (\d+) of (\d+) synthetic draws at 2 % spread, but in (\d+) of (\d+) at a noisy guest's 8\.8 %", flat)
    assert found and found.group(2) == found.group(4), "the README's power statement moved or changed its words"
    return int(found.group(1)), int(found.group(3)), int(found.group(2))


def test_a_change_is_called_at_the_shipped_repeats_as_often_as_the_readme_says():
    """Power at 5 runs a side, a gate of 15 rows, a 15 % drop in one row:
    the README's counts (998 of 1000 at 2 % spread, 32 of 1000 at the
    8.8 % spread of a noisy guest's one-thread copy), each held at its own
    number over the draws it states, seed 7, 2 % first (docs/compare.md,
    "Power at the shipped repeats", says the same counts; its "at least 95
    of 100" and "under 50 of 100" follow). A change to the statistics that
    moves either count fails here until the README says the new one."""
    at_two, at_noisy, draws = stated_power((REPO / "README.md").read_text())
    assert f"{at_two} of {draws} at 2 %, {at_noisy} of {draws} at 8.8 %" in " ".join((REPO / "docs" / "compare.md").read_text().split())
    rng = np.random.default_rng(7)

    def called(spread):
        hits = 0
        for _ in range(draws):
            base = np.exp(rng.standard_normal((15, 5)) * spread) * 100
            new = np.exp(rng.standard_normal((15, 5)) * spread) * 100 * np.r_[0.85, np.ones(14)][:, None]
            rows = [{**row_verdicts.row_statistics(b, w), "_higher": True} for b, w in zip(base, new)]
            row_verdicts.decide_rows(rows, threshold=0.02, confidence=0.95)
            hits += rows[0]["verdict"] == "worse"
        return hits

    assert (called(0.02), called(0.088)) == (at_two, at_noisy)


def test_exploratory_rows_are_said_so_and_use_the_false_discovery_rate():
    rng = np.random.default_rng(3)
    rows = [{**row_verdicts.row_statistics(rng.lognormal(0, 0.01, 5) * 100, rng.lognormal(0, 0.01, 5) * f),
             "_higher": True, "_gate": i < 2} for i, f in enumerate([85, 100] + [85] * 5 + [100] * 93)]  # fmt: skip
    gate_level = row_verdicts.decide_rows(rows, threshold=0.02, confidence=0.95)
    assert [r["role"] for r in rows[:3]] == ["gate", "gate", "exploratory"]
    assert gate_level == pytest.approx(1 - 0.05 / 1)  # Holm stopped after the one change of two
    assert all(r["verdict"] == "worse" for r in rows[2:7])
    # BH's false-coverage level: 1 - R q / m with R = 5 called of m = 98
    assert rows[2]["row_confidence"] == pytest.approx(1 - 5 * 0.05 / 98)


def test_no_interval_past_what_the_data_support():
    """Two runs a side at 30 % spread: the interval at a whole comparison's
    level would span 1e18; it is not given, and neither is a threshold."""
    rng = np.random.default_rng(1)
    rows = [{**row_verdicts.row_statistics(rng.lognormal(0, 0.3, 2) * 100, rng.lognormal(0, 0.3, 2) * 100),
             "_higher": True} for _ in range(130)]  # fmt: skip
    row_verdicts.decide_rows(rows, threshold=0.02, confidence=0.95)
    for row in rows:
        assert not row["ratio_high"] < math.inf or row["ratio_high"] / row["ratio_low"] <= 100
        assert math.isnan(row["detectable"]) or row["detectable"] < 1.0
    wide = [r for r in rows if math.isnan(r["ratio_high"])]
    assert wide and "no useful interval" in interval_text(wide[0])


# ------------------------------------------------------------------ end to end


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    out = tmp_path_factory.mktemp("rates")
    synthetic_runs.write_affinity_study(out, "aff", [1, 8], 5, machine="2x4x2", system=SYSTEM)
    return out


def copy_of(study, tmp_path, name, edit=lambda record: None):
    target = tmp_path / name
    shutil.copytree(study, target)
    for path in sorted((target / "results" / SYSTEM / "runs").glob("**/r*.jsonl")):
        records = [json.loads(line) for line in path.read_text().splitlines()]
        for record in records:
            edit(record)
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return target


def findings(side, cells):
    path = side / "results" / "summary" / "findings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"systems": [{"headline": [{"cells": cells}]}], "findings": []}))


def test_the_gate_is_the_cells_findings_names_and_only_it_sets_the_exit_code(study, tmp_path):
    cells = sorted({json.loads(line)["cell"] for p in (study / "results" / SYSTEM / "runs").glob("**/r*.jsonl")
                    for line in p.read_text().splitlines()})  # fmt: skip
    headline, other = cells[0], cells[-1]

    def slower_other(record):
        if record.get("cell") == other and record.get("gbps"):
            record["gbps"] *= 0.8
            record["gbps_wa"] *= 0.8

    base, new = copy_of(study, tmp_path, "a"), copy_of(study, tmp_path, "b", slower_other)
    findings(base, [headline])
    result, code = run_compare(str(base), str(new), tmp_path / "out", html=False)
    roles = {r["cell"]: r["role"] for r in result["rows"]}
    assert roles[headline] == "gate" and roles[other] == "exploratory"
    assert any(r["verdict"] == "worse" for r in result["rows"] if r["cell"] == other)
    assert code == 0  # an exploratory row's change is shown, never the gate
    text = (tmp_path / "out" / "compare.txt").read_text()
    assert "Gate: the" in text and "(exploratory)" in text
    assert gate.named_cells([base / "results"])[0] == {headline}


def test_a_cell_all_disturbed_on_one_side_is_one_row_and_nothing_decided_exits_non_zero(study, tmp_path):
    def disturbed(record):
        record.update(disturb_timed_s=1.0, disturb_nivcsw=[5], disturb_wait_s=[0.5], disturb_steal_s=0.0)

    base, new = copy_of(study, tmp_path, "a"), copy_of(study, tmp_path, "b", disturbed)
    result, code = run_compare(str(base), str(new), tmp_path / "out", html=False)
    assert code == NOTHING_DECIDED != 0 and result["decidable_gate_rows"] == 0
    assert not any(u for pair in result["pairs"] for u in pair["unmatched"])
    said = [r for r in result["rows"] if (r["notes"] or "").startswith("not compared: the disturbed rule marked all")]
    assert said and len(said) == len({r["cell"] for r in said})  # one row per cell
    assert "Nothing decided" in (tmp_path / "out" / "compare.txt").read_text()


def partly_disturbed(study, tmp_path, name, repeats=("r0", "r1"), factor=0.7):
    """A copy of the study whose repetitions `repeats` of every cell the
    disturbed rule marks (switched out for half the region) and, as a busy
    neighbour makes them, `factor` as fast; the others as they were."""
    target = copy_of(study, tmp_path, name)
    for path in (target / "results" / SYSTEM / "runs").glob("**/r*.jsonl"):
        if path.stem not in repeats:
            continue
        records = [json.loads(line) for line in path.read_text().splitlines()]
        for record in records:
            record.update(disturb_timed_s=1.0, disturb_nivcsw=[5], disturb_wait_s=[0.5], disturb_steal_s=0.0)
            for key in ("gbps", "gbps_wa"):
                if record.get(key):
                    record[key] *= factor
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return target


def make_compare(base, new, out, *extra) -> subprocess.CompletedProcess:
    """`make compare` as typed, with the tests' venv (BIN) and no install (STAMP)."""
    return subprocess.run(["make", "-s", "-C", str(REPO), "compare", f"BASE={base}", f"NEW={new}", f"OUT={out}",
                           f"BIN={Path(sys.executable).parent}", "STAMP=Makefile", *extra],
                          capture_output=True, text=True, timeout=300)  # fmt: skip


def test_a_side_with_some_runs_disturbed_goes_through_make_compare(study, tmp_path):
    """Two of five runs of every cell disturbed, and slow, on NEW: `make
    compare` leaves them out, says how many on each side, compares the
    other three against BASE's five, and calls nothing worse (exit 0)."""
    base, new = copy_of(study, tmp_path, "a"), partly_disturbed(study, tmp_path, "b")
    out = make_compare(base, new, tmp_path / "out")
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    result = json.loads((tmp_path / "out" / "compare.json").read_text())
    disturbed = sum(len(p.read_text().splitlines()) for p in (new / "results" / SYSTEM / "runs").glob("**/r[01].jsonl"))
    (pair,) = result["pairs"]
    assert f"disturbed records left out (KEEP_DISTURBED=1 keeps them): BASE 0, NEW {disturbed}" in pair["notes"]
    rows = [r for r in result["rows"] if r["metric"] != "-"]
    assert rows and {(r["n_base"], r["n_new"]) for r in rows} == {(5, 3)}
    assert not any(r["verdict"] in ("worse", "better") for r in rows)
    assert not any((r["notes"] or "").startswith("not compared") for r in result["rows"])
    assert "disturbed records left out" in (tmp_path / "out" / "compare.txt").read_text()


def test_keep_disturbed_compares_the_disturbed_runs_too(study, tmp_path):
    """KEEP_DISTURBED=1 through `make compare`: the same NEW side's five
    runs a cell are compared, the slow disturbed ones among them, and the
    output says they were kept."""
    base, new = copy_of(study, tmp_path, "a"), partly_disturbed(study, tmp_path, "b")
    left_out = make_compare(base, new, tmp_path / "left")
    kept = make_compare(base, new, tmp_path / "kept", "KEEP_DISTURBED=1")
    assert left_out.returncode == 0, left_out.stderr[-2000:]
    assert kept.returncode in (0, 1), kept.stdout[-2000:] + kept.stderr[-2000:]  # 1: a gate row worse, said
    result = json.loads((tmp_path / "kept" / "compare.json").read_text())
    disturbed = sum(len(p.read_text().splitlines()) for p in (new / "results" / SYSTEM / "runs").glob("**/r[01].jsonl"))
    (pair,) = result["pairs"]
    assert f"disturbed records kept in the comparison (KEEP_DISTURBED=1): BASE 0, NEW {disturbed}" in pair["notes"]
    rows = {(r["cell"], r["metric"], r["placement_class"]): r for r in result["rows"] if r["metric"] != "-"}
    assert rows and {(r["n_base"], r["n_new"]) for r in rows.values()} == {(5, 5)}
    without = {(r["cell"], r["metric"], r["placement_class"]): r
               for r in json.loads((tmp_path / "left" / "compare.json").read_text())["rows"] if r["metric"] != "-"}  # fmt: skip
    assert rows.keys() == without.keys()
    # the two slow disturbed runs now count: every row's ratio of geometric means is 0.7^(2/5), BASE's five
    # and NEW's five being the same runs but those two
    assert all(r["ratio"] == pytest.approx(0.7 ** (2 / 5), rel=1e-6) for r in rows.values())
    assert all(without[k]["ratio"] != pytest.approx(rows[k]["ratio"], rel=1e-3) for k in rows)
    assert "disturbed records kept in the comparison" in (tmp_path / "kept" / "compare.txt").read_text()


def test_keep_disturbed_compares_a_cell_whose_every_run_was_disturbed(study, tmp_path):
    """Every run of NEW disturbed: left out, nothing is decided (make
    compare stops with the one line); KEEP_DISTURBED=1 compares them."""
    base = copy_of(study, tmp_path, "a")
    new = partly_disturbed(study, tmp_path, "b", repeats=("r0", "r1", "r2", "r3", "r4"), factor=1.0)
    left_out = make_compare(base, new, tmp_path / "left")
    assert left_out.returncode != 0 and "make compare: nothing decided" in left_out.stderr, left_out.stderr[-2000:]
    kept = make_compare(base, new, tmp_path / "kept", "KEEP_DISTURBED=1")
    assert kept.returncode == 0, kept.stdout[-2000:] + kept.stderr[-2000:]
    rows = json.loads((tmp_path / "kept" / "compare.json").read_text())["rows"]
    assert rows and all(r["n_new"] == 5 for r in rows)
    assert not any((r["notes"] or "").startswith("not compared") for r in rows)


def test_memory_size_is_shown_but_never_makes_it_not_like_for_like():
    class Side:
        environment, table = None, __import__("pandas").DataFrame()

        def __init__(self, gib):
            self.topology = {"cpu_model": "x", "cpus": [0, 1], "cores": 2, "packages": 1, "llc_bytes": 1, "line_bytes": 64,
                             "nodes": [{"node": 0, "cpus": [0, 1], "memory_bytes": gib * 2**30, "distances": [10]}]}

    rows = conditions.conditions(Side(6), Side(7))
    memory = [r for r in rows if "memory" in r["what"]]
    assert memory and memory[0]["base"] != memory[0]["new"] and not memory[0]["differs"]
    assert conditions.headline(rows).startswith("Same conditions")
