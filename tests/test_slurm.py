"""The pipeline on a real SLURM: a single-node cluster brought up on this
machine (tools/slurm/local_cluster.py), the tiny config with two system names
on one partition, run through `--workflow-profile profiles/slurm` and
Snakemake's SLURM executor plugin.

Skipped only where SLURM cannot run here (packages missing, not root), with
the reason printed. The cluster is torn down (jobs cancelled, daemons stopped
by pid file, state removed) also on failure, on timeout and on SIGTERM."""

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import pytest
import yaml

from conftest import REPO, copy_workflow
from membench.core.atomic_files import read_jsonl

sys.path.insert(0, str(REPO / "tools" / "slurm"))
import local_cluster  # noqa: E402

RUN_SECONDS = 240  # `timeout` kills Snakemake (and its status polling) after this
FEATURE = "membench"  # a node feature, so that one system is chosen by --constraint
SYSTEMS = {"alpha": {"partition": "debug"}, "beta": {"partition": "debug", "constraint": FEATURE}}
CONFIG = {
    "systems": SYSTEMS,
    "repeats": 1,
    "ntimes": 3,
    "experiments": {"tiny": {"kernel": "stream", "threads": [1, "all"], "affinity": ["close"], "size": ["2MiB"]}},
}
# Test-only overrides: this cluster keeps no accounting (sacct cannot answer),
# and the first status check comes after 1 s instead of 40 s.
OVERRIDES = [
    "--slurm-status-command", "squeue",
    "--slurm-init-seconds-before-status-checks", "1",
    "--slurm-keep-successful-logs",
]  # fmt: skip


def run_snakemake(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    """Snakemake under `timeout -k` (its status polling ignores SIGTERM), in
    a process group of its own that is killed whole if the test is
    interrupted, so no Snakemake outlives the cluster."""
    proc = subprocess.Popen(
        ["timeout", "-k", "15", str(RUN_SECONDS), *argv],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True, **kwargs,
    )  # fmt: skip
    try:
        stdout, stderr = proc.communicate(timeout=RUN_SECONDS + 30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


def slurm_jobs(cluster) -> list[dict[str, str]]:
    """Every job the controller still knows (finished ones stay MinJobAge),
    as scontrol reports them."""
    out = subprocess.run(
        ["scontrol", "show", "job", "--oneliner"], capture_output=True, text=True, env=cluster.env, timeout=30
    )
    return [dict(re.findall(r"(\w[\w:/]*)=(\S*)", line)) for line in out.stdout.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def slurm_run(tmp_path_factory, venv_bin):
    reason = local_cluster.unavailable_reason()
    if reason:
        warnings.warn(f"SLURM test skipped: {reason}")  # printed even under -q
        pytest.skip(f"SLURM cannot run here: {reason}")
    workflow = copy_workflow(tmp_path_factory.mktemp("membench"))
    # A run directory outside the checkout: Snakemake's spawned jobs do not
    # inherit --replace-workflow-config, so in the checkout they would merge
    # config/config.yaml into the config (see README, "Running on SLURM").
    rundir = tmp_path_factory.mktemp("run")
    (rundir / "systems.yaml").write_text(yaml.safe_dump(CONFIG))
    root = Path(tempfile.mkdtemp(prefix="membench-slurm-"))
    with local_cluster.LocalSlurm(root, partitions=("debug",), features=(FEATURE,)) as cluster:
        started = time.monotonic()
        out = run_snakemake(
            [
                str(venv_bin / "snakemake"), "--snakefile", str(workflow / "Snakefile"),
                "--workflow-profile", str(workflow / "profiles" / "slurm"),
                "--directory", str(rundir), "--configfile", str(rundir / "systems.yaml"),
                *OVERRIDES,
            ],
            cwd=rundir, env={**cluster.env, "PATH": f"{venv_bin}:{cluster.env['PATH']}"},
        )  # fmt: skip
        seconds = time.monotonic() - started
        jobs = slurm_jobs(cluster)
        node, cpus = cluster.node, cluster.cpus
    assert not root.exists(), "the local SLURM left its state behind"
    assert out.returncode == 0, f"exit {out.returncode} after {seconds:.0f} s\n{out.stdout[-3000:]}{out.stderr[-5000:]}"
    print(f"\nSLURM run: {seconds:.0f} s, {len(jobs)} SLURM jobs")
    for job in jobs:
        print(f"  {job['JobId']:>3} {job['SubmitTime'][11:]} {job['StartTime'][11:]}-{job['EndTime'][11:]} {job['Comment']}")
    return {"rundir": rundir, "jobs": jobs, "node": node, "cpus": cpus, "log": out.stdout + out.stderr}


def jobs_of(run, rule: str, system: str | None = None) -> list[dict]:
    """The SLURM jobs of a rule (of one system), by the plugin's job comment
    rule_<rule>_wildcards_<system>[_<more wildcards>]."""
    pattern = rf"rule_{rule}_wildcards_{system}(_|$)" if system else rf"rule_{rule}_wildcards_"
    return [j for j in run["jobs"] if re.match(pattern, j.get("Comment", ""))]


def records(run) -> list[dict]:
    return [r for f in sorted(run["rundir"].glob("results/*/runs/**/*.jsonl")) for r in read_jsonl(f)]


def test_every_job_ran_through_slurm(slurm_run):
    assert slurm_run["jobs"], "the controller knows no job"
    assert all(j["JobState"] == "COMPLETED" for j in slurm_run["jobs"]), [
        (j["JobId"], j["Comment"], j["JobState"]) for j in slurm_run["jobs"]
    ]


def test_each_system_is_built_probed_and_measured_on_its_own_nodes(slurm_run):
    for system, where in SYSTEMS.items():
        for rule in ("build_kernel", "probe_system", "measure_round"):
            jobs = jobs_of(slurm_run, rule, system)
            assert jobs, f"no SLURM job of {rule} for {system}"
            for job in jobs:
                assert job["Partition"] == where["partition"], job
                assert job["Features"] == where.get("constraint", "(null)"), job
                assert job["NodeList"] == slurm_run["node"], job


def test_every_measure_record_came_from_a_whole_node_job(slurm_run):
    found = records(slurm_run)
    assert {r["system"] for r in found} == set(SYSTEMS)
    measure_jobs = {j["JobId"]: j for j in jobs_of(slurm_run, "measure_round")}
    for record in found:
        job = measure_jobs.get(str(record["slurm_job_id"]))
        assert job, f"record of {record['system']} {record['cell']} came from no measure job: {record['slurm_job_id']}"
        assert record["node_name"] == slurm_run["node"] == job["NodeList"]
        assert job["OverSubscribe"] == "NO", f"job {job['JobId']} was not --exclusive"
        assert int(job["NumCPUs"]) == slurm_run["cpus"], f"job {job['JobId']} had {job['NumCPUs']} CPUs"
        # The job step, not just the allocation, saw every CPU: "all" threads
        # are as many as the node has, and they ran on all of them.
        assert record["status"] == "ok" and record["valid"], record
        if record["threads_requested"] == "all":
            assert record["threads"] == slurm_run["cpus"], record["threads"]
            assert len(set(record["cpus"])) == slurm_run["cpus"], record["cpus"]
    assert {r["threads_requested"] for r in found} == {1, "all"}


def test_results_land_per_system_and_one_report_compares_them(slurm_run):
    rundir = slurm_run["rundir"]
    for system in SYSTEMS:
        assert (rundir / "results" / system / "topology.json").is_file()
        assert (rundir / "results" / system / "measurements.csv").is_file()
    html = (rundir / "results" / "report.html").read_text()
    for section in ("provenance", "machine", "experiment-tiny", "cells"):
        assert f'id="{section}"' in html, section
    for system in SYSTEMS:
        assert system in html, system
    assert "<svg" in html and ">nan<" not in html.lower()


def test_analysis_runs_in_the_submitting_snakemake(slurm_run):
    """collect/analyse/plot/report are local rules: no SLURM job of theirs."""
    for rule in ("collect_runs", "analyse_measurements", "plot_figure", "render_report"):
        assert not [j for j in slurm_run["jobs"] if j.get("Comment", "").startswith(f"rule_{rule}")], rule


def test_one_slurm_job_per_round_not_per_repetition(slurm_run):
    """Each system's measurements of one round share one allocation."""
    for system in SYSTEMS:
        jobs = jobs_of(slurm_run, "measure_round", system)
        assert len(jobs) == CONFIG["repeats"], [j["Comment"] for j in jobs]
        found = [r for r in records(slurm_run) if r["system"] == system]
        assert len({r["cell"] for r in found}) == 2
        assert {str(r["slurm_job_id"]) for r in found} == {j["JobId"] for j in jobs}
