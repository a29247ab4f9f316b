"""Where a run's time goes (issue 41): make run's up-front estimate
(membench.plan.estimate, workflow/scripts/study_estimate.py) and its closing
breakdown by phase from Snakemake's own log (workflow/scripts/time_breakdown.py)."""

import importlib.util
import subprocess
import sys
from pathlib import Path

from membench.plan import checks, config_limits, estimate, latency_sweep, variants

REPO = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("time_breakdown", REPO / "workflow" / "scripts" / "time_breakdown.py")
time_breakdown = importlib.util.module_from_spec(spec)
spec.loader.exec_module(time_breakdown)

LOG = """Assuming unrestricted shared filesystem usage.

SNAKEMAKE
=========
  Date: 2026-11-26 10:00:00
  Workflow ID: x

Building DAG of jobs...
[Thu Nov 26 10:00:03 2026]
localrule build_kernel:
    output: bin/vm/chase-default
    jobid: 6
    reason: Missing output files
[Thu Nov 26 10:00:05 2026]
localrule build_kernel:
    output: bin/vm/stream-default
    jobid: 7
[Thu Nov 26 10:00:08 2026]
Finished jobid: 6 (Rule: build_kernel)
[Thu Nov 26 10:00:09 2026]
Finished jobid: 7 (Rule: build_kernel)
[Thu Nov 26 10:00:09 2026]
localrule measure_round:
    jobid: 2
[Thu Nov 26 10:01:09 2026]
Finished jobid: 2 (Rule: measure_round)
[Thu Nov 26 10:01:09 2026]
localrule plot_figure:
    jobid: 30
[Thu Nov 26 10:01:12 2026]
Finished jobid: 30 (Rule: plot_figure)
"""


def test_breakdown_counts_overlapping_jobs_of_a_phase_once():
    phases = time_breakdown.breakdown(LOG)
    # two compiles 10:00:03-08 and 10:00:05-09 overlap: 6 s of wall, not 7
    assert phases == {"planning": 3, "compile": 6, "rounds": 60, "figures": 3, "snakemake": 72}


def test_make_run_breakdown_line_names_each_phase(tmp_path):
    (tmp_path / ".snakemake" / "log").mkdir(parents=True)
    (tmp_path / ".snakemake" / "log" / "2026-11-26T100000.000000.snakemake.log").write_text(LOG)
    out = subprocess.run([sys.executable, str(REPO / "workflow" / "scripts" / "time_breakdown.py"), "--directory", str(tmp_path),
                          "--install-seconds", "79"], capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert out.startswith("Time: install 79 s, planning 3 s, compile 6 s, rounds 60 s, figures 3 s; Snakemake 72 s in all")


def default_cells():
    table = variants.load_variants(REPO / "kernels" / "families" / "variants.yaml")
    raw = config_limits.read_config(str(REPO / "config" / "config.yaml"))
    return checks.load(raw, REPO / "workflow" / "schemas" / "config.schema.yaml", table)[1]


def test_estimate_says_what_each_experiment_measures_and_what_is_left():
    cells = default_cells()
    plan = estimate.estimate(cells, cores=2)
    assert set(plan.experiments) == {c.experiment for c in cells}
    assert sum(reps for _, reps, _ in plan.experiments.values()) == sum(c.repeats for c in cells)
    text = "\n".join(estimate.lines(plan, "heading"))
    assert "latency: 2 cells, 6 repetitions" in text and "in all (compile" in text
    done = estimate.estimate(cells, cores=2, left={c.id: 0 for c in cells})
    assert done.phases["rounds"] == 0 and done.phases["compile"] == 0


def test_a_chase_repetition_is_estimated_within_its_budget():
    chase = next(c for c in default_cells() if c.kernel == "chase")
    assert estimate.repetition_seconds(chase) <= latency_sweep.REPETITION_S + estimate.SECONDS_PER_REPETITION["chase"]


def test_make_status_estimate_takes_the_seconds_stored_on_this_machine(tmp_path):
    """What is left is costed at the family's stored seconds per repetition
    (each run file's first start to last end), the model's without any."""
    import json

    cells = default_cells()
    chase = [c for c in cells if c.kernel == "chase"]
    runs = tmp_path / "results" / "box" / "runs" / chase[0].id
    runs.mkdir(parents=True)
    (runs / "r0.jsonl").write_text(json.dumps({"t_start": 100.0, "t_end": 150.0}) + "\n" + json.dumps({"t_start": 150.0, "t_end": 160.0}) + "\n")
    spec = importlib.util.spec_from_file_location("study_estimate", REPO / "workflow" / "scripts" / "study_estimate.py")
    study_estimate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(study_estimate)
    measured = study_estimate.stored_seconds(cells, tmp_path / "results", ["box"])
    assert measured == {"chase": 60.0}
    left = study_estimate.stored_left(cells, tmp_path / "results", ["box"])
    plan = estimate.estimate(cells, cores=2, left=left, measured=measured)
    assert plan.experiments["latency"] == (2, 5, 5 * 60.0) and "as stored on this machine for chase" in plan.basis
