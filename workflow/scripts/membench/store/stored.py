"""Stored results are checked, not trusted: reading the repetition files of a
study (results/<system>/runs/<cell>/r<k>.jsonl) and its system files
(topology.json, environment.json) as they may arrive, copied, cut or edited.

Every problem names the file, the line and what is wrong; all are listed
at once (the first MAX_SHOWN), ending with what to do. Nothing stored is
ever changed: an older record is migrated in memory only.
"""

from __future__ import annotations

import functools
import json
import multiprocessing
import os
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import TypeVar

from membench import SCHEMA_VERSION
from membench.core import layout, results_files
from membench.plan import knobs, rounds
from membench.plan.grammar import Cell
from membench.store import record_versions
from membench.plan.families import applies

MAX_SHOWN = 50
T = TypeVar("T")


class StoredRunsError(ValueError):
    """Stored files that cannot be used; the message lists them and says
    what to do."""


def _not_a_number(name: str):
    raise ValueError(f"{name} is not a JSON number (a value that is not finite)")


_DECODER = json.JSONDecoder(parse_constant=_not_a_number)


def _non_finite_keys(line: str) -> list[str]:
    """The keys holding NaN or Infinity in a line (Python's reader takes them)."""
    try:
        value = json.loads(line)
    except ValueError:
        return []
    found = []

    def walk(v, at):
        if isinstance(v, float) and v != v or v in (float("inf"), float("-inf")):
            found.append(at or "(the line)")
        elif isinstance(v, dict):
            for k, item in v.items():
                walk(item, f"{at}.{k}" if at else str(k))
        elif isinstance(v, list):
            for i, item in enumerate(v):
                walk(item, f"{at}[{i}]")

    walk(value, "")
    return found


def _lines(path: Path, data: bytes, problems: list[str]) -> Iterator[tuple[int, str, bool]]:
    """(line number, text, whether the line ended with a newline) of every
    line that decodes as UTF-8; a line that does not is a problem."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    raw = text.split("\n") if text is not None else data.split(b"\n")
    last = len(raw) - 1
    for i, line in enumerate(raw):
        if i == last and not line:
            break  # the newline that ends the file
        if text is None:
            try:
                line = line.decode("utf-8")
            except UnicodeDecodeError as error:
                problems.append(f"{path}:{i + 1}: bytes that are not UTF-8 (at column {error.start + 1}: "
                                f"{line[error.start:error.start + 4]!r}): the file is damaged")  # fmt: skip
                continue
        yield i + 1, line, i < last


def read_run_file(path: str | Path, problems: list[str], checker: record_versions.Checker | None = None) -> list[tuple[int, dict]]:
    """(line number, record) of each line of one repetition file that is a
    JSON object meeting the record schema (older versions migrated); what
    is wrong with the others (and with the file) goes to `problems`."""
    path = Path(path)
    checker = checker or record_versions.Checker()
    try:
        data = results_files.read_bytes(path, results_files.system_root(path))
    except results_files.UnsafeResultsFile as error:
        problems.append(str(error))
        return []
    except OSError as error:
        problems.append(f"{path}: cannot be read: {error.strerror or error}")
        return []
    if not data.strip():
        problems.append(f"{path}: empty file (no records): it was cut or never written whole")
        return []
    found = []
    for number, line, ended in _lines(path, data, problems):
        if not line.strip():
            continue
        try:
            record = _DECODER.decode(line)
        except json.JSONDecodeError as error:
            if not ended:
                problems.append(f"{path}:{number}: the file ends inside a record (truncated at column "
                                f"{len(line)}; every record ends with a newline): the file was cut")  # fmt: skip
            else:
                problems.append(f"{path}:{number}: not JSON ({error.msg} at column {error.colno})")
            continue
        except ValueError as error:
            keys = _non_finite_keys(line)
            where = f"key {', '.join(keys)}: " if keys else ""
            problems.append(f"{path}:{number}: {where}{error}")
            continue
        if type(record) is not dict:
            problems.append(f"{path}:{number}: a JSON {type(record).__name__}, not a record (a JSON object)")
            continue
        wrong = checker.problems(record)
        if wrong:
            problems += [f"{path}:{number}: {p}" for p in wrong]
            continue
        found.append((number, record_versions.migrate(record)))
    return found


@functools.lru_cache(maxsize=4)
def path_parts(path: str | Path) -> dict | None:
    """layout.run_parts, once per path (a file's records ask it again)."""
    return layout.run_parts(path)


# (record key, Cell attribute): the knobs a record carries as requested and
# its cell is checked on (the kernel and variant against its path instead).
KNOBS = tuple((k.record, k.name) for k in knobs.matched() if k.name not in ("kernel", "variant"))


class Expected:
    """What the config asks of each stored repetition: its cell (by id) and
    the request it is measured for (membench.plan.rounds.cell_request)."""

    def __init__(self, cells: list[Cell], variants_table: dict, moved: dict[str, Cell] | None = None):
        self.cells = {cell.id: cell for cell in cells}
        self.table = variants_table
        # files stored under an earlier membench's cell id -> the cell they
        # are shown as (membench.store.claims)
        self.moved = moved or {}

    def cell_of(self, path: str, cell_id: str) -> Cell | None:
        return self.moved.get(str(path)) or self.cells.get(cell_id)

    def request(self, cell: Cell, system: str, repeat: int) -> dict:
        return rounds.cell_request(cell, system, repeat, self.table)


def _knobs(cell: Cell) -> tuple:
    """KNOBS less those its family's records do not state (they hold null)."""
    return tuple((key, name) for key, name in KNOBS
                 if knobs.knob(name).in_record == knobs.EVERY or applies(name, cell.kernel))  # fmt: skip


def earlier_ops(request: dict, records: list[tuple[int, dict]]) -> dict:
    """The request a file was measured for when its family has gained an
    op since (c2c's dirty): the same knobs with only the ops its records
    hold, in the request's order, where that request's digest is the one
    the records state; else the request unchanged. Such a file is shown
    with the ops it has; a run measures the cell again for the new op,
    since its digest is not the config's."""
    ops = {record.get("op") for _, record in records}
    stated = {record.get("request_digest") for _, record in records}
    if not ops < set(request["ops"]) or len(stated) != 1:
        return request
    fewer = {**request, "ops": [op for op in request["ops"] if op in ops]}
    return fewer if rounds.digest(fewer) in stated else request


def consistency_problems(path: str, records: list[tuple[int, dict]], expected: Expected | None,
                         whole: bool = True) -> list[str]:
    """A record must match the path it is stored under (system, experiment,
    kernel, variant, repetition) and, when the config is known, the
    request of that cell (its knobs and request_digest). Each mismatch
    names both values. whole: every line of the file was read (then a
    missing op means the file was cut at a line's end)."""
    where = path_parts(path)
    if where is None:
        return [f"{path}: not a repetition file path (results/<system>/runs/<experiment>/<kernel>-<variant>/<axes>/r<k>.jsonl)"]
    cell = expected.cell_of(path, where["cell"]) if expected else None
    request = expected.request(cell, where["system"], where["repeat"]) if cell else None
    request = earlier_ops(request, records) if request else None
    want_digest = rounds.digest(request) if request else None
    problems = []
    for number, record in records:
        at = f"{path}:{number}"
        if record["system"] != where["system"]:
            problems.append(f"{at}: system {record['system']!r} but the file is under system {where['system']!r}")
        if f"{record['kernel']}-{record['variant']}" != where["kernel_variant"]:
            problems.append(f"{at}: kernel-variant {record['kernel']}-{record['variant']!s} but the file is under "
                            f"{where['kernel_variant']!r}")  # fmt: skip
        if record["repeat"] != where["repeat"]:
            problems.append(f"{at}: repeat {record['repeat']} but the file is r{where['repeat']}.jsonl")
        digest = record.get("request_digest")
        if record.get("experiment") != where["experiment"] and not (want_digest and digest == want_digest):
            # The request names no experiment: a repetition whose request
            # digest is that of its path's cell is the same measurement
            # under a renamed experiment; the path names it.
            problems.append(f"{at}: experiment {record.get('experiment')!r} but the file is under experiment "
                            f"{where['experiment']!r}")  # fmt: skip
        if cell is None:
            continue
        for key, attr in _knobs(cell):
            if key in record and record[key] != getattr(cell, attr):
                problems.append(f"{at}: {key} {record[key]!r} but the config's cell asks {getattr(cell, attr)!r}")
        if record["op"] not in request["ops"]:
            problems.append(f"{at}: op {record['op']!r} but the cell's request has ops {request['ops']}")
        if digest is not None and digest != want_digest:
            problems.append(f"{at}: request_digest {digest} but the config's request for this cell is {want_digest} "
                            f"(a knob of the request differs: rounds.cell_request)")  # fmt: skip
    if request and records and whole and not problems:
        ops = {record["op"] for _, record in records}
        if ops != set(request["ops"]):
            missing = [op for op in request["ops"] if op not in ops]
            problems.append(f"{path}: records of ops {sorted(ops)} but the request asks {request['ops']}; "
                            f"missing {missing}: the file was cut")  # fmt: skip
    return problems


def read_runs(paths: list[str], expected: Expected | None = None, by_path: bool = True) -> Iterator[dict]:
    """Every record of the repetition files, checked (schema; with by_path,
    also its path and request); a StoredRunsError listing every problem once
    all are read. With by_path the path names the experiment and cell of
    its records; without (make compare: directories may be renamed), the
    records are as stored."""
    problems: list[str] = []
    checker = record_versions.Checker()
    for path in paths:
        before = len(problems)
        found = read_run_file(path, problems, checker)
        if not by_path:
            yield from (record for _, record in found)
            continue
        wrong = consistency_problems(path, found, expected, whole=len(problems) == before)
        problems += wrong
        if wrong:
            continue
        where = _shown_as(path, expected)
        for _, record in found:
            if record.get("experiment") != where["experiment"] or record.get("cell") != where["cell"]:
                record = {**record, "experiment": where["experiment"], "cell": where["cell"]}
            yield record
    if problems:
        raise StoredRunsError(problems_message(problems, paths))


def run_problems(paths: list[str], expected: Expected | None = None) -> list[str]:
    """Every problem read_runs would name, without keeping the records."""
    problems: list[str] = []
    checker = record_versions.Checker()
    for path in paths:
        before = len(problems)
        found = read_run_file(path, problems, checker)
        problems += consistency_problems(path, found, expected, whole=len(problems) == before)
    return problems


def _shown_as(path: str, expected: Expected | None) -> dict:
    """path_parts, with the cell a file of an earlier membench's cell id is
    shown as (membench.store.claims)."""
    where = path_parts(path)
    moved = expected.moved.get(str(path)) if expected else None
    return {**where, "cell": moved.id} if moved else where


def records_as_stored(paths: list[str], expected: Expected | None = None) -> Iterator[dict]:
    """The records of files run_problems finds whole, read without checking
    them (migrated; the path names their experiment and cell)."""
    for path in paths:
        where = _shown_as(path, expected)
        with results_files.open_binary(path, results_files.system_root(path)) as fh:
            for line in fh:
                if not line.strip():
                    continue
                record = _DECODER.decode(line.decode("utf-8"))
                if record.get("schema") != SCHEMA_VERSION:
                    record = record_versions.migrate(record)
                if record.get("experiment") == where["experiment"] and record.get("cell") != where["cell"]:
                    record = {**record, "cell": where["cell"]}  # an earlier membench's cell id
                elif record.get("experiment") != where["experiment"] or record.get("cell") != where["cell"]:
                    # a renamed experiment's repetition (membench.measure.stored_index):
                    # reported under its new name, the old one kept beside it
                    record = {**record, "experiment": where["experiment"], "cell": where["cell"],
                              "experiment_measured_as": record.get("experiment")}  # fmt: skip
                yield record


def checked(paths: list[str], expected: Expected | None, consume: Callable[[Iterator[dict]], T]) -> T:
    """consume(the records of paths), trusted only once run_problems finds
    nothing: with two CPUs or more, a second process checks while this one
    consumes (a damaged record may break consume first: the check's
    problems are what is raised); with one, the check runs first."""
    if len(os.sched_getaffinity(0)) < 2:
        problems = run_problems(paths, expected)
        if problems:
            raise StoredRunsError(problems_message(problems, paths))
        return consume(records_as_stored(paths, expected))
    # fork: the check needs nothing this process has not imported, and a
    # spawned child would run the calling script (a Snakemake script) again.
    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("fork")) as pool:
        check = pool.submit(run_problems, paths, expected)
        try:
            result, error = consume(records_as_stored(paths, expected)), None
        except Exception as caught:  # noqa: BLE001 - the check says what was wrong
            result, error = None, caught
        problems = check.result()
    if problems:
        raise StoredRunsError(problems_message(problems, paths))
    if error is not None:
        raise error
    return result


def problems_message(problems: list[str], paths: list[str]) -> str:
    files = sorted({p.split(": ", 1)[0].rsplit(":", 1)[0] for p in problems})
    lines = [f"{len(problems)} problem(s) in {len(files)} stored repetition file(s):"]
    lines += [f"  {p}" for p in problems[:MAX_SHOWN]]
    if len(problems) > MAX_SHOWN:
        lines.append(f"  ... and {len(problems) - MAX_SHOWN} more")
    lines.append(
        "collect changed nothing. Restore these files from where they came from (cp -a), or set them aside "
        "and measure them again (nothing is deleted; a normal run's rounds measure what is missing, "
        "figures-only leaves them out):"
    )
    shown = files if len(files) <= 10 else files[:10]
    lines += [f"  mv {f} {f}.damaged" for f in shown]
    if len(files) > 10:
        lines.append(f"  ... and the same for {len(files) - 10} more files")
    return "\n".join(lines)


# ------------------------------------------------------------ system files

SYSTEM_FILES = {
    layout.TOPOLOGY: ("cpus", "nodes"),
    layout.ENVIRONMENT: (),
}


def system_file_problems(system_dir: str | Path) -> list[str]:
    """What is wrong with a system's topology.json and environment.json
    (missing, not UTF-8, not JSON, not an object, keys missing)."""
    problems = []
    for name, keys in SYSTEM_FILES.items():
        path = Path(system_dir) / name
        try:
            value = json.loads(path.read_bytes().decode("utf-8"), parse_constant=_not_a_number)
        except FileNotFoundError:
            problems.append(f"{path}: missing")
            continue
        except OSError as error:
            problems.append(f"{path}: cannot be read: {error.strerror or error}")
            continue
        except UnicodeDecodeError as error:
            problems.append(f"{path}: bytes that are not UTF-8 (at byte {error.start}): the file is damaged")
            continue
        except json.JSONDecodeError as error:
            problems.append(f"{path}: not JSON ({error.msg} at line {error.lineno}, column {error.colno})")
            continue
        except ValueError as error:
            problems.append(f"{path}: {error}")
            continue
        if type(value) is not dict:
            problems.append(f"{path}: a JSON {type(value).__name__}, not an object")
            continue
        for key in keys:
            if type(value.get(key)) is not list or not value[key]:
                problems.append(f"{path}: {key} missing or empty (a list is expected)")
    return problems


def system_files_message(problems: list[str]) -> str:
    return "\n".join(
        [f"{len(problems)} problem(s) with the system files the figures need (placement classes come from "
         "topology.json, the report's environment from environment.json):"]
        + [f"  {p}" for p in problems]
        + ["Copy them whole from where the runs were measured (results/<system>/, written by the probe "
           "there), or probe that machine again: snakemake --cores 1 results/<system>/topology.json"]
    )  # fmt: skip
