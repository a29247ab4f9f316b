"""The AWS paper's answers on this machine: the idle latency and the
hierarchy in front of it, the loaded latency at the heaviest load
measured, and the cache-to-cache transfers per locality class.

Same shape as membench.findings.answers (one finding per experiment and
system); the latencies come from the analyse stage's tables
(membench.analyse.concurrency, hierarchy, c2c_summary), the evidence from
the undisturbed repetitions behind them.
"""

from __future__ import annotations

import pandas as pd

from membench.analyse.c2c_summary import TRANSFERS, memory_like
from membench.analyse.concurrency import latency_run_values
from membench.core.text import size_text
from membench.findings import evidence
from membench.findings.answers import finding, detail, metric_column
from membench.plan import families, knobs

# The record key of the load's delay as asked (pause iterations).
DELAY = knobs.asked("load_delay")
LOWER_IS_BETTER = False  # evidence.effect's higher_is_better for a latency: a shorter one is better


def _pair_is_local(placement: str) -> bool:
    """"bind:1 from node:1" (memory on the CPUs' own node) is local."""
    memory, _, cpus = placement.partition(" from node:")
    return memory.split(":")[-1] == cpus


def idle_runs(runs: pd.DataFrame, latency: pd.Series, line_bytes: int = 64) -> pd.Series:
    """The repetitions behind one idle latency, one value a run: its median
    over the memory plateau's points (membench.analyse.concurrency.
    latency_run_values, the rule the latency itself is taken by)."""
    return latency_run_values(runs, latency, line_bytes)


def latency_answer(runs: pd.DataFrame, latencies: pd.DataFrame, levels: dict | None) -> dict:
    """The idle latency per placement and page size (the first: local,
    smallest pages, is the answer); the hierarchy's levels; THP against
    4k and remote against local where both were measured."""
    details, by_key = [], {}
    for _, latency in latencies.iterrows():
        values = idle_runs(runs, latency)
        label = f"idle latency, {latency['placement']}, {latency['pages']} pages, {size_text(latency['working_set_bytes'])}"
        cells = sorted(runs.loc[values.index, "cell"].unique().tolist()) if len(values) else []
        details.append({**detail(label, evidence.quantity(values, "ns"), cells), "placement": latency["placement"],
                        "pages": latency["pages"]})  # fmt: skip
        by_key[(latency["placement"], latency["pages"])] = values
    main = details[0] if details else None
    pages = list(dict.fromkeys(p for _, p in by_key))
    placements = list(dict.fromkeys(p for p, _ in by_key))
    for placement in placements:
        for other in pages[1:]:
            if (placement, pages[0]) in by_key and (placement, other) in by_key:
                result = evidence.effect(by_key[(placement, pages[0])], by_key[(placement, other)], LOWER_IS_BETTER)
                details.append(detail(f"{other} pages against {pages[0]}, {placement}", result, []))
    if "local" in placements:
        for other in placements:
            if other != "local" and ("local", pages[0]) in by_key and (other, pages[0]) in by_key:
                result = evidence.effect(by_key[("local", pages[0])], by_key[(other, pages[0])], LOWER_IS_BETTER)
                details.append(detail(f"{other} against local, {pages[0]} pages", result, []))
    pairs = {key: values for key, values in by_key.items() if " from node:" in key[0]}
    if pairs:  # a node x node matrix: remote pairs against local ones, pooled over the pairs
        local = [v for (placement, _), v in pairs.items() if _pair_is_local(placement)]
        remote = [v for (placement, _), v in pairs.items() if not _pair_is_local(placement)]
        if local and remote:
            result = evidence.effect(pd.concat(local), pd.concat(remote), LOWER_IS_BETTER)
            details.append(detail(f"remote pairs against local pairs ({len(remote)} and {len(local)})", result, []))
    hierarchy = []
    for row in (levels or {}).get("rows", []):
        one = row["per_pages"].get(pages[0]) if pages else None
        if one and one.get("ns") is not None and not row["level"].startswith("unassigned"):
            hierarchy.append(f"{row['level']} {one['ns']:.1f}")
            details.append({"label": f"hierarchy {row['level']}", "value": float(one["ns"]), "unit": "ns", "n": None,
                            "interval": None, "interval_kind": None, "decided": False, "status": "derived",
                            "cells": [], "text": f"{row['level']}: {one['ns']:.1f} ns (plateau median, {pages[0]} pages)"})  # fmt: skip
    text = main["text"] if main else "no idle latency past the caches"  # the hierarchy is its own first-screen row
    ratio = next((d for d in details if d["label"].startswith(("remote against local", "remote pairs against local"))), None)
    if ratio is not None:
        text += f"; remote against local {evidence.change_text(ratio)}"
    return finding("aws-latency", main, details, text)


def _delay(value) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return float("inf")


def _lost_point(row) -> dict:
    """A load point whose every ok run was disturbed: what those runs still
    bound (noise slows the chase, so its latency at the load they reached
    is at most what they read)."""
    ns, gbps, delay = getattr(row, "ns_median_all", None), getattr(row, "gbps_median_all", None), getattr(row, DELAY)
    bound = f"latency at most {ns:.1f} ns at the {gbps:.1f} GB/s they reached" if pd.notna(ns) and pd.notna(gbps) else "no bound recorded"
    return {"label": f"delay {delay}", "value": None, "unit": "ns", "n": 0, "interval": None,
            "interval_kind": None, "decided": False, "status": f"every one of {int(row.n_ok)} runs disturbed",
            "cells": [row.cell], "load_gbps": None, "disturbed": True, "delay": _delay(delay), "bound_ns": None if pd.isna(ns) else float(ns),
            "text": f"delay {delay}: every one of {int(row.n_ok)} runs disturbed; {bound}"}  # fmt: skip


def loaded_answer(cells: pd.DataFrame, runs: pd.DataFrame, idle: pd.Series | None) -> dict:
    """The chase's latency at the highest injected bandwidth (by the load
    threads' GB/s), against the idle latency; the curve's points as
    details. Heavier points (shorter delays) whose every run was disturbed
    are said first, with their bound: the answer is then at a lighter
    load, never called the heaviest."""
    column, _ = metric_column(families.LOADED)
    measured = cells[cells["n_ok"] > 0]
    details = []
    for row in measured.sort_values(DELAY).itertuples():
        values = runs.loc[runs["cell"] == row.cell, column].dropna().astype(float)
        if values.empty:
            details.append(_lost_point(row))
            continue
        gbps, delay = runs.loc[runs["cell"] == row.cell, "gbps"].dropna().astype(float), getattr(row, DELAY)
        label = f"delay {delay}, {row.op} load {gbps.median():.1f} GB/s" if len(gbps) else f"delay {delay}"
        details.append({**detail(label, evidence.quantity(values, "ns"), [row.cell]), "delay": _delay(delay),
                        "load_gbps": float(gbps.median()) if len(gbps) else None})  # fmt: skip
    known = [d for d in details if d["value"] is not None and d["load_gbps"] is not None]
    if not known:
        said = "; ".join(d["text"] for d in details if d.get("disturbed"))
        return finding("aws-loaded", None, details, f"heaviest loads: every run disturbed ({said})" if said
                       else "not measured: no undisturbed loaded run")  # fmt: skip
    heaviest = max(known, key=lambda d: d["load_gbps"])
    lost = [d for d in details if d.get("disturbed") and d["delay"] < heaviest["delay"]]
    main = {**heaviest, "heaviest_lost": bool(lost)}
    if lost:
        text = (f"heaviest loads: every run disturbed ({'; '.join(d['text'] for d in lost)}); "
                f"the heaviest undisturbed, {heaviest['label']}: {evidence.quantity_text(heaviest)}")  # fmt: skip
    else:
        text = f"at {heaviest['load_gbps']:.1f} GB/s of load: {evidence.quantity_text(heaviest)}"
    if idle is not None and len(idle):
        loaded = runs.loc[runs["cell"] == heaviest["cells"][0], column].dropna().astype(float)
        ratio = evidence.effect(idle, loaded, LOWER_IS_BETTER)
        details.append({**detail("loaded against idle latency", ratio, heaviest["cells"]), "heaviest_lost": bool(lost)})
        text += f"; against idle {evidence.change_text(ratio)}" + (" at that lighter load" if lost else "")
    return finding("aws-loaded", main, details, text)


def _per_transfer_ranges(details: list[dict]) -> list[str]:
    """Per op: its value, or its range over classes; ops of different
    transfer counts stay apart (c2c_summary.TRANSFERS)."""
    parts = []
    for op in dict.fromkeys(d["op"] for d in details):
        mine = [d for d in details if d["op"] == op]
        low, high = min(mine, key=lambda d: d["value"]), max(mine, key=lambda d: d["value"])
        count = TRANSFERS.get(op, 1)
        of = f", {count} transfers" if count > 1 else ""
        needs = f", {low['status']}" if low["n"] < evidence.MIN_RUNS else ""
        parts.append(f"{op} {low['value']:.1f} ns ({low['pair_class']}, n={low['n']}{needs}{of})" if len(mine) == 1 else
                     f"{op} {low['value']:.1f} ns ({low['pair_class']}) to {high['value']:.1f} ns ({high['pair_class']}){of}")  # fmt: skip
    return parts


def c2c_answer(classes: pd.DataFrame | None, runs: pd.DataFrame, memory_ns: float | None = None) -> dict:
    """Per locality class and op: the hand-off's median over its
    repetitions; the answer is the closest class's first op. memory_ns:
    the idle memory latency; a class whose CPUs share a cache yet whose
    hand-off costs about it is flagged (c2c_summary.memory_like)."""
    details = []
    if classes is not None and not classes.empty and "handoff_ns" in runs:
        for row in classes.itertuples():
            values = runs.loc[(runs["pair_class"] == row.pair_class) & (runs["op"] == row.op), "handoff_ns"].dropna()
            if values.empty:
                continue
            cells = sorted(runs.loc[values.index, "cell"].unique().tolist())
            result = evidence.quantity(values, "ns")
            flag = memory_like(row.op, row.pair_class, result["value"], memory_ns)
            details.append({**detail(f"{row.op}, {row.pair_class}", result, cells), "op": row.op, "pair_class": row.pair_class,
                            "transfers": TRANSFERS.get(row.op, 1), **({"flag": flag} if flag else {})})  # fmt: skip
    if not details:
        return finding("aws-c2c", None, [], "not measured: every locality class skipped or disturbed")
    main = details[0]
    text = "; ".join(_per_transfer_ranges(details))
    if main["n"] >= evidence.MIN_RUNS:  # the answer's own evidence: the closest class's first op
        text += f"; {main['label']}: {evidence.quantity_text(main)}"
    skipped = int((classes["records"] == 0).sum()) if "records" in classes else 0
    if skipped:
        text += f"; {skipped} class × op rows this host lacks"
    flagged = [d for d in details if d.get("flag")]
    if flagged:
        which = ", ".join(f"{d['pair_class']} {d['op']} {d['value'] / d['transfers']:.1f}" for d in flagged)
        text += (f"; FLAG: {which} ns per transfer, about the memory latency ({memory_ns:.1f} ns): the topology says "
                 "these CPUs share a cache, the latency says the line came from about as far as memory (another die or "
                 "socket the guest cannot see, or a chip whose hand-offs are that slow)")  # fmt: skip
    return finding("aws-c2c", main, details, text)
