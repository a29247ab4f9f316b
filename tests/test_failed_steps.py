"""No failed step leaves a report that looks current, and a study with no
ok record still gets its figures (issue 40, cases 2 and 3), replayed
through the real Snakemake on tiny studies: a round that cannot take its
lock, a figure that crashes, a study whose every run was skipped."""

import os
import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import copy_workflow, seed_binaries
from helpers_run import copied, snakemake

TINY = {
    "system": "t",
    "repeats": 2,
    "ntimes": 3,
    "disturbed_retries": 0,
    "experiments": {"s": {"kernel": "stream", "threads": [1], "affinity": ["close"], "size": ["2MiB"]}},
}


def last_lines(out: subprocess.CompletedProcess, count: int = 8) -> str:
    return "\n".join(out.stderr.strip().splitlines()[-count:])


@pytest.fixture(scope="module")
def measured(tmp_path_factory, venv_bin, variant_builds):
    workdir = seed_binaries(copy_workflow(tmp_path_factory.mktemp("failed_steps") / "membench"), TINY, variant_builds)
    (workdir / "tiny.yaml").write_text(yaml.safe_dump(TINY))
    out = snakemake(workdir, venv_bin)
    assert out.returncode == 0, out.stderr[-3000:]
    assert (workdir / "results" / "report.html").is_file()
    return workdir


@pytest.fixture
def copy(measured, tmp_path):
    return copied(measured, tmp_path / "membench")


def assert_set_aside(workdir: Path, out: subprocess.CompletedProcess) -> None:
    assert out.returncode != 0
    assert not (workdir / "results" / "report.html").exists(), last_lines(out)
    stale = workdir / "results" / "report-stale.html"
    assert stale.is_file() and 'id="stale-report"' in stale.read_text()
    assert "report.html is not current: set aside as results/report-stale.html" in last_lines(out)


def test_a_round_that_fails_sets_the_report_aside(copy, venv_bin):
    lock = copy / "results" / "t" / ".measure.lock"
    lock.unlink()
    os.mkfifo(lock)  # a round cannot take its lock
    (copy / "tiny.yaml").write_text(yaml.safe_dump({**TINY, "repeats": 3}))
    out = snakemake(copy, venv_bin)
    assert_set_aside(copy, out)
    assert ".measure.lock: a FIFO" in out.stderr and "Traceback" not in out.stderr


def test_a_figure_that_crashes_is_one_line_and_sets_the_report_aside(copy, venv_bin):
    drawing = copy / "workflow" / "scripts" / "membench" / "figures" / "distribution.py"
    text = drawing.read_text()
    planted = text.replace('    """Every repetition in 1 GB/s bins', '    raise RuntimeError("planted")\n    """Every repetition in 1 GB/s bins', 1)
    assert planted != text
    drawing.write_text(planted)
    out = snakemake(copy, venv_bin)
    assert_set_aside(copy, out)
    assert "plot_figure (s-histogram): RuntimeError: planted" in last_lines(out)


def test_a_study_with_no_ok_record_gets_every_figure_and_a_report(tmp_path, venv_bin):
    """Every run skipped (more threads than any machine running the tests
    has CPUs): no gbps value is stored at all."""
    workdir = copy_workflow(tmp_path / "membench")
    config = {**TINY, "experiments": {"s": {"kernel": "stream", "threads": [4096], "affinity": ["close"], "size": ["2MiB"]}}}
    (workdir / "skipped.yaml").write_text(yaml.safe_dump(config))
    out = snakemake(workdir, venv_bin, config="skipped.yaml")
    assert out.returncode == 0, last_lines(out, 30)
    assert (workdir / "results" / "report.html").is_file()
    for kind in ("histogram", "placement"):  # one thread count: no bandwidth-vs-threads figure
        svg = (workdir / "results" / "figures" / f"s-{kind}.svg").read_text()
        assert "no successful measurements" in svg, kind
    assert "skipped (4096 threads requested" in (workdir / "results" / "figures" / "s-histogram.svg").read_text()
