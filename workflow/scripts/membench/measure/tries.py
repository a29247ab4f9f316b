"""How many tries a repetition has had, across runs.

A round measures a disturbed repetition again up to disturbed_retries more
times (membench.measure.rounds). The bound is per repetition, not per run:
a round stopped between two tries (Ctrl-C, scancel, a reboot) leaves

    results/<system>/runs/<cell>/r<k>.tries.json

beside the repetition's file, written atomically before each disturbed try
is moved aside, holding how many tries were measured and the identity
(request, binary, machine) they were measured for. The next round goes on
from there: the retry bound holds, and `measure_try` in the kept record is
the true count. A try stopped before it ended stored nothing and is not
counted. The file is removed once the repetition's last try is stored (or
found stored); it is bookkeeping, never a result, and no reader of run
files matches its name (r<k>.jsonl only).
"""

from __future__ import annotations

import json
from pathlib import Path

from membench.core import results_files
from membench.core.atomic_files import write_text_atomic

IDENTITY_KEYS = ("request_digest", "binary_sha256", "machine_digest")


def tries_path(run_path: str | Path) -> Path:
    run_path = Path(run_path)
    return run_path.with_name(run_path.name.removesuffix(".jsonl") + ".tries.json")


def earlier_tries(run_path: str | Path, identity_keys: dict) -> int:
    """Tries measured and moved aside for this repetition by earlier runs,
    for the same request, binary and machine; 0 when none (or the file is
    unreadable, or was written for another identity: an edit since)."""
    path = tries_path(run_path)
    try:
        stored = json.loads(results_files.read_text(path, results_files.system_root(path)))
    except FileNotFoundError:
        return 0
    except (OSError, ValueError):
        return 0  # damaged bookkeeping: the bound starts again, nothing is lost
    if not isinstance(stored, dict) or any(stored.get(key) != identity_keys.get(key) for key in IDENTITY_KEYS):
        return 0
    tries = stored.get("tries")
    return tries if isinstance(tries, int) and tries > 0 else 0


def note_tries(run_path: str | Path, identity_keys: dict, tries: int) -> None:
    """Say that `tries` tries of this repetition were measured (written
    before the last of them is moved aside: a stop in between counts it)."""
    text = json.dumps({**{key: identity_keys[key] for key in IDENTITY_KEYS}, "tries": tries}, sort_keys=True)
    write_text_atomic(tries_path(run_path), text + "\n")


def forget_tries(run_path: str | Path) -> None:
    """The repetition is stored for good: its count is no longer needed."""
    path = tries_path(run_path)
    results_files.check_under(path, results_files.system_root(path))
    path.unlink(missing_ok=True)
