"""What a stored repetition is, by content: the request it answered (its
digest, rounds.cell_request), the binary that measured it (the sha256 of
the built file) and the machine it ran on (a digest of the stable part of
topology.json). None of them is a time or a path, so moving, copying,
touching, rebuilding byte-identical binaries or probing again changes
nothing; a real change to one of them is named (superseded.reason)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from membench.plan import knobs

# The layout a measurement depends on: CPU model and features, CPUs with
# their cores, packages, nodes and SMT siblings, caches, and the nodes with
# their CPUs and distances. Not memory sizes (a VM balloons them, a probe
# sees MemTotal move by gigabytes) and nothing added to topology.json later
# unless it is added here on purpose.
STABLE_KEYS = ("cpu_model", "cpu_flags", "cpus", "cores", "packages", "caches", "llc_bytes", "line_bytes")


def stable_topology(topology: dict) -> dict:
    stable = {key: topology.get(key) for key in STABLE_KEYS}
    stable["nodes"] = [
        {
            "node": node.get("node"),
            "cpus": node.get("cpus"),
            "distances": node.get("distances"),
            # memory-only and CPU-only nodes stay told apart, never by size
            "has_memory": bool(node.get("memory_bytes")),
        }
        for node in topology.get("nodes", [])
    ]
    return stable


def machine_digest(topology: dict) -> str:
    text = json.dumps(stable_topology(topology), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


_FILE_DIGESTS: dict[tuple, str] = {}


def file_sha256(path: str | Path) -> str:
    """sha256 of a file's bytes, read once per (path, size, mtime, inode)
    in this process: a round asks for each binary once per cell."""
    stat = os.stat(path)
    key = (str(path), stat.st_size, stat.st_mtime_ns, stat.st_ino)
    if key not in _FILE_DIGESTS:
        sha = hashlib.sha256()
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                sha.update(block)
        _FILE_DIGESTS[key] = sha.hexdigest()
    return _FILE_DIGESTS[key]


# A request's knobs as a record states them (request key -> record key):
# what a request change changed, read back from the stored records.
REQUEST_KNOBS = knobs.requested()


def request_change(records: list[dict], request: dict) -> str | None:
    """The short digest of the knobs whose stored values differ from the
    request, with those stored values ({"ntimes": 6}): the same for every
    repetition of every cell one edit changed, so one edit's superseded
    files share one folder. None when the records do not show what differs."""
    first = records[0]
    changed = {
        key: first[record_key]
        for key, record_key in REQUEST_KNOBS.items()
        if key in request and record_key in first and first[record_key] != request[key]
    }
    if not changed:
        return None
    return hashlib.sha256(json.dumps(changed, sort_keys=True).encode()).hexdigest()[:12]


def verdict(records: list[dict], request_digest: str, binary_sha256: str, machine_digest: str,
            request: dict | None = None) -> tuple[str, str | None]:  # fmt: skip
    """How a stored repetition stands against what the round would measure:
    ("current", None); ("unverified", None) for a file from before membench
    recorded binary and machine (its request matches: kept, and counted as
    such); or ("superseded", why) with why = "<what changed>-<short digest>",
    which names the folder the old file is moved to: for a request, the
    digest of the knobs that changed with their stored values (one folder
    per edit, request_change), else of the old request (it names the
    repetition too); for a binary or the machine, their old digest."""
    if not records:
        return "superseded", "unreadable-empty"
    for key, now, what in (
        ("request_digest", request_digest, "request"),
        ("binary_sha256", binary_sha256, "binary"),
        ("machine_digest", machine_digest, "machine"),
    ):
        old = {r.get(key) for r in records}
        if key != "request_digest" and old == {None}:
            continue  # recorded before this key existed (see unverified)
        if old != {now}:
            stored = next((v for v in old if v not in (None, now)), None)
            if what == "request" and request is not None and (change := request_change(records, request)):
                stored = change
            return "superseded", f"{what}-{str(stored)[:12] if stored else 'none'}"
    if any(r.get("binary_sha256") is None or r.get("machine_digest") is None for r in records):
        return "unverified", None
    return "current", None
