"""Comparable or not: the conditions of two result sets side by side.

What is compared (each row: what, BASE, NEW, whether it differs):
- the binary of each kernel variant measured on both sides: its content
  hash where the records carry one (binary_sha256), the compiler and the
  flags the records name (compiler, cflags), the harness version;
- the system (environment.json): kernel, THP mode and defrag, reserved huge
  pages (how many, not how many were free), numa_balancing,
  zone_reclaim_mode, governor, compiler, virtual machine or not, and any
  other key the probe wrote, except those that name the run rather than
  the machine (hostname, SLURM job);
- the topology (topology.json): CPU model, CPUs / cores / packages, NUMA
  nodes with their CPUs, node distances, last-level cache, cache line, CPU
  flags; the memory of each node is shown beside, never a difference (a
  guest's balloon moves it between two runs minutes apart, and
  machine_digest ignores it for the same reason).
A condition missing on a side reads "not recorded" and counts as a
difference: nothing is called comparable on the strength of a file that is
not there.
"""

from __future__ import annotations

import json

import pandas as pd

from membench.core.text import gib_text

ENV_LABELS = {
    "kernel": "kernel", "thp_enabled": "THP mode (enabled)", "thp_defrag": "THP defrag",
    "hugepages": "huge pages reserved", "numa_balancing": "numa_balancing", "zone_reclaim_mode": "zone_reclaim_mode",
    "governor": "CPU frequency governor", "compiler": "compiler (probe)", "virtualized": "virtual machine",
}  # fmt: skip
ENV_IGNORED = ("hostname", "slurm_job_id")
BINARY_KEYS = {"binary_sha256": "binary hash", "compiler": "compiler", "cflags": "compiler flags",
               "harness_version": "harness version"}  # fmt: skip
NOT_RECORDED = "not recorded"


def _text(value) -> str:
    if value is None:
        return NOT_RECORDED
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    return str(value)


def _environment(env: dict | None) -> dict[str, str]:
    if env is None:
        return {}
    out = {}
    for key, value in env.items():
        if key in ENV_IGNORED:
            continue
        if key == "hugepages" and isinstance(value, dict):
            value = {size: pages.get("nr") if isinstance(pages, dict) else pages for size, pages in value.items()}
        out[key] = _text(value)
    return out


def _topology(topo: dict | None) -> dict[str, str]:
    if topo is None:
        return {}
    nodes = topo.get("nodes") or []
    return {
        "CPU model": _text(topo.get("cpu_model")),
        "CPUs / cores / packages": f"{len(topo.get('cpus') or [])} / {topo.get('cores')} / {topo.get('packages')}",
        "NUMA nodes (CPUs)": "; ".join(f"node {n.get('node')}: {len(n.get('cpus') or [])} CPUs" for n in nodes)
        or NOT_RECORDED,
        "node distances": _text([n.get("distances") for n in nodes]) if nodes else NOT_RECORDED,
        "last-level cache": _text(topo.get("llc_bytes")),
        "cache line": _text(topo.get("line_bytes")),
        "CPU flags": " ".join(sorted(topo.get("cpu_flags") or [])) or NOT_RECORDED,
    }


MEMORY_ROW = "memory per node (shown, not compared: a balloon or reservations move it)"


def _memory(topo: dict | None) -> str:
    nodes = (topo or {}).get("nodes") or []
    return "; ".join(f"node {n.get('node')}: {gib_text(n.get('memory_bytes') or 0)}" for n in nodes) or NOT_RECORDED


def _binaries(table: pd.DataFrame) -> dict[tuple[str, str], dict[str, str]]:
    """(kernel, variant) -> binary key -> the values its records carry
    ("a | b" when they vary within the side)."""
    out: dict[tuple[str, str], dict[str, str]] = {}
    if table.empty:
        return out
    ok = table[table["status"] == "ok"] if "status" in table else table
    present = [k for k in BINARY_KEYS if k in ok]
    for (kernel, variant), group in ok.groupby(["kernel", "variant"], sort=True):
        out[(kernel, variant)] = {
            key: " | ".join(sorted({_text(v) for v in group[key].dropna().unique()})) or NOT_RECORDED for key in present
        }
    return out


def _row(kind: str, what: str, base: str, new: str) -> dict:
    return {"kind": kind, "what": what, "base": base, "new": new, "differs": base != new}


def conditions(base, new) -> list[dict]:
    """Every condition row (see the module doc), differences first within
    each kind. base/new: compare.Side (environment, topology, table)."""
    rows = []
    b_bin, n_bin = _binaries(base.table), _binaries(new.table)
    for kernel_variant in sorted(set(b_bin) & set(n_bin)):
        b, n = b_bin[kernel_variant], n_bin[kernel_variant]
        for key, label in BINARY_KEYS.items():
            if key in b or key in n:
                rows.append(_row("binary", f"{'-'.join(kernel_variant)}: {label}",
                                 b.get(key, NOT_RECORDED), n.get(key, NOT_RECORDED)))  # fmt: skip
    if not any(r["what"].endswith(BINARY_KEYS["binary_sha256"]) for r in rows):
        rows.append(_row("binary", "binary hash", NOT_RECORDED, NOT_RECORDED) | {"differs": None})
    b_env, n_env = _environment(base.environment), _environment(new.environment)
    keys = list(ENV_LABELS) + sorted((set(b_env) | set(n_env)) - set(ENV_LABELS))
    for key in keys:
        rows.append(_row("system", ENV_LABELS.get(key, key), b_env.get(key, NOT_RECORDED), n_env.get(key, NOT_RECORDED)))
    b_topo, n_topo = _topology(base.topology), _topology(new.topology)
    for key in dict.fromkeys([*b_topo, *n_topo]):
        rows.append(_row("topology", key, b_topo.get(key, NOT_RECORDED), n_topo.get(key, NOT_RECORDED)))
    # shown, never a difference: a guest's balloon and the kernel's reservations move it between runs
    rows.append(_row("topology", MEMORY_ROW, _memory(base.topology), _memory(new.topology)) | {"differs": False})
    order = {"binary": 0, "system": 1, "topology": 2}
    return sorted(rows, key=lambda r: (order[r["kind"]], not r["differs"]))


def headline(rows: list[dict]) -> str:
    """One sentence: comparable, or which conditions differ."""
    differing = [r["what"] for r in rows if r["differs"]]
    unknown = [r["what"] for r in rows if r["differs"] is None]
    if differing:
        shown = ", ".join(differing[:8]) + (f" and {len(differing) - 8} more" if len(differing) > 8 else "")
        return f"NOT like for like: {len(differing)} condition(s) differ: {shown}."
    text = "Same conditions in every recorded respect (binary flags, system settings, topology)."
    if unknown:
        text += " Not recorded, so not checked: " + ", ".join(unknown) + "."
    return text
