"""The report's first screen: per system, what its memory does, each number
linked to the section that derives it.

Pure functions over the analyse stage's tables (cells, modes, effective
concurrency, idle latencies): nothing here is measured or recomputed from
runs, so the summary can never disagree with the sections it links to.
"""

from __future__ import annotations

import math

import pandas as pd

from membench.analyse.caches import past_caches
from membench.analyse.modes import MIN_RUNS
from membench.plan import families
from membench.core.text import percent

# Families whose records are bandwidths (not latencies or transfers).
BANDWIDTH = families.named(lambda f: f.bandwidth)
# Placement words (membench.store.placement_classes.coarse_words) of the usual case.
USUAL_WORDS = {"own cores", "1 thread/CPU", "stayed"}
# The order in which placements of an idle latency are named.
PLACEMENT_ORDER = {"local": 0, "remote": 1, "interleave": 2}


def _known(value) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def experiment_anchor(experiment: str) -> str:
    return f"#experiment-{experiment}"


def _placement_text(row: pd.Series) -> str:
    """Verified placement in a few words: the obtained nodes and the short
    class words; a mismatch with the request is said, never dropped."""
    words = row.get("placement_words")
    if _known(words):
        # The summary names only what is worth a reader's look: the usual
        # case (own cores, one thread per CPU, no migration) is left to the
        # All cells table.
        text = " · ".join(w for w in str(words).split(" · ") if w not in USUAL_WORDS) or "usual placement"
    else:
        text = "placement not classified"
    mismatches = row.get("placement_mismatches")
    if _known(mismatches) and mismatches:
        text += f"; ⚠ {int(mismatches)} of {int(row['n_ok'])} runs not placed as asked"
    return text


def traffic(cells: pd.DataFrame) -> pd.Series:
    """What memory moved, the same count for every family: reads,
    write-allocate reads and write-backs (gbps_wa), else the STREAM count
    where a cell has no write-allocate figure."""
    if "gbps_wa_median" not in cells:
        return cells["gbps_median"].astype(float)
    return cells["gbps_wa_median"].astype(float).fillna(cells["gbps_median"].astype(float))


def _bandwidth_entry(row: pd.Series) -> dict:
    return {
        "family": row["kernel"],
        "traffic_gbps": float(row["traffic_median"]),
        "gbps": float(row["gbps_median"]),
        "op": row["op"],
        "threads": int(row["threads"]),
        "affinity": row["affinity"],
        "pages": row["pages"],
        "placement": _placement_text(row),
        "runs": int(row["n_used"]) if "n_used" in row and row["n_used"] == row["n_used"] else int(row["n_ok"]),
        "link": experiment_anchor(row["experiment"]),
        "cell": row["cell"],
    }


def bandwidth_cells(cells: pd.DataFrame) -> pd.DataFrame:
    if "gbps_median" not in cells:
        return cells.iloc[0:0]
    ok = cells[(cells["n_ok"] > 0) & cells["gbps_median"].notna() & cells["kernel"].isin(BANDWIDTH)]
    # a cell whose arrays fit the LLC its threads can use measures a cache
    ok = past_caches(ok)
    return ok.assign(traffic_median=traffic(ok))


def peak_per_family(cells: pd.DataFrame) -> list[dict]:
    """Per kernel family, the cell and op whose memory moved the most (the
    median memory traffic), highest first: one count for every family, so
    a read-modify-write kernel does not outrank copy by its STREAM count."""
    ok = bandwidth_cells(cells)
    if ok.empty:
        return []
    best = ok.loc[ok.groupby("kernel", sort=False)["traffic_median"].idxmax()]
    return [_bandwidth_entry(row) for _, row in best.sort_values("traffic_median", ascending=False, kind="stable").iterrows()]


def single_thread(cells: pd.DataFrame) -> dict | None:
    ok = bandwidth_cells(cells)
    one = ok[ok["threads"] == 1]
    if one.empty:
        return None
    return _bandwidth_entry(one.loc[one["traffic_median"].idxmax()])


def _pair_entries(pairs: pd.DataFrame) -> list[dict]:
    """A node x node matrix's latencies (placements "bind:J from node:I")
    in two lines at any node count: the local pairs (I = J) and the remote
    ones, each the median over the pairs with their range."""
    if pairs.empty:
        return []
    nodes = pairs["placement"].str.extract(r"^(?:bind|preferred):([0-9]+) from node:([0-9]+)$")
    local = nodes[0] == nodes[1]
    out = []
    for label, part in (("local pairs", pairs[local]), ("remote pairs", pairs[~local])):
        if part.empty:
            continue
        out.append(
            {
                "placement": f"node matrix, {label} ({len(part)}: {part['ns'].min():.1f}–{part['ns'].max():.1f} ns)",
                "pages": ", ".join(dict.fromkeys(part["pages"])),
                "group": ", ".join(dict.fromkeys(part["group"])),
                "spacing": ", ".join(dict.fromkeys(part["spacing"])) if "spacing" in part else "spacing not recorded",
                "flag": next((f for f in part["flag"] if isinstance(f, str)), None) if "flag" in part else None,
                "ns": float(part["ns"].median()),
                "runs": int(part["runs"].sum()),
                "link": "#idle-latency",
            }
        )
    return out


def idle_latency_entries(latencies: pd.DataFrame) -> list[dict]:
    """Idle latency per placement (local first) and page size; a node
    matrix's pairs in two lines (membench.analyse.node_matrix has them all)."""
    if latencies.empty:
        return []
    is_pair = latencies["placement"].str.contains(" from node:", regex=False)
    if is_pair.any():
        return idle_latency_entries(latencies[~is_pair]) + _pair_entries(latencies[is_pair])
    order = latencies.assign(
        _placement=latencies["placement"].map(lambda p: PLACEMENT_ORDER.get(p, 3)),
    ).sort_values(["_placement", "placement", "pages"], kind="stable")
    return [
        {
            "placement": row["placement"],
            "pages": row["pages"],
            "group": row["group"],
            "spacing": row.get("spacing", "spacing not recorded"),
            "flag": row.get("flag") if isinstance(row.get("flag"), str) else None,
            "ns": float(row["ns"]),
            "runs": int(row["runs"]),
            "link": "#idle-latency",
        }
        for _, row in order.iterrows()
    ]


def concurrency_at_peak(ec: pd.DataFrame, peak: dict | None) -> dict | None:
    """Little's law at the highest bandwidth measured: the peak cell's
    effective concurrency when an idle latency under its placement exists."""
    if peak is None or ec.empty:
        return None
    row = ec[(ec["cell"] == peak["cell"]) & (ec["op"] == peak["op"])]
    if row.empty:
        return None
    row = row.iloc[0]
    if not _known(row["latency_ns"]):
        return {"known": False, "why": row["latency_source"], "link": "#concurrency"}
    return {
        "known": True,
        "lines": float(row["lines_in_flight"]),
        "bytes": float(row["bytes_in_flight"]),
        "lines_per_thread": float(row["lines_per_thread"]),
        "latency_ns": float(row["latency_ns"]),
        "traffic_gbps": float(row["traffic_gbps"]),
        "write_gbps": float(row["write_traffic_gbps"]) if _known(row.get("write_traffic_gbps")) else None,
        "link": "#concurrency",
    }


def hierarchy_headline(levels: dict | None) -> list[dict]:
    """The levels the sweep found, for the smallest pages measured: "L1
    1.2 ns", ..., linked to the hierarchy table; levels not found are left
    to the table, which says so. The cache-to-cache rows, whose names are
    long, are one entry: their range ("c2c 44.0–150.0 ns"), before memory."""
    if not levels:
        return []
    pages = levels["pages"][0]
    found, c2c = [], []
    for row in levels["rows"]:
        one = row["per_pages"].get(pages)
        if not one or one["ns"] is None or row["level"].startswith("unassigned"):
            continue
        entry = {"level": row["level"], "ns": one["ns"], "upto": None, "cycles": one["cycles"], "pages": pages,
                 "link": "#hierarchy", "flag": one.get("flag")}  # fmt: skip
        (c2c if row["level"].startswith("c2c") else found).append(entry)
    if c2c:
        values = [e["ns"] for e in c2c]
        entry = {"level": "c2c", "ns": min(values), "upto": max(values) if max(values) > min(values) else None,
                 "cycles": None, "pages": pages, "link": "#hierarchy", "flag": None}  # fmt: skip
        at = next((i for i, e in enumerate(found) if e["level"] == "memory"), len(found))
        found.insert(at, entry)
    return found


VERDICT_WORDS = {
    "unexplained": "with modes nothing recorded explains",
    "explained": "with modes placement explains",
    "same placement": "with modes under one placement",
}


def _few_runs_text(few: pd.DataFrame) -> str:
    """Cells with too few runs to tell modes: how far their runs spread, and
    how many more runs would tell modes (counted in cells, as the line's
    head does, not in cell x op rows)."""
    spread = few["spread"].astype(float).max() if "spread" in few else math.nan
    low, high = int(few["n"].min()), int(few["n"].max())
    runs = f"{low} run{'s' if low != 1 else ''}" if low == high else f"{low}–{high} runs"
    count = few["cell"].nunique() if "cell" in few else len(few)
    cells = f"{count} cell{'s' if count != 1 else ''}"
    if not _known(spread):
        return f"{cells} at {runs}: {MIN_RUNS - low} more to tell modes"
    return f"{cells} within ±{percent(spread, 1, spaced=False)} at {runs} ({MIN_RUNS - low} more to tell modes)"


def experiment_verdicts(cells: pd.DataFrame, modes: pd.DataFrame | None, experiments: list[str]) -> list[dict]:
    """One line per experiment: its modes found and whether anything
    recorded explains them, and its skipped and failed cells."""
    lines = []
    for name in experiments:
        mine = cells[cells["experiment"] == name]
        if mine.empty:
            continue
        parts = []
        if modes is not None and not modes.empty:
            here = modes[modes["experiment"] == name]
            verdicts = here["verdict"].value_counts()
            several = {v: int(n) for v, n in verdicts.items() if v in VERDICT_WORDS}
            few = here[here["verdict"] == "too few"]
            told = []
            if several:
                told.append(", ".join(f"{n} {VERDICT_WORDS[v]}" for v, n in several.items()))
            elif verdicts.sum() > len(few):
                told.append("one mode in every cell" if few.empty else f"one mode in {verdicts.sum() - len(few)} cells")
            if not few.empty:
                told.append(_few_runs_text(few))
            if told:
                parts.append("; ".join(told))
        cell_ids = mine.drop_duplicates("cell")
        skipped = int((mine.groupby("cell")["n_skipped"].sum() > 0).sum())
        failed = int((mine.groupby("cell")["n_failed"].sum() > 0).sum())
        problems = [f"{n} cell{'s' if n != 1 else ''} {word}" for n, word in ((skipped, "skipped"), (failed, "failed")) if n]
        if problems:  # a clean experiment's line is its answer alone
            parts.append("; ".join(problems))
        lines.append(
            {
                "experiment": name,
                "kernel": mine["kernel"].iloc[0],
                "cells": len(cell_ids),
                "text": "; ".join(parts),
                "alert": bool(skipped or failed or (modes is not None and not modes.empty and (
                    (modes["experiment"] == name) & (modes["verdict"] == "unexplained")).any())),
                "link": experiment_anchor(name),
            }
        )
    return lines


def system_headlines(
    cells: pd.DataFrame,
    ec: pd.DataFrame,
    latencies: pd.DataFrame,
    modes: pd.DataFrame | None,
    systems: dict[str, dict],
    experiments: list[str],
    levels: list[dict] = (),
) -> list[dict]:
    """The first screen: one entry per system, in the order of `systems`."""
    out = []
    for name, system in systems.items():
        mine = cells[cells["system"] == name]
        peaks = peak_per_family(mine)
        overall = peaks[0] if peaks else None  # highest memory traffic first
        topology = system.get("topology", {})
        out.append(
            {
                "system": name,
                "cpu_model": topology.get("cpu_model", "CPU not recorded"),
                "cpus": len(topology.get("cpus", [])),
                "nodes": len(topology.get("nodes", [])),
                "peaks": peaks,
                "single_thread": single_thread(mine),
                "latencies": idle_latency_entries(latencies[latencies["system"] == name]) if not latencies.empty else [],
                "concurrency": concurrency_at_peak(ec[ec["system"] == name] if not ec.empty else ec, overall),
                "hierarchy": hierarchy_headline(next((h for h in levels if h["system"] == name), None)),
                "verdicts": experiment_verdicts(
                    mine, modes[modes["system"] == name] if modes is not None and not modes.empty else modes, experiments
                ),
            }
        )
    return out
