"""Stored repetitions are judged by content (request, binary, machine),
never by time or path; a real change moves the old file aside, never
overwrites it; a renamed experiment keeps its files; one measuring round
per system at a time; write errors name the path. Rounds run here without
Snakemake, with a fake harness (tests/test_identity_workflow.py runs the
same rows through Snakemake)."""

import errno
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO
from membench.core import layout
from membench.store import collect
from membench.plan import checks
from membench.measure import identity
from membench.measure import harness as measure
from membench.plan import rounds
from membench.measure import rounds as measure_rounds
from membench.measure import stopping
from membench.core import store_errors
from membench.measure import superseded
from membench.plan import variants
from membench.store import stored as stored_records

VARIANTS = variants.load_variants(REPO / "kernels" / "families" / "variants.yaml")
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
TOPOLOGY = {
    "cpu_model": "test CPU",
    "llc_bytes": 2**20,
    "cpus": [{"cpu": 0, "node": 0, "core": 0, "package": 0, "siblings": [0]}],
    "nodes": [{"node": 0, "cpus": [0], "memory_bytes": 2**34, "distances": [10]}],
}


def cells_of(experiments=None, ntimes=3, repeats=1):
    experiments = experiments or {"e": {"kernel": "stream", "threads": [1, 2]}}
    return checks.load({"system": "box", "repeats": repeats, "ntimes": ntimes, "experiments": experiments}, SCHEMA, VARIANTS)[1]


def stored(runs: Path) -> dict[str, tuple[bytes, int]]:
    """Every stored file under a folder: bytes and modification time."""
    return {str(p.relative_to(runs)): (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(runs.rglob("r*.jsonl*"))}


@pytest.fixture
def box(tmp_path, lists_options):
    """results/box/{runs,topology.json}, bin/box/stream-default (a fake
    harness that counts its starts) and a round runner."""
    bin_dir, results = tmp_path / "bin", tmp_path / "results" / "box"
    bin_dir.mkdir()
    results.mkdir(parents=True)
    starts = tmp_path / "starts"
    harness = bin_dir / "stream-default"
    harness.write_text(f"#!/bin/sh\n{lists_options}echo x >> {starts}\necho '{{\"status\": \"ok\", \"affinity\": \"close\"}}'\n")
    harness.chmod(0o755)
    topology = results / "topology.json"
    topology.write_text(json.dumps(TOPOLOGY))

    class Box:
        runs = results / "runs"

        def round(self, cells, k=0, **kwargs):
            with open(tmp_path / "log", "a") as log:
                plan = rounds.plan_round(cells, "box", k, 1, VARIANTS)
                return measure_rounds.measure_round(plan, topology=str(topology), bin_dir=str(bin_dir), runs_dir=str(self.runs), log=log, **kwargs)

        def started(self):
            return len(starts.read_text().splitlines()) if starts.exists() else 0

    box = Box()
    box.harness, box.topology, box.results = harness, topology, results
    return box


def test_touching_rebuilding_identically_and_reprobing_measure_nothing(box):
    cells = cells_of()
    assert len(box.round(cells)["measured"]) == 2
    before = stored(box.runs)
    future = time.time() + 100
    os.utime(box.harness, (future, future))  # newer than every stored repetition
    box.harness.write_bytes(box.harness.read_bytes())  # rebuilt, byte-identical
    # re-probed: a VM's memory balloon moved MemTotal, the layout is the same
    box.topology.write_text(json.dumps({**TOPOLOGY, "nodes": [{**TOPOLOGY["nodes"][0], "memory_bytes": 2**33}]}))
    again = box.round(cells)
    assert again["measured"] == [] and len(again["kept"]) == 2 and box.started() == 2
    assert stored(box.runs) == before


def test_a_real_change_moves_the_old_file_aside_named_by_what_changed(box):
    cells = cells_of()
    box.round(cells)
    before = stored(box.runs)
    records = [json.loads(line) for f in box.runs.rglob("r0.jsonl") for line in f.read_text().splitlines()]
    assert {len(r["binary_sha256"]) for r in records} == {64} and {len(r["machine_digest"]) for r in records} == {16}
    old_binary = records[0]["binary_sha256"]
    box.harness.write_text(box.harness.read_text() + "# another build\n")
    manifest = box.round(cells)
    assert len(manifest["measured"]) == 2 and len(manifest["superseded"]) == 2 and box.started() == 4
    aside = box.results / "superseded" / f"binary-{old_binary[:12]}"
    assert stored(aside) == before  # moved whole: same bytes, same time
    # a different machine: other node distances (not memory sizes)
    box.topology.write_text(json.dumps({**TOPOLOGY, "nodes": [{**TOPOLOGY["nodes"][0], "distances": [11]}]}))
    assert len(box.round(cells)["superseded"]) == 2
    assert [p.name.split("-")[0] for p in sorted((box.results / "superseded").iterdir())] == ["binary", "machine"]
    counts = layout.superseded_counts(box.results)
    assert counts == {cell.id: 2 for cell in cells}
    # the same change again (the same old digest): nothing there is replaced
    first = stored(box.results / "superseded")
    path = Path(layout.run_path(str(box.runs), cells[0], 0))
    superseded.move_aside(path, box.runs, next(iter(sorted((box.results / "superseded").iterdir()))).name)
    assert all(stored(box.results / "superseded")[f] == first[f] for f in first)
    assert len(stored(box.results / "superseded")) == len(first) + 1


def test_an_edited_knob_supersedes_and_undoing_the_edit_brings_the_files_back(box):
    box.round(cells_of(ntimes=3))
    before = stored(box.runs)
    edited = box.round(cells_of(ntimes=5))
    assert len(edited["measured"]) == 2 and all("/superseded/request-" in p for p in edited["superseded"].values())
    undone = box.round(cells_of(ntimes=3))
    assert undone["measured"] == [] and box.started() == 4
    assert stored(box.runs) == before  # the ntimes=3 files, back in place as they were


def test_a_renamed_experiment_keeps_its_repetitions_and_reports_under_its_new_name(box):
    axes = {"kernel": "stream", "threads": [1, 2]}
    old = box.round(cells_of({"old_name": axes}))
    before = stored(box.runs)
    renamed = box.round(cells_of({"new_name": axes}))
    assert renamed["measured"] == [] and len(renamed["adopted"]) == 2 and box.started() == 2
    after = stored(box.runs)
    assert {f: after[f] for f in before} == before  # the old names keep their files
    assert sorted(after[f.replace("old_name", "new_name")] for f in before) == sorted(before.values())
    # one stored repetition serves one cell: experiments with the same axes
    # in one config are measured each (old_name's files are new_name's)
    both = box.round(cells_of({"new_name": axes, "twin": axes}))
    assert len(both["measured"]) == 2 and len(both["kept"]) == 2 and both["adopted"] == [] and box.started() == 4
    row = next(stored_records.records_as_stored([renamed["runs"][0]]))
    assert row["experiment"] == "new_name" and row["experiment_measured_as"] == "old_name"
    assert row["cell"] == renamed["runs"][0].split("/runs/")[1].rsplit("/", 1)[0]
    row = next(stored_records.records_as_stored([old["runs"][0]]))
    assert row["experiment"] == "old_name" and "experiment_measured_as" not in row


def test_files_stored_before_binary_and_machine_were_recorded_are_kept_and_named(box):
    cells = cells_of()
    box.round(cells)
    for f in box.runs.rglob("r0.jsonl"):
        records = [json.loads(line) for line in f.read_text().splitlines()]
        f.write_text("".join(json.dumps({k: v for k, v in r.items() if k not in ("binary_sha256", "machine_digest")}) + "\n" for r in records))
    manifest = box.round(cells)
    assert manifest["measured"] == [] and sorted(manifest["kept_unverified"]) == sorted(manifest["runs"])


LOCK_HOLDER = """
import sys, time
from membench.measure import lock
with lock.measuring(sys.argv[1], print):
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
print("released", time.time(), flush=True)
"""


def test_a_second_measuring_process_waits_for_the_first_and_names_its_pid(box):
    env = {**os.environ, "PYTHONPATH": str(REPO / "workflow" / "scripts")}
    holder = subprocess.Popen([sys.executable, "-c", LOCK_HOLDER, str(box.results), "1.5"], env=env, stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline() == "held\n"
    said = []
    manifest = box.round(cells_of(), progress=said.append)
    done = time.time()
    released = float(holder.stdout.readline().split()[1])
    holder.wait()
    assert done >= released and len(manifest["measured"]) == 2
    assert f"held by membench process {holder.pid}" in said[0] and "waiting" in said[0]
    # a waiting round whose Snakemake ends gives up
    holder = subprocess.Popen([sys.executable, "-c", LOCK_HOLDER, str(box.results), "30"], env=env, stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline() == "held\n"

    def snakemake_ended():
        raise stopping.Stopped("Snakemake ended")

    with pytest.raises(stopping.Stopped):
        box.round(cells_of(), keep_waiting=snakemake_ended)
    holder.kill()
    holder.wait()
    assert box.started() == 2


def test_a_write_error_names_the_path_and_keeps_what_was_stored(box, monkeypatch, tmp_path, capsys):
    cells = cells_of({"e": {"kernel": "stream", "threads": [1, 2, 4]}})
    writes = []
    real = measure.write_jsonl_atomic

    def full_disk(path, records):
        writes.append(path)
        if len(writes) == 2:
            raise OSError(errno.ENOSPC, "No space left on device", str(path.parent / f".{path.name}.tmp"))
        real(path, records)

    monkeypatch.setattr(measure, "write_jsonl_atomic", full_disk)
    config = {"system": "box", "repeats": 1, "ntimes": 3, "experiments": {"e": {"kernel": "stream", "threads": [1, 2, 4]}}}
    study = rounds.RoundInputs(*checks.load(config, SCHEMA, VARIANTS), VARIANTS).study_file("box", 0, str(tmp_path))
    from measure_round import main

    argv = ["--study-file", study, "--system", "box", "--round", "0",
            "--topology", str(box.topology), "--bin-dir", str(box.harness.parent), "--runs-dir", str(box.runs),
            "--manifest", str(tmp_path / "m.json"), "--log", str(tmp_path / "r0.log")]  # fmt: skip
    assert main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0]
    assert str(writes[1]) in err[0] and "filesystem is full" in err[0] and "df -h" in err[0]
    assert len(stored(box.runs)) == 1 and not (tmp_path / "m.json").exists()
    error = store_errors.store_error("store", "results/box/runs/x/r0.jsonl", PermissionError(errno.EACCES, "Permission denied", "results/box/runs/x"))
    assert "results/box/runs/x/r0.jsonl" in str(error) and "permissions (ls -ld results/box/runs)" in str(error)
    assert len(cells) == 3


def test_machine_digest_reads_only_the_stable_layout():
    base = identity.machine_digest(TOPOLOGY)
    assert identity.machine_digest({**TOPOLOGY, "nodes": [{**TOPOLOGY["nodes"][0], "memory_bytes": 1}]}) == base
    assert identity.machine_digest({**TOPOLOGY, "free_memory": 5, "something_new": 1}) == base
    assert identity.machine_digest({**TOPOLOGY, "nodes": [{**TOPOLOGY["nodes"][0], "memory_bytes": 0}]}) != base
    assert identity.machine_digest({**TOPOLOGY, "cpu_model": "other"}) != base


def test_each_family_compiles_the_kernel_table_and_its_own_files_only():
    """The harness is not among them: every binary links it from one archive."""
    names = {family: [Path(p).name for p in variants.source_paths(VARIANTS, Path("kernels"), family)] for family in VARIANTS["families"]}
    assert "xor.c" in names["xor"] and "stream.c" not in names["xor"] and "kernel_table.c" in names["xor"]
    assert not any("measure.c" in files for files in names.values())
    assert {"loaded.c", "chase.c", "chase_cycle.c"} <= set(names["loaded"]) and "stream.c" not in names["loaded"]
    assert all(p.startswith("kernels/") for p in variants.source_paths(VARIANTS, Path("kernels"), "xor"))  # relative stays relative


def test_a_disturbed_repetition_is_measured_again_within_its_bound_and_every_try_kept(box, lists_options):
    """The disturbed rule (membench.core.disturbance) marks a try whose
    thread was switched out: the round measures it again, up to
    disturbed_retries more times, moving each earlier try aside
    (superseded/disturbed/), and keeps the last whatever it shows."""
    starts = box.results.parent.parent / "starts"
    quiet_after = box.results.parent.parent / "quiet_after"
    box.harness.write_text(
        f"#!/bin/sh\n{lists_options}echo x >> {starts}\n"
        f"n=$(wc -l < {starts}); q=$(cat {quiet_after} 2>/dev/null || echo 99)\n"
        'if [ "$n" -gt "$q" ]; then s=0; else s=3; fi\n'
        "echo '{\"status\": \"ok\", \"affinity\": \"close\", \"disturb_timed_s\": 1.0, "
        "\"disturb_nivcsw\": ['$s'], \"disturb_steal_s\": 0.0}'\n"
    )  # fmt: skip
    cells = cells_of({"e": {"kernel": "stream", "threads": [1]}})
    manifest = box.round(cells, disturbed_retries=2)
    path = manifest["runs"][0]
    assert box.started() == 3 and manifest["disturbed"] == [path]
    assert len(manifest["disturbed_tries"][path]) == 2
    tries = sorted((box.results / "superseded" / "disturbed").rglob("r0.jsonl*"))
    assert len(tries) == 2  # none overwritten
    kept = json.loads(Path(path).read_text().splitlines()[0])
    assert kept["measure_try"] == 3 and kept["disturb_nivcsw"] == [3]
    # quiet from the second try on: measured twice, nothing left disturbed
    quiet_after.write_text("4")
    Path(path).unlink()
    manifest = box.round(cells, disturbed_retries=2)
    assert box.started() == 5 and manifest["disturbed"] == [] and len(manifest["disturbed_tries"][path]) == 1
    assert json.loads(Path(path).read_text().splitlines()[0])["measure_try"] == 2
    # no retries: measured once and kept, marked
    Path(path).unlink()
    quiet_after.write_text("99")
    assert box.round(cells)["disturbed"] == [path] and box.started() == 6
