"""Which rows of a comparison are its gate: the cells findings.json names.

The gate is a small named set, the numbers a reader is told (findings.json,
workflow/schemas/findings.schema.yaml: each system's headline rows and each
experiment's finding name their cells). Those rows are decided with Holm
over the gate alone, and make compare's exit code reads them only; every
other row is exploratory (Benjamini-Hochberg, said so beside it;
membench.compare.verdicts). findings.json is read from each side
(results/summary/findings.json) where present, the union of both; with
neither, every row is the gate, as before findings.json existed, and the
terminal says so.
"""

from __future__ import annotations

import json
from pathlib import Path

from membench.core import layout


def named_cells(results_dirs: list[Path]) -> tuple[set[str] | None, list[str]]:
    """(the cells the findings name, or None when no side has findings.json;
    the files read)."""
    cells: set[str] = set()
    read = []
    for results in results_dirs:
        path = layout.findings_path(results)
        if not path.is_file():
            continue
        try:
            findings = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        read.append(str(path))
        for system in findings.get("systems") or []:
            for row in system.get("headline") or []:
                cells.update(row.get("cells") or [])
        for finding in findings.get("findings") or []:
            cells.update(finding.get("cells") or [])
    return (cells if read else None), read


def is_gate(row: dict, cells: set[str] | None) -> bool:
    """A row is in the gate when its cell is named (every row when no
    findings were read)."""
    if cells is None:
        return True
    return any(name.split(" (+")[0] in cells for name in str(row.get("cell") or "").split("; "))


def gate_line(cells: set[str] | None, read: list[str], rows: list[dict]) -> str:
    gate = sum(1 for r in rows if r.get("role") == "gate")
    if cells is None:
        return (f"Gate: no findings.json on either side, so all {gate} rows are the gate (Holm over them all); "
                "a side's results/summary/findings.json names the few rows that matter.")  # fmt: skip
    return (f"Gate: the {gate} rows of the {len(cells)} cells findings.json names ({', '.join(read)}), Holm over "
            f"them; the other {len(rows) - gate} rows are exploratory (Benjamini-Hochberg: about 5 % of those called "
            "may be false), shown but never the exit code.")  # fmt: skip
