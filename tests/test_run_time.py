"""Where a run's time goes (issue 41): make run's up-front estimate
(membench.plan.estimate, workflow/scripts/study_estimate.py) and its closing
breakdown by phase from Snakemake's own log (workflow/scripts/time_breakdown.py)."""

import csv
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

from membench.plan import checks, config_limits, estimate, families, latency_sweep, variants

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
[Thu Nov 26 10:00:01 2026]
localrule build_harness:
    output: bin/vm/harness/libmbharness.a
    jobid: 8
    reason: Missing output files
[Thu Nov 26 10:00:03 2026]
Finished jobid: 8 (Rule: build_harness)
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
    # the harness 10:00:01-03, then two compiles 10:00:03-08 and 10:00:05-09
    # that overlap: 8 s of wall, not 9
    assert phases == {"planning": 1, "compile": 8, "rounds": 60, "figures": 3, "snakemake": 72}


def test_make_run_breakdown_line_names_each_phase(tmp_path):
    (tmp_path / ".snakemake" / "log").mkdir(parents=True)
    (tmp_path / ".snakemake" / "log" / "2026-11-26T100000.000000.snakemake.log").write_text(LOG)
    out = subprocess.run([sys.executable, str(REPO / "workflow" / "scripts" / "time_breakdown.py"), "--directory", str(tmp_path),
                          "--install-seconds", "79"], capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert out.startswith("Time: install 79 s, planning 1 s, compile 8 s, rounds 60 s, figures 3 s; Snakemake 72 s in all")


TABLE = variants.load_variants(REPO / "kernels" / "families" / "variants.yaml")
# Two Xeon guests whose sysfs L3 reads 300 MiB (size auto: 1.2 GiB arrays).
TWO_CPU = estimate.host_from(TABLE, 2, 300 * 2**20)
SIXTEEN_CPU = estimate.host_from(TABLE, 16, 300 * 2**20)


def default_cells():
    raw = config_limits.read_config(str(REPO / "config" / "config.yaml"))
    return checks.load(raw, REPO / "workflow" / "schemas" / "config.schema.yaml", TABLE)[1]


def default_config():
    raw = config_limits.read_config(str(REPO / "config" / "config.yaml"))
    return checks.load(raw, REPO / "workflow" / "schemas" / "config.schema.yaml", TABLE)[0]


def test_estimate_says_what_each_experiment_measures_and_what_is_left():
    cells = default_cells()
    plan = estimate.estimate(cells, 2, TWO_CPU)  # no budget: every repeat
    assert set(plan.experiments) == {c.experiment for c in cells}
    assert sum(reps for _, reps, _ in plan.experiments.values()) == sum(c.repeats for c in cells)
    text = "\n".join(estimate.lines(plan, "heading"))
    assert "latency: 2 cells, 12 repetitions" in text and "in all (compile" in text and "budget" not in text


def test_estimate_of_a_budget_says_the_fixed_rounds_and_what_is_left_of_it():
    """The default config's budget: its first min_repeats rounds are counted
    whole, the planned rounds at most what is left of the budget."""
    cells, config = default_cells(), default_config()
    plan = estimate.estimate(cells, 2, TWO_CPU, config=config)
    fixed = min(config["min_repeats"], max(c.repeats for c in cells))
    assert sum(reps for _, reps, _ in plan.experiments.values()) == sum(min(c.repeats, fixed) for c in cells)
    fixed_seconds = sum(seconds for _, _, seconds in plan.experiments.values())
    assert fixed_seconds <= plan.phases["rounds"] <= max(fixed_seconds, 180.0) + 1e-9  # budget: 3m
    text = "\n".join(estimate.lines(plan, "heading"))
    assert "budget 3 min: the first 2 rounds measure every cell" in text
    done = estimate.estimate(cells, 2, TWO_CPU, left={c.id: 0 for c in cells})
    assert done.phases["rounds"] == 0 and done.phases["compile"] == 0


def test_a_chase_repetition_is_estimated_within_its_budget():
    chase = next(c for c in default_cells() if c.kernel == "chase")
    random = latency_sweep.REPETITION_S
    assert estimate.model_seconds(chase, TWO_CPU) <= estimate.START_SECONDS + random * (1 + estimate.CHASE_STRIDE_SHARE)


def test_the_model_follows_the_bytes_a_host_makes_a_cell_move():
    """size auto is STREAM's rule on the host's caches, and threads share
    the work: a VM whose sysfs L3 reads 300 MiB costs several times one at
    32 MiB, and 16 threads cost a fraction of 2."""
    stream = next(c for c in default_cells() if c.kernel == "stream" and c.threads == "all")
    small = estimate.host_from(TABLE, 2, 32 * 2**20)  # arrays at the 256 MiB floor
    assert estimate.model_seconds(stream, TWO_CPU) > 3 * estimate.model_seconds(stream, small)
    assert estimate.model_seconds(stream, SIXTEEN_CPU) < 0.3 * estimate.model_seconds(stream, TWO_CPU)


def test_the_model_holds_to_two_machines_records():
    """Seconds per repetition as stored (tests/fixtures/repetition_seconds.csv:
    the undisturbed runs of the default config's bandwidth, loaded and c2c
    cells on the 16-CPU guest of shared/data/xeon16 and on this project's
    2-vCPU guest; each run file's span, a process's start added): the model
    within 0.67-1.5 x of the whole on each machine, 0.5-2 x per family."""
    cells = {c.id: c for c in default_cells()}
    sums: dict[str, dict[str, list[float]]] = {}
    with open(REPO / "tests" / "fixtures" / "repetition_seconds.csv") as rows:
        for row in csv.DictReader(rows):
            host = estimate.host_from(TABLE, int(row["cpus"]), int(row["llc_total_bytes"]))
            cell = cells[row["cell"]]
            pair = sums.setdefault(row["machine"], {}).setdefault(cell.kernel, [0.0, 0.0])
            pair[0] += estimate.model_seconds(cell, host)
            pair[1] += float(row["seconds"]) + estimate.START_SECONDS
    assert len(sums) == 2
    for machine, by_family in sums.items():
        whole = sum(m for m, _ in by_family.values()) / sum(s for _, s in by_family.values())
        assert 0.67 <= whole <= 1.5, (machine, whole)
        assert all(0.5 <= m / s <= 2 for m, s in by_family.values()), (machine, {k: m / s for k, (m, s) in by_family.items()})


def test_passes_are_the_kernel_tables_reads_and_writes():
    """The model's passes per iteration are what the kernel table says each
    op reads and writes (kernels/families/kernel_table.c)."""
    text = (REPO / "kernels" / "families" / "kernel_table.c").read_text()
    counted: dict[str, int] = {}
    for family, body in re.findall(r'\{\.family = "(\w+)", (.*?)\}', text, re.S):
        reads = re.search(r"\.reads = (\d+)", body)
        writes = re.search(r"\.writes = (\d+)", body)
        counted[family] = counted.get(family, 0) + int(reads.group(1) if reads else 0) + int(writes.group(1) if writes else 0)
    bandwidth = families.named(lambda traits: traits.bandwidth)
    assert {name: families.family(name).passes for name in bandwidth} == {name: counted[name] for name in bandwidth}


def test_make_status_estimate_takes_the_pace_stored_on_this_machine(tmp_path):
    """What is left is costed at the model times the family's pace on this
    machine (stored seconds / model, each run file's first start to last
    end), the model's alone without any."""
    import json

    cells = default_cells()
    chase = [c for c in cells if c.kernel == "chase"]
    runs = tmp_path / "results" / "box" / "runs" / chase[0].id
    runs.mkdir(parents=True)
    (runs / "r0.jsonl").write_text(json.dumps({"t_start": 100.0, "t_end": 150.0}) + "\n" + json.dumps({"t_start": 150.0, "t_end": 160.0}) + "\n")
    spec = importlib.util.spec_from_file_location("study_estimate", REPO / "workflow" / "scripts" / "study_estimate.py")
    study_estimate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(study_estimate)
    stored = study_estimate.stored_seconds(cells, tmp_path / "results", ["box"])
    assert stored == {chase[0].id: [60.0]}
    left = study_estimate.stored_left(cells, tmp_path / "results", ["box"])
    plan = estimate.estimate(cells, 2, TWO_CPU, left=left, stored=stored)
    assert plan.experiments["latency"][:2] == (2, 11) and plan.experiments["latency"][2] == pytest.approx(11 * (60.0 + estimate.START_SECONDS))
    assert "pace stored on this machine for chase" in plan.basis
    model = estimate.estimate(cells, 2, TWO_CPU, left=left)
    assert model.experiments["stream_affinity"] == plan.experiments["stream_affinity"]
