"""How far a study has come, from what is stored: repetitions done out of
the config's total per system, and the time left at the pace of the rounds
finished so far (their manifests hold how long they took)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from membench.plan import node_pairs
from membench.core import layout, results_files
from membench.store import record_versions, stored
from membench.plan import rounds
from membench.plan.grammar import Cell
from membench.core.text import percent


@dataclass(frozen=True)
class SystemProgress:
    system: str
    done: int
    total: int
    seconds_per_repetition: float | None
    damaged: int = 0  # stored for the request but not valid (not done)
    unreadable: tuple[str, ...] = ()  # round manifests that could not be read (no pace from them)

    @property
    def seconds_left(self) -> float | None:
        if self.seconds_per_repetition is None:
            return None
        return (self.total - self.done) * self.seconds_per_repetition

    def line(self) -> str:
        share = self.done / self.total if self.total else 1.0
        text = f"{self.system}: {self.done} of {self.total} repetitions ({percent(share, 1)})"
        if self.damaged:
            text += (f", {self.damaged} stored file(s) damaged and not counted (collect names them; "
                     "a run measures them again once set aside)")  # fmt: skip
        if self.unreadable:
            shown = ", ".join(self.unreadable[:3]) + (f" and {len(self.unreadable) - 3} more" if len(self.unreadable) > 3 else "")
            text += f", round manifest(s) not readable and left out of the pace: {shown} (a run writes them again)"
        if self.done == self.total:
            return text + ", complete"
        left = self.seconds_left
        return text + (f", about {duration(left)} left" if left is not None else ", no round finished yet (no pace)")


def duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    hours, minutes = divmod(round(seconds / 60), 60)
    return f"{minutes} min" if hours == 0 else f"{hours} h {minutes} min"


def pace(rounds_dir: Path, unreadable: list[str] | None = None) -> float | None:
    """Seconds per measured repetition over the finished rounds; a manifest
    that cannot be read (damaged, not a regular file) is named in
    `unreadable` and left out."""
    seconds = measured = 0
    for path in sorted(rounds_dir.glob("r*.json")):
        try:
            manifest = json.loads(results_files.read_text(path, rounds_dir.parent))
            took, count = float(manifest.get("seconds", 0)), len(manifest.get("measured", []))
        except (OSError, ValueError, TypeError, AttributeError) as error:
            if unreadable is not None:
                unreadable.append(f"{path} ({error.__class__.__name__})")
            continue
        seconds += took
        measured += count
    return seconds / measured if measured else None


def first_digest(path: Path) -> str | None:
    """The request digest of a repetition file's first record (one line
    read: a study of 1000 repetitions per cell stays quick to count)."""
    try:
        with results_files.open_binary(path, results_files.system_root(path)) as fh:
            return json.loads(fh.readline()).get("request_digest")
    except (OSError, ValueError, AttributeError):
        return None


def _topology(path: Path) -> dict | None:
    """The system's probe, when it has run: the node-matrix cells (node:each,
    bind:each) count only once their pairs are known."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def system_progress(cells: list[Cell], system: str, results: Path, variants_table: dict) -> SystemProgress:
    """Repetitions done: stored for the request the config makes now (an
    edit that changes a cell's request leaves its files to be measured
    again, as the round would)."""
    runs = str(layout.runs_dir(results, system))
    cells = node_pairs.expand_pairs(cells, _topology(layout.topology_path(results, system)))
    done = damaged = 0
    expected, checker = stored.Expected(cells, variants_table), record_versions.Checker()
    for cell in cells:
        request = rounds.cell_request(cell, system, None, variants_table)  # once per cell; only "repeat" differs
        for k in range(cell.repeats):
            path = layout.run_path(runs, cell, k)
            if first_digest(Path(path)) != rounds.digest({**request, "repeat": k}):
                continue
            # only a valid file is done: every line read and checked as collect does
            problems: list[str] = []
            found = stored.read_run_file(path, problems, checker)
            problems += stored.consistency_problems(path, found, expected, whole=not problems)
            done += not problems
            damaged += bool(problems)
    total = sum(cell.repeats for cell in cells)
    unreadable: list[str] = []
    seconds = pace(layout.rounds_dir(results, system), unreadable)
    return SystemProgress(system, done, total, seconds, damaged, tuple(unreadable))
