"""A run within a budget (issue 51): repetitions go where answers are still
undecided. The round planner (membench.findings.next_round.choose) on
planted arm pairs decided by the findings' own evidence rule, over many
seeds; and the real pipeline with a budget: planned rounds measure only the
cells undecided findings rest on, the run ends and says why, a rerun
measures nothing."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
import yaml

from conftest import copy_workflow, seed_binaries
from membench.findings import evidence, next_round
from membench.plan import budget

MOST_RUNS = 12  # an arm pair's repeats: the most rounds the planner may give it


def planted_run(pairs: dict[str, tuple[float, float]], seed: int, budget_s: float | None, cost_s: float = 1.0,
                start: int = 2) -> tuple[dict[str, dict], float]:
    """Rounds as the pipeline plans them: `start` runs an arm, then while the
    planner chooses, one more run for each chosen cell, the findings drawn
    as a budget run draws them (the rate spent over its looks). pairs:
    finding -> (B / A, log-normal spread). Returns each finding's last
    evidence and the seconds measured after the fixed rounds."""
    rng = np.random.default_rng(seed)
    runs = {f"{name}/{arm}": list(100 * (ratio if arm == "b" else 1.0) * np.exp(spread * rng.standard_normal(start)))
            for name, (ratio, spread) in pairs.items() for arm in "ab"}  # fmt: skip
    spent = 0.0
    count = MOST_RUNS - evidence.MIN_RUNS + 1
    with evidence.looks(count, interim=True):  # each round's planner
        for _ in range(MOST_RUNS - start):
            results = {name: evidence.effect(runs[f"{name}/a"], runs[f"{name}/b"]) for name in pairs}
            findings = {"findings": [{"system": "s", "experiment": name, "decided": result["decided"],
                                      "cells": [f"{name}/a", f"{name}/b"]} for name, result in results.items()]}  # fmt: skip
            left = None if budget_s is None else budget_s - spent
            chosen, _ = next_round.choose(findings, "s", {cell: cost_s for cell in runs}, left)
            if not chosen:
                break
            for cell in chosen:
                name, arm = cell.split("/")
                ratio, spread = pairs[name]
                runs[cell].append(100 * (ratio if arm == "b" else 1.0) * np.exp(spread * rng.standard_normal()))
                spent += cost_s
    with evidence.looks(count):  # the last look: the findings the report prints
        results = {name: {**evidence.effect(runs[f"{name}/a"], runs[f"{name}/b"]), "runs": len(runs[f"{name}/a"])}
                   for name in pairs}  # fmt: skip
    return results, spent


def test_a_pair_fifteen_percent_apart_at_eight_percent_spread_gets_runs_until_decided():
    outcomes = [planted_run({"drop": (0.85, 0.08)}, seed, None)[0]["drop"] for seed in range(200)]
    decided = [o for o in outcomes if o["decided"]]
    assert len(decided) >= 0.8 * len(outcomes)  # within 12 runs an arm
    assert all(o["value"] < 1 for o in decided)  # worse, never better
    assert min(o["runs"] for o in outcomes) > 2  # 2 runs an arm never decided it: the planner gave more


def test_a_decided_pair_gets_no_more_runs_while_an_undecided_one_does():
    """A 3x change at 1 % spread is decided as soon as an answer may be (3
    runs an arm: no interval from fewer); the rounds after go to the close
    pair only."""
    close_runs = []
    for seed in range(20):
        results, _ = planted_run({"clear": (3.0, 0.01), "close": (0.9, 0.08)}, seed, None)
        assert results["clear"]["decided"] and results["clear"]["runs"] == 3
        close_runs.append(results["close"]["runs"])
    assert min(close_runs) >= 3 and np.mean(close_runs) > 4


def test_the_budget_is_never_exceeded_by_more_than_one_measurement():
    for seed in range(50):
        results, spent = planted_run({"one": (1.0, 0.08), "two": (0.97, 0.08)}, seed, budget_s=7.0, cost_s=1.5)
        assert spent <= 7.0 + 1.5
        assert all(r["runs"] >= 2 for r in results.values())


def test_choose_names_what_it_leaves_out_and_why_it_stops():
    findings = {"findings": [
        {"system": "s", "experiment": "a", "decided": False, "cells": ["x", "y"]},
        {"system": "s", "experiment": "b", "decided": False, "cells": ["z"]},
        {"system": "s", "experiment": "c", "decided": True, "cells": ["w"]},
        {"system": "t", "experiment": "a", "decided": False, "cells": ["v"]},
    ]}  # fmt: skip
    chosen, why = next_round.choose(findings, "s", {"x": 2.0, "y": 2.0, "z": 10.0}, left_s=5.0)
    assert chosen == ["x", "y"] and "left out for the budget: b" in why
    assert next_round.choose(findings, "s", {"x": 9.0, "y": 9.0, "z": 10.0}, left_s=5.0) == ([], "the budget is spent (a, b undecided)")
    done = {"findings": [{**f, "decided": True} for f in findings["findings"]]}
    assert next_round.choose(done, "s", {}, None) == ([], "every finding is decided")


def test_budget_words_and_fixed_rounds():
    assert budget.seconds("4m") == 240 and budget.seconds("90s") == 90 and budget.seconds(30) == 30
    assert budget.seconds(None) is None
    with pytest.raises(ValueError):
        budget.seconds("soon")


# ------------------------------------------------------------ the pipeline

BUDGETED = {
    "system": "testbox",
    "repeats": 6,
    "min_repeats": 2,
    "budget": "60s",
    "ntimes": 3,
    "experiments": {
        # 1 -> all threads of a 1 MiB triad: decided or not, the rounds say which
        "scaling": {"kernel": "xor", "threads": [1, "all"], "affinity": ["close"], "size": ["2MiB"]},
        "pinning": {"kernel": "stream", "threads": ["all"], "affinity": ["none", "close"], "size": ["2MiB"]},
    },
}


def snakemake(workdir: Path, venv_bin: Path) -> subprocess.CompletedProcess:
    out = subprocess.run([str(venv_bin / "snakemake"), "--cores", "2", "--configfile", "budget.yaml"],
                         cwd=workdir, capture_output=True, text=True, timeout=600)  # fmt: skip
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return out


def test_the_pipeline_plans_rounds_from_the_findings_and_a_rerun_measures_nothing(tmp_path, venv_bin, variant_builds):
    workdir = seed_binaries(copy_workflow(tmp_path / "run"), BUDGETED, variant_builds)
    (workdir / "budget.yaml").write_text(yaml.safe_dump(BUDGETED))
    out = snakemake(workdir, venv_bin)
    said = out.stdout + out.stderr
    plans = sorted((workdir / "results" / "testbox" / "rounds").glob("plan*.json"), key=lambda p: int(re.findall(r"plan(\d+)", p.name)[0]))
    assert plans, said[-3000:]
    last = json.loads(plans[-1].read_text())
    findings = json.loads((workdir / "results" / "summary" / "findings.json").read_text())
    undecided = {f["experiment"] for f in findings["findings"] if not f["decided"]}
    if last["requests"]:  # the planner still had work: it stopped at the repeats, with answers open
        assert len(plans) == BUDGETED["repeats"] - BUDGETED["min_repeats"]
    else:
        assert "the run ends" in said and (last["why"] == "every finding is decided") == (not undecided)
    for plan in plans:  # each planned round measured only cells of a finding undecided before it
        study = json.loads(plan.read_text())
        assert {r["experiment"] for r in study["requests"]} <= {"scaling", "pinning"}
        assert study["spent_s"] <= 60.0 + 10.0
    runs = list((workdir / "results" / "testbox" / "runs").glob("*/*/*/r*.jsonl"))
    fixed = 2 * 4  # two rounds of four cells
    assert len(runs) == fixed + sum(len(json.loads(p.read_text())["requests"]) for p in plans)
    again = snakemake(workdir, venv_bin)
    assert "Nothing to be done" in again.stdout + again.stderr


def test_status_says_what_the_planned_rounds_did_and_whether_the_run_ended(tmp_path):
    """`make status` / `make plan`: the plans written for this run's key, read
    back; another key's plans are not this run's."""
    from types import SimpleNamespace

    cells = [SimpleNamespace(repeats=6)]  # rounds 0-5: a plan for round 5 is the last the repeats allow
    rounds_dir = tmp_path / "rounds"
    rounds_dir.mkdir()
    for k, requests, why in ((2, 3, "3 cells for 2 undecided findings, about 9 s"), (3, 0, "every finding is decided")):
        (rounds_dir / f"plan{k}-abcdefabcdef.json").write_text(json.dumps({"round": k, "requests": [{}] * requests, "why": why}))
    (rounds_dir / "plan2-000000000000.json").write_text(json.dumps({"round": 2, "requests": [{}], "why": "another config"}))
    plans = budget.planned_rounds(rounds_dir, "abcdefabcdef")
    assert [p["round"] for p in plans] == [2, 3]
    line = budget.planned_line("box", plans, cells)
    assert line == "box: planned rounds: 1 measured 3 repetitions; the last plan (round 3): every finding is decided; the run ended"
    assert budget.ended(plans, cells) and not budget.ended(plans[:1], cells)
    last = [{"round": 5, "requests": 2, "why": "2 cells for 1 undecided findings, about 4 s", "spent_s": 50.0}]
    assert budget.ended(last, cells) and budget.planned_line("box", last, cells).endswith("; the repeats are used up")


def test_cells_that_had_all_their_repeats_are_not_planned_again():
    findings = {"findings": [
        {"system": "s", "experiment": "a", "decided": False, "cells": ["full"]},
        {"system": "s", "experiment": "b", "decided": False, "cells": ["open", "full"]},
    ]}  # fmt: skip
    chosen, why = next_round.choose(findings, "s", {"open": 1.0, "full": 1.0}, None, may_repeat=lambda cell: cell == "open")
    assert chosen == ["open"] and "1 cells for 1 undecided findings" in why
    assert next_round.choose(findings, "s", {}, None, may_repeat=lambda cell: False) == (
        [], "the undecided findings' cells have had all their repeats")


def test_looks_after_every_round_keep_the_stated_false_alarm_rate():
    """A run within a budget looks at a comparison after every round and
    stops measuring it at its first decided answer; the report's findings
    are the last look. With the rate spent over the looks (evidence.looks:
    0.1 % at each early look, the rest at the last), a pair with no change
    at 2 % spread is called a change in at most the stated 5 % of 4000
    seeds, looking from 3 to 12 runs (it was 10.4 % with every look at the
    full rate)."""
    from scipy import stats

    from membench.findings import evidence as rule

    config = {"budget": "4m", "min_repeats": 3, "repeats": 12, "experiments": {"e": {"repeats": 12}}}
    count = budget.looks(config, rule.MIN_RUNS)
    assert count == 10
    rng = np.random.default_rng(11)
    alarms, seeds = 0, 4000
    for _ in range(seeds):
        a, b = list(np.exp(0.02 * rng.standard_normal(3))), list(np.exp(0.02 * rng.standard_normal(3)))
        for n in range(3, 12):  # the planners' looks, 3 to 11 runs an arm
            with rule.looks(count, interim=True):
                if rule.effect(a, b)["decided"]:
                    break
            a.append(float(np.exp(0.02 * rng.standard_normal())))
            b.append(float(np.exp(0.02 * rng.standard_normal())))
        with rule.looks(count):
            alarms += rule.effect(a, b)["answer"] in ("better", "worse")
    assert stats.binomtest(alarms, seeds, rule.CHANGE_FALSE_ALARM, alternative="greater").pvalue > 0.001, alarms / seeds


def test_the_last_look_spends_what_the_early_looks_left():
    from membench.findings import evidence as rule

    with rule.looks(10):
        last = rule.effect([100.0, 101.0, 99.0, 100.5], [103.0, 104.0, 102.0, 103.5])
    with rule.looks(10, interim=True):
        early = rule.effect([100.0, 101.0, 99.0, 100.5], [103.0, 104.0, 102.0, 103.5])
    assert last["interval_kind"].startswith("95.9% interval") and early["interval_kind"].startswith("99.9% interval")
    assert early["interval"][0] < last["interval"][0] and last["interval"][1] < early["interval"][1]
    with rule.looks(1000):  # 998 early looks: they spend half the rate at most
        assert rule.effect([100.0, 101.0, 99.0], [103.0, 104.0, 102.0])["interval_kind"].startswith("97.5% interval")
    assert budget.looks({"repeats": 12, "experiments": {}}, rule.MIN_RUNS) == 1  # no budget: one look
