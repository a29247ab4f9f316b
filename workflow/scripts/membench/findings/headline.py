"""The report's first screen: per system, what its memory does, each number
linked to the section that derives it.

Pure functions over the analyse stage's tables (cells, modes, effective
concurrency, idle latencies): nothing here is measured or recomputed from
runs, so the summary can never disagree with the sections it links to.
"""

from __future__ import annotations

import math

import pandas as pd

from membench.analyse.c2c_summary import HIERARCHY_QUANTITIES
from membench.analyse.caches import past_caches
from membench.analyse.concurrency import lines_in_flight, placement_key, read_traffic
from membench.analyse.modes import MIN_RUNS
from membench.plan import families, knobs
from membench.core.text import percent

# Families whose records are bandwidths (not latencies or transfers).
BANDWIDTH = families.named(lambda f: f.bandwidth)
# Families whose records are a chase's latency under load.
LOADED = families.named(lambda f: f.metric == families.LOADED)
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
    """What memory moved by the kernel table's model: reads, write-allocate
    reads and write-backs (gbps_wa), else the STREAM count where a cell has
    no write-allocate figure. A model: Intel server cores since Ice Lake can
    skip the read for a full-line store, so it may overstate."""
    if "gbps_wa_median" not in cells:
        return cells["gbps_median"].astype(float)
    return cells["gbps_wa_median"].astype(float).fillna(cells["gbps_median"].astype(float))


# A headline stands on at least this many undisturbed runs: the highest of
# many one-run medians is the luckiest run (the winner's curse), not the machine.
HEADLINE_RUNS = 2
# How a family's headline cell stands, best first (membench.findings.first_screen says each).
STANDINGS = ("runs", "one run", "every run disturbed")


def runs_used(cells: pd.DataFrame) -> pd.Series:
    """The undisturbed runs each cell's numbers are over."""
    used = cells["n_used"] if "n_used" in cells else cells["n_ok"]
    return used.fillna(0).astype(int)


def row_runs(row: pd.Series) -> int:
    """The undisturbed runs one cell's numbers are over."""
    return int(row["n_used"] if "n_used" in row and _known(row["n_used"]) else row["n_ok"])


def _bandwidth_entry(row: pd.Series, standing: str) -> dict:
    return {
        "family": row["kernel"],
        "gbps": float(row["gbps_median"]) if _known(row["gbps_median"]) else None,
        "gbps_all": float(row["gbps_median_all"]) if _known(row.get("gbps_median_all")) else None,
        "traffic_gbps": float(row["traffic_median"]) if _known(row["traffic_median"]) else None,
        "op": row["op"],
        "threads": int(row["threads"]),
        "affinity": row[knobs.asked("affinity")],
        "pages": row["pages"],
        "placement": _placement_text(row),
        "runs": row_runs(row),
        "standing": standing,
        "link": experiment_anchor(row["experiment"]),
        "cell": row["cell"],
    }


def bandwidth_cells(cells: pd.DataFrame) -> pd.DataFrame:
    """The bandwidth cells past the caches that ran, with their modelled
    memory traffic; a cell whose every run was disturbed is kept (no median)."""
    if "gbps_median" not in cells and "gbps_median_all" not in cells:
        return cells.iloc[0:0]
    if "gbps_median" not in cells:  # every run of every cell disturbed: no undisturbed median anywhere
        cells = cells.assign(gbps_median=math.nan)
    ok = cells[(cells["n_ok"] > 0) & cells["kernel"].isin(BANDWIDTH)]
    # a cell whose arrays fit the LLC its threads can use measures a cache
    ok = past_caches(ok)
    return ok.assign(traffic_median=traffic(ok))


def best_cell(cells: pd.DataFrame) -> tuple[pd.Series, str] | None:
    """The cell x op with the highest median STREAM count over its
    undisturbed runs among those with HEADLINE_RUNS or more; one-run cells
    only when no cell has more; with no undisturbed run anywhere, the cell
    whose runs (all disturbed) had the highest median, whose fastest run
    then bounds the bandwidth from below. With its standing (STANDINGS)."""
    if cells.empty:
        return None
    measured = cells[cells["gbps_median"].notna()]
    enough = measured[runs_used(measured) >= HEADLINE_RUNS]
    if not enough.empty:
        return enough.loc[enough["gbps_median"].astype(float).idxmax()], STANDINGS[0]
    if not measured.empty:
        return measured.loc[measured["gbps_median"].astype(float).idxmax()], STANDINGS[1]
    if "gbps_median_all" in cells and cells["gbps_median_all"].notna().any():
        return cells.loc[cells["gbps_median_all"].astype(float).idxmax()], STANDINGS[2]
    return None


def peak_per_family(cells: pd.DataFrame) -> list[dict]:
    """Per kernel family, its best cell and op by best_cell, highest STREAM
    count first; families that stand on one run, then those whose every
    run was disturbed, after those that stand on HEADLINE_RUNS."""
    ok = bandwidth_cells(cells)
    entries = []
    for _, family in ok.groupby("kernel", sort=False):
        chosen = best_cell(family)
        if chosen is not None:
            entries.append(_bandwidth_entry(*chosen))
    return sorted(entries, key=lambda e: (STANDINGS.index(e["standing"]), -(e["gbps"] or e["gbps_all"] or 0.0)))


def single_thread(cells: pd.DataFrame) -> dict | None:
    ok = bandwidth_cells(cells)
    chosen = best_cell(ok[ok["threads"] == 1])
    return _bandwidth_entry(*chosen) if chosen is not None else None


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


# A loaded latency stands for the latency at a bandwidth cell's traffic when
# its load read within this share of the cell's read traffic: latency climbs
# steeply near saturation, so a much lighter load says little about the peak.
LOADED_MATCH = 0.15


def loaded_near(cells: pd.DataFrame, placement: str, pages: str, read_gbps: float) -> tuple[pd.Series, float] | None:
    """The loaded-latency cell under this placement and pages whose load
    read closest to read_gbps, with its read traffic, when within
    LOADED_MATCH of it; None when no load came that close."""
    if "ns_median" not in cells or not _known(read_gbps):
        return None
    loaded = cells[cells["kernel"].isin(LOADED) & cells["ns_median"].notna() & (cells["pages"] == pages)]
    loaded = loaded[[placement_key(p, a) == placement for p, a in zip(loaded[knobs.asked("policy")], loaded[knobs.asked("affinity")])]]
    if loaded.empty:
        return None
    reads = loaded.apply(read_traffic, axis=1).astype(float)
    gap = (reads / read_gbps - 1).abs()
    if not gap.notna().any() or gap.min() > LOADED_MATCH:
        return None
    nearest = gap.idxmin()
    return loaded.loc[nearest], float(reads[nearest])


def _concurrency_peak(peaks: list[dict]) -> dict | None:
    """The highest bandwidth that stands on undisturbed runs (HEADLINE_RUNS
    where a family has them): the first screen's first such entry."""
    return next((p for p in peaks if p["standing"] != STANDINGS[2]), None)


def concurrency_at_peak(ec: pd.DataFrame, peak: dict | None, cells: pd.DataFrame | None = None, line_bytes: int = 64) -> dict | None:
    """Little's law at the highest bandwidth measured: its read traffic x
    the loaded latency measured at about that traffic (loaded_near), else x
    the idle latency, which makes the lines in flight a lower bound (a
    loaded memory answers more slowly than an idle one)."""
    if peak is None or ec.empty:
        return None
    row = ec[(ec["cell"] == peak["cell"]) & (ec["op"] == peak["op"])]
    if row.empty:
        return None
    row = row.iloc[0]
    traffic = float(row["traffic_gbps"])
    near = loaded_near(cells if cells is not None else ec.iloc[0:0], row["placement"], row["pages"], traffic)
    common = {"known": True, "traffic_gbps": traffic, "family": peak["family"], "op": peak["op"], "runs": peak["runs"],
              "write_gbps": float(row["write_traffic_gbps"]) if _known(row.get("write_traffic_gbps")) else None,
              "link": "#concurrency"}  # fmt: skip
    if near is not None:
        loaded, load_gbps = near
        lines = lines_in_flight(traffic, float(loaded["ns_median"]), line_bytes)
        return {**common, "lines": lines, "bytes": lines * line_bytes, "lines_per_thread": lines / peak["threads"],
                "latency_ns": float(loaded["ns_median"]), "latency_kind": families.LOADED, "bound": None,
                "latency_runs": row_runs(loaded), "load_gbps": load_gbps,
                "latency_source": f"loaded chase, {loaded['experiment']}, load read {load_gbps:.1f} GB/s"}  # fmt: skip
    if not _known(row["latency_ns"]):
        return {"known": False, "why": row["latency_source"], "link": "#concurrency"}
    return {**common, "lines": float(row["lines_in_flight"]), "bytes": float(row["bytes_in_flight"]),
            "lines_per_thread": float(row["lines_per_thread"]), "latency_ns": float(row["latency_ns"]),
            "latency_kind": "idle", "bound": "at least", "latency_runs": None, "load_gbps": None,
            "latency_source": str(row["latency_source"])}  # fmt: skip


# Cache-to-cache ops that take two transfers of a line (there and back) for
# the one latency they report; every other op's hand-off is one transfer.
TWO_TRANSFER_OPS = ("two_line",)


def _c2c_op(level: str) -> str | None:
    """The op of a hierarchy row labelled by membench.analyse.c2c_summary."""
    return next((op for op, quantity in HIERARCHY_QUANTITIES.items() if level.startswith(quantity)), None)


def _c2c_entries(rows: list[dict], pages: str) -> list[dict]:
    """The cache-to-cache rows in one entry per kind of transfer: one
    transfer ("c2c", clean and dirty loads, cas) and two ("c2c two_line"),
    never one range across both; each the range over its classes, with the
    flags its rows carry."""
    out = []
    for two, name in ((False, "c2c"), (True, "c2c two_line")):
        mine = [r for r in rows if (r["op"] in TWO_TRANSFER_OPS) == two]
        if not mine:
            continue
        values = [r["ns"] for r in mine]
        flagged = sorted({r["op"] for r in mine if r["flag"]})
        # the flag's own words are long (the hierarchy table has them): the screen marks which ops carry one
        short = f"⚑ {', '.join(flagged)}: hand-off about the memory latency" if flagged else None
        out.append({"level": name, "ns": min(values), "upto": max(values) if max(values) > min(values) else None,
                    "cycles": None, "pages": pages, "link": "#hierarchy", "flag": short,
                    "flag_detail": "; ".join(dict.fromkeys(r["flag"] for r in mine if r["flag"])) or None,
                    "ops": sorted({r["op"] for r in mine})})  # fmt: skip
    return out


def hierarchy_headline(levels: dict | None) -> list[dict]:
    """The levels the sweep found, for the smallest pages measured: "L1
    1.2 ns", ..., linked to the hierarchy table; levels not found are left
    to the table, which says so. The cache-to-cache rows, whose names are
    long, are an entry per kind of transfer (_c2c_entries), before memory."""
    if not levels:
        return []
    pages = levels["pages"][0]
    found, c2c = [], []
    for row in levels["rows"]:
        one = row["per_pages"].get(pages)
        if not one or one["ns"] is None or row["level"].startswith("unassigned"):
            continue
        flag = one.get("flag") or row.get("flag")  # the hierarchy's own mark, where it gives one
        entry = {"level": row["level"], "ns": one["ns"], "upto": None, "cycles": one["cycles"], "pages": pages,
                 "link": "#hierarchy", "flag": flag if isinstance(flag, str) and flag else None}  # fmt: skip
        op = _c2c_op(row["level"])  # a hand-off's row (membench.analyse.c2c_summary labels them)
        if op is not None:
            c2c.append({**entry, "op": op})
        else:
            found.append(entry)
    at = next((i for i, e in enumerate(found) if e["level"] == "memory"), len(found))
    found[at:at] = _c2c_entries(c2c, pages)
    return found


VERDICT_WORDS = {
    "unexplained": "with modes nothing recorded explains",
    "explained": "with modes a recorded factor explains",
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
                "concurrency": concurrency_at_peak(ec[ec["system"] == name] if not ec.empty else ec, _concurrency_peak(peaks),
                                                   mine, topology.get("line_bytes", 64)),
                "hierarchy": hierarchy_headline(next((h for h in levels if h["system"] == name), None)),
                "verdicts": experiment_verdicts(
                    mine, modes[modes["system"] == name] if modes is not None and not modes.empty else modes, experiments
                ),
            }
        )
    return out
