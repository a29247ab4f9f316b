"""The first screen's numbers as findings rows: one row per number the
report's summary and the terminal show, each with its unit, n, interval
and the words that say where it comes from (membench.findings.headline
chooses the cells; this module gives them their evidence).

Rows share one shape: group (the summary's row heading), what, value,
unit, n, interval, interval_kind, decided, status, how, cells, link.
"""

from __future__ import annotations

import pandas as pd

from membench.core.text import missing, percent
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
    how = (f"{entry['op']}{threads}, {entry['affinity']}, {entry['pages']}; "
           f"STREAM count {entry['gbps']:.1f} GB/s; {entry['placement']}")  # fmt: skip
    return _row(group, entry["family"], result, how, [entry["cell"]], entry["link"])


def headline_rows(headline: dict, runs: pd.DataFrame, idle: dict, all_disturbed: set[str] = frozenset()) -> list[dict]:
    """Every number of one system's first screen, in the order shown.
    idle: (placement, pages) -> the runs behind each idle latency;
    all_disturbed: the metrics ("bandwidth", "latency") whose every ok run
    the disturbed rule marked, said as such, never as not measured."""
    rows = [_bandwidth("highest memory traffic", p, runs) for p in headline["peaks"]]
    if not rows:
        why = ("every bandwidth run was disturbed: no number to give (All cells)" if "bandwidth" in all_disturbed
               else "no bandwidth cell measured past the caches")  # fmt: skip
        rows.append(_row("highest memory traffic", "none", {**_derived(None, "GB/s"), "status": why}, why, [], "#cells"))
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
        how = f"{entry['pages']} pages, {entry['group']} groups, {spacing}{flag}"
        if missing(result["value"]):
            result["value"] = None
            how += ": every run at its largest working set was disturbed, no number to give"
        rows.append(_row("idle latency", entry["placement"], result, how, [], entry["link"]))
    if not headline["latencies"] and "latency" in all_disturbed:
        why = "every chase run at its largest working set was disturbed: no number to give"
        rows.append(_row("idle latency", "local", {**_derived(None, "ns"), "status": why}, why, [], "#cells"))
    for level in headline["hierarchy"]:
        upto = level.get("upto")
        rows.append({**_row("hierarchy", level["level"], _derived(level["ns"], "ns"),
                            f"{level['pages']} pages, " + (f"from {level['ns']:.1f} to {upto:.1f} ns over the pairs' classes"
                                                           if upto else "plateau median"), [], level["link"]), "upto": upto})  # fmt: skip
    c = headline["concurrency"]
    if c and c.get("known"):
        how = (f"{c['traffic_gbps']:.1f} GB/s read × {c['latency_ns']:.1f} ns = {c['bytes']:.0f} B in flight, "
               f"{c['lines_per_thread']:.1f} lines per thread")  # fmt: skip
        rows.append(_row("effective concurrency", "at the highest", _derived(c["lines"], "lines"), how, [], c["link"]))
    else:
        why = (c["why"] if c else "every bandwidth run was disturbed" if "bandwidth" in all_disturbed
               else "no bandwidth cell with a matching idle latency")  # fmt: skip
        rows.append(_row("effective concurrency", "at the highest", _derived(None, "lines"), f"not known: {why}", [], "#concurrency"))
    return rows


def reference_rows(references: list[dict]) -> list[dict]:
    """The first screen's place among published machines: the first
    reference held against this run's bandwidth (findings.json has them all)."""
    bandwidth = [r for r in references if r["what"] != "idle latency"]
    if not bandwidth:
        return []
    first = bandwidth[0]
    how = (f"{first['this_value']:.1f} of {first['reference_value']:.1f} {first['unit']} ({first['what']}) against "
           f"{first['system']} ({first['reference']}); {first['match']}; {first['conditions']}")  # fmt: skip
    return [{**_row("published machines", first["system"], _derived(first["ratio"], "×"), how, [], "#machine"), "digits": 2}]
