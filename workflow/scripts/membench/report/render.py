"""The self-contained HTML report: Jinja2 template + inline SVG figures.

Markup lives in reports/*.j2; this module only gathers the context. One
Environment, autoescape on, StrictUndefined (a missing value is an error,
not an empty cell).
"""

from __future__ import annotations

import datetime
import importlib.metadata
import json
import math
from pathlib import Path

import jinja2
import pandas as pd
import yaml
from markupsafe import Markup

from membench.plan import node_pairs
from membench.plan.grammar import group_text, parse_group
from membench.analyse.node_matrix import experiment_matrices, table_context
from membench.core import paths
from membench.core.atomic_files import write_text_atomic
from membench.analyse.caches import IN_CACHE, MARK, mark_in_cache, note as cache_note, past_caches
from membench.analyse.concurrency import effective_concurrency, idle_latencies
from membench.analyse.c2c_summary import hierarchy_rows, report_table
from membench.analyse.injection import loaded_little_table
from membench.probe.topology import llc_total_bytes
from membench.report.headline import system_headlines
from membench.analyse.hierarchy import hierarchy, measured_clocks
from membench.analyse.peak import best_shares, cell_shares, concurrency_needed, system_peaks
from membench.report.peak_tables import percent
from membench.analyse.stats import add_series
from membench.core.layout import superseded_counts
from membench.report.tables import idle_latency_table, tables_for
from membench.core.text import number, size_text
from membench.plan import families


TEMPLATE_DIR = paths.TEMPLATE_DIR




def cpu_ranges(cpus) -> str:
    """[0, 1, 2, 3, 8] -> "0-3,8": node CPU lists stay short at 256 CPUs."""
    cpus = sorted(int(c) for c in cpus)
    parts, start = [], None
    for i, cpu in enumerate(cpus):
        if start is None:
            start = cpu
        if i + 1 == len(cpus) or cpus[i + 1] != cpu + 1:
            parts.append(str(start) if start == cpu else f"{start}-{cpu}")
            start = None
    return ",".join(parts)


def make_environment(template_dir: Path) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(template_dir),
        autoescape=jinja2.select_autoescape(["html", "j2"]),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["number"] = number
    env.filters["bytes"] = size_text
    env.filters["cpu_ranges"] = cpu_ranges
    env.filters["percent"] = percent
    return env


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
        if pd.isna(usable) or pd.isna(footprint) or footprint >= 4 * usable:
            continue
        what = (f"fits the {size_text(usable)} of last-level cache its threads can use: it measured a cache, "
                f"marked {MARK} {IN_CACHE}" if getattr(row, "cache", None) == IN_CACHE or footprint <= usable
                else f"is below 4 × the {size_text(usable)} of last-level cache its threads can use; caches inflate these numbers")  # fmt: skip
        warnings.append(f"{row.system} {row.cell}: {size_text(footprint)} of arrays ({size_text(row.size_bytes)} per array) {what}.")
    return warnings


# Keys that mean something only for some kernels (defaults fill them for
# all): shown where the family's knobs (membench.plan.families) list them.
ONLY_WHERE_THEY_APPLY = ("load_op", "load_delay", "sweep_from", "points_per_octave", "prefetch_distance",
                         "chase_group", "threads", "affinity")


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
    table = report_table(classes[classes["experiment"] == experiment])
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


def c2c_hierarchy_rows(classes: pd.DataFrame | None) -> dict[str, dict[str, dict]]:
    """The hierarchy table's cache-to-cache rows, as the AWS paper has them:
    a line modified in another core (two_line) and a clean, read-shared one
    (clean), per locality class measured."""
    rows = hierarchy_rows(classes, op="two_line")
    for system, clean in hierarchy_rows(classes, op="clean").items():
        for label, row in clean.items():
            rows.setdefault(system, {})[label.replace("modified in", "clean (read-shared) in")] = row
    return rows


def _axes(spec: dict, part: pd.DataFrame) -> dict:
    """The experiment's axes as the config writes them; a chase group its
    stored runs state otherwise (an earlier membench's, membench.store.claims)
    is named beside it, never passed off as the config's."""
    axes = {k: v for k, v in spec.items() if k not in ("kernel", "exclude") and _relevant(k, spec["kernel"])}
    if "chase_group" in axes and "chase_group_requested" in part:
        asked = {group_text(parse_group(g)) for g in axes["chase_group"]}
        stored = sorted({group_text(g) for g in part["chase_group_requested"].dropna()} - asked)
        if stored:
            axes["chase_group"] = f"{axes['chase_group']}; stored runs of an earlier membench: {', '.join(stored)}"
    return axes


def build_context(
    *,
    config: dict,
    cells: pd.DataFrame,
    problems: pd.DataFrame,
    figures: dict[str, dict[str, str]],
    systems: dict[str, dict],
    provenance: dict,
    modes: pd.DataFrame | None = None,
    superseded: dict | None = None,
    c2c_classes: pd.DataFrame | None = None,
    stored: dict | None = None,
) -> dict:
    """superseded: system -> {cell id: repetitions moved aside}
    (membench.core.layout.superseded_counts); stored: figures-only, system ->
    {"not_shown": lines, "migrated": lines} (membench.store.claims)."""
    line_bytes = {name: system["topology"]["line_bytes"] for name, system in systems.items()}
    peaks = system_peaks(systems, config.get("systems"))
    shares = cell_shares(cells, peaks)
    llc_bytes = {name: system["topology"].get("llc_bytes") for name, system in systems.items()}
    ec = concurrency_needed(effective_concurrency(cells, line_bytes, llc_bytes), shares, line_bytes)
    experiments = []
    shown = mark_in_cache(cells)  # every table names an in-cache cell's size with its mark
    for name, spec in config["experiments"].items():
        part = shown[shown["experiment"] == name]
        part_ec = ec[ec["experiment"] == name] if not ec.empty else ec
        tables = tables_for(spec["kernel"], part, part_ec, shares[shares["experiment"] == name])
        if families.family(spec["kernel"]).metric == families.LOADED and (little := loaded_little_table(part, line_bytes)):
            tables.append(little)
        experiments.append(
            {
                "name": name,
                "kernel": spec["kernel"],
                "axes": _axes(spec, part),
                "figures": {kind: Markup(svg) for kind, svg in figures.get(name, {}).items()},
                "tables": tables + c2c_tables(c2c_classes, name),
                "cells": [
                    {**row, "superseded": (superseded or {}).get(row["system"], {}).get(row["cell"], 0)}
                    for row in _records(part)
                ],
                # beside the placement figure, whose runs and ticks it explains
                "modes": _modes_rows(modes, name, part) if "placement" in figures.get(name, {}) else [],
                "matrices": _matrices(cells, problems, systems, name) if node_pairs.uses_pairs(spec) else [],
            }
        )
    latencies = idle_latencies(cells, llc_bytes, line_bytes)
    best = best_shares(shares)
    levels = hierarchy(cells, {name: system["topology"] for name, system in systems.items()}, measured_clocks(cells),
                       c2c_hierarchy_rows(c2c_classes))
    headlines = system_headlines(cells, ec, latencies, modes, systems, list(config["experiments"]), levels)
    for headline in headlines:  # the theoretical peak and the best share per family, on the first screen too
        headline["theoretical"] = peaks[headline["system"]]
        headline["peak_shares"] = [b for b in best if b["system"] == headline["system"]]
    return {
        "hierarchy": levels,
        "headlines": headlines,
        "stored": stored or {},
        "provenance": provenance,
        "systems": systems,
        "experiments": experiments,
        "problems": _records(problems),
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
        "totals": {
            "cells": int(cells[["system", "cell"]].drop_duplicates().shape[0]),
            "ok": int(cells["n_ok"].sum()),
            "skipped": int(cells["n_skipped"].sum()),
            "failed": int(cells["n_failed"].sum()),
            # the disturbed rule's marks (membench.core.disturbance), for the first screen
            "disturbed": int(cells["n_disturbed"].fillna(0).sum()) if "n_disturbed" in cells else 0,
            "disturbance_not_recorded": (
                int(cells["n_disturbance_not_recorded"].fillna(0).sum()) if "n_disturbance_not_recorded" in cells else 0
            ),
        },
    }


def render_report(
    *,
    template: str,
    stylesheet: str,
    config: dict,
    cells_csv: str,
    problems_csv: str,
    figures: list[str],
    modes_csv: str | None = None,
    c2c_classes_csv: str | None = None,
    system_files: dict[str, dict[str, str]],
    provenance: dict,
    output: str,
    stored: dict | None = None,
) -> None:
    """figures: SVG paths named <experiment>-<kind>.svg; system_files:
    system -> {"topology": path, "environment": path}."""
    svgs: dict[str, dict[str, str]] = {}
    for path in map(Path, figures):
        experiment, kind = path.stem.rsplit("-", 1)
        svgs.setdefault(experiment, {})[kind] = path.read_text()
    systems = {
        name: {kind: json.loads(Path(path).read_text()) for kind, path in files.items()}
        for name, files in system_files.items()
    }
    context = build_context(
        config=config,
        cells=pd.read_csv(cells_csv),
        problems=pd.read_csv(problems_csv),
        modes=pd.read_csv(modes_csv) if modes_csv else None,
        c2c_classes=pd.read_csv(c2c_classes_csv) if c2c_classes_csv else None,
        figures=svgs,
        systems=systems,
        stored=stored,
        superseded={name: superseded_counts(Path(files["topology"]).parent) for name, files in system_files.items()},
        provenance={
            **provenance,
            "snakemake_version": importlib.metadata.version("snakemake"),
            "rendered_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        },
    )
    env = make_environment(Path(template).parent)
    context["stylesheet"] = Markup(Path(stylesheet).read_text())
    html = env.get_template(Path(template).name).render(**context)
    write_text_atomic(Path(output), html)
