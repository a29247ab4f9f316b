"""Does a cell fit in the memory the host can give? Decided before the
harness allocates anything, so that a cell too large becomes a `skipped`
record instead of a process (and maybe its neighbours) killed by the OOM
killer.

What a cell needs comes from the family's `memory` entry in
kernels/families/variants.yaml. What the host can give is the smaller of
MemAvailable (/proc/meminfo) and the headroom of every memory cgroup the
process is in (cgroup v2 memory.max, v1 memory.limit_in_bytes: under SLURM
the job's limit). Both are read below `root`, so tests can point it at a
fake tree.

The free memory of the NUMA nodes a bind or preferred policy names is only
a note, never a reason to skip: on some machines (virtual machines among
them) a node's sysfs meminfo reports far less than /proc/meminfo and moves
from one read to the next, and a preferred policy falls back to other
nodes anyway.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from membench.core.text import size_text

# The chase's visiting order holds one index per pointer slot (the cell's
# chase_spacing); without one, per 64-byte line, the smallest slot it is
# built over in practice, so the estimate errs high.
CACHE_LINE = 64
# cgroup v1 writes "no limit" as a page-rounded LONG_MAX.
V1_UNLIMITED = 2**60


@dataclass(frozen=True)
class Need:
    bytes: int
    parts: str  # how the total is made up, for the reason


@dataclass(frozen=True)
class HostMemory:
    available: int | None  # bytes this process may still take; None = unknown
    source: str  # where the binding limit comes from
    details: list[str] = field(default_factory=list)




def cell_need(model: dict, size: int, threads: int, ops: tuple[str, ...], spacing: int = CACHE_LINE) -> Need:
    """Bytes one harness process allocates: its arrays, the load threads'
    arrays (loaded; the ops run one after the other) and the visiting order
    (chase, loaded)."""
    total = model["arrays"] * size
    parts = [f"{model['arrays']} x {size_text(size)}"]
    if "load_arrays" in model and threads > 1:
        per = max(model["load_arrays"].get(op, 0) for op in ops)
        total += (threads - 1) * per * size
        parts.append(f"{threads - 1} load threads x {per} x {size_text(size)}")
    if "order_bytes_per_line" in model:
        order = size // spacing * model["order_bytes_per_line"]
        total += order
        parts.append(f"{size_text(order)} visiting order")
    return Need(total, " + ".join(parts))


def _fields(text: str) -> dict[str, int]:
    """`Key: value [kB]` lines (meminfo) or `key value` lines (memory.stat)
    as bytes / numbers."""
    out = {}
    for match in re.finditer(r"^(?:Node \d+ )?([\w()]+):?\s+(\d+)( kB)?\s*$", text, re.M):
        out[match.group(1)] = int(match.group(2)) * (1024 if match.group(3) else 1)
    return out


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def _cgroup_dirs(root: Path) -> list[tuple[Path, str]]:
    """The memory cgroup directories of this process, leaf first, each with
    its version ("v2" or "v1"); empty when there is none to read."""
    text = _read(root / "proc/self/cgroup") or ""
    for line in text.splitlines():
        if line.count(":") < 2:
            continue
        _, controllers, path = line.split(":", 2)
        if controllers == "" and line.startswith("0::"):
            base, version = root / "sys/fs/cgroup", "v2"
        elif "memory" in controllers.split(","):
            base, version = root / "sys/fs/cgroup/memory", "v1"
        else:
            continue
        parts = [p for p in path.split("/") if p]
        dirs = [(base.joinpath(*parts[:n]), version) for n in range(len(parts), -1, -1)]
        found = [(d, v) for d, v in dirs if d.is_dir()]
        if version == "v1" or any((d / "memory.max").exists() for d, _ in found):
            return found
    return []


def _cgroup_headroom(directory: Path, version: str) -> tuple[int, str] | None:
    """Limit minus what the cgroup holds that cannot simply be dropped
    (inactive page cache is reclaimed before the OOM killer acts)."""
    if version == "v2":
        limit_text, usage_file, inactive_key = _read(directory / "memory.max"), "memory.current", "inactive_file"
        name = "memory.max"
    else:
        limit_text, usage_file, inactive_key = (
            _read(directory / "memory.limit_in_bytes"), "memory.usage_in_bytes", "total_inactive_file",
        )  # fmt: skip
        name = "memory.limit_in_bytes"
    if limit_text is None or limit_text.strip() == "max" or int(limit_text) >= V1_UNLIMITED:
        return None
    limit = int(limit_text)
    usage = int((_read(directory / usage_file) or "0").strip() or 0)
    inactive = _fields(_read(directory / "memory.stat") or "").get(inactive_key, 0)
    headroom = max(limit - max(usage - inactive, 0), 0)
    return headroom, f"cgroup {version} {name} {size_text(limit)} at {directory}, {size_text(usage - inactive)} in use"


def host_memory(root: Path = Path("/")) -> HostMemory:
    """What this process may still allocate: min(MemAvailable, every
    limiting cgroup's headroom)."""
    meminfo = _fields(_read(root / "proc/meminfo") or "")
    candidates = []
    if "MemAvailable" in meminfo:
        candidates.append((meminfo["MemAvailable"], "MemAvailable in /proc/meminfo"))
    for directory, version in _cgroup_dirs(root):
        try:
            headroom = _cgroup_headroom(directory, version)
        except ValueError:  # a counter that is not a number: no limit known there
            headroom = None
        if headroom:
            candidates.append(headroom)
    if not candidates:
        return HostMemory(None, "unknown (no MemAvailable, no cgroup limit)")
    available, source = min(candidates)
    return HostMemory(available, source, [f"{size_text(b)} ({s})" for b, s in candidates])


def policy_nodes(policy: str) -> list[int]:
    """The nodes a bind or preferred policy names (resolved: remote is a bind
    by now); empty for the others."""
    match = re.fullmatch(r"(?:bind|preferred):([0-9,]+)", policy)
    return [int(n) for n in match.group(1).split(",")] if match else []


def node_free(root: Path, nodes: list[int]) -> int | None:
    """MemFree of the named nodes from sysfs, None when unreadable."""
    total = 0
    for node in nodes:
        text = _read(root / f"sys/devices/system/node/node{node}/meminfo")
        if text is None or "MemFree" not in _fields(text):
            return None
        total += _fields(text)["MemFree"]
    return total


@dataclass(frozen=True)
class Fit:
    skip_reason: str | None
    note: str | None
    record: dict  # keys every record of the cell carries


def check(model: dict, *, size: int, threads: int, ops: tuple[str, ...], pages: str, policy: str,
          root: Path = Path("/"), spacing: int = CACHE_LINE) -> Fit:  # fmt: skip
    """Skip reason (both numbers in it) when the cell needs more than the
    host can give; a note when the bound nodes report less free memory."""
    need = cell_need(model, size, threads, ops, spacing)
    if pages.startswith("hugetlb"):
        # The arrays come from the reserved huge-page pool, which
        # MemAvailable does not count; the harness checks the pool itself.
        unchecked = "not compared: hugetlb arrays come from the reserved pool, which the harness checks"
        record = {"memory_needed_bytes": need.bytes, "memory_available_bytes": None, "memory_limit": unchecked}
        return Fit(None, None, record)
    host = host_memory(root)
    record = {"memory_needed_bytes": need.bytes, "memory_available_bytes": host.available, "memory_limit": host.source}
    reason = note = None
    if host.available is not None and need.bytes > host.available:
        reason = (
            f"the cell needs {size_text(need.bytes)} ({need.bytes} bytes: {need.parts}) but the host can give "
            f"{size_text(host.available)} ({host.available} bytes: {host.source}); not run, to spare it the OOM killer"
        )
    nodes = policy_nodes(policy)
    free = node_free(root, nodes) if nodes else None
    if free is not None and need.bytes > free:
        note = (
            f"{policy}: node(s) {','.join(map(str, nodes))} report {size_text(free)} free (sysfs node meminfo), "
            f"less than the {size_text(need.bytes)} needed; the system-wide limit decides (node counters "
            "under-report on some machines), so pages may land elsewhere or the run may fail"
        )
        record["memory_note"] = note
    return Fit(reason, note, record)
