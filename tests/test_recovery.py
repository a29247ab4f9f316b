"""A Snakemake run killed with SIGKILL (as by a node reboot or an OOM kill)
leaves its working directory locked. README.md says how to recover:
`snakemake --unlock`, then run again; nothing already measured is lost
(every output is written whole or not at all, and the profiles tell
Snakemake to keep files a killed run had not booked as finished).

This test does exactly that to a real run, in the middle of its
measurements, and only looks at the run files on disk (not at how the
measure jobs are implemented)."""

import os
import signal
import subprocess
import time
from pathlib import Path

import yaml

from conftest import copy_workflow, seed_binaries
from membench.core.atomic_files import contract_problems, read_jsonl

REPEATS = 6
CONFIG = {
    "system": "testbox",
    "repeats": REPEATS,
    "ntimes": 100,  # about half a second per measurement here: time to kill mid-run
    "experiments": {"k": {"kernel": "stream", "size": ["8MiB"]}},
}
# Measurements only: the report stages add nothing to what is tested here.
ARGS = ["--cores", "2", "--configfile", "tiny.yaml", "--until", "measure_round"]


def runs(workdir: Path) -> dict[str, tuple[bytes, int]]:
    """Every run file with its bytes and modification time."""
    return {
        str(p.relative_to(workdir)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in (workdir / "results").glob("*/runs/**/*.jsonl")
    }


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False


def test_sigkill_then_unlock_keeps_every_repetition_written(tmp_path, venv_bin, variant_builds):
    workdir = seed_binaries(copy_workflow(tmp_path / "membench"), CONFIG, variant_builds)
    (workdir / "tiny.yaml").write_text(yaml.safe_dump(CONFIG))
    snakemake = str(venv_bin / "snakemake")
    log = open(tmp_path / "first.log", "w")
    # Its own session: the jobs it started can be waited for after the kill.
    first = subprocess.Popen([snakemake, *ARGS], cwd=workdir, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 120
    while len(runs(workdir)) < 2 and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    before = runs(workdir)
    first.send_signal(signal.SIGKILL)  # Snakemake itself, mid-measurement
    first.wait()
    assert 2 <= len(before) < REPEATS, f"not killed mid-measurement: {len(before)} of {REPEATS} runs written"
    # Jobs the kill orphaned may finish or die (how they react is not this
    # test's business); wait until none is left, as after a reboot.
    deadline = time.monotonic() + 30
    while group_alive(first.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if group_alive(first.pid):
        os.killpg(first.pid, signal.SIGKILL)
    log.close()

    locked = subprocess.run([snakemake, *ARGS], cwd=workdir, capture_output=True, text=True, timeout=120)
    assert locked.returncode != 0 and "cannot be locked" in locked.stdout + locked.stderr
    unlock = subprocess.run([snakemake, *ARGS, "--unlock"], cwd=workdir, capture_output=True, text=True, timeout=120)
    assert unlock.returncode == 0, unlock.stderr[-2000:]
    again = subprocess.run([snakemake, *ARGS], cwd=workdir, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-2000:]

    after = runs(workdir)
    assert len(after) == REPEATS
    for f in after:  # whole files only, also those a job finished after the kill
        records = read_jsonl(workdir / f)
        assert len(records) == 4 and all(contract_problems(r) == [] and r["status"] == "ok" for r in records), f
    changed = [f for f in before if after.get(f) != before[f]]
    assert not changed, f"repetitions written before the kill were changed: {changed}"
