"""Node x node matrices (rows: CPU node, columns: memory node) from the
per-cell summary of an experiment that asked for them (membench.plan.node_pairs):
the idle chase latency in ns or the read bandwidth in GB/s per pair, the
median over repetitions with its spread (min-max).

Nothing is silently included: a pair whose verified placement (threads'
CPUs, sampled page nodes; membench.store.verify) differs from the request in any
run keeps its number but is marked, with what differed; a pair that did
not run says why (skipped or failed, its reason as a footnote shared by
every cell with the same reason, so a 16-node matrix stays readable); a
node without CPUs or without memory is named in its row or column header.
"""

from __future__ import annotations

import math
import numbers
import re
from dataclasses import dataclass, field

import pandas as pd

from membench.core.text import missing

from membench.plan import families, knobs

LATENCY_KERNELS = tuple(families.named(lambda f: f.metric == families.LATENCY))
# Axes other than the pair that may vary within a matrix experiment: each
# combination is a matrix of its own.
OTHER_AXES = knobs.columns("variant", "threads", "pages", "init", "size", "chase_group")


@dataclass
class NodeMatrix:
    """One matrix: frames indexed by row key (CPU node) x column key
    (memory node); `status` is ok | mismatch | skipped | failed | missing."""

    system: str
    title: str
    metric: str  # "ns" or "GB/s"
    median: pd.DataFrame
    low: pd.DataFrame
    high: pd.DataFrame
    runs: pd.DataFrame
    status: pd.DataFrame
    note: pd.DataFrame  # the reason (skipped/failed) or what differed (mismatch)
    row_notes: dict = field(default_factory=dict)
    column_notes: dict = field(default_factory=dict)


def _node_key(text: str, prefix: str):
    """"node:3" -> 3, "bind:3" -> 3; anything else stays its text."""
    match = re.fullmatch(prefix + r":([0-9]+)", str(text))
    return int(match.group(1)) if match else str(text)


def _sort_key(key):
    return (0, int(key), "") if isinstance(key, numbers.Integral) else (1, 0, str(key))


def node_notes(topology: dict | None) -> tuple[dict, dict]:
    """(row notes, column notes): nodes without CPUs are rows that cannot
    run; nodes without memory, columns that cannot hold pages."""
    if not topology:
        return {}, {}
    cpu_nodes = {c["node"] for c in topology["cpus"]}
    rows, columns = {}, {}
    for node in topology["nodes"]:
        if node["node"] not in cpu_nodes:
            rows[node["node"]] = "no CPUs (memory only: CXL, HBM or similar)"
        if not node["memory_bytes"]:
            columns[node["node"]] = "no memory (CPUs only)"
    return rows, columns


def _metric_rows(cells: pd.DataFrame) -> tuple[pd.DataFrame, str, str]:
    """One row per cell with its median, min, max: the chase's largest
    working set (its idle latency), or a bandwidth kernel's last op."""
    if cells["kernel"].iloc[0] in LATENCY_KERNELS:
        cells = cells[cells["op"].isin([families.idle_latency()[1]]) | cells["op"].isna()] if "op" in cells else cells
        order = cells.assign(_ws=cells.get("working_set_bytes", pd.Series(0, index=cells.index)).fillna(0))
        last = order.sort_values("_ws").groupby("cell", sort=False).tail(1)
        return last.rename(columns={"ns_median": "median", "ns_min": "low", "ns_max": "high"}), "ns", "idle latency"
    ops = list(dict.fromkeys(cells["op"].dropna()))
    if ops:
        cells = cells[cells["op"] == ops[-1]]
    label = f"{ops[-1]} bandwidth" if ops else "bandwidth"
    return cells.rename(columns={"gbps_median": "median", "gbps_min": "low", "gbps_max": "high"}), "GB/s", label


def _status(row) -> tuple[str, str]:
    """(status, note) of one pair."""
    if row.get("n_ok", 0) > 0:
        mismatches = row.get("placement_mismatches", 0)
        if isinstance(mismatches, float) and math.isnan(mismatches):
            mismatches = 0
        if mismatches:
            return "mismatch", f"{int(mismatches)} of {int(row['n_ok'])} runs placed otherwise: {row.get('placement_notes')}"
        disturbed = row.get("n_disturbed", 0)
        if not missing(disturbed) and disturbed >= row["n_ok"]:
            # every run was disturbed: no number stands for the pair (membench.core.disturbance)
            return "disturbed", f"every run disturbed: {row.get('disturbed_by')}"
        return "ok", ""
    reason = row.get("reason")
    reason = "" if reason is None or (isinstance(reason, float) and math.isnan(reason)) else str(reason)
    if row.get("n_failed", 0) > 0:
        return "failed", reason or "failed"
    if row.get("n_skipped", 0) > 0:
        return "skipped", reason or "skipped"
    return "missing", "not measured"


def experiment_matrices(
    cells: pd.DataFrame, problems: pd.DataFrame, topologies: dict[str, dict], experiment: str
) -> list[NodeMatrix]:
    """Every matrix of one experiment: per system and per combination of
    the other axes that vary."""
    part = cells[cells["experiment"] == experiment]
    if part.empty:
        return []
    reasons = problems[problems["experiment"] == experiment].drop_duplicates("cell").set_index("cell")["reason"]
    part, metric, label = _metric_rows(part)
    part = part.assign(reason=part["cell"].map(reasons))
    varying = [a for a in OTHER_AXES if a in part and part[a].nunique(dropna=False) > 1]
    out = []
    for system, mine in part.groupby("system", sort=False):
        groups = mine.groupby(varying, dropna=False, sort=False) if varying else [((), mine)]
        for key, group in groups:
            key = key if isinstance(key, tuple) else (key,)
            extra = ", ".join(f"{knobs.knob_word(a)}={v}" for a, v in zip(varying, key))
            title = f"{system}: {label} ({metric})" + (f", {extra}" if extra else "")
            out.append(_one_matrix(system, title, metric, group, topologies.get(system)))
    return out


def _one_matrix(system: str, title: str, metric: str, group: pd.DataFrame, topology: dict | None) -> NodeMatrix:
    group = group.assign(row=group[knobs.asked("affinity")].map(lambda a: _node_key(a, "node")))
    group = group.assign(column=group[knobs.asked("policy")].map(lambda p: _node_key(p, "bind")))
    rows = sorted(set(group["row"].tolist()), key=_sort_key)
    columns = sorted(set(group["column"].tolist()), key=_sort_key)

    def frame(fill):
        return pd.DataFrame(fill, index=pd.Index(rows, dtype=object), columns=pd.Index(columns, dtype=object))

    median, low, high, runs = frame(math.nan), frame(math.nan), frame(math.nan), frame(0)
    status, note = frame("missing"), frame("not measured")
    for row in group.to_dict("records"):
        r, c = row["row"], row["column"]
        status.loc[r, c], note.loc[r, c] = _status(row)
        runs.loc[r, c] = int(row.get("n_ok", 0))
        if row.get("n_ok", 0) > 0:
            median.loc[r, c], low.loc[r, c], high.loc[r, c] = row["median"], row["low"], row["high"]
    row_notes, column_notes = node_notes(topology)
    return NodeMatrix(
        system, title, metric, median.astype(float), low.astype(float), high.astype(float), runs, status, note,
        {r: row_notes[r] for r in rows if r in row_notes}, {c: column_notes[c] for c in columns if c in column_notes},
    )  # fmt: skip
