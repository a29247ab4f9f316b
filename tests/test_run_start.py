"""membench.core.run_start: what a run does once to its results folder
before Snakemake builds the job graph (the run lock, stale round manifests
deleted, index files written), and a read-only run (-n) that writes,
deletes and holds nothing, only says what a run would do."""

import fcntl
import json
import os

import pytest

from membench.core import run_lock, run_start

INDEX_LINES = ["0123abcd  core/layout.py"]


@pytest.fixture
def folder(tmp_path):
    """A results folder with one stale round manifest (one of its run files
    is gone), and where an index file belongs."""
    results = tmp_path / "results"
    kept = results / "box" / "runs" / "e" / "stream-default" / "t1_close" / "r0.jsonl"
    kept.parent.mkdir(parents=True)
    kept.write_text("{}\n")
    gone = kept.parent.parent / "t2_close" / "r0.jsonl"
    manifest = results / "box" / "rounds" / "r0-0123456789ab.json"
    manifest.parent.mkdir(parents=True)
    manifest.write_text(json.dumps({"runs": [str(kept), str(gone)]}))
    index = tmp_path / ".snakemake" / "membench" / "code.txt"
    yield results, manifest, index
    held = run_lock._HELD.pop(str(results / ".membench.lock"), None)  # this process's lock, let go
    if held is not None:
        os.close(held)


def begin(results, manifest, index, argv):
    said = []
    run_start.begin(str(results), argv=argv, config={"system": "box"}, measuring=True,
                    round_manifests=[str(manifest)], indexes={str(index): INDEX_LINES}, say=said.append)  # fmt: skip
    return said


def everything(root):
    return sorted((str(p), p.stat().st_mtime_ns) for p in root.rglob("*"))


def held_by_another(lock_file) -> bool:
    """Whether a second open file of the lock can take it (flock locks are
    per open file, so this process's own holding counts)."""
    with open(lock_file) as probe:
        try:
            fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(probe, fcntl.LOCK_UN)
        return False


def test_a_dry_run_writes_deletes_and_holds_nothing_and_says_what_a_run_would_do(folder, tmp_path):
    results, manifest, index = folder
    before = everything(tmp_path)
    said = begin(results, manifest, index, ["--cores", "1", "-n"])
    assert everything(tmp_path) == before
    assert f"membench: round {manifest} runs again" in said[0] and "is missing" in said[0]
    assert any("dry run" in line and str(index) in line for line in said), said


def test_a_run_holds_the_folder_deletes_the_stale_manifest_and_writes_the_index(folder):
    results, manifest, index = folder
    said = begin(results, manifest, index, ["--cores", "1"])
    assert not manifest.exists() and index.read_text() == "".join(f"{line}\n" for line in INDEX_LINES)
    assert held_by_another(results / ".membench.lock")
    assert (results / "measured-with.yaml").is_file()
    assert not any("dry run" in line for line in said)
    # once more (the same process): nothing stale, nothing rewritten
    manifest.write_text(json.dumps({"runs": []}))
    written = index.stat().st_mtime_ns
    assert begin(results, manifest, index, ["--cores", "1"]) == []
    assert manifest.exists() and index.stat().st_mtime_ns == written


def test_a_live_run_elsewhere_stops_this_one_and_a_dry_run_only_says_so(folder, capsys):
    results, manifest, index = folder
    lock_file = results / ".membench.lock"
    with open(lock_file, "w") as other:
        fcntl.flock(other, fcntl.LOCK_EX)
        other.write("pid 4242, config other.yaml, since now\n")
        other.flush()
        with pytest.raises(run_start.RunRefused, match="still alive .pid 4242, config other.yaml"):
            begin(results, manifest, index, ["--cores", "1"])
        assert manifest.exists() and not index.exists()  # stopped before touching anything
        begin(results, manifest, index, ["-n"])
        assert "still alive (pid 4242" in capsys.readouterr().err
