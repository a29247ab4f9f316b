"""Every run record of a system -> one tidy table (one row per record),
with the placement classes of each run derived from the system's
topology.json (membench.placement)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from membench.placement import add_classes
from membench.records import contract_problems, read_jsonl, write_text_atomic
from membench.verify import placement_problems


class ContractError(ValueError):
    pass


def _flat(value):
    """Lists and objects become JSON text so a CSV cell can hold them."""
    return json.dumps(value, sort_keys=True) if isinstance(value, (list, dict)) else value


def load_records(paths: list[str]) -> list[dict]:
    return [record for path, _, record in _checked(paths)]


def _checked(paths: list[str]):
    """(path, line, record) of every record; a ContractError naming every
    broken one (the first 50) once all are read."""
    problems = []
    for path in paths:
        for i, record in enumerate(read_jsonl(Path(path))):
            problems += [f"{path}:{i + 1}: {p}" for p in contract_problems(record)]
            yield path, i, record
    if problems:
        raise ContractError("records break the contract:\n" + "\n".join(problems[:50]))


def _row(record: dict) -> dict:
    """A record as a table row: the variant's feature columns become
    feature_<name> columns, other lists and objects JSON text."""
    row = {k: _flat(v) for k, v in record.items() if k != "features"}
    row.update({f"feature_{k}": v for k, v in (record.get("features") or {}).items()})
    row["placement_problems"] = "; ".join(placement_problems(record)) or None
    return row


def records_table(records, topologies: dict[str, dict] | None = None) -> pd.DataFrame:
    """Rows of the records (flattened one at a time: a study's raw records
    never sit in memory all at once), plus placement classes where the
    system's topology is known."""
    table = pd.DataFrame([_row(r) for r in records])
    return add_classes(table, topologies) if topologies and not table.empty else table


def collect_runs(inputs: list[str], output: str, topology: str | None = None) -> pd.DataFrame:
    """topology: the system's topology.json (placement classes need it)."""
    topologies = None
    if topology:
        topologies = {Path(topology).parent.name: json.loads(Path(topology).read_text())}
    table = records_table((record for _, _, record in _checked(inputs)), topologies)
    write_text_atomic(Path(output), table.to_csv(index=False))
    return table


def read_measurements(paths: list[str], columns: list[str] | None = None) -> pd.DataFrame:
    """The measurement tables of every system; only `columns` (those
    present) when given, which keeps a large study's figures cheap."""
    frames = []
    for path in paths:
        wanted = None if columns is None else lambda name: name in columns or name.startswith("feature_")
        frames.append(pd.read_csv(path, usecols=wanted, low_memory=False))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
