"""Every run record of a system -> one tidy table (one row per record),
with the placement classes of each run derived from the system's
topology.json (membench.store.placement_classes). Every record is checked first
(membench.store.stored: the record schema, its path, its request)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from membench.core import layout
from membench.plan import knobs
from membench.plan.grammar import canonical_order
from membench.probe.topology import llc_capacity
from membench.store.placement_classes import Machine, classify
from membench.core import disturbance, results_files
from membench.core.atomic_files import write_text_atomic
from membench.store.stored import (
    Expected,
    StoredRunsError,
    checked,
    read_runs,
    system_file_problems,
    system_files_message,
)
from membench.store.verify import placement_problems


def _flat(value):
    """Lists and objects become JSON text so a CSV cell can hold them."""
    if type(value) is dict:
        return json.dumps(value, sort_keys=True)
    return json.dumps(value) if type(value) is list else value


# Per-thread lists the table leaves in the records: what they say is in the
# table as placement classes and placement problems, and at 256 threads and
# 1000 runs per cell they would be most of its bytes.
RECORD_ONLY = ("cpus", "cpus_start", "cpus_bound", "cpu_nodes", "seconds", "disturb_nivcsw", "disturb_wait_s", "sample_switched",
               "disturb_steal_cpus")  # fmt: skip


# What placement_problems reads: the records of one process share it.
PLACEMENT_KEYS = ("status", "policy", knobs.asked("policy"), "page_nodes", "cpu_nodes", "memory_nodes", "pages",
                  "hugepage_fraction", "affinity", "threads", "cpus", "cpus_bound")  # fmt: skip


def _row(record: dict, texts: dict | None = None) -> dict:
    """A record as a table row: the variant's feature columns become
    feature_<name> columns, other lists and objects JSON text. `texts`
    remembers the last text of each key: the records of one process repeat
    their lists (CPUs, page nodes), which are then encoded once."""
    texts = {} if texts is None else texts
    row = {}
    for key, value in record.items():
        if key in RECORD_ONLY:
            continue
        if type(value) in (list, dict):
            last = texts.get(key)
            if last is None or last[0] != value:
                last = texts[key] = (value, _flat(value))
            value = last[1]
        row[key] = value
    row.update(disturbance.columns(record))  # the disturbed rule's verdict (membench.core.disturbance)
    row.pop("features", None)
    row.update({f"feature_{k}": v for k, v in (record.get("features") or {}).items()})
    key = tuple(record.get(k) for k in PLACEMENT_KEYS)
    last = texts.get("placement_problems")
    if last is None or last[0] != key:
        last = texts["placement_problems"] = (key, "; ".join(placement_problems(record)) or None)
    row["placement_problems"] = last[1]
    return row


CHUNK = 5000  # rows per DataFrame before they are joined: dicts cost far more memory than columns


class MissingRunsError(FileNotFoundError):
    pass


def run_files(inputs: list[str]) -> list[str]:
    """Repetition files from inputs that are repetition files (.jsonl) or
    round manifests (.json, each listing its round's repetition files).
    Repetition files are not Snakemake outputs: one deleted by hand is
    noticed here, and the error says how to measure it again."""
    files, missing = [], {}
    for path in inputs:
        if path.endswith(".json"):
            listed = json.loads(results_files.read_text(path, results_files.system_root(path)))["runs"]
            files += listed
            for run in listed:
                if not Path(run).exists():
                    missing.setdefault(path, []).append(run)
        else:
            files.append(path)
    if missing:
        raise MissingRunsError(missing_runs_message(missing))
    return files


def missing_runs_message(missing: dict[str, list[str]]) -> str:
    """Which repetition files are gone, which round manifests list them,
    and what to do."""
    runs = [run for listed in missing.values() for run in listed]
    rounds_dirs = sorted({str(Path(manifest).parent) for manifest in missing})
    lines = [f"{len(runs)} repetition file(s) listed by round manifests are missing:"]
    lines += [f"  {run}" for run in runs[:20]]
    if len(runs) > 20:
        lines.append(f"  ... and {len(runs) - 20} more")
    lines.append(
        "To measure them again, delete the round manifests that list them "
        "(or all of " + ", ".join(f"{d}/" for d in rounds_dirs) + ") and rerun; "
        "each round then measures what is missing and keeps what is stored:"
    )
    manifests = sorted(missing) if len(missing) <= 20 else [f"-r {d}" for d in rounds_dirs]
    lines.append("  rm " + " ".join(manifests))
    return "\n".join(lines)


def _rows(records, machines: dict[str, Machine], topologies: dict[str, dict] | None = None):
    """Table rows with the placement classes of ok records whose system's
    topology is known; the records of one process (one per op) share their
    placement, which is classified once. With the topology also the LLC
    capacity the run's CPUs could use (llc_usable_bytes: the last-level
    cache instances they share; membench.analyse.caches judges from it)."""
    last_key, last_classes, texts = None, None, {}
    last_cpus, last_llc = None, None
    for record in records:
        row = _row(record, texts)
        machine = machines.get(record.get("system"))
        topology = (topologies or {}).get(record.get("system"))
        if topology is not None and record.get("status") == "ok" and record.get("cpus"):
            if record["cpus"] != last_cpus:
                last_cpus, last_llc = record["cpus"], llc_capacity(topology, record["cpus"]) or None
            row["llc_usable_bytes"] = last_llc
        if machine is not None and record.get("status") == "ok":
            key = (record.get("system"), record["cpus"], record.get("cpus_start"), record.get("page_nodes"),
                   record.get("hugepage_fraction"), record.get("migrated"))  # fmt: skip
            if key != last_key:
                last_key = key
                last_classes = classify(machine, *key[1:])
            row.update(last_classes)
        yield row


def records_table(records, topologies: dict[str, dict] | None = None) -> pd.DataFrame:
    """Rows of the records (flattened one at a time: a study's raw records
    never sit in memory all at once), plus placement classes where the
    system's topology is known."""
    machines = {system: Machine(topology) for system, topology in (topologies or {}).items()}
    frames, chunk = [], []
    for row in _rows(records, machines, topologies):
        chunk.append(row)
        if len(chunk) == CHUNK:
            frames.append(pd.DataFrame(chunk))
            chunk = []
    if chunk or not frames:
        frames.append(pd.DataFrame(chunk))
    return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]


def in_canonical_order(files: list[str], expected: Expected | None) -> list[str]:
    """The repetition files in the cells' canonical order, then by
    repetition: a run lists them round by round in its shuffled order,
    figures-only as stored; either way the table comes out the same."""
    if expected is None:
        return sorted(files)
    places = {cell.id: k for k, cell in enumerate(canonical_order(list(expected.cells.values()), expected.table))}

    def place(path: str) -> tuple:
        parts = Path(path).parts
        match = layout.RUN_FILE.match(parts[-1])
        cell = expected.cell_of(path, "/".join(parts[-4:-1]))
        where = places.get(cell.id, len(places)) if cell is not None else len(places)
        return (where, int(match.group(1)) if match else 0, path)

    return sorted(files, key=place)


def collect_runs(inputs: list[str], output: str, topology: str | None = None, expected: Expected | None = None) -> pd.DataFrame:
    """topology: the system's topology.json (placement classes need it);
    expected: the config's cells, to check each record against the request
    of its cell. Raises StoredRunsError listing every problem (nothing is
    written then)."""
    topologies = None
    if topology:
        wrong = system_file_problems(Path(topology).parent)
        wrong = [p for p in wrong if p.startswith(str(topology))]
        if wrong:
            raise StoredRunsError(system_files_message(wrong))
        topologies = {Path(topology).parent.name: json.loads(Path(topology).read_text())}
    files = in_canonical_order(run_files(inputs), expected)
    table = checked(files, expected, lambda records: records_table(records, topologies))
    write_text_atomic(Path(output), table.to_csv(index=False))
    return table


def read_measurements(paths: list[str], columns: list[str] | None = None, without: tuple[str, ...] = ()) -> pd.DataFrame:
    """The measurement tables of every system; only `columns` (and the
    feature columns) when given, never those `without`: a large study's
    figures and summaries read what they use."""
    frames = []
    for path in paths:

        def wanted(name: str) -> bool:
            if name in without:
                return False
            return columns is None or name in columns or name.startswith("feature_")

        frames.append(pd.read_csv(path, usecols=wanted, low_memory=False))
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    # A column no record filled (gbps in a study whose every run was skipped
    # or failed) is not in the file: asked for, it is there, empty, so a
    # reader finds no ok value instead of a KeyError.
    missing = [name for name in columns or () if name not in table.columns and name not in without]
    return table.reindex(columns=[*table.columns, *missing]) if missing else table


def read_records(paths: list[str]):
    """Every record of the repetition files `paths`, one at a time, each
    checked against the record schema (membench.store.stored; a StoredRunsError
    naming every problem once all are read), not against its path: `make
    compare` reads stored runs with it, from directories that may have been
    renamed."""
    return read_runs(paths, by_path=False)
