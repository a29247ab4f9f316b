"""Rounds: which cells a round measures and in what order, what a rerun
keeps, and that a stopped measurement stores nothing (without Snakemake)."""

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path
from unittest import mock

import pytest

from conftest import REPO
from membench.core import layout
from membench.plan import checks
from membench.measure import harness as measure
from membench.plan import rounds
from membench.measure import rounds as measure_rounds
from membench.measure import stopping
from membench.plan import variants

VARIANTS = variants.load_variants(REPO / "kernels" / "families" / "variants.yaml")
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
TOPOLOGY = {
    "llc_bytes": 2**20,
    "cpus": [{"cpu": 0, "node": 0}],
    "nodes": [{"node": 0, "cpus": [0], "memory_bytes": 2**34, "distances": [10]}],
}


def config_of(repeats=3, threads=(1, 2, 4, 8), ntimes=3):
    """A validated config and its cells."""
    config = {
        "system": "box",
        "repeats": repeats,
        "ntimes": ntimes,
        "experiments": {"e": {"kernel": "stream", "threads": list(threads), "affinity": ["close", "spread"]}},
    }
    return checks.load(config, SCHEMA, VARIANTS)


def cells_of(**knobs):
    return config_of(**knobs)[1]


def plan(cells, k=0, system="box"):
    return rounds.plan_round(cells, system, k, 1, VARIANTS)


def test_each_round_holds_every_cell_once_in_its_own_shuffled_order():
    cells = cells_of()
    orders = [[c.id for c in rounds.round_cells(cells, k, 1)] for k in range(3)]
    assert all(sorted(order) == sorted(c.id for c in cells) for order in orders)
    assert len({tuple(order) for order in orders}) == 3, "every round the same order"
    assert orders[0] != [c.id for c in cells], "config order"
    assert orders == [[c.id for c in rounds.round_cells(cells, k, 1)] for k in range(3)]  # deterministic


def test_cells_with_fewer_repeats_leave_the_later_rounds():
    config = {"repeats": 3, "experiments": {"a": {"kernel": "stream"}, "b": {"kernel": "xor", "repeats": 1}}}
    cells = checks.load(config, SCHEMA, VARIANTS)[1]
    assert rounds.round_count(cells) == 3
    assert {c.experiment for c in rounds.round_cells(cells, 0, 1)} == {"a", "b"}
    assert {c.experiment for c in rounds.round_cells(cells, 2, 1)} == {"a"}


def test_what_snakemake_tracks_per_round_follows_every_knob_and_no_other_round():
    def study(k=0, **knobs):
        return rounds.RoundInputs(*config_of(**knobs), VARIANTS).study("box", k)

    assert study(ntimes=4) != study()  # a knob outside the cell's name
    assert study(threads=(1, 2, 4, 8, 16)) != study()  # a new cell
    assert study(k=2, repeats=5) == study(k=2)  # more repeats: new rounds only
    mixed = {"repeats": 2, "experiments": {"a": {"kernel": "stream"}, "b": {"kernel": "xor", "repeats": 1}}}
    inputs = rounds.RoundInputs(*checks.load(mixed, SCHEMA, VARIANTS), VARIANTS)
    assert {r["experiment"] for r in json.loads(inputs.study("box", 0))["requests"]} == {"a", "b"}
    assert {r["experiment"] for r in json.loads(inputs.study("box", 1))["requests"]} == {"a"}
    assert inputs.study("other", 1) != inputs.study("box", 1)  # the system is in every request
    assert inputs.binaries(1, "bin/x") == ["bin/x/stream-default"]


def test_the_job_plans_from_its_study_what_the_config_plans():
    """The measure job gets only its round's study, the requests with their
    digests; its plan is the one the whole config gives (same cells, same
    order, same requests), and it never expands the config's grammar."""
    config, cells = config_of(repeats=3)
    inputs = rounds.RoundInputs(config, cells, VARIANTS)
    for k in range(3):
        study = json.loads(inputs.study("box", k))
        assert all(entry["request_digest"] == rounds.digest(entry["request"]) for entry in study["requests"])
        with mock.patch.object(rounds.grammar, "expand", side_effect=AssertionError("the grammar expanded")):
            from_study = rounds.plan_of_study(study, "box", k, TOPOLOGY)
        from_config = rounds.plan_round(cells, "box", k, config["shuffle_seed"], VARIANTS)
        assert [m.id for m in from_study.members] == [m.id for m in from_config.members]
        assert from_study.requests == from_config.requests and from_study.digest == from_config.digest
    with pytest.raises(rounds.StudyError, match="round 0 of box, not round 1 of box"):
        rounds.plan_of_study(json.loads(inputs.study("box", 0)), "box", 1, TOPOLOGY)
    edited = json.loads(inputs.study("box", 0))
    edited["requests"][0]["request"]["ntimes"] = 99
    with pytest.raises(rounds.StudyError, match="does not match its digest"):
        rounds.plan_of_study(edited, "box", 0, TOPOLOGY)


@pytest.mark.parametrize("config_path", sorted((REPO / "config").glob("*.yaml")), ids=lambda p: p.stem)
def test_a_study_is_the_json_of_its_requests_byte_for_byte(config_path):
    """The study is put together from each member's text (planning a
    1000-round study digests each request once a round): it is exactly
    json.dumps of the study's dict, so its digest, which names the round's
    manifest, and every request digest, by which stored repetitions are
    kept, are the ones a plain json.dumps gives."""
    import yaml

    config, cells = checks.load(yaml.safe_load(config_path.read_text()), REPO / "workflow/schemas/config.schema.yaml", VARIANTS)
    inputs = rounds.RoundInputs(config, cells, VARIANTS)
    for k in range(max(cell.repeats for cell in cells) + 1):
        wanted = [fixed > k for fixed in inputs._fixed]
        assert inputs.study("box", k) == json.dumps(inputs._study("box", k, wanted), sort_keys=True)


def test_a_request_that_spells_the_stand_in_is_written_the_plain_way():
    request = {"kernel": "stream", "note": str(rounds.MemberText.STAND_IN)}
    text = rounds.MemberText("e/stream-default/t1", "e", request)
    plain = rounds.Member.of("e/stream-default/t1", "e", {**request, "repeat": 3}).as_dict()
    assert text(3) == json.dumps(plain, sort_keys=True)


def fake_harness(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


@pytest.fixture
def bench(tmp_path, lists_options):
    """A round of 4 cells with a fake harness that counts its starts."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    starts = tmp_path / "starts"
    # (the file `stop` beside it makes it stop as by SIGTERM, the same binary)
    fake_harness(
        bin_dir / "stream-default",
        lists_options + f'echo x >> {starts}; [ -e {tmp_path / "stop"} ] && kill -TERM $$; echo \'{{"status": "ok", "affinity": "close"}}\'',
    )
    topology = tmp_path / "topology.json"
    topology.write_text(json.dumps(TOPOLOGY))
    old = time.time() - 100  # inputs older than anything measured
    for p in (bin_dir / "stream-default", topology):
        os.utime(p, (old, old))

    def run(cells, k=0):
        with open(tmp_path / "log", "a") as log:
            return measure_rounds.measure_round(
                plan(cells, k), topology=str(topology), bin_dir=str(bin_dir), runs_dir=str(tmp_path / "runs"), log=log
            )

    def started():
        return len(starts.read_text().splitlines()) if starts.exists() else 0

    return run, started, bin_dir / "stream-default"


def test_a_rerun_keeps_what_is_stored_and_measures_what_changed(bench):
    run, started, binary = bench
    cells = cells_of(threads=(1, 2))
    first = run(cells)
    assert len(first["measured"]) == len(cells) == started() == 4
    again = run(cells)
    assert again["measured"] == [] and sorted(again["kept"]) == sorted(first["runs"]) and started() == 4
    # ntimes changed: every request changed, all measured again, the old files moved aside
    edited = run(cells_of(threads=(1, 2), ntimes=5))
    assert len(edited["measured"]) == 4 and len(edited["superseded"]) == 4
    # a new cell: only it
    grown = run(cells_of(threads=(1, 2, 4), ntimes=5))
    assert len(grown["measured"]) == 2 and len(grown["kept"]) == 4
    # a touched binary is the same binary (identity by content)
    time.sleep(0.01)
    binary.touch()
    assert len(run(cells_of(threads=(1, 2, 4), ntimes=5))["measured"]) == 0
    # a binary whose content changed measures everything again
    binary.write_text(binary.read_text() + "# rebuilt\n")
    assert len(run(cells_of(threads=(1, 2, 4), ntimes=5))["measured"]) == 6
    records = [json.loads(line) for f in grown["runs"] for line in Path(f).read_text().splitlines()]
    assert len({r["request_digest"] for r in records}) == 6  # one request per repetition


def test_a_stopped_harness_stores_nothing_and_what_came_before_stays(bench, tmp_path):
    run, started, binary = bench
    cells = cells_of(threads=(1, 2))
    stored = run(cells)["runs"]
    before = {f: Path(f).read_bytes() for f in stored}
    Path(stored[2]).unlink()
    (tmp_path / "stop").touch()  # the same binary: only the missing one runs
    with pytest.raises(stopping.Stopped, match="SIGTERM"):
        run(cells)
    assert not Path(stored[2]).exists()
    assert {f: Path(f).read_bytes() for f in stored if f != stored[2]} == {f: before[f] for f in stored if f != stored[2]}
    assert not list(Path(stored[2]).parent.glob(".*.tmp"))


CHILD_OF_A_PARENT = """
import os, subprocess, sys, time
from membench.measure import stopping
if os.environ.get("NO_PIDFD"):  # a kernel older than 5.3: run_child polls
    def no_pidfd(pid, flags=0):
        raise OSError(38, "Function not implemented")
    os.pidfd_open = no_pidfd
if len(sys.argv) > 1:
    stopping.watch(int(sys.argv[1]))
try:
    stopping.run_child(["sleep", "60"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ))
except stopping.Stopped as stop:
    print("stopped:", stop, flush=True)
"""


def sleeps_of(pid: int) -> list[int]:
    return [p for p in stopping.descendants(pid) if Path(f"/proc/{p}/comm").read_text().strip() == "sleep"]


def wait_for(predicate, seconds=10.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def spawn(*argv, pidfd=True, **kwargs):
    env = {**os.environ, "PYTHONPATH": str(REPO / "workflow" / "scripts")}
    if not pidfd:
        env["NO_PIDFD"] = "1"
    return subprocess.Popen([sys.executable, "-c", CHILD_OF_A_PARENT, *argv], env=env, **kwargs)


def gone(pid: int) -> bool:
    """Ended: no /proc entry, or a zombie waiting for its parent."""
    try:
        return "Z" in Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True


def test_the_harness_dies_with_the_process_that_started_it():
    proc = spawn()
    assert wait_for(lambda: sleeps_of(proc.pid))
    sleep = sleeps_of(proc.pid)[0]
    proc.kill()
    proc.wait()
    assert wait_for(lambda: gone(sleep))


@pytest.mark.parametrize("pidfd", [True, False], ids=["pidfd", "polling"])
def test_a_measurement_stops_when_the_watched_process_ends(pidfd):
    watched = subprocess.Popen(["sleep", "60"])
    proc = spawn(str(watched.pid), pidfd=pidfd, stdout=subprocess.PIPE, text=True)
    assert wait_for(lambda: sleeps_of(proc.pid))
    sleep = sleeps_of(proc.pid)[0]
    watched.send_signal(signal.SIGKILL)  # left a zombie until the end: ended, not yet reaped
    out, _ = proc.communicate(timeout=10)
    watched.wait()
    assert "stopped: Snakemake ended" in out
    assert gone(sleep), "the harness outlived its measurement"


def test_watching_an_ended_process_stops_at_once_without_pidfds(monkeypatch):
    def no_pidfd(pid, flags=0):
        raise OSError(38, "Function not implemented")

    monkeypatch.setattr(os, "pidfd_open", no_pidfd)
    ended = subprocess.Popen(["true"])
    ended.wait()
    with pytest.raises(stopping.Stopped, match="already ended"):
        stopping.watch(ended.pid)
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "env": dict(os.environ)}
    assert stopping.run_child(["sh", "-c", "exit 3"], **quiet) == 3


def test_the_harness_is_the_oom_killers_first_choice_and_its_kill_is_named(tmp_path):
    """Should a cell outgrow what it can get (a bind policy on a full node),
    the OOM killer takes the harness, not a neighbour, and the record says
    which signal ended it."""
    seen = tmp_path / "adj"
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "env": dict(os.environ)}
    assert stopping.run_child(["sh", "-c", f"cat /proc/self/oom_score_adj > {seen}"], **quiet) == 0
    assert seen.read_text().strip() == "1000"
    # a harness that printed its records and was then SIGKILLed
    assert "OOM killer" in measure._exit_text(-signal.SIGKILL)
    assert measure._exit_text(2) == "harness exited with code 2"


def stored_file(runs: Path, cell, k: int, request_digest: str) -> str:
    """A valid repetition file (synthetic records) with this request digest."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
    import synthetic_runs

    path = Path(layout.run_path(str(runs), cell, k))
    path.parent.mkdir(parents=True, exist_ok=True)
    records = synthetic_runs.one_run(cell, synthetic_runs.MACHINES["2x4x2"], runs.parent.name, k, [1.7e9], VARIANTS)
    path.write_text("".join(json.dumps({**r, "request_digest": request_digest}) + "\n" for r in records))
    return str(path)


def test_progress_counts_stored_repetitions_and_takes_the_pace_of_finished_rounds(tmp_path):
    from membench.store import progress

    cells = cells_of(repeats=4, threads=(1, 2))  # 4 cells x 4 repeats
    runs, manifests = tmp_path / "box" / "runs", tmp_path / "box" / "rounds"
    for cell in cells:
        for k in range(2):
            stored_file(runs, cell, k, rounds.digest(rounds.cell_request(cell, "box", k, VARIANTS)))
    manifests.mkdir(parents=True)
    for k in range(2):
        (manifests / f"r{k}.json").write_text(json.dumps({"seconds": 8.0, "measured": ["x"] * 4}))
    state = progress.system_progress(cells, "box", tmp_path, VARIANTS)
    assert (state.done, state.total) == (8, 16)
    assert state.seconds_left == 8 * 2.0
    assert state.line() == "box: 8 of 16 repetitions (50.0 %), about 16 s left"
    assert "no round finished yet" in progress.system_progress(cells, "other", tmp_path, VARIANTS).line()
    # An edit that changes the request (ntimes): the stored files no longer count.
    edited = cells_of(repeats=4, threads=(1, 2), ntimes=5)
    assert [c.id for c in edited] == [c.id for c in cells]
    assert progress.system_progress(edited, "box", tmp_path, VARIANTS).done == 0


def test_collect_names_deleted_repetition_files_and_the_manifests_to_delete(tmp_path):
    from membench.store import collect

    cells = cells_of(repeats=2, threads=(1,))
    runs, manifests = tmp_path / "box" / "runs", tmp_path / "box" / "rounds"
    manifests.mkdir(parents=True)
    listed = {k: [stored_file(runs, cell, k, "d") for cell in cells] for k in range(2)}
    for k, files in listed.items():
        (manifests / f"r{k}.json").write_text(json.dumps({"runs": files}))
    inputs = [str(manifests / f"r{k}.json") for k in range(2)]
    assert collect.run_files(inputs) == listed[0] + listed[1]
    Path(listed[1][0]).unlink()
    with pytest.raises(collect.MissingRunsError) as error:
        collect.run_files(inputs)
    message = str(error.value)
    assert listed[1][0] in message and listed[1][1] not in message
    assert f"rm {manifests / 'r1.json'}\n" in message + "\n" and f"{manifests}/" in message


def test_a_round_whose_snakemake_has_already_ended_stops_with_one_line(tmp_path):
    config = config_of(repeats=1, threads=(1,))[0]
    inputs = rounds.RoundInputs(config, cells_of(repeats=1, threads=(1,)), VARIANTS)
    assert not Path(inputs.study_file("box", 0, str(tmp_path / "studies"), write=False)).exists()  # a dry run
    study_file = inputs.study_file("box", 0, str(tmp_path / "studies"))
    assert json.loads(Path(study_file).read_text()) == json.loads(inputs.study("box", 0))
    assert inputs.study_file("box", 0, str(tmp_path / "studies")) == study_file  # named by content
    ended = subprocess.Popen(["true"])
    ended.wait()
    argv = [sys.executable, str(REPO / "workflow" / "scripts" / "measure_round.py"),
            "--study-file", study_file,
            "--system", "box", "--round", "0", "--topology", str(tmp_path / "topology.json"),
            "--manifest", str(tmp_path / "r0.json"), "--log", str(tmp_path / "r0.log"), "--parent-pid", str(ended.pid)]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(REPO / "workflow" / "scripts")}
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr == f"box round 0 stopped: process {ended.pid} (Snakemake) has already ended\n"
    assert not (tmp_path / "r0.json").exists()
