"""membench as a Snakemake module of another workflow (README, "membench
as a module"): planned from a directory that is not its checkout, through
the top-level Snakefile and through workflow/Snakefile (the path
snakedeploy's deploy-workflow writes)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

CONFIG = {
    "system": "modbox",
    "repeats": 2,
    "experiments": {"quick": {"kernel": "stream", "threads": [1], "size": ["8MiB"]}},
}


def write_workflow(folder: Path, config: dict, snakefile: Path) -> None:
    """Another workflow in `folder`: its config, and a Snakefile that uses
    every rule of membench's `snakefile` as a module, prefixed membench_."""
    (folder / "config").mkdir()
    (folder / "config" / "config.yaml").write_text(yaml.safe_dump(config))
    (folder / "Snakefile").write_text(
        'configfile: "config/config.yaml"\n\n\n'
        "module membench:\n"
        f"    snakefile: {str(snakefile)!r}\n"
        "    config: config\n\n\n"
        "use rule * from membench as membench_*\n"
    )


@pytest.mark.parametrize("snakefile", ["Snakefile", "workflow/Snakefile"])
def test_a_workflow_elsewhere_plans_membench_as_a_module(repo, venv_bin, tmp_path, snakefile):
    write_workflow(tmp_path, CONFIG, repo / snakefile)
    run = subprocess.run([str(venv_bin / "snakemake"), "-n", "--cores", "1"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    out = run.stdout + run.stderr
    for rule in ("membench_build_kernel", "membench_measure_round", "membench_collect_runs",
                 "membench_render_report"):
        assert rule in out, f"{rule} not planned:\n{out}"
    # both rounds of the study, each named by its study (the manifest path)
    assert "results/modbox/rounds/r0-" in out and "results/modbox/rounds/r1-" in out
    assert not (tmp_path / "results").exists()
    assert "localrules directive" not in out  # the local rules are named as the module names them


def test_a_workflow_elsewhere_measures_and_reports_through_the_module(repo, venv_bin, tmp_path):
    """Not only planned: the module runs a one-cell study end to end from a
    directory that is not membench's checkout, with the lock resource given
    on the command line as docs/design.md says; binaries, runs and the
    report land under that directory."""
    config = {"system": "modbox", "repeats": 1, "ntimes": 3,
              "experiments": {"quick": {"kernel": "stream", "threads": [1], "size": ["2MiB"]}}}  # fmt: skip
    write_workflow(tmp_path, config, repo / "Snakefile")
    run = subprocess.run([str(venv_bin / "snakemake"), "--cores", "2", "--resources", "machine=100"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=600)  # fmt: skip
    out = run.stdout + run.stderr
    assert run.returncode == 0, out[-4000:]
    (stored,) = (tmp_path / "results" / "modbox" / "runs").glob("quick/stream-default/*/r0.jsonl")
    records = [json.loads(line) for line in stored.read_text().splitlines()]
    assert [r["op"] for r in records] == ["copy", "scale", "add", "triad"] and all(r["status"] == "ok" for r in records)
    report = (tmp_path / "results" / "report.html").read_text()
    assert "modbox" in report and "quick" in report
    assert not (repo / "results" / "modbox").exists()
