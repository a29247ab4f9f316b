"""Every run record of a system -> one tidy table (one row per record)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from membench.records import contract_problems, read_jsonl, write_text_atomic
from membench.verify import placement_problems


class ContractError(ValueError):
    pass


def _flat(value):
    """Lists and objects become JSON text so a CSV cell can hold them."""
    return json.dumps(value, sort_keys=True) if isinstance(value, (list, dict)) else value


def load_records(paths: list[str]) -> list[dict]:
    records, problems = [], []
    for path in paths:
        for i, record in enumerate(read_jsonl(Path(path))):
            problems += [f"{path}:{i + 1}: {p}" for p in contract_problems(record)]
            records.append(record)
    if problems:
        raise ContractError("records break the contract:\n" + "\n".join(problems[:50]))
    return records


def _row(record: dict) -> dict:
    """A record as a table row: the variant's feature columns become
    feature_<name> columns, other lists and objects JSON text."""
    row = {k: _flat(v) for k, v in record.items() if k != "features"}
    row.update({f"feature_{k}": v for k, v in (record.get("features") or {}).items()})
    row["placement_problems"] = "; ".join(placement_problems(record)) or None
    return row


def records_table(records: list[dict]) -> pd.DataFrame:
    return pd.DataFrame([_row(r) for r in records])


def collect_runs(inputs: list[str], output: str) -> pd.DataFrame:
    table = records_table(load_records(inputs))
    write_text_atomic(Path(output), table.to_csv(index=False))
    return table


def read_measurements(paths: list[str]) -> pd.DataFrame:
    frames = [pd.read_csv(p) for p in paths]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
