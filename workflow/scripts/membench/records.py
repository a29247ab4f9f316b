"""The record contract (DESIGN section 4) and atomic JSON-lines files."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from membench import SCHEMA_VERSION

# key -> accepted types; None is accepted where the key may be null.
CONTRACT = {
    "schema": (int,),
    "system": (str,),
    "kernel": (str,),
    "variant": (str,),
    "op": (str, type(None)),
    "threads": (int,),
    "affinity": (str,),
    "policy": (str,),
    "pages": (str,),
    "init": (str,),
    "size_bytes": (int,),
    "repeat": (int,),
    "status": (str,),
    "reason": (str, type(None)),
}
OK_CONTRACT = {
    "valid": (bool,),
    "cpus": (list,),
    "page_nodes": (dict,),
    "hugepage_fraction": (int, float),
    "t_start": (int, float),
    "t_end": (int, float),
}
STATUSES = ("ok", "skipped", "failed")


def contract_problems(record: dict) -> list[str]:
    """What in one record breaks the contract (empty when it holds)."""
    problems = []
    required = dict(CONTRACT)
    if record.get("status") == "ok":
        required.update(OK_CONTRACT)
        if record.get("gbps") is None and record.get("ns_per_load") is None:
            problems.append("ok record without gbps or ns_per_load")
        if record.get("valid") is False:
            problems.append("ok record that did not validate (valid false)")
    for key, types in required.items():
        if key not in record:
            problems.append(f"missing {key}")
        elif not isinstance(record[key], types) or (
            bool not in types and isinstance(record[key], bool)
        ):
            problems.append(f"{key}={record[key]!r} is not {'/'.join(t.__name__ for t in types)}")
    if record.get("status") not in STATUSES:
        problems.append(f"status {record.get('status')!r} not in {STATUSES}")
    if record.get("status") != "ok" and not record.get("reason"):
        problems.append("a record that is not ok must say why (reason)")
    if record.get("schema") not in (None, SCHEMA_VERSION):
        problems.append(f"schema {record.get('schema')} is not {SCHEMA_VERSION}")
    return problems


def read_jsonl(path: Path) -> list[dict]:
    with open(path) as fh:
        return [json.loads(line) for line in fh if line.strip()]


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
