"""The first screen's numbers as findings rows: one row per number the
report's summary and the terminal show, each with its unit, n, interval
and the words that say where it comes from (membench.findings.headline
chooses the cells; this module gives them their evidence).

Rows share one shape: group (the summary's row heading), what, value,
unit, n, interval, interval_kind, decided, status, how, cells, link.
"""

from __future__ import annotations

import pandas as pd

from membench.core.text import percent
from membench.findings import evidence


def _row(group: str, what: str, result: dict, how: str, cells: list[str], link: str) -> dict:
    return {"group": group, "what": what, **result, "how": how, "cells": cells, "link": link}


def _derived(value, unit: str) -> dict:
    """A number computed from others (a peak, a plateau's median): no runs of its own."""
    return {"value": value, "unit": unit, "n": None, "interval": None, "interval_kind": None,
            "decided": value is not None, "status": "derived"}  # fmt: skip


def _runs(runs: pd.DataFrame, cell: str, op, column: str) -> pd.Series:
    mine = runs[(runs["cell"] == cell) & ((runs["op"] == op) if isinstance(op, str) else True)]
    return mine[column].dropna().astype(float) if column in mine else pd.Series(dtype=float)


def _bandwidth(group: str, entry: dict, runs: pd.DataFrame, with_threads: bool = True) -> dict:
    column = "gbps_wa" if "gbps_wa" in runs and _runs(runs, entry["cell"], entry["op"], "gbps_wa").size else "gbps"
    result = evidence.quantity(_runs(runs, entry["cell"], entry["op"], column), "GB/s")
    if result["value"] is None:  # no run to take it from: the cell's own median
        result = {**_derived(entry["traffic_gbps"], "GB/s"), "status": "cell median"}
    threads = f", {entry['threads']} thread{'s' if entry['threads'] != 1 else ''}" if with_threads else ""
    how = (f"memory traffic; {entry['op']}{threads}, {entry['affinity']}, {entry['pages']}; "
           f"STREAM count {entry['gbps']:.1f} GB/s; {entry['placement']}")  # fmt: skip
    return _row(group, entry["family"], result, how, [entry["cell"]], entry["link"])


def headline_rows(headline: dict, runs: pd.DataFrame, idle: dict) -> list[dict]:
    """Every number of one system's first screen, in the order shown.
    idle: (placement, pages) -> the runs behind each idle latency."""
    rows = [_bandwidth("highest memory traffic", p, runs) for p in headline["peaks"]]
    if not rows:
        rows.append(_row("highest memory traffic", "none", _derived(None, "GB/s"), "no bandwidth cell measured past the caches", [], "#cells"))
    peak = headline["theoretical"]
    shares = ", ".join(f"{b['family']} {percent(b['share'])}" for b in headline["peak_shares"])
    rows.append(_row("theoretical peak", peak["source"].split(" (")[0] if peak.get("known") else "unknown",
                     _derived(peak.get("total_gbps") if peak.get("known") else None, "GB/s"),
                     (f"{shares} of the peak of the nodes used (best cell, memory traffic)" if shares else "no bandwidth cell to set against it")
                     if peak.get("known") else peak.get("reason", "unknown"), [], "#peak"))  # fmt: skip
    if headline["single_thread"]:
        rows.append(_bandwidth("one thread", headline["single_thread"], runs, with_threads=False))
    for entry in headline["latencies"]:
        values = idle.get((entry["placement"], entry["pages"]))
        flag = f" {entry['flag']}" if entry.get("flag") else ""
        spacing = entry["spacing"] if not str(entry["spacing"]).endswith(" B") else f"one pointer per {entry['spacing']}"
        result = evidence.quantity(values, "ns") if values is not None and len(values) else {
            **_derived(entry["ns"], "ns"), "n": entry["runs"], "status": "no undisturbed run at its working set"}
        rows.append(_row("idle latency", entry["placement"], result,
                         f"{entry['pages']} pages, {entry['group']} groups, {spacing}{flag}", [], entry["link"]))  # fmt: skip
    for level in headline["hierarchy"]:
        upto = f"–{level['upto']:.1f}" if level.get("upto") else ""
        rows.append(_row("hierarchy", level["level"], _derived(level["ns"], "ns"),
                         f"{level['pages']} pages, plateau median{upto and f'; up to {upto[1:]} ns'}", [], level["link"]))  # fmt: skip
    c = headline["concurrency"]
    if c and c.get("known"):
        how = (f"{c['traffic_gbps']:.1f} GB/s read × {c['latency_ns']:.1f} ns = {c['bytes']:.0f} B in flight, "
               f"{c['lines_per_thread']:.1f} lines per thread")  # fmt: skip
        rows.append(_row("effective concurrency", "at the highest traffic", _derived(c["lines"], "lines"), how, [], c["link"]))
    else:
        why = c["why"] if c else "no bandwidth cell with a matching idle latency"
        rows.append(_row("effective concurrency", "at the highest traffic", _derived(None, "lines"), f"not known: {why}", [], "#concurrency"))
    return rows
