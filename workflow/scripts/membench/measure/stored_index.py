"""Stored repetitions belong to their request, not to an experiment's name.

When a cell's own file (runs/<experiment>/<kernel-variant>/<axes>/r<k>.jsonl)
is missing, a round looks for a file of the same round holding the same
request (by digest; the request has no experiment name in it) that is the
own file of no cell of the round (nor a hard link to one): a renamed experiment's old files, or a
superseded file whose request came back (an edit undone), never a try moved
aside because it was disturbed, nor a failed repetition moved aside to be
measured again (make remeasure-failed). A file still
under runs/ is hard-linked to the new name (the old name keeps it, bytes
and time unchanged); a superseded one is moved back. The index is built
once per round, and only when some cell's file is missing; it reads one
line of each r<k>.jsonl of the round."""

from __future__ import annotations

import json
import os
from pathlib import Path

from membench.core import results_files
from membench.measure.superseded import DISTURBED, FAILED, move_no_replace, superseded_dir


def _first_digest(path: Path) -> str | None:
    try:
        with results_files.open_binary(path, results_files.system_root(path)) as fh:
            return json.loads(fh.readline()).get("request_digest")
    except (OSError, ValueError, AttributeError):
        return None


class StoredIndex:
    def __init__(self, runs_dir: str, round_index: int, own_files: set[str]):
        self._runs_dir, self._name = Path(runs_dir), f"r{round_index}.jsonl"
        self._own = {os.path.normpath(p) for p in own_files}
        self._by_digest: dict[str, list[Path]] | None = None

    def _build(self) -> dict[str, list[Path]]:
        """Files that are no cell's own file, nor the same file (a hard
        link) as one: one stored repetition serves one cell of a round."""
        found: dict[str, list[Path]] = {}
        self._taken = {_inode(p) for p in self._own} - {None}
        # a try moved aside as disturbed (membench.measure.rounds) never comes
        # back, nor a failed repetition moved aside to be measured again
        never = {superseded_dir(self._runs_dir) / why for why in (DISTURBED, FAILED)}
        for base in (self._runs_dir, superseded_dir(self._runs_dir)):
            for dirpath, _, files in os.walk(base):
                if self._name in files and not never & set(Path(dirpath).parents):
                    path = Path(dirpath) / self._name
                    if os.path.normpath(path) not in self._own and _inode(path) not in self._taken:
                        found.setdefault(_first_digest(path), []).append(path)
        return found

    def candidates(self, request_digest: str) -> list[Path]:
        if self._by_digest is None:
            self._by_digest = self._build()
        return [p for p in self._by_digest.get(request_digest, []) if _inode(p) not in self._taken]

    def adopt(self, source: Path, path: str) -> None:
        """Give `path` the stored repetition `source` (see the module)."""
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        if superseded_dir(self._runs_dir) in source.parents:
            move_no_replace(source, Path(path))
        else:
            os.link(source, path)
        self._taken.add(_inode(Path(path)))


def _inode(path) -> tuple[int, int] | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_dev, stat.st_ino

