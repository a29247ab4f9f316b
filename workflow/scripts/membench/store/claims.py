"""Which stored repetition files the config's cells claim (figures-only).

A file is claimed by the config cell whose id names its folder. A file
stored by an earlier membench, whose cell id predates an axis added later
(the chase group: `…_s1073741824`, no `_g…`), is migrated: the axis takes
the value its records state (a v1 record's page_group_bytes, migrated to
chase_group_requested by membench.store.record_versions), so the cell is shown
with its real value named, under its experiment - never as the config's
default. Whatever is left is "stored but not shown", each file with its
reason: said on the terminal and in the report, never dropped in silence.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from membench.core import layout, results_files
from membench.plan import knobs
from membench.plan.grammar import Cell
from membench.store import record_versions

# Axes added to the cell id after records were first stored: the axis, the
# kernels whose ids carry it (its families), and the record key stating its value.
LATER_AXES = tuple((name, tuple(knobs.knob(name).families()), knobs.asked(name)) for name in ("chase_group",))
MAX_REASONS = 10


def earlier_id(cell: Cell, axis: str) -> str | None:
    """The id `cell` had before `axis` was part of cell ids (None when its
    kernel's ids do not carry the axis)."""
    kernels = next((kernels for name, kernels, _ in LATER_AXES if name == axis), ())
    if cell.kernel in kernels:
        return cell.id.replace("_" + knobs.knob(axis).id_text(getattr(cell, axis)), "", 1)
    return None


def _stated(path: str, key: str):
    """The value of `key` the file's first record states (migrated), or None."""
    try:
        with results_files.open_binary(path, results_files.system_root(path)) as fh:
            line = fh.readline()
        record = record_versions.migrate(json.loads(line))
    except (OSError, ValueError, record_versions.SchemaVersionError):
        return None
    return record.get(key) if type(record) is dict else None


@dataclass
class Claims:
    files: list[str] = field(default_factory=list)  # what collect reads
    moved: dict[str, Cell] = field(default_factory=dict)  # file -> its migrated cell
    not_shown: dict[str, str] = field(default_factory=dict)  # file -> why

    @property
    def cells(self) -> list[Cell]:
        return list({cell.id: cell for cell in self.moved.values()}.values())

    def lines(self) -> list[str]:
        """One line per reason with its count of files (at most MAX_REASONS)."""
        by_reason = Counter(self.not_shown.values())
        lines = [f"{n} run file(s): {reason}" for reason, n in by_reason.most_common(MAX_REASONS)]
        if len(by_reason) > MAX_REASONS:
            rest = sum(n for _, n in by_reason.most_common()[MAX_REASONS:])
            lines.append(f"... and {rest} more run file(s) for {len(by_reason) - MAX_REASONS} other reasons")
        return lines

    def migrated_lines(self) -> list[str]:
        by_cell = Counter(cell.id for cell in self.moved.values())
        return [f"{n} run file(s) of an earlier membench shown as {cell}" for cell, n in sorted(by_cell.items())]


def stored_files(runs_dir: str) -> list[str]:
    """Every repetition file under runs/ (runs/<experiment>/<kernel>-<variant>/<axes>/r<k>.jsonl)."""
    found = []
    for dirpath, dirs, files in os.walk(runs_dir):
        dirs.sort()
        found += [f"{dirpath}/{f}" for f in sorted(files) if layout.RUN_FILE.match(f)]
    return found


def claim(runs_dir: str, cells: list[Cell], files: list[str] | None = None) -> Claims:
    """Claims of the repetition files under runs_dir (or `files`, paths
    under it) by the config's `cells`."""
    by_id = {cell.id: cell for cell in cells}
    earlier = {}
    for cell in cells:
        for axis, _, key in LATER_AXES:
            old = earlier_id(cell, axis)
            if old is not None and old not in by_id:
                earlier.setdefault(old, (cell, axis, key))
    experiments = {cell.experiment for cell in cells}
    claims = Claims()
    order = {cell_id: i for i, cell_id in enumerate(by_id)}
    at = {}  # file -> (its config cell's place, repetition): collect reads in config order
    for path in stored_files(runs_dir) if files is None else files:
        rel = os.path.relpath(path, runs_dir)
        parts = Path(rel).parts
        match = layout.RUN_FILE.match(parts[-1])
        if len(parts) != 4 or not match:
            claims.not_shown[path] = "not at runs/<experiment>/<kernel>-<variant>/<axes>/r<k>.jsonl"
            continue
        cell_id, repeat = "/".join(parts[:3]), int(match.group(1))
        cell = by_id.get(cell_id)
        if cell is None and cell_id in earlier:
            wanted, axis, key = earlier[cell_id]
            if repeat >= wanted.repeats:
                claims.not_shown[path] = f"repetitions beyond the config's repeats ({parts[0]}: {wanted.repeats})"
                continue
            value = _stated(path, key)
            if value is None:
                claims.not_shown[path] = f"an earlier membench's cell id without {axis}, and its records state none"
                continue
            cell = dataclasses.replace(wanted, **{axis: value})
            if cell.id in by_id and Path(layout.run_path(runs_dir, cell, repeat)).exists():
                claims.not_shown[path] = "an earlier membench's copy of a repetition stored under today's cell id too"
                continue
            claims.moved[path] = cell
        if cell is None:
            if parts[0] not in experiments:
                claims.not_shown[path] = f"experiment {parts[0]!r} is not in the config"
            else:
                claims.not_shown[path] = f"a cell of {parts[0]!r} the config does not ask for"
            continue
        if repeat >= cell.repeats:
            claims.moved.pop(path, None)  # a migrated cell's repeats are its config cell's
            claims.not_shown[path] = f"repetitions beyond the config's repeats ({parts[0]}: {cell.repeats})"
            continue
        claims.files.append(path)
        at[path] = (order[cell_id] if cell_id in order else order[earlier[cell_id][0].id], repeat)
    claims.files.sort(key=lambda path: at[path])
    return claims
