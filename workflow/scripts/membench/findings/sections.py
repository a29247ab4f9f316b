"""The report's sections as data: every table, figure caption value and
first-screen number of the report, derived from the analyse stage's
summaries, the probe's files and the config (results/summary/sections.json).

report/ only formats what is here; nothing downstream computes.
"""

from __future__ import annotations

import math

import pandas as pd
import yaml

from membench.plan import node_pairs
from membench.plan.figure_kinds import kinds_for
from membench.plan.grammar import group_text, parse_group
from membench.analyse.node_matrix import experiment_matrices
from membench.analyse.caches import IN_CACHE, MARK, PAST_CACHES_FACTOR, mark_in_cache, note as cache_note, past_caches
from membench.analyse.concurrency import effective_concurrency, idle_latencies
from membench.analyse.c2c_summary import hierarchy_rows, memory_by_system
from membench.findings.locality_tables import c2c_class_table, table_context
from membench.findings.mix_tables import loaded_little_table
from membench.probe.topology import llc_total_bytes
from membench.findings.headline import system_headlines
from membench.analyse.hierarchy import cache_levels, hierarchy, measured_clocks
from membench.analyse.peak import best_shares, cell_shares, concurrency_needed, system_peaks
from membench.analyse.stats import add_series
from membench.findings.tables import idle_latency_table, tables_for
from membench.findings import arch_words
from membench.core.text import size_text
from membench.plan import families, knobs


def cache_warnings(cells: pd.DataFrame, systems: dict) -> list[str]:
    """STREAM's rule, per bandwidth cell: its footprint (arrays x size)
    against the LLC capacity its threads could use (the instances their
    CPUs share; membench.analyse.caches). In cache: it measured a cache;
    under 4 x that capacity: caches still inflate it."""
    warnings = []
    bandwidth = cells[cells["kernel"].isin(families.named(lambda f: f.bandwidth))]  # latency kernels go small on purpose
    for row in bandwidth.drop_duplicates(["system", "cell"]).itertuples():
        footprint, usable = getattr(row, "footprint_bytes", math.nan), getattr(row, "llc_usable_bytes", math.nan)
        if pd.isna(footprint) or pd.isna(usable):
            # records collected before llc_usable_bytes: the system's LLCs, all of them
            usable = llc_total_bytes(systems.get(row.system, {}).get("topology", {})) or math.nan
            footprint = row.size_bytes * getattr(row, "arrays", math.nan) if hasattr(row, "arrays") else row.size_bytes
        if pd.isna(usable) or pd.isna(footprint) or footprint >= PAST_CACHES_FACTOR * usable:
            continue
        what = (f"fits the {size_text(usable)} of last-level cache its threads can use: it measured a cache, "
                f"marked {MARK} {IN_CACHE}" if getattr(row, "cache", None) == IN_CACHE or footprint <= usable
                else f"is below {PAST_CACHES_FACTOR} × the {size_text(usable)} of last-level cache its threads can use; caches inflate these numbers")  # fmt: skip
        warnings.append(f"{row.system} {row.cell}: {size_text(footprint)} of arrays ({size_text(row.size_bytes)} per array) {what}.")
    return warnings


# Keys that mean something only for some kernels (defaults fill them for
# all): shown where the family's knobs (membench.plan.families) list them.
ONLY_WHERE_THEY_APPLY = frozenset(knob for traits in families.FAMILIES.values() for knob in traits.knobs)


PEAK_NOTE = (
    "Dashed: the theoretical peak of the nodes holding the pages (see Machine for its source; a peak more than 4 × "
    "above the axis is named at its top instead of squashing the data); the curves are the "
    "STREAM count, the tables' % of peak the memory traffic with write-allocate reads."
)


def _relevant(key: str, kernel: str) -> bool:
    return key not in ONLY_WHERE_THEY_APPLY or families.applies(key, kernel)


def little_example(ec: pd.DataFrame) -> dict | None:
    """The headline instance of Little's law: single-thread triad when
    measured, else the first cell that has a matching latency."""
    if ec.empty:
        return None
    known = past_caches(ec[ec["latency_ns"].notna()])
    if known.empty:
        return None
    triad = known[(known["op"] == "triad") & (known["threads"] == 1)]
    return _records((triad if not triad.empty else known).head(1))[0]


def _records(frame: pd.DataFrame) -> list[dict]:
    """Rows as dicts with NaN as None (StrictUndefined-safe, formatted by filters)."""
    return [
        {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()}
        for row in frame.to_dict("records")
    ]


def _modes_rows(modes: pd.DataFrame | None, experiment: str, cells: pd.DataFrame) -> list[dict]:
    """The modes of an experiment's cells for the op its figures show (the
    kernel's last op); results/summary/modes.csv has every op."""
    if modes is None or modes.empty:
        return []
    mine = modes[modes["experiment"] == experiment]
    if mine.empty:
        return []
    op = list(dict.fromkeys(cells["op"].dropna()))[-1] if cells["op"].notna().any() else None
    mine = add_series(mine[mine["op"] == op] if op is not None else mine)
    order = {series: i for i, series in enumerate(dict.fromkeys(mine["series"]))}  # the config's order
    return _records(mine.assign(_order=mine["series"].map(order)).sort_values(["_order", "threads"], kind="stable"))


def c2c_tables(classes: pd.DataFrame | None, experiment: str) -> list[dict]:
    """The class table of a c2c experiment (results/summary/c2c_classes.csv)."""
    if classes is None or classes.empty:
        return []
    table = c2c_class_table(classes[classes["experiment"] == experiment])
    return [table] if table else []


def system_settings(environment: dict) -> str:
    """The settings that change what a matrix measures, as the probe read
    them (membench writes none of them)."""
    pages = "; ".join(f"{size}: {p['nr']}" for size, p in environment.get("hugepages", {}).items()) or "none"
    return (
        f"numa_balancing {environment.get('numa_balancing')}, zone_reclaim_mode {environment.get('zone_reclaim_mode')}, "
        f"THP {environment.get('thp_enabled')} (defrag {environment.get('thp_defrag')}), huge pages reserved {pages}, "
        f"prefetchers {environment.get('prefetchers', 'unknown: not probed (environment.json predates the key)')}"
    )


def _matrices(cells: pd.DataFrame, problems: pd.DataFrame, systems: dict, experiment: str) -> list[dict]:
    topologies = {name: system.get("topology") for name, system in systems.items()}
    out = []
    for one in experiment_matrices(cells, problems, topologies, experiment):
        context = table_context(one)
        context["settings"] = system_settings(systems.get(one.system, {}).get("environment", {}))
        out.append(context)
    return out


def _axes(spec: dict, part: pd.DataFrame) -> dict:
    """The experiment's axes as the config writes them; a chase group its
    stored runs state otherwise (an earlier membench's, membench.store.claims)
    is named beside it, never passed off as the config's."""
    axes = {k: v for k, v in spec.items() if k not in ("kernel", "exclude") and _relevant(k, spec["kernel"])}
    text = {k: ", ".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v) for k, v in axes.items()}
    if "chase_group" in axes and knobs.asked("chase_group") in part:
        asked = {group_text(parse_group(g)) for g in axes["chase_group"]}
        stored = sorted({group_text(g) for g in part[knobs.asked("chase_group")].dropna()} - asked)
        if stored:
            text["chase_group"] += f"; stored runs of an earlier membench: {', '.join(stored)}"
    return text


def derived_tables(config: dict, cells: pd.DataFrame, systems: dict[str, dict], c2c_classes: pd.DataFrame | None,
                   runs: pd.DataFrame | None = None) -> dict:
    """The analyse stage's derived tables that the sections and the
    findings both read: peaks and shares of peak, effective concurrency,
    idle latencies, the hierarchy. runs: the undisturbed ok records, over
    which the idle latency is a statistic of runs (one memory latency for
    the first screen, the hierarchy, effective concurrency and loaded/idle)."""
    line_bytes = {name: system["topology"]["line_bytes"] for name, system in systems.items()}
    llc_bytes = {name: system["topology"].get("llc_bytes") for name, system in systems.items()}
    topologies = {name: system["topology"] for name, system in systems.items()}
    latencies = idle_latencies(cells, llc_bytes, line_bytes, runs, {name: cache_levels(t) for name, t in topologies.items()})
    peaks = system_peaks(systems, config.get("systems"))
    shares = cell_shares(cells, peaks)
    ec = concurrency_needed(effective_concurrency(cells, line_bytes, llc_bytes, latencies), shares, line_bytes)
    levels = hierarchy(cells, topologies, measured_clocks(cells), hierarchy_rows(c2c_classes, memory_ns=memory_by_system(latencies)),
                       latencies)  # fmt: skip
    return {"line_bytes": line_bytes, "peaks": peaks, "shares": shares, "ec": ec, "best": best_shares(shares),
            "latencies": latencies, "levels": levels}  # fmt: skip


def _experiment_section(name: str, spec: dict, part: pd.DataFrame, derived: dict, archs, c2c_classes, superseded, modes,
                        whole: tuple) -> dict:
    """One experiment's section of the report: its tables (notes in the
    report's architectures' words), cells, modes and node matrices."""
    cells, problems, systems = whole
    ec, shares = derived["ec"], derived["shares"]
    part_ec = ec[ec["experiment"] == name] if not ec.empty else ec
    tables = tables_for(spec["kernel"], part, part_ec, shares[shares["experiment"] == name])
    if families.family(spec["kernel"]).metric == families.LOADED and (little := loaded_little_table(part, derived["line_bytes"])):
        tables.append(little)
    tables = [{**t, "note": arch_words.in_words(t["note"], archs)} if t.get("note") else t for t in tables]
    return {
        "name": name,
        "kernel": spec["kernel"],
        "axes": _axes(spec, part),
        "tables": tables + c2c_tables(c2c_classes, name),
        "cells": [{**row, "superseded": (superseded or {}).get(row["system"], {}).get(row["cell"], 0)} for row in _records(part)],
        # beside the placement figure, whose runs and ticks it explains
        "modes": _modes_rows(modes, name, part) if "placement" in kinds_for(spec) else [],
        "matrices": _matrices(cells, problems, systems, name) if node_pairs.uses_pairs(spec) else [],
    }


def _totals(cells: pd.DataFrame) -> dict:
    """The cells and runs counted, for the first screen."""
    return {
        "cells": int(cells[["system", "cell"]].drop_duplicates().shape[0]),
        "ok": int(cells["n_ok"].sum()),
        "skipped": int(cells["n_skipped"].sum()),
        "failed": int(cells["n_failed"].sum()),
        # the disturbed rule's marks (membench.core.disturbance), for the first screen
        "disturbed": int(cells["n_disturbed"].fillna(0).sum()) if "n_disturbed" in cells else 0,
        "disturbance_not_recorded": (
            int(cells["n_disturbance_not_recorded"].fillna(0).sum()) if "n_disturbance_not_recorded" in cells else 0
        ),
    }


def build_sections(
    *,
    config: dict,
    cells: pd.DataFrame,
    problems: pd.DataFrame,
    systems: dict[str, dict],
    modes: pd.DataFrame | None = None,
    superseded: dict | None = None,
    c2c_classes: pd.DataFrame | None = None,
    stored: dict | None = None,
    derived: dict | None = None,
) -> dict:
    """derived: derived_tables(), when the caller has it already;
    superseded: system -> {cell id: repetitions moved aside}
    (membench.core.layout.superseded_counts); stored: figures-only, system ->
    {"not_shown": lines, "migrated": lines} (membench.store.claims)."""
    derived = derived or derived_tables(config, cells, systems, c2c_classes)
    peaks, shares, ec = derived["peaks"], derived["shares"], derived["ec"]
    archs = arch_words.report_archs(systems)  # notes in the words of the report's architectures
    shown = mark_in_cache(cells)  # every table names an in-cache cell's size with its mark
    experiments = [_experiment_section(name, spec, shown[shown["experiment"] == name], derived, archs, c2c_classes,
                                       superseded, modes, (cells, problems, systems))
                   for name, spec in config["experiments"].items()]  # fmt: skip
    latencies, best, levels = derived["latencies"], derived["best"], derived["levels"]
    headlines = system_headlines(cells, ec, latencies, modes, systems, list(config["experiments"]), levels)
    for headline in headlines:  # the theoretical peak and the best share per family, on the first screen too
        headline["theoretical"] = peaks[headline["system"]]
        headline["peak_shares"] = [b for b in best if b["system"] == headline["system"]]
    return {
        "hierarchy": levels,
        "headlines": headlines,
        "stored": stored or {},
        "systems": systems,
        "experiments": experiments,
        # an x86 variant skipped on Arm (and the reverse) says it does not apply there
        "problems": arch_words.problems_in_words(_records(problems), systems),
        "streaming_stores": arch_words.streaming_stores(archs),
        "warnings": cache_warnings(cells, systems),
        # said once, on the first screen: in-cache cells feed no headline
        "cache_note": cache_note(cells),
        "little": little_example(ec),
        # per system: the peak, its source and derivation, or why unknown;
        # the best share per system and kernel family (for summaries too)
        "peaks": peaks,
        "peak_best": best,
        "peak_note": PEAK_NOTE if not shares.empty else None,
        "idle_latencies": idle_latency_table(latencies),
        "config_yaml": yaml.safe_dump(config, sort_keys=False),
        "totals": _totals(cells),
    }


