"""Stopping a run: Snakemake started in the background of a non-interactive
shell (SIGINT ignored there, as under nohup or in a script), stopped
mid-measurement by SIGTERM, or killed outright by SIGKILL. Within 30 s
Snakemake has exited and no process of the run is left; after SIGTERM no
lock is left (after SIGKILL, --unlock clears it); every repetition written
before the signal is unchanged, and a rerun measures only the missing ones.
Several trials each, at varied moments: the failures were timing-dependent."""

import json
import os
import random
import shlex
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from conftest import REPO, copy_workflow, seed_binaries
from membench.core import layout
from membench.plan import checks
from membench.plan import rounds
from membench.plan import variants

CONFIG = {
    "system": "box",
    "repeats": 3,
    "ntimes": 20,
    "experiments": {"s": {"kernel": "stream", "threads": [1], "affinity": ["none", "close"], "size": ["64MiB"]}},
}
REPETITIONS = 2 * 3
TARGET = ["--until", "measure_round"]  # the measurements, not the report


@pytest.fixture(scope="module")
def workdir(tmp_path_factory, venv_bin, variant_builds):
    """A copy of the workflow with its binary built and its system probed."""
    workdir = seed_binaries(copy_workflow(tmp_path_factory.mktemp("stop")), CONFIG, variant_builds)
    (workdir / "stop.yaml").write_text(yaml.safe_dump(CONFIG))
    prepare = snakemake_argv(venv_bin, "bin/box/stream-default", "results/box/topology.json")
    out = subprocess.run(prepare, cwd=workdir, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return workdir


def snakemake_argv(venv_bin, *args: str) -> list[str]:
    """Snakemake on the test's config; targets and list options go before
    --configfile, which takes every word after it."""
    return [str(venv_bin / "snakemake"), *args, "--cores", "2", "--configfile", "stop.yaml"]


def run_files(workdir: Path) -> dict[str, bytes]:
    return {str(p.relative_to(workdir)): p.read_bytes() for p in (workdir / "results/box/runs").glob("**/r*.jsonl")}


def processes_in(workdir: Path) -> list[str]:
    """Every live process working in the run directory (Snakemake, the job's
    shell, the measure process, the harness)."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if os.readlink(proc / "cwd") == str(workdir) and "Z" != (proc / "stat").read_text().split(") ")[1][0]:
                command = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                found.append(f"{proc.name}: {command}")
        except OSError:
            continue
    return found


def harness_running(workdir: Path) -> bool:
    return any("bin/box/stream-default" in p for p in processes_in(workdir))


def measuring(workdir: Path) -> list[str]:
    """The repetition files that the harnesses running now would write,
    from their --affinity and --repeat."""
    table = variants.load_variants(REPO / "kernels" / "families" / "variants.yaml")
    cells = checks.load(CONFIG, REPO / "workflow" / "schemas" / "config.schema.yaml", table)[1]
    cell_of = {cell.affinity: cell for cell in cells}
    files = []
    for line in processes_in(workdir):
        argv = line.split(": ", 1)[1].split()
        if argv and argv[0].endswith("bin/box/stream-default"):
            cell = cell_of[argv[argv.index("--affinity") + 1]]
            files.append(layout.run_path("results/box/runs", cell, int(argv[argv.index("--repeat") + 1])))
    return files


def wait_for(predicate, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def start_in_background(workdir: Path, venv_bin) -> tuple[subprocess.Popen, int]:
    """`snakemake … &` in a non-interactive bash, as a script or nohup would;
    returns the shell and Snakemake's pid."""
    command = " ".join(shlex.quote(a) for a in snakemake_argv(venv_bin, *TARGET))
    shell = subprocess.Popen(
        ["bash", "-c", f"{command} > snakemake.log 2>&1 & echo $! > snakemake.pid; wait $!; echo $? > snakemake.rc"],
        cwd=workdir,
    )
    assert wait_for(lambda: (workdir / "snakemake.pid").is_file() and (workdir / "snakemake.pid").read_text().strip(), 10)
    return shell, int((workdir / "snakemake.pid").read_text())


def test_a_background_job_of_a_shell_starts_with_sigint_ignored():
    """The premise: what `&` does in a non-interactive shell (and what no
    shell can undo), unlike `env --default-signal` (make run)."""
    mask = 1 << (signal.SIGINT - 1)
    for command, ignored in [("cat /proc/self/status", True), ("env --default-signal=INT cat /proc/self/status", False)]:
        out = subprocess.run(["bash", "-c", f"{command} & wait"], capture_output=True, text=True, check=True).stdout
        sigign = int(next(line for line in out.splitlines() if line.startswith("SigIgn")).split()[1], 16)
        assert bool(sigign & mask) == ignored, command


def reset(workdir: Path) -> None:
    for name in ("snakemake.pid", "snakemake.rc", "snakemake.log"):
        (workdir / name).unlink(missing_ok=True)
    subprocess.run(["rm", "-rf", "results/box/runs", "results/box/rounds", "logs/measure_round"], cwd=workdir, check=True)


def stop_mid_measurement(workdir: Path, venv_bin, signum: int, rng: random.Random) -> dict[str, bytes]:
    """Start, wait until a repetition is stored and the next one measuring,
    send `signum` to Snakemake; returns the repetitions stored before it."""
    reset(workdir)
    shell, pid = start_in_background(workdir, venv_bin)
    assert wait_for(lambda: run_files(workdir) and harness_running(workdir), 120), (workdir / "snakemake.log").read_text()[-3000:]
    time.sleep(rng.uniform(0, 0.3))  # a different moment each trial
    assert wait_for(lambda: harness_running(workdir), 10)
    before = run_files(workdir)
    running = measuring(workdir)
    os.kill(pid, signum)
    shell.wait(timeout=30)  # the shell ends when Snakemake has
    assert wait_for(lambda: not processes_in(workdir), 30), processes_in(workdir)
    assert len(before) < REPETITIONS, "the run ended before the signal: nothing was stopped"
    after = run_files(workdir)
    assert {f: after.get(f) for f in before} == before, "a repetition written before the signal changed"
    # The measurement under way was stopped, not waited for nor left running.
    assert running and not set(running) & set(after), f"{running} finished after the signal"
    return before


def rerun_measures_only_the_missing(workdir: Path, venv_bin) -> None:
    stored = run_files(workdir)
    out = subprocess.run(snakemake_argv(venv_bin, *TARGET), cwd=workdir, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    after = run_files(workdir)
    assert len(after) == REPETITIONS
    assert {f: after[f] for f in stored} == stored, "the rerun measured a stored repetition again"
    manifests = [json.loads(p.read_text()) for p in (workdir / "results/box/rounds").glob("r*.json")]
    measured = sorted(f for m in manifests for f in m["measured"])
    assert measured == sorted(set(after) - set(stored))


def test_sigterm_or_sigint_stops_the_run_cleanly_and_a_rerun_resumes(workdir, venv_bin):
    """SIGINT too, although the background job started with it ignored:
    `kill -INT` is sent on purpose (README, "Stopping and resuming")."""
    rng = random.Random(14)
    for trial, signum in enumerate([signal.SIGTERM, signal.SIGINT, signal.SIGTERM]):
        stop_mid_measurement(workdir, venv_bin, signum, rng)
        assert not list((workdir / ".snakemake" / "locks").glob("*")), f"trial {trial}: a lock is left"
        assert (workdir / "snakemake.rc").read_text().strip() != "", f"trial {trial}"
        rerun_measures_only_the_missing(workdir, venv_bin)


def test_sigkill_to_snakemake_takes_the_measurement_with_it(workdir, venv_bin):
    rng = random.Random(9)
    for trial in range(2):
        stop_mid_measurement(workdir, venv_bin, signal.SIGKILL, rng)
        assert (workdir / "snakemake.rc").read_text().strip() == str(128 + signal.SIGKILL), f"trial {trial}"
        # Snakemake had no chance to remove its lock: --unlock does (README).
        unlock = subprocess.run(snakemake_argv(venv_bin, "--unlock"), cwd=workdir, capture_output=True, text=True, timeout=120)
        assert unlock.returncode == 0, unlock.stderr[-2000:]
        rerun_measures_only_the_missing(workdir, venv_bin)
