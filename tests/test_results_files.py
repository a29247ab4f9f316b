"""Files inside a results folder copied in from elsewhere (issue 40, cases
1, 8, 10, 12): a link never carries a write out of the project, a FIFO or a
device never hangs a read, a lock that cannot be taken is said, and `make
status` names a manifest it cannot read. Every link planted here is real
and points at a file outside the checkout whose bytes are checked unchanged."""

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from membench.core import atomic_files, last_words, run_lock
from membench.core.store_errors import StoreError
from membench.measure import lock as measure_lock

REPO = Path(__file__).resolve().parents[1]
BYTES = b"export PATH=$HOME/bin:$PATH  # a user's own file\n"


@pytest.fixture
def outside(tmp_path) -> Path:
    """A file outside the checkout (and outside the results folder)."""
    assert not str(tmp_path).startswith(str(REPO))
    target = tmp_path / "home" / ".bashrc"
    target.parent.mkdir()
    target.write_bytes(BYTES)
    return target


def unchanged(target: Path) -> bool:
    return hashlib.sha256(target.read_bytes()).digest() == hashlib.sha256(BYTES).digest()


def test_the_run_lock_never_writes_through_a_link(tmp_path, outside):
    results = tmp_path / "results"
    results.mkdir()
    (results / ".membench.lock").symlink_to(outside)
    said = run_lock.take(results, "config.yaml", ["--cores", "1"])
    assert said and "symbolic link" in said and ".membench.lock" in said
    assert unchanged(outside)


def test_the_measure_lock_never_writes_through_a_link(tmp_path, outside):
    system = tmp_path / "results" / "t"
    system.mkdir(parents=True)
    (system / ".measure.lock").symlink_to(outside)
    with pytest.raises(StoreError, match="symbolic link"):
        with measure_lock.measuring(system, say=lambda line: None):
            pass
    assert unchanged(outside)


def test_a_lock_that_is_a_hard_link_is_not_written(tmp_path, outside):
    system = tmp_path / "results" / "t"
    system.mkdir(parents=True)
    os.link(outside, system / ".measure.lock")
    with pytest.raises(StoreError, match="hard links"):
        with measure_lock.measuring(system, say=lambda line: None):
            pass
    assert unchanged(outside)


def test_setting_the_report_aside_never_writes_through_a_link(tmp_path, outside):
    results = tmp_path / "results"
    results.mkdir()
    (results / "report.html").write_text("<html><body><p>old</p></body></html>")
    (results / "report-stale.html").symlink_to(outside)
    said = last_words.set_report_aside(results / "report.html", "collect_runs failed")
    assert said and "set aside" in said
    assert unchanged(outside)
    stale = results / "report-stale.html"
    assert not stale.is_symlink() and "STALE" in stale.read_text()


def test_a_run_folder_linked_out_of_the_results_is_never_written(tmp_path, outside):
    runs = tmp_path / "results" / "t" / "runs" / "s"
    runs.parent.mkdir(parents=True)
    runs.symlink_to(outside.parent, target_is_directory=True)
    with pytest.raises(OSError, match="leads out of"):
        atomic_files.write_jsonl_atomic(runs / "stream-default" / "t1" / "r0.jsonl", [{"a": 1}])
    assert sorted(p.name for p in outside.parent.iterdir()) == [".bashrc"] and unchanged(outside)


def test_a_lock_that_cannot_be_opened_is_said_not_skipped(tmp_path, monkeypatch):
    # Another user's 0644 lock in a shared results folder: open() fails
    # with EACCES (as root the test cannot be refused, so the refusal is planted).
    real_open = os.open

    def refused(path, flags, mode=0o777, **kwargs):
        if str(path).endswith(".membench.lock"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, flags, mode, **kwargs)

    monkeypatch.setattr(os, "open", refused)
    said = run_lock.take(tmp_path / "results", "config.yaml", ["--cores", "1"])
    assert said and "cannot be opened" in said and "Permission denied" in said


READ_A_RUN_FILE = """
import sys
sys.path.insert(0, {scripts!r})
from membench.store import stored
print(stored.run_problems([{path!r}], None))
"""


@pytest.mark.parametrize("kind", ["fifo", "link to /dev/zero"])
def test_a_run_file_that_is_not_regular_is_named_not_read(tmp_path, kind):
    run = tmp_path / "results" / "t" / "runs" / "s" / "stream-default" / "t1" / "r0.jsonl"
    run.parent.mkdir(parents=True)
    if kind == "fifo":
        os.mkfifo(run)
    else:
        run.symlink_to("/dev/zero")
    code = READ_A_RUN_FILE.format(scripts=str(REPO / "workflow" / "scripts"), path=str(run))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert str(run) in out.stdout
    assert ("FIFO" if kind == "fifo" else "symbolic link") in out.stdout


def test_compare_names_a_fifo_run_file_and_ends(tmp_path, repo):
    """make compare's own reading of a side (the system check, then the
    records) on a side whose run file is a FIFO: it ends, naming it."""
    fixture = repo / "tests" / "fixtures" / "dev16"
    cell = "t8_close_default_variant_parallel_sauto"
    sides = {}
    for side in ("base", "new"):
        runs = tmp_path / side / "results" / "dev16" / "runs" / "bandwidth" / "stream-default" / cell
        runs.mkdir(parents=True)
        shutil.copy(fixture / "topology.json", tmp_path / side / "results" / "dev16" / "topology.json")
        sides[side] = runs / "r0.jsonl"
    os.mkfifo(sides["base"])
    shutil.copy(fixture / "runs" / cell / "r0.jsonl", sides["new"])
    out = subprocess.run(
        [sys.executable, str(repo / "workflow/scripts/compare_results.py"), str(tmp_path / "base"), str(tmp_path / "new"),
         "--out", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 2, out.stdout + out.stderr
    assert "FIFO" in out.stdout + out.stderr and "Traceback" not in out.stderr


def test_make_status_names_an_unreadable_manifest(tmp_path, repo):
    config = tmp_path / "c.yaml"
    config.write_text(
        "system: t\nrepeats: 1\nexperiments:\n  s: {kernel: stream, threads: [1], affinity: [close], size: [2MiB]}\n"
    )
    rounds = tmp_path / "results" / "t" / "rounds"
    rounds.mkdir(parents=True)
    (rounds / "r0-0123456789ab.json").write_text('{"seconds": 3, "measured": [')  # cut short
    out = subprocess.run(
        [sys.executable, str(repo / "workflow/scripts/study_status.py"), "--configfile", str(config),
         "--directory", str(tmp_path)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    assert "r0-0123456789ab.json" in out.stdout and "not readable" in out.stdout


def test_an_impossible_bandwidth_is_named_by_file_line_and_key(tmp_path, repo):
    """Case 11: an ok record of 1e12 GB/s (1 ZB/s) is damage, not a result."""
    cell = "t8_close_default_variant_parallel_sauto"
    run = tmp_path / "results" / "dev16" / "runs" / "stream_affinity" / "stream-default" / cell / "r0.jsonl"
    run.parent.mkdir(parents=True)
    records = [json.loads(line) for line in (repo / "tests/fixtures/dev16/runs" / cell / "r0.jsonl").read_text().splitlines()]
    ok = next(i for i, r in enumerate(records) if r.get("status") == "ok" and r.get("gbps"))
    records[ok]["gbps"] = 1e12
    run.write_text("".join(json.dumps(r) + "\n" for r in records))
    from membench.store import stored

    found = stored.run_problems([str(run)], None)
    assert any(f"{run}:{ok + 1}" in p and "gbps" in p for p in found), found
