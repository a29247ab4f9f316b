"""membench as a Snakemake module of another workflow (README, "membench
as a module"): planned from a directory that is not its checkout, through
the top-level Snakefile and through workflow/Snakefile (the path
snakedeploy's deploy-workflow writes)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

CONFIG = {
    "system": "modbox",
    "repeats": 2,
    "experiments": {"quick": {"kernel": "stream", "threads": [1], "size": ["8MiB"]}},
}


@pytest.mark.parametrize("snakefile", ["Snakefile", "workflow/Snakefile"])
def test_a_workflow_elsewhere_plans_membench_as_a_module(repo, venv_bin, tmp_path, snakefile):
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.yaml").write_text(yaml.safe_dump(CONFIG))
    (tmp_path / "Snakefile").write_text(
        'configfile: "config/config.yaml"\n\n\n'
        "module membench:\n"
        f"    snakefile: {str(repo / snakefile)!r}\n"
        "    config: config\n\n\n"
        "use rule * from membench as membench_*\n"
    )
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
