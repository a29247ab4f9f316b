"""Placement classes: each run's obtained placement (raw CPU lists and page
nodes, kept in the records) summarised into a few factors that stay few at
any machine size, derived from the record plus the system's topology.json.

Factors (one column each in the measurement table):
- threads_per_node / threads_per_package: threads counted per NUMA node
  (package), in node order, e.g. "8+8", "12+4", "16+0";
- node_imbalance: threads on the busiest node minus the idlest one
  (every node of the machine counts, so all threads on one of two nodes
  is imbalanced), in powers of two: the per-node split in a few classes;
- smt_shared_cores: physical cores that ran threads on two or more of
  their SMT siblings;
- oversubscribed_cpus: CPUs that held two or more threads at the end;
- migrated_threads: threads whose CPU at the end differs from the start;
- page_locality: where the sampled pages are relative to the threads' nodes:
  local (>= 90 % of the pages match the threads' node shares), remote
  (<= 10 %), split (between), or "not sampled";
- hugepages: the huge-page fraction binned (none, < 50 %, 50-99 %, all).
The figure colours runs by a coarser class that does not depend on the
thread count (one node / nodes even / uneven, SMT shared or not, ...), and
keeps the few most common, the rest grouped as "other".
"""

from __future__ import annotations

import json
import math
from collections import Counter

import pandas as pd

FACTORS = {
    "threads_per_node": "threads per node",
    "threads_per_package": "threads per package",
    "node_imbalance": "node imbalance",
    "smt_shared_cores": "SMT-shared cores",
    "oversubscribed_cpus": "oversubscribed CPUs",
    "migrated_threads": "migrated threads",
    "page_locality": "page nodes",
    "hugepages": "huge pages",
}
LOCAL_SHARE = 0.9
REMOTE_SHARE = 0.1
MAX_FIGURE_CLASSES = 8  # legend entries, "other" included
OTHER = "other"


def _load(value):
    """Lists and objects as stored in records (JSON) or in the CSV (JSON text; NaN for null)."""
    if isinstance(value, str):
        return json.loads(value)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return value


class Machine:
    """The lookups the classes need from one topology.json."""

    def __init__(self, topology: dict):
        self.node_of = {c["cpu"]: c["node"] for c in topology["cpus"]}
        self.package_of = {c["cpu"]: c.get("package", 0) for c in topology["cpus"]}
        self.core_of = {c["cpu"]: (c.get("package", 0), c.get("core", c["cpu"])) for c in topology["cpus"]}
        self.nodes = sorted({n["node"] for n in topology["nodes"]} | set(self.node_of.values()))
        self.packages = sorted(set(self.package_of.values()))

    def per(self, cpus: list[int], where: dict, keys: list[int]) -> str:
        counts = Counter(where.get(cpu, -1) for cpu in cpus)
        return "+".join(str(counts.get(k, 0)) for k in keys) + ("+?" if counts.get(-1) else "")


def pages_class(page_nodes: dict | None, thread_nodes: list[int]) -> tuple[str, float]:
    """(local | split | remote | not sampled, matched share): the share of
    pages that sit where the threads are, node by node (the overlap of the
    page-node shares with the thread-node shares)."""
    if not page_nodes:
        return "not sampled", math.nan
    threads = Counter(thread_nodes)
    total = sum(threads.values()) or 1
    matched = sum(min(float(frac), threads.get(int(node), 0) / total) for node, frac in page_nodes.items())
    if matched >= LOCAL_SHARE:
        return "local", matched
    if matched <= REMOTE_SHARE:
        return "remote", matched
    return "split", matched


def hugepage_bin(fraction) -> str:
    if fraction is None or (isinstance(fraction, float) and math.isnan(fraction)):
        return "unknown"
    fraction = float(fraction)
    if fraction <= 0:
        return "none"
    if fraction < 0.5:
        return "< 50 %"
    if fraction < 1:
        return "50-99 %"
    return "all"


def classify(machine: Machine, cpus, cpus_start, page_nodes, hugepage_fraction, migrated=None) -> dict:
    """The factors of one run (see the module doc)."""
    cpus = _load(cpus) or []
    start = _load(cpus_start)
    busy = set(cpus)
    by_core = Counter(machine.core_of.get(cpu, ("?", cpu)) for cpu in busy)
    if start is not None and len(start) == len(cpus):
        moved = sum(a != b for a, b in zip(start, cpus))
    elif migrated is not None and not (isinstance(migrated, float) and math.isnan(migrated)):
        moved = math.nan if bool(migrated) else 0  # only the flag: how many is unknown
    else:
        moved = math.nan
    pages, matched = pages_class(_load(page_nodes), [machine.node_of.get(c, -1) for c in cpus])
    per_node = Counter(machine.node_of.get(cpu, -1) for cpu in cpus)
    imbalance = max(per_node.get(n, 0) for n in machine.nodes) - min(per_node.get(n, 0) for n in machine.nodes)
    return {
        "threads_per_node": machine.per(cpus, machine.node_of, machine.nodes),
        "threads_per_package": machine.per(cpus, machine.package_of, machine.packages),
        "node_imbalance": imbalance,
        "smt_shared_cores": sum(1 for n in by_core.values() if n > 1),
        "oversubscribed_cpus": sum(1 for n in Counter(cpus).values() if n > 1),
        "migrated_threads": moved,
        "page_locality": pages,
        "page_locality_share": matched,
        "hugepages": hugepage_bin(hugepage_fraction),
    }


# --------------------------------------------------------------- summaries


COUNT_FACTORS = ("node_imbalance", "smt_shared_cores", "oversubscribed_cpus", "migrated_threads")


def count_bin(value) -> str | None:
    """0, 1, 2-3, 4-7, ...: counts in powers of two, so a factor has at most
    log2(CPUs) + 2 classes on any machine."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    value = int(value)
    if value < 2:
        return str(value)
    low = 1 << (value.bit_length() - 1)
    return f"{low}–{2 * low - 1}"


def factor_levels(ok: pd.DataFrame) -> pd.DataFrame:
    """The class of each run per factor, as text (counts binned); factors
    that were not derived (no topology) are left out."""
    levels = {}
    for factor in FACTORS:
        if factor not in ok or ok[factor].isna().all():
            continue
        column = ok[factor]
        if factor in COUNT_FACTORS:  # bin each distinct count once, not each run
            column = column.map({value: count_bin(value) for value in column.dropna().unique()})
        levels[factor] = column.astype(object)
    return pd.DataFrame(levels, index=ok.index)


def class_counts(levels: pd.Series, limit: int = 3) -> str:
    """"1 ×5, 0 ×3": the most common classes first, at most `limit`, then
    how many runs the rest hold."""
    counts = levels.fillna("unknown").value_counts()
    shown = [f"{level} ×{n}" for level, n in counts.head(limit).items()]
    rest = int(counts.iloc[limit:].sum())
    return ", ".join(shown + ([f"{len(counts) - limit} more ×{rest}"] if rest else []))


def placement_summary(ok: pd.DataFrame) -> str:
    """Placement of one cell's runs as classes with counts, one clause per
    factor ("threads per node 8+8 ×60; oversubscribed CPUs 0 ×52, 1 ×8")."""
    levels = factor_levels(ok)
    return "; ".join(f"{FACTORS[factor]} {class_counts(levels[factor])}" for factor in levels)


# -------------------------------------------------------- figure classes


def _node_words(per_node: str) -> str:
    counts = [int(n) for n in str(per_node).split("+") if n.isdigit()]
    used = [n for n in counts if n]
    if len(used) <= 1:
        return "one node"
    return "nodes even" if max(counts) - min(counts) <= 1 else "nodes uneven"


def coarse_words(ok: pd.DataFrame) -> pd.DataFrame:
    """Thread-count-independent words per run (one column per factor)."""
    moved = ok["migrated_threads"].astype(float)
    words = pd.DataFrame(
        {
            "nodes": ok["threads_per_node"].map(_node_words),
            "smt": ok["smt_shared_cores"].astype(float).gt(0).map({True: "SMT shared", False: "own cores"}),
            "oversubscribed": ok["oversubscribed_cpus"].astype(float).gt(0).map(
                {True: "oversubscribed", False: "1 thread/CPU"}
            ),
            "migrated": moved.gt(0).map({True: "migrated", False: "stayed"}).where(moved.notna(), "migration unknown"),
            "pages": "pages " + ok["page_locality"].astype(str),
            "hugepages": "huge pages " + ok["hugepages"].astype(str),
        },
        index=ok.index,
    )
    return words


# Coarse words in the order the figure names them when not all fit: where
# pages are and CPU sharing first, migration last (it rarely costs much).
WORD_PRIORITY = ["pages", "oversubscribed", "nodes", "smt", "hugepages", "migrated"]
def placement_words(ok: pd.DataFrame, limit: int = 2) -> str:
    """One cell's runs in the figure legend's short words ("one node ·
    own cores · pages local"); a word that differs between runs shows its
    most common values with counts ("pages local ×6/split ×2")."""
    needed = ("threads_per_node", "smt_shared_cores", "oversubscribed_cpus", "migrated_threads", "page_locality", "hugepages")
    if ok.empty or any(c not in ok for c in needed) or ok["threads_per_node"].isna().all():
        return ""
    words = coarse_words(ok)
    parts = []
    for column in WORD_PRIORITY:
        counts = words[column].value_counts()
        if len(counts) == 1:
            parts.append(str(counts.index[0]))
            continue
        shown = "/".join(f"{word} ×{n}" for word, n in counts.head(limit).items())
        rest = int(counts.iloc[limit:].sum())
        parts.append(shown + (f"/other ×{rest}" if rest else ""))
    return " · ".join(parts)


# Which coarse word stands for each factor of the modes table.
WORD_OF_FACTOR = {
    "page_locality": "pages", "oversubscribed_cpus": "oversubscribed", "threads_per_node": "nodes",
    "threads_per_package": "nodes", "node_imbalance": "nodes", "smt_shared_cores": "smt",
    "hugepages": "hugepages", "migrated_threads": "migrated",
}  # fmt: skip


def figure_classes(ok: pd.DataFrame, explaining: list[str] = (), max_classes: int = MAX_FIGURE_CLASSES) -> pd.Series:
    """One label per run for the figure of `ok` (one experiment's runs).
    Words join the label one factor at a time, first those that explain
    cells in the modes table (`explaining`: factor names, most often first),
    then WORD_PRIORITY, each only if the labels stay within max_classes - 1
    (a rare class that explains a cell is never hidden in "other" by a word
    that explains less); should the first word alone have more, the
    rarest become "other"."""
    if ok.empty or "threads_per_node" not in ok or ok["threads_per_node"].isna().all():
        return pd.Series("placement not classified", index=ok.index)
    words = coarse_words(ok)
    order = list(dict.fromkeys([WORD_OF_FACTOR[f] for f in explaining if f in WORD_OF_FACTOR] + WORD_PRIORITY))
    chosen: list[str] = []
    for word in order:
        if words[word].nunique() < 2:
            continue
        if not chosen or words[[*chosen, word]].drop_duplicates().shape[0] <= max_classes - 1:
            chosen.append(word)
    if not chosen:
        return pd.Series("same placement in every run", index=ok.index)
    labels = words[chosen].apply(" · ".join, axis=1)
    keep = labels.value_counts().index[: max_classes - 1]
    return labels.where(labels.isin(keep), OTHER)
