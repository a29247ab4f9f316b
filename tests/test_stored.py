"""Stored results are checked, not trusted (membench.store.stored): every class of
damage a copy, a disk or a hand edit makes is named with its file and line,
all at once, with what to do; collect changes nothing stored; figures-only
ends with the message, not a traceback."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from membench import SCHEMA_VERSION
from membench.store import collect
from membench.plan import checks
from membench.store import record_versions, stored
from membench.plan import variants

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))

import synthetic_runs  # noqa: E402

DEV16 = REPO.parent / "shared" / "data" / "dev16"


@pytest.fixture
def study(tmp_path):
    """A small valid study: 2 thread counts x 3 affinities x 2 repetitions of
    STREAM on a 2-socket 16-CPU node -> (work dir, run files, expected)."""
    _, system = synthetic_runs.write_affinity_study(tmp_path, "aff", [1, 4], repeats=2, machine="2x4x2")
    table = variants.load_variants(REPO / "kernels" / "families" / "variants.yaml")
    config = yaml.safe_load((tmp_path / "config.yaml").read_text())
    _, cells = checks.load(config, REPO / "workflow" / "schemas" / "config.schema.yaml", table)
    paths = sorted(str(p) for p in system.glob("runs/**/r*.jsonl"))
    return tmp_path, paths, stored.Expected(cells, table)


def collect_error(work: Path, paths: list[str], expected) -> str:
    before = {p: Path(p).read_bytes() for p in paths}
    with pytest.raises(stored.StoredRunsError) as error:
        collect.collect_runs(paths, str(work / "m.csv"), str(Path(paths[0]).parents[4] / "topology.json"), expected)
    assert {p: Path(p).read_bytes() for p in paths} == before, "collect changed a stored file"
    assert not (work / "m.csv").exists()
    return str(error.value)


def lines(path: str) -> list[str]:
    return Path(path).read_text().splitlines(keepends=True)


def set_line(path: str, number: int, line: str) -> None:
    """Line `number` (from 1) of the file becomes `line`, the rest kept."""
    text = lines(path)
    text[number - 1] = line
    Path(path).write_text("".join(text))


def edit(path: str, number: int, *dropped: str, **changes) -> None:
    """The record on line `number` with `changes` made and the keys `dropped` left out."""
    record = json.loads(lines(path)[number - 1])
    record.update(changes)
    for key in dropped:
        del record[key]
    set_line(path, number, json.dumps(record) + "\n")


def test_a_valid_study_is_collected(study):
    work, paths, expected = study
    table = collect.collect_runs(paths, str(work / "m.csv"), str(Path(paths[0]).parents[4] / "topology.json"), expected)
    assert len(table) == 4 * len(paths)


# Damage to one record: kind -> (its line, keys left out, keys changed,
# fragment the message must hold).
RECORD_EDITS = {
    "gbps string": (2, (), {"gbps": "12.5"}, "gbps='12.5'"),
    "negative": (3, (), {"gbps": -3.0}, "gbps=-3.0: -3.0 is less than"),
    "cpu id": (1, (), {"cpus": [-1]}, "cpus[0]=-1"),
    "fraction": (1, (), {"hugepage_fraction": 1.2}, "hugepage_fraction=1.2"),
    "missing key": (1, ("t_start",), {}, "'t_start' is missing"),
    "newer": (1, (), {"schema": 7}, f"record schema version 7 is newer than this membench's {SCHEMA_VERSION}"),
    "system": (1, (), {"system": "elsewhere"}, "system 'elsewhere' but the file is under system 'two-socket'"),
    "kernel": (1, (), {"kernel": "xor"}, "kernel-variant xor-default but the file is under 'stream-default'"),
    "knob": (1, (), {"init": "serial"}, "init 'serial' but the config's cell asks 'parallel'"),
    "digest": (1, (), {"request_digest": "0123456789abcdef"},
               "request_digest 0123456789abcdef but the config's request for this cell is"),
    "experiment": (1, (), {"experiment": "other", "request_digest": "0123456789abcdef"},
                   "experiment 'other' but the file is under experiment 'aff'"),
}  # fmt: skip


def damage(kind: str, paths: list[str]) -> tuple[str, int | None, str]:
    """Damage paths[0] one way -> (file, line, fragment the message must hold)."""
    path = paths[0]
    data = Path(path).read_bytes()
    if kind == "truncated":
        Path(path).write_bytes(data[: len(data) - 40])
        return path, 4, "the file ends inside a record (truncated"
    if kind == "cut at a line end":
        Path(path).write_text("".join(lines(path)[:2]))
        return path, None, "missing ['add', 'triad']: the file was cut"
    if kind == "not json":
        set_line(path, 2, "{'gbps': 12}\n")
        return path, 2, "not JSON (Expecting property name enclosed in double quotes"
    if kind == "not utf-8":
        text = lines(path)
        Path(path).write_bytes("".join(text[:2]).encode() + b'{"op": "\xff\xfe"}\n' + "".join(text[3:]).encode())
        return path, 3, "bytes that are not UTF-8"
    if kind == "empty":
        Path(path).write_bytes(b"")
        return path, None, "empty file (no records)"
    if kind == "not an object":
        set_line(path, 1, "[1, 2, 3]\n")
        return path, 1, "a JSON list, not a record"
    if kind == "nan":
        Path(path).write_text(Path(path).read_text().replace('"gbps": ', '"gbps": NaN, "x": ', 1))
        return path, 1, "NaN is not a JSON number"
    if kind in RECORD_EDITS:
        line, dropped, changes, fragment = RECORD_EDITS[kind]
        edit(path, line, *dropped, **changes)
        return path, line, fragment
    raise AssertionError(kind)


KINDS = ["truncated", "cut at a line end", "not json", "not utf-8", "empty", "not an object", "gbps string", "nan",
         "negative", "cpu id", "fraction", "missing key", "newer", "system", "kernel", "knob", "digest", "experiment"]  # fmt: skip


@pytest.mark.parametrize("kind", KINDS)
def test_each_damage_is_named_with_file_and_line(study, kind):
    work, paths, expected = study
    path, line, fragment = damage(kind, paths)
    message = collect_error(work, paths, expected)
    where = f"{path}:{line}: " if line else f"{path}: "
    assert any(row.strip().startswith(where) and fragment in row for row in message.splitlines()), message
    assert message.splitlines()[-2].startswith("collect changed nothing. Restore these files")
    # the printed fix sets the file aside; it never deletes a stored repetition
    assert message.splitlines()[-1] == f"  mv {path} {path}.damaged"
    assert "rm " not in message
    assert "Traceback" not in message


def test_all_problems_at_once_and_bounded(study):
    work, paths, expected = study
    for path in paths:
        Path(path).write_bytes(b"")
    message = collect_error(work, paths, expected)
    assert message.startswith(f"{len(paths)} problem(s) in {len(paths)} stored repetition file(s):")
    assert len([row for row in message.splitlines() if "empty file" in row]) == len(paths) < stored.MAX_SHOWN
    # past MAX_SHOWN through the same collect: 2 x 3 cells x 10 repetitions, every file emptied
    many = work / "many"
    many.mkdir()
    _, system = synthetic_runs.write_affinity_study(many, "aff", [1, 4], repeats=10, machine="2x4x2")
    config = yaml.safe_load((many / "config.yaml").read_text())
    _, cells = checks.load(config, REPO / "workflow" / "schemas" / "config.schema.yaml", expected.table)
    many_paths = sorted(str(p) for p in system.glob("runs/**/r*.jsonl"))
    for path in many_paths:
        Path(path).write_bytes(b"")
    message = collect_error(many, many_paths, stored.Expected(cells, expected.table))
    assert message.startswith("60 problem(s) in 60 stored repetition file(s):"), message[:200]
    shown = [row for row in message.splitlines() if "empty file" in row]
    assert len(shown) == stored.MAX_SHOWN == 50 and "  ... and 10 more" in message.splitlines()


def test_more_than_fifty_problems_end_with_a_count(tmp_path):
    paths = []
    for k in range(60):
        path = tmp_path / "results" / "s" / "runs" / "e" / "stream-default" / "x" / f"r{k}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("not json\n")
        paths.append(str(path))
    with pytest.raises(stored.StoredRunsError) as error:
        list(stored.read_runs(paths))
    message = str(error.value)
    assert message.count("not JSON") == stored.MAX_SHOWN and "... and 10 more" in message


def test_a_renamed_experiment_with_the_same_request_is_accepted(study):
    """The request names no experiment: a repetition stored under a renamed
    experiment (same request digest) is the same measurement; the path
    names its experiment in the table."""
    work, paths, expected = study
    for number in (1, 2, 3, 4):
        edit(paths[0], number, experiment="old_name")
    table = collect.collect_runs(paths, str(work / "m.csv"), str(Path(paths[0]).parents[4] / "topology.json"), expected)
    assert set(table["experiment"]) == {"aff"}


def test_older_records_are_migrated_in_memory():
    v1 = {"schema": 1, "kernel": "chase", "page_group": 16, "page_group_bytes": 65536, "working_set_bytes": 4096,
          "loads": 100, "seconds": [1.0, 1.0], "cycle_length": 64}  # fmt: skip
    out = record_versions.migrate(v1)
    assert out["schema"] == SCHEMA_VERSION and out["migrated_from"] == 1 and "page_group" not in out
    assert out["group_bytes"] == 4096 and out["group_full"] is False and out["cycle_walks"] == 100 * 2 / 64
    assert v1["schema"] == 1 and "page_group" in v1  # the record read is unchanged
    assert record_versions.problems({"schema": 0}) == ["record schema version 0 is older than 1 and cannot be read"]


@pytest.mark.skipif(not (DEV16 / "runs").is_dir(), reason="no ../shared/data/dev16")
def test_the_stored_dev16_runs_version_1_are_read():
    paths = sorted(str(p) for p in (DEV16 / "runs").glob("**/r*.jsonl"))
    records = list(stored.read_runs(paths))
    assert len(records) > 500 and {r["migrated_from"] for r in records} == {1}


@pytest.mark.parametrize(
    ("name", "content", "fragment"),
    [
        ("topology.json", None, "topology.json: missing"),
        ("topology.json", b'{"cpus": [', "topology.json: not JSON"),
        ("topology.json", b"[]", "topology.json: a JSON list, not an object"),
        ("topology.json", b'{"cpus": []}', "topology.json: cpus missing or empty"),
        ("environment.json", b"\xff", "environment.json: bytes that are not UTF-8"),
        ("environment.json", None, "environment.json: missing"),
    ],
)
def test_damaged_system_files_are_named(study, name, content, fragment):
    work, paths, _ = study
    system = Path(paths[0]).parents[4]
    (system / name).unlink()
    if content is not None:
        (system / name).write_bytes(content)
    problems = stored.system_file_problems(system)
    assert problems and all(name in p for p in problems) and any(fragment in p for p in problems), problems
    assert "Copy them whole from where the runs were measured" in stored.system_files_message(problems)


def test_figures_only_with_damaged_runs_ends_in_the_message_not_a_traceback(tmp_path, venv_bin):
    from conftest import copy_workflow

    work = copy_workflow(tmp_path / "wf")
    _, system = synthetic_runs.write_affinity_study(work, "aff", [1], repeats=2, machine="2x4x2")
    run = sorted(system.glob("runs/**/r*.jsonl"))[0]
    run.write_bytes(run.read_bytes()[:-30])
    argv = [str(venv_bin / "snakemake"), "--cores", "1", "--configfile", "config.yaml", "--config", "figures_only=True"]
    out = subprocess.run(argv, cwd=work, capture_output=True, text=True, timeout=600)
    text = out.stdout + out.stderr
    assert out.returncode != 0
    assert f"{run.relative_to(work)}:4: the file ends inside a record" in text, text[-3000:]
    assert "Restore these files" in text and "Traceback" not in text, text[-3000:]
    # the system files: named before any job runs
    (system / "topology.json").write_text("{")
    out = subprocess.run(argv, cwd=work, capture_output=True, text=True, timeout=600)
    text = out.stdout + out.stderr
    assert out.returncode != 0 and "topology.json: not JSON" in text and "Traceback" not in text, text[-3000:]


@pytest.mark.parametrize("kind", ["gbps string", "not json", "system"])
def test_one_cpu_checks_first(study, kind, monkeypatch):
    """With one CPU the check runs before the table is built; same message."""
    work, paths, expected = study
    monkeypatch.setattr(stored.os, "sched_getaffinity", lambda pid: {0})
    path, line, fragment = damage(kind, paths)
    message = collect_error(work, paths, expected)
    assert f"{path}:{line}: " in message and fragment in message, message


# ------------------------------------------- stored runs of an earlier membench

FIXTURE_DEV16 = REPO / "tests" / "fixtures" / "dev16"
LOADED = {
    "experiments": {
        "loaded_latency": {"kernel": "loaded", "threads": [16], "affinity": ["close"], "load_op": ["triad"],
                           "load_delay": [0, 50], "size": ["512MiB"], "repeats": 1, "ntimes": 5},
        "gone": {"kernel": "stream", "threads": [1], "affinity": ["close"]},
    }
}  # fmt: skip


def test_a_v1_chase_states_its_group_as_requested():
    v1 = {"schema": 1, "kernel": "loaded", "page_group": 16, "working_set_bytes": 4096}
    assert record_versions.migrate(v1)["chase_group_requested"] == 65536  # 16 pages of 4 KiB, never capped
    assert "chase_group_requested" not in record_versions.migrate({"schema": 1, "kernel": "stream"})


def test_runs_under_an_earlier_cell_id_are_shown_with_the_group_they_state(tmp_path):
    """dev16's loaded runs predate the chase-group axis (…_triad_d0, no _g…)
    and their records say 64 KiB groups: collected as the _g64KiB cells,
    never as the config's 256 KiB; what no cell claims is said, by reason."""
    from membench.store import claims

    system = tmp_path / "results" / "dev16"
    shutil.copytree(FIXTURE_DEV16 / "earlier", system / "runs")
    shutil.copy2(FIXTURE_DEV16 / "topology.json", system / "topology.json")
    stray = system / "runs" / "old" / "stream-default" / "t1_close_default_variant_parallel_sauto" / "r0.jsonl"
    stray.parent.mkdir(parents=True)
    stray.write_text("{}\n")
    beyond = next((system / "runs" / "loaded_latency").glob("*/*d0")) / "r1.jsonl"
    beyond.write_text("{}\n")
    table = variants.load_variants(REPO / "kernels" / "families" / "variants.yaml")
    cells = checks.load(LOADED, REPO / "workflow" / "schemas" / "config.schema.yaml", table)[1]
    found = claims.claim(str(system / "runs"), cells)
    shown = sorted(cell.id for cell in found.cells)
    assert shown == [f"loaded_latency/loaded-default/t16_close_default_variant_parallel_s536870912_triad_d{d}_g64KiB"
                     for d in (0, 50)]  # fmt: skip
    assert sorted(found.lines()) == [
        "1 run file(s): experiment 'old' is not in the config",
        "1 run file(s): repetitions beyond the config's repeats (loaded_latency: 1)",
    ]
    expected = stored.Expected(cells + found.cells, table, found.moved)
    out = collect.collect_runs(found.files, str(tmp_path / "m.csv"), str(system / "topology.json"), expected)
    assert sorted(set(out["cell"])) == shown
    assert set(out["chase_group_requested"]) == {65536} and set(out["experiment"]) == {"loaded_latency"}
