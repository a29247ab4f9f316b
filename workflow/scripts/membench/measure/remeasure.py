"""Measuring failed repetitions again (`make remeasure-failed`).

A repetition whose harness failed (killed by the OOM killer or a kill -9,
crashed, or failed its validation) is stored as `failed` records with the
reason, and a round keeps it like any stored repetition: measured again
for the same request, binary and machine it would, as a rule, fail again.
Once the cause is gone (memory freed, a stray kill), this moves each
failed repetition of a results folder aside, whole (same bytes, same
time), to

    results/<system>/superseded/failed/<cell>/r<k>.jsonl[.N]

never overwriting or deleting one, under the system's measure lock (never
while a round measures there). A round never brings such a file back
(membench.measure.stored_index). Every round manifest listing one then no
longer describes the stored runs (membench.core.manifests), so the next
run measures those repetitions again and keeps everything else.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from membench.core import layout
from membench.core.atomic_files import read_jsonl
from membench.measure import lock as measure_lock
from membench.measure import superseded


class Busy(Exception):
    """A round measures this system now: nothing was moved."""


def failed_repetitions(runs_dir: str | Path) -> list[Path]:
    """Repetition files under runs/ holding a `failed` record. A file that
    cannot be read is left to collect, which names it."""
    found = []
    for dirpath, dirs, files in os.walk(runs_dir):
        dirs.sort()
        for name in sorted(files):
            if not layout.RUN_FILE.match(name):
                continue
            try:
                records = read_jsonl(Path(dirpath) / name)
            except (OSError, ValueError):
                continue
            if any(isinstance(r, dict) and r.get("status") == "failed" for r in records):
                found.append(Path(dirpath) / name)
    return found


def move_failed_aside(system_dir: str | Path, say: Callable[[str], None] = lambda line: None) -> list[tuple[Path, Path]]:
    """Move every failed repetition of one system's results folder to
    superseded/failed/ (see the module); (from, to) per file moved. Busy
    when a round holds the system's measure lock."""
    runs_dir = Path(system_dir) / layout.RUNS

    def refuse() -> None:
        raise Busy(f"a round is measuring {Path(system_dir).name} now: run this again once it has finished")

    moved = []
    with measure_lock.measuring(system_dir, say=lambda line: None, keep_waiting=refuse):
        for path in failed_repetitions(runs_dir):
            aside = superseded.move_aside(path, runs_dir, superseded.FAILED)
            say(f"{path} -> {aside}")
            moved.append((path, aside))
    return moved
