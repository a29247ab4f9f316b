"""The record contract (DESIGN section 4; membench.core.record_schema) and atomic
JSON-lines files."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from membench.core import record_schema, results_files


def contract_problems(record: dict) -> list[str]:
    """What in one record of the harness breaks the record contract
    (workflow/schemas/record.schema.yaml, without the keys membench adds
    when it stores a record); empty when it holds."""
    return record_schema.problems(record, stored=False)


def read_jsonl(path: Path) -> list[dict]:
    """The records of a JSON-lines file, a regular file reached without a
    link (membench.core.results_files)."""
    text = results_files.read_text(path, results_files.system_root(path))
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def write_jsonl_atomic(path: Path, records: list[dict]) -> None:
    """Write to a temporary file beside the target, fsync, then rename: a
    reader (or an interrupted run) sees the whole file or none of it."""
    write_text_atomic(path, "".join(json.dumps(r, sort_keys=True) + "\n" for r in records))


def current_umask() -> int:
    """The process's umask, read without changing it (os.umask can only be
    read by setting it, which would race with other threads creating files)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_text_atomic(path: Path, text: str) -> None:
    path = Path(path)
    # a folder of a system's results that leads out of it (a link) is
    # refused before anything is created there; the rename below replaces
    # a link in the last component, never what it points to
    results_files.check_under(path, results_files.system_root(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        # mkstemp creates the file 0600 whatever the umask; the result gets
        # the mode open() would have given it (0644 under umask 022), so
        # colleagues on a shared file system can read it.
        os.fchmod(fd, 0o666 & ~current_umask())
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
