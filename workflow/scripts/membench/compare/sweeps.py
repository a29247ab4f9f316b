"""A working-set sweep compared per hierarchy level, not per point
(README, "Comparing two result sets"): each point's level, by the sysfs
cache sizes of the side's topology.json and the lines the point touches,
and each process's points in a level as one value."""

from __future__ import annotations

import numpy as np
import pandas as pd

from membench.analyse.hierarchy import MEMORY, cache_levels
from membench.core.text import size_text
from membench.plan import knobs, latency_sweep


def sweep_levels(table: pd.DataFrame, topology: dict | None) -> pd.Series:
    """The hierarchy level of each sweep point (a record with a working
    set): the smallest cache of the side's topology.json that holds the
    lines the point touches, else memory (membench.analyse.hierarchy's
    naming, by sysfs sizes, not by plateaus: the same rule on both sides
    whatever their latencies). None for records without a working set, and
    for every record when the topology is unknown (points compared one by
    one, as before)."""
    out = pd.Series(None, index=table.index, dtype=object)
    if "working_set_bytes" not in table or not topology:
        return out
    levels = cache_levels(topology)
    line = int(topology.get("line_bytes") or 64)
    spacing = next((table[c] for c in ("chase_spacing", knobs.asked("chase_spacing")) if c in table), None)
    points = table["working_set_bytes"].notna()
    ws = table.loc[points, "working_set_bytes"].astype("int64")
    touched = ws.copy()
    if spacing is not None:  # the touched lines' rule, per record: the spacing may vary
        span = spacing.loc[points].map(lambda s: latency_sweep.span_per_line(s, line)).astype("int64")
        touched = ws * line // span
    named = pd.Series(MEMORY, index=touched.index, dtype=object)
    for name, size in reversed(levels):  # the smallest level that holds the lines wins
        named[touched <= size] = name
    out.loc[points] = named
    return out


def per_process(group: pd.DataFrame, metric: str) -> pd.DataFrame:
    """A sweep level's points as one value per process: the geometric mean
    of that process's points in the level (the processes stay the unit),
    on the first record of each process."""
    if "repeat" not in group or group["working_set_bytes"].nunique() < 2:
        return group
    ok = group[group[metric].notna() & (group[metric] > 0)]
    process = ok["cell"].astype(str) + "/" + ok["repeat"].astype(str) if "cell" in ok else ok["repeat"]
    first = ok.loc[~process.duplicated()].copy()
    means = np.exp(np.log(ok[metric].astype(float)).groupby(process, sort=False).mean())
    first[metric] = means.reindex(process.loc[first.index]).to_numpy()
    return first


def sweep_text(b_group: pd.DataFrame, n_group: pd.DataFrame, level) -> tuple[str | None, list[str]]:
    """The level's name with the points it holds; a note when the sides
    swept different points (only the common ones are compared)."""
    if level is None:
        return None, []
    b_ws, n_ws = set(b_group["working_set_bytes"]), set(n_group["working_set_bytes"])
    common = sorted(b_ws & n_ws)
    text = f"{level} ({len(common)} point{'s' if len(common) != 1 else ''}" + (
        f" {size_text(common[0])}–{size_text(common[-1])})" if len(common) > 1 else f" {size_text(common[0])})" if common else ")")
    notes = [] if b_ws == n_ws else [f"the sides swept different points in {level}: {len(common)} in common compared"]
    return text, notes
