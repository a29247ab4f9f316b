"""The workflow passes Snakemake's own linter and snakefmt."""

import subprocess


def test_snakemake_lint(repo, venv_bin):
    out = subprocess.run(
        [venv_bin / "snakemake", "--lint"], cwd=repo, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Lints for" not in out.stdout + out.stderr


def test_snakefmt_check(repo, venv_bin):
    out = subprocess.run(
        [venv_bin / "snakefmt", "--check", "Snakefile", "workflow"], cwd=repo, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stdout + out.stderr
