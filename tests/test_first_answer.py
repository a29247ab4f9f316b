"""A minute for a first answer (issue 51): a budget too small for every
cell's fixed rounds measures the idle latency and each experiment at each
thread count first, leaves the rest out and says so; and a plan holds
for the rounds after it while they cost less than looking again."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

from membench.findings import next_round
from membench.plan import budget, checks, estimate, variants

REPO = Path(__file__).resolve().parents[1]
TABLE = variants.load_variants(REPO / "kernels" / "families" / "variants.yaml")
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
# the 2-vCPU guests of this project: 16 MiB of L3
HOST = estimate.host_from(TABLE, 2, 16 * 2**20)


def default_config(budget_text: str | None):
    raw = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    if budget_text is None:
        raw.pop("budget", None)
    else:
        raw["budget"] = budget_text
    return checks.load(raw, SCHEMA, TABLE)


def test_sixty_seconds_keep_the_idle_latency_and_stream_at_one_and_all_threads():
    config, cells = default_config("60s")
    out = set(estimate.left_out(cells, config, HOST))
    kept = [c for c in cells if c.id not in out]
    assert out, "the default config's fixed rounds do not fit a minute: something is left out"
    latency = [c for c in kept if c.experiment == "latency"]
    assert latency and latency[0].pages == "4k"
    stream = {str(c.threads) for c in kept if c.experiment == "stream_affinity"}
    assert stream == {"1", "all"}
    seconds = sum(budget.fixed_repeats(c, {**config, budget.LEFT_OUT: sorted(out)}) * estimate.model_seconds(c, HOST)
                  for c in cells)  # fmt: skip
    assert seconds <= 60


def test_a_budget_that_holds_every_cell_or_no_budget_leaves_nothing_out():
    for text in ("30m", None):
        config, cells = default_config(text)
        assert estimate.left_out(cells, config, HOST) == []
        assert estimate.left_out_line(estimate.with_left_out(config, cells, HOST), cells) is None


def test_a_left_out_cell_gets_no_fixed_rounds_and_the_line_names_it():
    config, cells = default_config("60s")
    config = estimate.with_left_out(config, cells, HOST)
    out = set(config[budget.LEFT_OUT])
    assert all(budget.fixed_repeats(c, config) == 0 for c in cells if c.id in out)
    assert all(budget.fixed_repeats(c, config) == 2 for c in cells if c.id not in out)
    line = estimate.left_out_line(config, cells)
    assert "left out for the budget" in line and "readonly_ladder" in line


def test_make_run_says_what_the_budget_leaves_out_before_it_starts(tmp_path):
    said = subprocess.run([sys.executable, str(REPO / "workflow" / "scripts" / "study_estimate.py"), "--configfile",
                           str(REPO / "config" / "config.yaml"), "--budget", "60s", "--directory", str(tmp_path)],
                          capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert "left out for the budget" in said and "every cell kept" in said


def test_a_plan_holds_while_its_rounds_cost_less_than_a_look(tmp_path):
    assert next_round.rounds_ahead(4.0, 3.0) == 2  # 8 s of measuring between looks
    assert next_round.rounds_ahead(4.0, 20.0) == 0  # a round costs more than a look: look every round
    assert next_round.rounds_ahead(30.0, 0.5) == next_round.MAX_AHEAD
    manifest = tmp_path / "a2.json"
    manifest.write_text(json.dumps({"seconds": 50.0}))
    previous = {"round": 2, "requests": [{"cell": "x/a"}, {"cell": "x/b"}], "why": "2 cells for 1 undecided findings",
                "expected_s": 3.0, "ahead_until": 4, "looked_at": 2, "decided": 3, "findings": 8}  # fmt: skip
    held = next_round.continued(previous, 3, [str(manifest)], 60.0)
    assert held is not None and held[0] == ["x/a", "x/b"] and "held" in held[1]
    assert next_round.continued(previous, 5, [str(manifest)], 60.0) is None  # past ahead_until: look again
    assert next_round.continued(previous, 3, [str(manifest)], 52.0) is None  # the budget would not hold it
    assert next_round.continued(previous, 3, [str(manifest)], 60.0, may_repeat=lambda c: c != "x/b") is None


def test_the_estimate_says_what_the_last_run_here_decided_and_promises_nothing_before(tmp_path):
    script = [sys.executable, str(REPO / "workflow" / "scripts" / "study_estimate.py"), "--configfile",
              str(REPO / "config" / "config.yaml"), "--directory", str(tmp_path)]  # fmt: skip
    fresh = subprocess.run(script, capture_output=True, text=True, check=True).stdout
    assert "8 experiments; how many get decided depends on this machine's noise" in fresh
    (tmp_path / "results" / "summary").mkdir(parents=True)
    system = next(line for line in fresh.splitlines() if line.startswith("make run will measure")).split(" on ")[1].split(" (")[0]
    found = [{"system": system, "experiment": f"e{i}", "decided": i < 5} for i in range(8)]
    (tmp_path / "results" / "summary" / "findings.json").write_text(json.dumps({"findings": found}))
    again = subprocess.run(script, capture_output=True, text=True, check=True).stdout
    assert "the last run in this folder decided 5 of 8" in again


LEFT_OUT_STUDY = {
    "system": "testbox",
    "repeats": 4,
    "min_repeats": 2,
    "budget": "1s",  # holds one cell's fixed rounds by the model: the rest is left out
    "ntimes": 3,
    "experiments": {
        "scaling": {"kernel": "xor", "threads": [1, "all"], "affinity": ["close"], "size": ["2MiB"]},
        "pinning": {"kernel": "stream", "threads": ["all"], "affinity": ["none", "close"], "size": ["2MiB"]},
    },
}


def test_the_pipeline_measures_the_first_answer_and_its_findings_say_what_was_left_out(tmp_path, venv_bin, variant_builds):
    from conftest import copy_workflow, seed_binaries

    workdir = seed_binaries(copy_workflow(tmp_path / "run"), LEFT_OUT_STUDY, variant_builds)
    (workdir / "study.yaml").write_text(yaml.safe_dump(LEFT_OUT_STUDY))
    out = subprocess.run([str(venv_bin / "snakemake"), "--cores", "2", "--configfile", "study.yaml"], cwd=workdir,
                         capture_output=True, text=True, timeout=600)  # fmt: skip
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    runs = list((workdir / "results" / "testbox" / "runs").glob("*/*/*/r*.jsonl"))
    measured = {p.parent.relative_to(workdir / "results" / "testbox" / "runs").parts[0] for p in runs}
    assert len(measured) == 1, measured  # one experiment's first cell; the other never ran
    findings = json.loads((workdir / "results" / "summary" / "findings.json").read_text())["findings"]
    left = [f for f in findings if f["experiment"] not in measured]
    assert left and all("left out for the budget" in f["line"] and f["cell_count"] == 0 for f in left)
    assert (workdir / "results" / "report.html").is_file()


def test_status_after_a_finished_run_promises_no_time():
    """make status after a run that measured everything said "about 30 s in
    all (report 30 s)" (tests/test_default_verbs.py found it)."""
    config, cells = default_config("3m")
    done = estimate.estimate(cells, 2, HOST, left={c.id: 0 for c in cells}, config=config, spent_s=180.0)
    said = estimate.lines(done, "Still to measure (vm), by the model:")
    assert done.seconds == 0 and "nothing left to measure or draw" in said[-1]
    assert "planned rounds are over" in said[-2]


def test_a_left_out_cell_is_never_built_nor_planned():
    from membench.plan import rounds

    config, cells = default_config("60s")
    config = estimate.with_left_out(config, cells, HOST)
    out = set(config[budget.LEFT_OUT])
    inputs = rounds.RoundInputs(config, cells, TABLE)
    built = set(inputs.binaries(5, "bin/vm"))  # a planned round
    assert all(f"readonly-v0{k:02d}" not in " ".join(built) for k in range(2, 16))  # only v001 is kept
    study = inputs.adaptive_study("vm", 5, {c.id for c in cells})
    assert not {r["cell"] for r in study["requests"]} & out
