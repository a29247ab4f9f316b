"""`make run` as a user types it (issue 42): a run directory of its own
(RESULTS=dir), membench's own lines on the terminal and not Snakemake's
job blocks, the report's path last, PNGs beside the SVGs; `make plan`
after it has nothing to measure; the SLURM profile refuses `system: auto`."""

import subprocess

import yaml

from conftest import copy_make_parts, copy_workflow

TINY = {
    "system": "testbox",
    "repeats": 1,
    "ntimes": 3,
    "experiments": {"quick": {"kernel": "stream", "threads": [1], "affinity": ["close"], "size": ["2MiB"]}},
}
# make's own prerequisites stand as they are: the venv of the tests, the compiler there.
AS_IS = ["-o", ".venv/.installed", "-o", "system-deps"]


def test_make_run_into_a_named_directory_speaks_membench(tmp_path, venv_bin):
    workdir = copy_workflow(tmp_path / "checkout")
    copy_make_parts(workdir)
    (workdir / ".venv").symlink_to(venv_bin.parent)
    (workdir / "tiny.yaml").write_text(yaml.safe_dump(TINY))
    run = subprocess.run(["make", *AS_IS, "run", "CONFIG=tiny.yaml", "RESULTS=runs/before"], cwd=workdir,
                         capture_output=True, text=True, timeout=600)  # fmt: skip
    said = (run.stdout + run.stderr).splitlines()
    assert run.returncode == 0, "\n".join(said[-60:])
    report = workdir / "runs" / "before" / "results" / "report.html"
    assert f"Report: {report}" in said[-20:] and report.exists()
    assert not (workdir / "results").exists(), "a named run writes only under its directory"
    assert any("testbox round 0 done" in line for line in said), said
    for chatter in ("localrule ", "rule measure_round:", "reason:", "Finished jobid", "steps (", "Job stats", "Shell command"):
        assert not any(chatter in line for line in said), chatter
    assert len(said) <= 60, "\n".join(said)
    figures = report.parent / "figures"
    assert sorted(p.stem for p in figures.glob("*.png")) == sorted(p.stem for p in figures.glob("*.svg"))
    plan = subprocess.run(["make", *AS_IS, "plan", "CONFIG=tiny.yaml", "RESULTS=runs/before"], cwd=workdir,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert plan.returncode == 0 and "testbox: nothing to measure" in plan.stdout, plan.stdout + plan.stderr


def test_the_slurm_profile_refuses_system_auto_in_one_line(tmp_path, venv_bin):
    workdir = copy_workflow(tmp_path / "slurm")
    (workdir / "auto.yaml").write_text(yaml.safe_dump({"system": "auto", "experiments": {"s": {"kernel": "stream"}}}))
    out = subprocess.run([str(venv_bin / "snakemake"), "--workflow-profile", "profiles/slurm", "--configfile", "auto.yaml",
                          "-n"], cwd=workdir, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert out.returncode != 0
    text = out.stdout + out.stderr  # the SLURM executor's logging puts Snakemake's errors on stdout
    said = [line for line in text.splitlines() if "system: auto" in line]
    assert len(said) == 1 and "systems:" in said[0], text


def test_make_run_refuses_a_yaml_alias_bomb_before_snakemake_reads_it(tmp_path, venv_bin):
    """Nine aliases of nine aliases: 9^9 values from 11 lines. Snakemake's own
    loader would expand them all; make run's first step (the estimate, through
    membench's loader) stops it in one line, and Snakemake never starts."""
    workdir = copy_workflow(tmp_path / "checkout")
    copy_make_parts(workdir)
    (workdir / ".venv").symlink_to(venv_bin.parent)
    lines = ["a0: &a0 [1, 2, 3, 4, 5, 6, 7, 8, 9]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    lines += ["system: t", "experiments:", "  s: {kernel: stream, size: [1MiB], threads: *a9}"]
    (workdir / "bomb.yaml").write_text("\n".join(lines) + "\n")
    run = subprocess.run(["make", *AS_IS, "run", "CONFIG=bomb.yaml"], cwd=workdir, capture_output=True, text=True,
                         timeout=60)  # fmt: skip
    said = [line for line in (run.stdout + run.stderr).splitlines() if "aliases" in line]
    assert run.returncode != 0 and len(said) == 1 and "bomb.yaml" in said[0], run.stdout + run.stderr
    assert not (workdir / ".snakemake").exists(), "Snakemake started on the bomb"
