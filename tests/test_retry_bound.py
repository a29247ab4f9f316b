"""The retry bound is per repetition, not per run, and a failed repetition
can be measured again (issue 40, case 13), through the real Snakemake and
the real harness on a one-cell study:

- a run stopped between two tries of a disturbed repetition, then run
  again: the repetition has had at most disturbed_retries + 1 tries in all,
  and its kept record's measure_try counts every one of them;
- a harness killed once stores `failed`, which a rerun keeps; `make
  remeasure-failed` moves it aside, kept byte for byte, and the next run
  measures it again."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from conftest import copy_make_parts, copy_workflow, seed_binaries
from membench.core.atomic_files import read_jsonl

SYSTEM = "d"
CPU = sorted(os.sched_getaffinity(0))[-1]
# 512 MiB arrays, iterations of 25 ms and more (far longer than the
# scheduler's slices, so a busy loop on the measuring CPU disturbs every
# one: the rule judges the best iteration, and 128 MiB iterations of 6 ms
# on this project's EPYC guest sometimes ran whole between two of the
# loop's slices, a try then clean), a few seconds a try: time to stop the
# run between two tries
CONFIG = {
    "system": SYSTEM,
    "repeats": 1,
    "ntimes": 10,
    "experiments": {"d": {"kernel": "stream", "threads": [1], "affinity": [f"cpus:{CPU}"], "size": ["512MiB"]}},
}
RETRIES = 2  # disturbed_retries' default, as users run it
UNTIL = ["--until", "measure_round"]  # the measurements, not the report
AS_IS = ["-o", ".venv/.installed", "-o", "system-deps"]


def snakemake_argv(venv_bin: Path, *args: str) -> list[str]:
    return [str(venv_bin / "snakemake"), *args, "--cores", "2", "--configfile", "bound.yaml"]


@pytest.fixture
def workdir(tmp_path, venv_bin, variant_builds):
    """A copy of the workflow with its binary built and its system probed,
    and the Makefile as a user has it."""
    workdir = seed_binaries(copy_workflow(tmp_path / "membench"), CONFIG, variant_builds)
    copy_make_parts(workdir)
    (workdir / ".venv").symlink_to(venv_bin.parent)
    (workdir / "bound.yaml").write_text(yaml.safe_dump(CONFIG))
    prepare = snakemake_argv(venv_bin, f"bin/{SYSTEM}/stream-default", f"results/{SYSTEM}/topology.json")
    out = subprocess.run(prepare, cwd=workdir, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return workdir


def kept(workdir: Path) -> list[Path]:
    return sorted((workdir / "results" / SYSTEM / "runs").glob("d/*/*/r0.jsonl"))


def aside(workdir: Path, why: str) -> list[Path]:
    return sorted((workdir / "results" / SYSTEM / "superseded" / why).rglob("r0.jsonl*"))


def harnesses(workdir: Path) -> list[int]:
    """The harness processes measuring in this copy now."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if f"bin/{SYSTEM}/stream-default" in (proc / "cmdline").read_bytes().decode(errors="replace") and os.readlink(
                proc / "cwd"
            ) == str(workdir):
                found.append(int(proc.name))
        except OSError:
            continue
    return found


def wait_for(predicate, process: subprocess.Popen, seconds: float = 240) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and process.poll() is None:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def finish(process: subprocess.Popen, log: Path) -> str:
    try:
        process.wait(timeout=90)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    return log.read_text()


@pytest.fixture
def spinner():
    """A busy loop on the measuring CPU: about half of it, every try disturbed."""
    spin = subprocess.Popen([sys.executable, "-c", "while True: pass"], preexec_fn=lambda: os.sched_setaffinity(0, {CPU}))
    yield spin
    spin.kill()
    spin.wait()


def test_a_run_stopped_between_tries_keeps_the_bound_after_the_rerun(workdir, venv_bin, spinner, tmp_path):
    log = tmp_path / "first.log"
    with open(log, "w") as out:
        first = subprocess.Popen(snakemake_argv(venv_bin, *UNTIL), cwd=workdir, stdout=out, stderr=subprocess.STDOUT,
                                 start_new_session=True)  # fmt: skip
    # the first try measured, marked and moved aside; the second under way
    moved = wait_for(lambda: aside(workdir, "disturbed") and harnesses(workdir), first)
    first.send_signal(signal.SIGTERM)  # kill, scancel: one SIGTERM
    said = finish(first, log)
    assert moved, f"the first try was not moved aside as disturbed:\n{said[-3000:]}"
    earlier = aside(workdir, "disturbed")
    assert not kept(workdir), f"the run was not stopped between tries:\n{said[-3000:]}"
    assert 1 <= len(earlier) <= RETRIES, earlier

    again = subprocess.run(snakemake_argv(venv_bin, *UNTIL), cwd=workdir, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, (again.stdout + again.stderr)[-3000:]
    (repetition,) = kept(workdir)
    tries = aside(workdir, "disturbed")
    assert set(earlier) <= set(tries), "a try moved aside before the stop is kept"
    assert len(tries) <= RETRIES, f"{len(tries) + 1} tries in all, the bound is {RETRIES + 1}: {tries}"
    assert {r["measure_try"] for r in read_jsonl(repetition)} == {len(tries) + 1}, "measure_try counts every try"
    assert not list(repetition.parent.glob("*.tries.json")), "the count is gone once the repetition is stored"


def test_a_failed_repetition_is_measured_again_after_make_remeasure_failed(workdir, venv_bin, tmp_path):
    log = tmp_path / "first.log"
    with open(log, "w") as out:
        first = subprocess.Popen(snakemake_argv(venv_bin, *UNTIL), cwd=workdir, stdout=out, stderr=subprocess.STDOUT,
                                 start_new_session=True)  # fmt: skip
    started = wait_for(lambda: harnesses(workdir), first)
    for pid in harnesses(workdir):
        os.kill(pid, signal.SIGKILL)  # a kill -9, or the OOM killer
    said = finish(first, log)
    assert started, said[-3000:]
    assert first.returncode == 0, said[-3000:]
    (repetition,) = kept(workdir)
    assert {r["status"] for r in read_jsonl(repetition)} == {"failed"}, said[-3000:]

    # a plain rerun keeps it, as it keeps every stored repetition
    stored = repetition.read_bytes()
    rerun = subprocess.run(snakemake_argv(venv_bin, *UNTIL), cwd=workdir, capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0 and repetition.read_bytes() == stored, (rerun.stdout + rerun.stderr)[-3000:]

    # README, "Everyday use": make remeasure-failed, then the run again
    moving = subprocess.run(["make", *AS_IS, "remeasure-failed"], cwd=workdir, capture_output=True, text=True, timeout=120)
    assert moving.returncode == 0, moving.stdout + moving.stderr
    assert "1 failed repetition(s) moved aside" in moving.stdout, moving.stdout
    (moved,) = aside(workdir, "failed")
    assert moved.read_bytes() == stored, "the failed repetition is kept as it was stored"
    assert not kept(workdir)

    again = subprocess.run(snakemake_argv(venv_bin, *UNTIL), cwd=workdir, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, (again.stdout + again.stderr)[-3000:]
    (measured,) = kept(workdir)
    assert {r["status"] for r in read_jsonl(measured)} == {"ok"}, "measured again, not brought back"
    assert aside(workdir, "failed") == [moved] and moved.read_bytes() == stored

    nothing = subprocess.run(["make", *AS_IS, "remeasure-failed"], cwd=workdir, capture_output=True, text=True, timeout=120)
    assert nothing.returncode == 0 and "nothing moved" in nothing.stdout, nothing.stdout + nothing.stderr


# ------------------------------------------------------------------ without Snakemake


def test_a_count_written_for_another_request_binary_or_machine_is_not_counted(tmp_path):
    from membench.measure import tries

    run = tmp_path / "results" / SYSTEM / "runs" / "d" / "stream-default" / "t1" / "r0.jsonl"
    keys = {"request_digest": "r1", "binary_sha256": "b1", "machine_digest": "m1"}
    assert tries.earlier_tries(run, keys) == 0
    tries.note_tries(run, keys, 2)
    assert tries.earlier_tries(run, keys) == 2
    for key in keys:  # an edit, a rebuild or another machine since: the bound starts again
        assert tries.earlier_tries(run, {**keys, key: "other"}) == 0
    tries.forget_tries(run)
    assert tries.earlier_tries(run, keys) == 0 and not list(run.parent.iterdir())


def test_nothing_is_moved_while_a_round_measures_the_system(tmp_path):
    from membench.measure import lock as measure_lock
    from membench.measure import remeasure

    system = tmp_path / "results" / SYSTEM
    run = system / "runs" / "d" / "stream-default" / "t1" / "r0.jsonl"
    run.parent.mkdir(parents=True)
    run.write_text('{"status": "failed", "reason": "harness killed by SIGKILL"}\n')
    with measure_lock.measuring(system, say=lambda line: None):  # a round, as far as the lock tells
        with pytest.raises(remeasure.Busy):
            remeasure.move_failed_aside(system)
    assert run.exists() and not (system / "superseded").exists()
    assert [to for _, to in remeasure.move_failed_aside(system)] == [system / "superseded" / "failed" / run.relative_to(system / "runs")]
