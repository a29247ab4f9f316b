"""Each experiment's answer to its paper's question, on this machine.

One finding per experiment and system: a headline value or effect with
its evidence (membench.findings.evidence), the cells it comes from, one
sentence, and the details it rests on. Which question an experiment asks
is its family's `paper` trait (membench.plan.families); the axes that vary
in it decide what can be compared.

`runs` is the ok, undisturbed repetitions of the experiment (one row per
repetition and op; for the chase one per working-set point), `cells` the
analyse stage's cells.csv rows of the experiment.
"""

from __future__ import annotations

import json
import math

import pandas as pd

from membench.analyse.caches import past_caches
from membench.core.text import percent, size_text
from membench.findings import evidence
from membench.plan import families, knobs

# Axes a bandwidth experiment may vary, in the order a comparison names them.
# threads: the threads the harness ran (the other axes as asked).
SIZE = knobs.asked("size")
AXES = [knobs.column("variant"), "threads", *knobs.columns("affinity", "policy", "pages", "init", "size", "load_delay")]
AFFINITY = knobs.column("affinity")
# How labels name an axis (else by its knob: membench.plan.knobs.knob_word).
AXIS_WORDS = {SIZE: "size", knobs.asked("load_delay"): "delay"}
# What each paper asks (MISSION.md).
QUESTIONS = {
    "colfax": "What does thread placement change, in the mean and in the spread?",
    "mccalpin": "What did each feature of the read-only ladder buy?",
    "sun": "How does the read-modify-write bandwidth scale with threads, and how far do runs range?",
    "ornl": "Where does bandwidth fall as the arrays grow, and where did their pages land?",
    "mlc": "How much bandwidth can every CPU inject, per read:write mix?",
    "aws-latency": "What is the idle latency of memory, and the hierarchy in front of it?",
    "aws-loaded": "How much does latency grow under the heaviest load measured?",
    "aws-c2c": "How long does a cache line take to move between two cores, per locality class?",
}
# The question of a family that names no paper (its `paper` trait empty).
OWN_QUESTION = "How does it scale with threads, and how far do runs range?"
FEATURES = {
    "feature_sw_prefetch": "SW prefetch",
    "feature_vector_bits": "vector",
    "feature_large_pages": "large pages",
    "feature_pages_per_loop": "pages per loop",
    "feature_partial_sums": "partial sums",
    "feature_opt_level": "optimisation level",
}


def _axis_word(axis: str) -> str:
    return AXIS_WORDS.get(axis, knobs.knob_word(axis))


def _level_text(axis: str, value) -> str:
    if axis == "threads":
        return f"{int(value)} thread{'s' if int(value) != 1 else ''}"
    if axis == SIZE:
        return size_text(float(value)) if str(value).replace(".", "", 1).isdigit() else str(value)
    return f"{_axis_word(axis)} {value}"


def metric_of(kernel: str) -> tuple[str, str]:
    """(column of a repetition's number, unit) of a family."""
    return metric_column(families.family(kernel).metric)


def metric_column(metric: str) -> tuple[str, str]:
    """(column of a repetition's number, unit) of what a family measures
    (membench.plan.families: BANDWIDTH, LATENCY, LOADED, HANDOFF)."""
    if metric == families.BANDWIDTH:
        return "gbps", "GB/s"
    if metric == families.HANDOFF:
        return "handoff_ns", "ns"
    return "ns_per_load", "ns"


def higher_is_better(column: str) -> bool:
    """Bandwidth is better higher; latencies and hand-offs lower."""
    return column == "gbps"


def _runs_of(runs: pd.DataFrame, cell: str, op, column: str) -> pd.Series:
    mine = runs[runs["cell"] == cell]
    if op is not None and not (isinstance(op, float) and math.isnan(op)) and "op" in mine:
        mine = mine[mine["op"] == op]
    if column not in mine:
        return pd.Series(dtype=float)
    values = mine[column].astype(float)
    if "repeat" in mine:  # each run's round: arms measured in the same rounds are compared round by round
        values.index = pd.Index(mine["repeat"], name=evidence.ROUND)
    return values.dropna()


def _ops(cells: pd.DataFrame) -> list:
    """The experiment's ops in the kernel's order; the last is the one its figures show."""
    return list(dict.fromkeys(cells["op"].dropna())) or [None]


def _varying(cells: pd.DataFrame) -> list[str]:
    return [a for a in AXES if a in cells and cells[a].astype(str).nunique() > 1]


def detail(label: str, result: dict, cells: list[str], text: str | None = None) -> dict:
    words = evidence.change_text(result) if result["unit"] == "x" else evidence.quantity_text(result)
    return {"label": label, **result, "cells": cells, "text": text or f"{label}: {words}"}


def comparisons(cells: pd.DataFrame, runs: pd.DataFrame, axis: str, column: str, base=None) -> list[dict]:
    """Every pair of cells that differ in `axis` only (same op): each level
    against the base level (the given one, else the first in config order)."""
    others = [a for a in AXES if a in cells and a != axis]
    out = []
    for (_, op), group in cells.groupby([cells[others].astype(str).agg("|".join, axis=1), "op"], sort=False, dropna=False):
        levels = list(dict.fromkeys(group[axis]))
        if len(levels) < 2:
            continue
        start = base if base in levels else levels[0]
        first = group[group[axis] == start].iloc[0]
        where = ", ".join(_level_text(a, first[a]) for a in _varying(cells) if a != axis)
        for level in levels:
            if level == start:
                continue
            row = group[group[axis] == level].iloc[0]
            result = evidence.effect(_runs_of(runs, first["cell"], op, column), _runs_of(runs, row["cell"], op, column),
                                     higher_is_better(column))  # fmt: skip
            label = f"{_axis_word(axis)} {start} → {level}" + (f" at {where}" if where else "") + (f", {op}" if isinstance(op, str) else "")
            # findings name an axis by its knob, never by a record key
            at_levels = {knobs.knob_word(a): str(first[a]) for a in _varying(cells) if a != axis}
            out.append({**detail(label, result, [first["cell"], row["cell"]]), "axis": knobs.knob_word(axis), "base": str(start),
                        "level": str(level), "op": op, "at": where, "at_levels": at_levels})  # fmt: skip
    return out


def _decided_first(rows: list[dict]) -> list[dict]:
    return sorted(rows, key=lambda r: (not r["decided"], -abs(math.log(r["value"])) if r["value"] else 0))


# An effect's answer travels with its finding: the adaptive rounds read `decided`, a reader the rest.
ANSWER_KEYS = ("answer", "margin", "false_alarm", "effect_bound")


def finding(paper: str, main: dict | None, details: list[dict], text: str) -> dict:
    empty = {"value": None, "unit": None, "n": 0, "interval": None, "interval_kind": None, "decided": False,
             "status": evidence.NO_RUN, "cells": []}  # fmt: skip
    head = {k: v for k, v in (main or empty).items() if k in empty or k in ANSWER_KEYS}
    return {"paper": paper, "question": QUESTIONS[paper] if paper else OWN_QUESTION, **head, "text": text, "details": details}


def _spread_details(cells: pd.DataFrame, runs: pd.DataFrame, column: str, ops: list) -> list[dict]:
    """The run-to-run spread (coefficient of variation) of each cell and op
    (every op: a paper's spread is of its own op, Colfax's of copy)."""
    out = []
    for row in cells[cells["op"].isin(ops)].itertuples() if ops != [None] else cells.itertuples():
        op = row.op if ops != [None] else None
        values = _runs_of(runs, row.cell, op, column)
        if len(values) < 2:
            continue
        cv = float(values.std(ddof=1) / values.mean())
        named = f", {op}" if len(ops) > 1 else ""
        enough = len(values) >= evidence.MIN_RUNS  # a spread, like any interval, from 3 runs on
        status = "decided" if enough else evidence.runs_needed_text(evidence.MIN_RUNS - len(values), per_arm=False)
        out.append({"label": f"spread {_level_text(AFFINITY, getattr(row, AFFINITY))}, {_level_text('threads', row.threads)}{named}",
                    "affinity": str(getattr(row, AFFINITY)), "threads": int(row.threads), "op": op,
                    "value": cv, "unit": "cv", "n": len(values), "interval": [float(values.min()), float(values.max())] if enough else None,
                    "interval_kind": "minimum–maximum of runs (GB/s)" if enough else None, "decided": enough, "status": status,
                    "cells": [row.cell], "text": f"run-to-run spread {percent(cv, 1)} (n={len(values)})" + ("" if enough else f", {status}")})  # fmt: skip
    return out


def same_cpus(cells: pd.DataFrame, runs: pd.DataFrame, cpus: int) -> list[str]:
    """Cells whose every run put one thread on each of the machine's CPUs:
    any two of them ran on the same CPUs, whatever their affinity said."""
    if not cpus or "oversubscribed_cpus" not in runs:
        return []
    full = []
    for cell, mine in runs.groupby("cell", sort=False):
        if len(mine) and (mine["threads"].astype(int) == cpus).all() and (mine["oversubscribed_cpus"].fillna(0) == 0).all():
            full.append(cell)
    return full


def machine_nodes(runs: pd.DataFrame, nodes: int | None = None) -> int | None:
    """How many NUMA nodes with memory the machine had: `nodes` (the
    topology's) when given, else each record's memory_nodes ("[0, 1]");
    None where neither says."""
    if nodes:
        return int(nodes)
    counts = set()
    for text in runs["memory_nodes"].dropna() if "memory_nodes" in runs else []:
        try:
            counts.add(len(json.loads(text) if isinstance(text, str) else list(text)))
        except (TypeError, ValueError):
            continue
    return max(counts) if counts else None


def _one_node(runs: pd.DataFrame, cells: list[str], nodes: int | None) -> bool:
    """Did these cells' threads, one on every CPU, all share one node? Then
    the machine has one node (threads_per_node: the most on any node)."""
    known = machine_nodes(runs, nodes)
    if known is not None:
        return known == 1
    mine = runs[runs["cell"].isin(cells)]
    if mine.empty or "threads_per_node" not in mine or mine["threads_per_node"].isna().any():
        return False
    # "32+32": threads on two nodes (not a number, so not one node)
    per_node = pd.to_numeric(mine["threads_per_node"], errors="coerce")
    return bool((per_node == mine["threads"].astype(float)).all())


def placement_answer(cells: pd.DataFrame, runs: pd.DataFrame, modes: pd.DataFrame, cpus: int, nodes: int | None = None) -> dict:
    """Colfax: none vs close vs spread at each thread count, in the mean
    (an effect per op) and in the spread (each cell's coefficient of
    variation); modes a recorded factor explains; placements on the same CPUs."""
    column, _ = metric_column(families.BANDWIDTH)
    ops = _ops(cells)
    if AFFINITY not in _varying(cells):
        return scaling_answer("colfax", cells, runs)
    effects = comparisons(cells, runs, AFFINITY, column, base="none")
    top = cells["threads"].max()
    shown = [e for e in effects if e["op"] == ops[-1] and float(e["at_levels"].get("threads", top)) == float(top)]
    main = next((e for e in shown if e["level"] == "spread"), shown[0] if shown else None)
    details = effects + _spread_details(cells, runs, column, ops)
    text = main["text"] if main else "no two placements at one thread count"
    full = same_cpus(cells, runs, cpus)
    on_all = cells[cells["cell"].isin(full) & (cells["op"] == ops[-1])] if ops[-1] is not None else cells.iloc[0:0]
    for threads, group in on_all.groupby("threads", sort=False):
        rows, pairs = list(group.itertuples()), []
        for i, a in enumerate(rows):
            for b in rows[i + 1:]:
                e = evidence.effect(_runs_of(runs, a.cell, ops[-1], column), _runs_of(runs, b.cell, ops[-1], column),
                                    higher_is_better(column))  # fmt: skip
                if e["value"] is None:
                    continue
                before, after = getattr(a, AFFINITY), getattr(b, AFFINITY)
                label = f"same CPUs: affinity {before} → {after} at {int(threads)} threads, {ops[-1]}"
                pairs.append({**detail(label, e, [a.cell, b.cell]), "axis": "affinity", "base": str(before),
                              "level": str(after), "op": ops[-1], "at": "same CPUs",
                              "at_levels": {"threads": str(threads)}, "one_node": _one_node(runs, [a.cell, b.cell], nodes)})  # fmt: skip
        if pairs:
            details += pairs
            widest = _decided_first(pairs)[0]
            names = ", ".join(str(getattr(r, AFFINITY)) for r in rows)
            same = main is not None and {main["base"], main["level"]} == {widest["base"], widest["level"]}
            change = "" if same else f"; {widest['base']} → {widest['level']} {evidence.change_text(widest)}"
            text += (f"; {names} each put one thread on every one of the {cpus} CPUs{change}"
                     + (": what sets them apart is not a placement membench can see" if evidence.changed(widest) else ""))  # fmt: skip
    if modes is not None and not modes.empty:
        explained = modes[modes["verdict"] == "explained"]
        if not explained.empty:
            text += f"; modes a recorded factor explains in {explained['cell'].nunique()} cell(s): " + "; ".join(
                dict.fromkeys(str(x) for x in explained["explanation"].head(3)))
    return finding("colfax", main, details, text)


def feature_answer(cells: pd.DataFrame, runs: pd.DataFrame, ec: pd.DataFrame) -> dict:
    """McCalpin: what each feature bought, as ratios between the versions
    that differ by it alone; the effective concurrency of the best and
    the worst version."""
    column, _ = metric_column(families.BANDWIDTH)
    features = [f for f in FEATURES if f in cells]
    versions = cells.drop_duplicates("variant").set_index("variant")
    details = []
    for a in versions.index:
        for b in versions.index:
            if a >= b:
                continue
            differ = [f for f in features if str(versions.at[a, f]) != str(versions.at[b, f])]
            if len(differ) != 1:
                continue
            result = evidence.effect(_runs_of(runs, versions.at[a, "cell"], None, column),
                                     _runs_of(runs, versions.at[b, "cell"], None, column))  # fmt: skip
            label = f"{FEATURES[differ[0]]}: {a} → {b} ({versions.at[a, differ[0]]} → {versions.at[b, differ[0]]})"
            details.append({**detail(label, result, [versions.at[a, "cell"], versions.at[b, "cell"]]), "feature": differ[0]})
    ranked = cells[cells["gbps_median"].notna()].sort_values("gbps_median") if "gbps_median" in cells else cells.iloc[0:0]
    main = None
    if len(ranked) >= 2:
        worst, best = ranked.iloc[0], ranked.iloc[-1]
        result = evidence.effect(_runs_of(runs, worst["cell"], None, column), _runs_of(runs, best["cell"], None, column))
        main = detail(f"best {best['variant']} vs worst {worst['variant']}", result, [worst["cell"], best["cell"]])
        for row, which in ((best, "best"), (worst, "worst")):
            lines = ec[ec["cell"] == row["cell"]]["lines_in_flight"].dropna() if not ec.empty else []
            if len(lines):
                details.append({"label": f"effective concurrency, {which} ({row['variant']})", "value": float(lines.iloc[0]),
                                "unit": "lines", "n": int(row["n_used"]) if "n_used" in row else None, "interval": None,
                                "interval_kind": None, "decided": False, "status": "derived", "cells": [row["cell"]],
                                "text": f"{which} version {row['variant']}: {float(lines.iloc[0]):.1f} lines in flight"})  # fmt: skip
    by_feature, same = {}, {}
    for d in details:
        if d.get("feature") and evidence.changed(d):
            by_feature.setdefault(FEATURES[d["feature"]], []).append(d["value"])
        elif d.get("feature") and d.get("answer") == "same":
            same[FEATURES[d["feature"]]] = d["margin"]
    bought = "; ".join(f"{name} ×{min(v):.2f}–{max(v):.2f}" if len(v) > 1 else f"{name} ×{v[0]:.2f}"
                       for name, v in by_feature.items())  # fmt: skip
    text = (main["text"] if main else "fewer than two versions measured") + (
        f"; decided feature effects: {bought}" if bought else "; no feature effect decided at these repetitions")
    if same:
        text += f"; the same within ±{percent(max(same.values()))}: {', '.join(same)}"
    return finding("mccalpin", main, details, text)


def scaling_answer(paper: str, cells: pd.DataFrame, runs: pd.DataFrame) -> dict:
    """Sun (and any bandwidth experiment over threads): GB/s per thread
    count with its range, and the scaling from the fewest threads to the most."""
    column, unit = "gbps", "GB/s"
    op = _ops(cells)[-1]
    mine = cells[cells["op"] == op] if op is not None else cells
    details = []
    for row in mine.itertuples():
        label = ", ".join(_level_text(a, getattr(row, a)) for a in _varying(cells) if a != "op") or _level_text("threads", row.threads)
        details.append(detail(label, evidence.quantity(_runs_of(runs, row.cell, op, column), unit), [row.cell]))
    main = None
    if "threads" in _varying(cells):
        effects = [e for e in comparisons(cells, runs, "threads", column) if e["op"] == op]
        details += effects
        if effects:
            main = max(effects, key=lambda e: float(e["level"]))
    if main is None and details:
        main = max(details, key=lambda d: d["value"] or 0)
    return finding(paper, main, details, main["text"] if main else evidence.NO_RUN)


def spilled_share(runs: pd.DataFrame, cell: str) -> float | None:
    """The share of an array's sampled pages away from the node holding most
    of them, the median over runs of the largest such share over arrays."""
    values = []
    for text in runs.loc[runs["cell"] == cell, "array_page_nodes"].dropna() if "array_page_nodes" in runs else []:
        try:
            arrays = json.loads(text)
        except (TypeError, ValueError):
            continue
        shares = [1 - max(nodes.values()) for nodes in arrays.values() if nodes]
        if shares:
            values.append(max(shares))
    return float(pd.Series(values).median()) if values else None


def size_answer(cells: pd.DataFrame, runs: pd.DataFrame) -> dict:
    """ORNL: where bandwidth falls as the size grows (the first decided drop
    between neighbouring sizes), and the share of each size's pages that
    spilled to another node; serial against parallel first touch."""
    varying = _varying(cells)
    if SIZE not in varying and "init" not in varying:
        return scaling_answer("ornl", cells, runs)
    column = "gbps"
    details = []
    main = None
    if SIZE in varying:
        op = _ops(cells)[-1]
        ordered = cells[cells["op"] == op].sort_values("size_bytes")
        for before, after in zip(ordered.iloc[:-1].itertuples(), ordered.iloc[1:].itertuples()):
            if str(getattr(before, SIZE)) == str(getattr(after, SIZE)):
                continue
            result = evidence.effect(_runs_of(runs, before.cell, op, column), _runs_of(runs, after.cell, op, column), higher_is_better(column))
            spill = spilled_share(runs, after.cell)
            label = f"size {size_text(before.size_bytes)} → {size_text(after.size_bytes)}"
            text = f"{label}: {evidence.change_text(result)}" + (f"; {percent(spill)} of the pages off their main node" if spill is not None else "")
            details.append({**detail(label, result, [before.cell, after.cell], text), "spilled_share": spill})
        drops = [d for d in details if evidence.changed(d) and d["value"] < 1]
        main = drops[0] if drops else (details[-1] if details else None)
    if "init" in varying:
        effects = comparisons(cells, runs, "init", column, base="parallel")
        details += effects
        main = main or (effects[0] if effects else None)
    text = (f"bandwidth first falls at {main['label']}: {main['text'].split(': ', 1)[1]}" if main and evidence.changed(main) and main["value"] < 1
            else (main["text"] + "; no decided fall" if main else evidence.NO_RUN))  # fmt: skip
    return finding("ornl", main, details, text)


def mix_answer(cells: pd.DataFrame, runs: pd.DataFrame) -> dict:
    """MLC: the injection bandwidth of each read:write mix at the most
    threads, and each mix against all reads."""
    column, unit = "gbps", "GB/s"
    top = cells[cells["threads"] == cells["threads"].max()]
    details = [detail(f"{row.op}", evidence.quantity(_runs_of(runs, row.cell, row.op, column), unit), [row.cell])
               for row in top.itertuples()]  # fmt: skip
    main = max(details, key=lambda d: d["value"] or 0) if details else None
    known = [d for d in details if d["value"] is not None]
    text = "injection " + ", ".join(f"{d['label']} {d['value']:.1f}" for d in known) + " GB/s" if known else evidence.NO_RUN
    fewest = min(known, key=lambda d: d["n"], default=None)
    if fewest is not None and fewest["n"] < evidence.MIN_RUNS:
        text += f" (n={fewest['n']}: {fewest['status']})"
    elif main is not None and main["value"] is not None:  # the answer's own evidence: the highest mix
        text += f"; {main['label']} {evidence.quantity_text(main)}"
    return finding("mlc", main, details, text)


def bandwidth_answer(paper: str, cells: pd.DataFrame, runs: pd.DataFrame, modes, ec, cpus: int, nodes: int | None = None) -> dict:
    """nodes: the machine's NUMA nodes (the topology's), when the caller has
    them; else the records' memory_nodes say it where they were read."""
    measured = past_caches(cells[cells["n_ok"] > 0]) if "cache" in cells else cells[cells["n_ok"] > 0]
    measured = measured if not measured.empty else cells[cells["n_ok"] > 0]
    if measured.empty:
        return finding(paper, None, [], "not measured: no cell has an undisturbed ok run")
    if paper == "colfax":
        return placement_answer(measured, runs, modes, cpus, nodes)
    if paper == "mccalpin":
        return feature_answer(measured, runs, ec)
    if paper == "ornl":  # the nodes say whether a spill could be measured here at all
        return {**size_answer(measured, runs), "memory_nodes": machine_nodes(runs, nodes)}
    if paper == "mlc":
        return mix_answer(measured, runs)
    return scaling_answer(paper, measured, runs)
