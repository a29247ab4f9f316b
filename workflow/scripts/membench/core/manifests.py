"""A round's manifest says which repetition files the round stored; it is
checked against those files before Snakemake plans, never trusted.

The manifest (results/<system>/rounds/r<k>-<study>.json, the round's
Snakemake output) records, per run file, its size and modification time
when the round ended (`stored`). A manifest whose files are gone, or were
replaced since (copied in with `cp -a`, which keeps an older time; an undone
edit whose files another round wrote; restored from a backup), no longer
describes the stored runs: its round runs again (the workflow forces it, as
`--forcerun` would), and the round keeps every repetition that is the same
by content, moves the others to superseded/ and measures what is missing.
Manifests written before `stored` was recorded are checked for missing
files only.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from membench.core import results_files
from membench.core.atomic_files import write_text_atomic


def file_state(path: str) -> list[int] | None:
    """[size, mtime_ns] of a stored file, None when there is none."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns]


def stored_states(paths: list[str]) -> dict[str, list[int] | None]:
    return {path: file_state(path) for path in paths}


def stale_reason(manifest_file: str | Path) -> str | None:
    """Why an existing manifest no longer describes the stored runs, or
    None when it does (or does not exist: Snakemake sees a missing output)."""
    try:
        manifest = json.loads(results_files.read_text(manifest_file, results_files.system_root(manifest_file)))
        runs = list(manifest["runs"])
        stored = manifest.get("stored") or {}
    except FileNotFoundError:
        return None
    except results_files.UnsafeResultsFile as error:
        return f"it is not a readable manifest ({error})"
    except (OSError, ValueError, KeyError, TypeError):
        return "it is not a readable manifest"
    for path in runs:
        now = file_state(path)
        if now is None:
            return f"{path} is missing"
        if path in stored and stored[path] != now:
            return f"{path} changed since the round stored it"
    return None


def fingerprint(paths: list[str]) -> str:
    """A digest of the names, sizes and modification times of stored files:
    what figures-only collect reads changes it (files copied in with their
    older times, a restored file), a move of the whole folder does not."""
    digest = hashlib.sha256()
    for path in sorted(paths):
        digest.update(f"{path}\0{file_state(path)}\n".encode())
    return digest.hexdigest()[:16]


# One file standing for many inputs (issue 33): Snakemake prints every input
# path of a failed job in its error box, which buried collect's message under
# ~150 paths. An index, written at planning time and rewritten only when what
# it describes changed, keeps Snakemake's rerun on change (its time moves
# exactly then) with one path in the box.


def index_holds(path: str | Path, lines: list[str]) -> bool:
    """Whether the stored index says these lines (one per described file)."""
    try:
        return Path(path).read_text() == "".join(f"{line}\n" for line in lines)
    except OSError:
        return False


def write_index(path: str | Path, lines: list[str]) -> str:
    """Write the index when its text differs from the stored one; return its path."""
    if not index_holds(path, lines):
        write_text_atomic(Path(path), "".join(f"{line}\n" for line in lines))
    return str(path)


def stored_index_lines(paths: list[str]) -> list[str]:
    """Per stored run file: its path, size and modification time (a file
    copied in with `cp -a`, restored or replaced changes its line)."""
    return [f"{path}\t{json.dumps(file_state(path))}" for path in sorted(paths)]


def read_stored_index(path: str | Path) -> list[str]:
    """The run file paths a stored index lists."""
    return [line.split("\t", 1)[0] for line in Path(path).read_text().splitlines() if line]


def source_index_lines(root: str | Path) -> list[str]:
    """Per Python source under root: its content digest and path (an edit
    changes its line; a touch does not)."""
    root = Path(root)
    return [
        f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.relative_to(root)}"
        for p in sorted(root.rglob("*.py"))
    ]
