"""The first screen's numbers as findings rows: one row per number the
report's summary and the terminal show, each with its unit, n, interval
and the words that say where it comes from (membench.findings.headline
chooses the cells; this module gives them their evidence).

Rows share one shape: group (the summary's row heading), what, value,
unit, n, interval, interval_kind, decided, status, how, cells, link; some
add flag (a "⚑ ..." the terminal shows too), bound ("at least" / "at
most": the value bounds the truth from one side), op and traffic_gbps.
"""

from __future__ import annotations

import pandas as pd

from membench.core.text import WRITE_ALLOCATE_CAVEAT, missing, percent
from membench.findings import evidence
from membench.findings.headline import HEADLINE_RUNS, LOADED_MATCH, STANDINGS
from membench.analyse import memory_plateau
from membench.plan import families, latency_sweep

# The first screen's bandwidth group: each family's best STREAM count.
BANDWIDTH_GROUP = "highest bandwidth"
# Why the modelled traffic is a model, said wherever it stands beside a count.
LATENCY_FAMILIES = families.named(lambda f: f.metric == families.LATENCY)


def _row(group: str, what: str, result: dict, how: str, cells: list[str], link: str) -> dict:
    return {"group": group, "what": what, **result, "how": how, "cells": cells, "link": link}


def _derived(value, unit: str) -> dict:
    """A number computed from others (a peak, a plateau's median): no runs of its own."""
    return {"value": value, "unit": unit, "n": None, "interval": None, "interval_kind": None,
            "decided": value is not None, "status": "derived"}  # fmt: skip


def _runs(runs: pd.DataFrame, cell: str, op, column: str) -> pd.Series:
    mine = runs[(runs["cell"] == cell) & ((runs["op"] == op) if isinstance(op, str) else True)]
    return mine[column].dropna().astype(float) if column in mine else pd.Series(dtype=float)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'s' if count != 1 else ''}"


def _disturbed_bandwidth(group: str, entry: dict, ok_runs: pd.DataFrame, where: str) -> dict:
    """A cell whose every run was disturbed: its fastest run bounds the
    bandwidth from below (noise only slows), flagged, never "not measured"."""
    values = _runs(ok_runs, entry["cell"], entry["op"], "gbps")
    bound = float(values.max()) if len(values) else None
    said = f"at least {bound:.1f} GB/s" if bound is not None else "no run left a number"
    flag = f"⚑ all {_plural(len(values), 'run')} disturbed"
    result = {**_derived(bound, "GB/s"), "n": 0, "decided": False, "status": "lower bound: every run disturbed"}
    how = f"{flag}: STREAM count {said}, the fastest of them (noise only slows); {where}"
    return {**_row(group, entry["family"], result, how, [entry["cell"]], entry["link"]), "bound": "at least", "flag": flag,
            "op": entry["op"]}  # fmt: skip


def _bandwidth(group: str, entry: dict, runs: pd.DataFrame, ok_runs: pd.DataFrame, with_threads: bool = True) -> dict:
    """A family's headline: the STREAM count (median over the cell's
    undisturbed runs), the modelled memory traffic beside it."""
    threads = f", {_plural(entry['threads'], 'thread')}" if with_threads else ""
    where = f"{entry['op']}{threads}, {entry['affinity']}, {entry['pages']}; {entry['placement']}"
    if entry["standing"] == STANDINGS[2]:
        return _disturbed_bandwidth(group, entry, ok_runs, where)
    result = evidence.quantity(_runs(runs, entry["cell"], entry["op"], "gbps"), "GB/s")
    if result["value"] is None:  # no run to take it from: the cell's own median
        result = {**_derived(entry["gbps"], "GB/s"), "n": entry["runs"], "status": "cell median"}
    modelled = _runs(runs, entry["cell"], entry["op"], "gbps_wa")
    traffic = float(modelled.median()) if len(modelled) else entry["traffic_gbps"]
    how = f"STREAM count, {where}"
    if traffic is not None and result["value"] and abs(traffic / result["value"] - 1) > 0.005:
        how += f"; memory traffic {traffic:.1f} GB/s by the {WRITE_ALLOCATE_CAVEAT}"
    if entry["standing"] == STANDINGS[1]:
        how += f"; no cell of {entry['family']} has {HEADLINE_RUNS} undisturbed runs: the best of its one-run cells"
    return {**_row(group, entry["family"], result, how, [entry["cell"]], entry["link"]), "op": entry["op"],
            "traffic_gbps": traffic}  # fmt: skip


def _bandwidth_rows(headline: dict, runs: pd.DataFrame, ok_runs: pd.DataFrame, all_disturbed: set[str]) -> list[dict]:
    rows = [_bandwidth(BANDWIDTH_GROUP, p, runs, ok_runs) for p in headline["peaks"]]
    if not rows:
        why = ("every bandwidth run was disturbed and none left a number (All cells)" if "bandwidth" in all_disturbed
               else "no bandwidth cell measured past the caches")  # fmt: skip
        rows.append(_row(BANDWIDTH_GROUP, "none", {**_derived(None, "GB/s"), "status": why}, why, [], "#cells"))
    return rows


def _theoretical_row(headline: dict) -> dict:
    peak = headline["theoretical"]
    shares = ", ".join(f"{b['family']} {percent(b['share'])}" for b in headline["peak_shares"])
    return _row("theoretical peak", peak["source"].split(" (")[0] if peak.get("known") else "unknown",
                _derived(peak.get("total_gbps") if peak.get("known") else None, "GB/s"),
                (f"{shares} of the peak of the nodes used (best cell, memory traffic)" if shares else "no bandwidth cell to set against it")
                if peak.get("known") else peak.get("reason", "unknown"), [], "#peak")  # fmt: skip


def _past_the_caches(chase: pd.DataFrame) -> pd.DataFrame:
    """The random chase's records whose touched lines reach LLC_REACH x the
    last-level cache (membench.analyse.memory_plateau): only there does a
    run's value bound the memory latency from above. A stride record is
    prefetched and a cache point is faster than memory: neither bounds it
    (a busy default run once read "at most 3.1 ns" from a stride point)."""
    if "op" in chase:
        chase = chase[chase["op"] == "random"]
    if chase.empty or not {"llc_usable_bytes", "pointer_spacing_bytes", "line_bytes"}.issubset(chase):
        return chase  # records without the cache sizes: the largest working set stands alone (as before)
    touched = [latency_sweep.touched_bytes(float(ws), spacing, int(line)) if pd.notna(line) else 0.0
               for ws, spacing, line in zip(chase["working_set_bytes"], chase["pointer_spacing_bytes"], chase["line_bytes"])]  # fmt: skip
    return chase[pd.Series(touched, index=chase.index) >= memory_plateau.LLC_REACH * chase["llc_usable_bytes"].astype(float)]


def _latency_bound(system: str, ok_runs: pd.DataFrame, pages: str | None = None) -> dict | None:
    """Every chase run disturbed: the fastest run at the largest working set
    past the caches (of these pages, when given) bounds the idle latency
    from above (noise only slows)."""
    chase = ok_runs[(ok_runs["system"] == system) & ok_runs["kernel"].isin(LATENCY_FAMILIES) & ok_runs["ns_per_load"].notna()]
    if pages is not None and "pages" in chase:
        chase = chase[chase["pages"] == pages]
    chase = _past_the_caches(chase)
    if chase.empty:
        return None
    largest = chase[chase["working_set_bytes"] == chase["working_set_bytes"].max()]
    fastest = largest.loc[largest["ns_per_load"].astype(float).idxmin()]
    return {"ns": float(fastest["ns_per_load"]), "runs": len(largest), "pages": fastest["pages"]}


def _disturbed_latency(system: str, placement: str, pages: str | None, ok_runs: pd.DataFrame, how: str) -> dict:
    bound = _latency_bound(system, ok_runs, pages)
    flag = f"⚑ all {_plural(bound['runs'], 'run')} disturbed" if bound else "⚑ every chase run disturbed"
    result = {**_derived(bound["ns"] if bound else None, "ns"), "n": 0, "decided": False, "status": "upper bound: every run disturbed"}
    said = (f"at most {bound['ns']:.1f} ns, the fastest run at the largest working set (noise only slows)" if bound
            else f"no run left a number past {memory_plateau.LLC_REACH} x the last-level cache")  # fmt: skip
    return {**_row("idle latency", placement, result, f"{how} {flag}: {said}", [], "#cells"), "bound": "at most", "flag": flag}


def _idle_rows(headline: dict, idle: dict, ok_runs: pd.DataFrame, all_disturbed: set[str]) -> list[dict]:
    rows = []
    for entry in headline["latencies"]:
        values = idle.get((entry["placement"], entry["pages"]))
        flag = f" {entry['flag']}" if entry.get("flag") else ""
        spacing = entry["spacing"] if not str(entry["spacing"]).endswith(" B") else f"one pointer per {entry['spacing']}"
        result = evidence.quantity(values, "ns") if values is not None and len(values) else {
            **_derived(entry["ns"], "ns"), "n": entry["runs"], "status": "no undisturbed run at its working set"}
        how = f"{entry['pages']} pages, {entry['group']} groups, {spacing}{flag}"
        if missing(result["value"]):
            rows.append(_disturbed_latency(headline["system"], entry["placement"], entry["pages"], ok_runs, how))
            continue
        rows.append({**_row("idle latency", entry["placement"], result, how, [], entry["link"]), "flag": entry.get("flag")})
    if not headline["latencies"] and "latency" in all_disturbed:
        rows.append(_disturbed_latency(headline["system"], "local", None, ok_runs, "every chase run disturbed;"))
    return rows


def _hierarchy_rows(headline: dict) -> list[dict]:
    rows = []
    for level in headline["hierarchy"]:
        upto = level.get("upto")
        ops = f" ({', '.join(level['ops'])})" if level.get("ops") else ""
        how = f"{level['pages']} pages, " + (f"from {level['ns']:.1f} to {upto:.1f} ns over the pairs' classes{ops}" if upto
                                             else f"plateau median{ops}" if not ops else f"one class{ops}")  # fmt: skip
        if level.get("flag"):
            how += f" {level['flag']} ({level.get('flag_detail') or 'the hierarchy table says why'})"
        rows.append({**_row("hierarchy", level["level"], _derived(level["ns"], "ns"), how, [], level["link"]), "upto": upto,
                     "flag": level.get("flag")})  # fmt: skip
    return rows


def _no_concurrency_why(c: dict | None, bandwidth: list[dict], all_disturbed: set[str]) -> str:
    """Why no Little's law at the peak: where every headline bandwidth is a
    bound from disturbed runs, that is said with the bound, never as no cell."""
    if c:
        return c["why"]
    if "bandwidth" in all_disturbed:
        return "every bandwidth run was disturbed"
    bounds = [r for r in bandwidth if r.get("bound") == "at least"]
    if bounds and len(bounds) == len(bandwidth):
        said = "; ".join(f"{r['what']} at least {r['value']:.1f} GB/s" if r["value"] is not None else r["what"] for r in bounds)
        return f"every run of the bandwidth cells past the caches was disturbed ({said}, flagged above)"
    return "no bandwidth cell with a matching idle latency"


def _concurrency_row(c: dict | None, all_disturbed: set[str], bandwidth: list[dict] = ()) -> dict:
    """Effective concurrency at the peak, with the latency it used named:
    loaded at about that traffic, or idle and then a lower bound.
    bandwidth: the first screen's highest-bandwidth rows."""
    if not (c and c.get("known")):
        why = _no_concurrency_why(c, list(bandwidth), all_disturbed)
        return _row("effective concurrency", "at the highest", _derived(None, "lines"), f"not known: {why}", [], "#concurrency")
    of = c["family"] if c["op"] == c["family"] else f"{c['family']} {c['op']}"
    product = (f"{of} (n={c['runs']}): {c['traffic_gbps']:.1f} GB/s read × {c['latency_ns']:.1f} ns "
               f"= {c['bytes']:.0f} B in flight, {c['lines_per_thread']:.1f} lines per thread")  # fmt: skip
    if c["latency_kind"] == families.LOADED:
        how = (f"{product}; the loaded latency ({c['latency_source']}, n={c['latency_runs']}), within "
               f"{percent(LOADED_MATCH, 0, spaced=False)} of this read traffic")  # fmt: skip
        result = _derived(c["lines"], "lines")
    else:
        how = (f"at least: {product}; the idle latency ({c['latency_source']}): no loaded latency measured within "
               f"{percent(LOADED_MATCH, 0, spaced=False)} of this read traffic, and memory answers more slowly under load")  # fmt: skip
        result = {**_derived(c["lines"], "lines"), "status": "lower bound: idle latency"}
    return {**_row("effective concurrency", "at the highest", result, how, [], c["link"]), "bound": c["bound"],
            "latency_ns": c["latency_ns"], "latency_kind": c["latency_kind"], "of": of, "traffic_gbps": c["traffic_gbps"]}  # fmt: skip


def headline_rows(headline: dict, runs: pd.DataFrame, idle: dict, all_disturbed: set[str] = frozenset(),
                  ok_runs: pd.DataFrame | None = None) -> list[dict]:  # fmt: skip
    """Every number of one system's first screen, in the order shown.
    idle: (placement, pages) -> the runs behind each idle latency;
    all_disturbed: the metrics ("bandwidth", "latency") whose every ok run
    the disturbed rule marked, said as such (with the bound those runs
    give), never as not measured; ok_runs: every ok run, disturbed ones too."""
    ok_runs = runs if ok_runs is None else ok_runs
    rows = _bandwidth_rows(headline, runs, ok_runs, all_disturbed)
    bandwidth = [r for r in rows if r["cells"]]
    rows.append(_theoretical_row(headline))
    if headline["single_thread"]:
        rows.append(_bandwidth("one thread", headline["single_thread"], runs, ok_runs, with_threads=False))
    rows += _idle_rows(headline, idle, ok_runs, all_disturbed)
    rows += _hierarchy_rows(headline)
    rows.append(_concurrency_row(headline["concurrency"], all_disturbed, bandwidth))
    return rows


def reference_rows(references: list[dict]) -> list[dict]:
    """The first screen's place among published machines: the first
    bandwidth reference (membench.findings.atlas puts like-with-like ones
    first; findings.json has them all). A reference not comparable shows
    no ratio, only why and both numbers."""
    bandwidth = [r for r in references if r["what"] != "idle latency"]
    if not bandwidth:
        return []
    first = bandwidth[0]
    about = f"{first['system']} ({first['reference']}); {first['match']}; {first['conditions']}"
    if first.get("ratio") is None:
        how = (f"{first['basis']}; this run {first['this_value']:.1f} {first['unit']} ({first['what']}), "
               f"the reference {first['reference_value']:.1f} {first['unit']}; {about}")  # fmt: skip
        return [_row("published machines", first["system"], {**_derived(None, "×"), "status": first["basis"]}, how, [], "#machine")]
    how = (f"{first['basis']}: {first['this_compared']:.1f} of {first['reference_compared']:.1f} {first['compared_unit']} "
           f"({first['what']}) against {about}")  # fmt: skip
    return [{**_row("published machines", first["system"], _derived(first["ratio"], "×"), how, [], "#machine"), "digits": 2}]
