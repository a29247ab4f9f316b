"""Latency figures: ns per load vs working set with each system's data
caches marked, and the loaded curve (the chasing thread's latency vs the
load threads' GB/s).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from membench.figures.style import plt
import numpy as np
import pandas as pd

from membench.analyse.stats import add_series
from membench.figures import nothing_drawn
from membench.figures.style import GBPS_LABEL, empty, sns, to_svg
from membench.plan import knobs
from membench.plan.grammar import group_text, size_text


def _numbers(cells: pd.DataFrame, column: str) -> pd.Series:
    """A column as numbers, NaN where it is missing or empty."""
    if column not in cells:
        return pd.Series(float("nan"), index=cells.index)
    return pd.to_numeric(cells[column], errors="coerce")


def _binary_size_ticks(ax, sizes: pd.Series) -> None:
    """Log-2 x axis ticked in KiB/MiB/GiB at powers of two, at most ~10."""
    low, high = int(np.floor(np.log2(sizes.min()))), int(np.ceil(np.log2(sizes.max())))
    step = max(1, -(-(high - low) // 10))
    ticks = [2.0**k for k in range(low, high + 1) if k % step == 0]
    ax.set_xticks(ticks, [size_text(t) for t in ticks])
    ax.xaxis.set_minor_locator(plt.NullLocator())


def latency_svg(cells: pd.DataFrame, caches: dict[str, list[dict]], name: str) -> str:
    """ns per load vs working set (log2 x), random and stride chase, one
    curve per chase group when several were measured, with each system's
    data-cache sizes marked."""
    everything = cells
    # a cell with no positive median (every repetition disturbed, none
    # valid) has nothing for a log axis to draw
    cells = cells[(cells["n_ok"] > 0) & (_numbers(cells, "ns_median") > 0)]
    group = knobs.asked("chase_group")
    if group in cells:
        cells = cells.assign(**{group: cells[group].map(group_text)})
    ok = add_series(cells, ["system", *knobs.columns("pages", "policy", "variant", "chase_group")])
    if ok.empty:
        return empty(nothing_drawn.from_cells(everything, "latency measurements", "median ns per load"), name)
    ok = ok.assign(curve=ok["op"] + ("" if ok["series"].nunique() == 1 else ", " + ok["series"]))
    curves = list(dict.fromkeys(ok["curve"]))
    palette = dict(zip(curves, sns.color_palette("colorblind", len(curves))))
    fig, ax = plt.subplots(figsize=(8, 4.2))
    sns.lineplot(ok, x="working_set_bytes", y="ns_median", hue="curve", hue_order=curves, palette=palette, marker="o", ms=4, ax=ax)
    for curve, part in ok.groupby("curve", sort=False):
        part = part.sort_values("working_set_bytes")
        ax.fill_between(part["working_set_bytes"], part["ns_min"], part["ns_max"], color=palette[curve], alpha=0.15, lw=0)
    ax.set_xscale("log", base=2)
    _binary_size_ticks(ax, ok["working_set_bytes"])
    for system, levels in caches.items():
        for cache in levels:
            ax.axvline(cache["size_bytes"], color="grey", ls=":", lw=1)
            label = f"L{cache['level']}" + (f" {system}" if len(caches) > 1 else "")
            ax.text(cache["size_bytes"], 1.0, label, transform=ax.get_xaxis_transform(), ha="center", va="bottom", fontsize=8)
    ax.set_xlabel("working set (log scale)")
    # Log latency: L1 (~1 ns) and L2 (a few ns) stay readable beside memory (~100 ns).
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_ylabel("latency (ns per load, log scale)")
    # Off the data: the legend sits below the axes, as wide as they are.
    ax.legend(title="median over repetitions (as effective concurrency uses), band min–max", fontsize="small",
              loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=min(3, len(curves)))  # fmt: skip
    fig.tight_layout()
    return to_svg(fig, name)


def loaded_svg(cells: pd.DataFrame, name: str, line_bytes: dict[str, int] | None = None) -> str:
    """Latency vs bandwidth: each injection delay is one point (the
    load threads' GB/s, the chasing thread's ns per load), one curve per
    load op (triad, read or a read:write mix); each point says its
    delay and, with the line size known, Little's law: the load threads'
    traffic (with write-allocate reads) x that latency, in cache lines."""
    drawable = (cells["n_ok"] > 0) & _numbers(cells, "ns_mean").notna() & _numbers(cells, "gbps_mean").notna()
    ok = add_series(cells[drawable], ["system", "op", *knobs.columns("pages", "policy"), "threads"])
    if ok.empty:
        return empty(nothing_drawn.from_cells(cells, "loaded-latency measurements", "latency and bandwidth"), name)
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for label, part in ok.groupby("series", sort=False):
        part = part.sort_values("gbps_mean")
        ax.errorbar(part["gbps_mean"], part["ns_mean"], xerr=part["gbps_std"].fillna(0), yerr=part["ns_std"].fillna(0),
                    marker="o", ms=4, capsize=3, label=label)  # fmt: skip
        for row in part.itertuples():
            label = f"delay {getattr(row, knobs.asked('load_delay'))}"
            wa = getattr(row, "gbps_wa_mean", math.nan)
            traffic = row.gbps_mean if wa is None or math.isnan(wa) else wa
            if (line_bytes or {}).get(row.system):
                label += f" · {traffic * row.ns_mean / line_bytes[row.system]:.0f} lines"
            ax.annotate(label, (row.gbps_mean, row.ns_mean), fontsize=7, xytext=(4, 4), textcoords="offset points")
    ax.set_xlabel("load threads' " + GBPS_LABEL)
    ax.set_ylabel("chasing thread's latency (ns per load)")
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax.legend(fontsize="small")
    fig.tight_layout()
    return to_svg(fig, name)


def line_sizes(topology_paths: list[str]) -> dict[str, int]:
    """system -> its cache-line size (results/<system>/topology.json)."""
    return {Path(path).parent.name: json.loads(Path(path).read_text())["line_bytes"] for path in topology_paths}


def data_caches(topology_paths: list[str]) -> dict[str, list[dict]]:
    """system -> its data/unified caches (from results/<system>/topology.json)."""
    caches = {}
    for path in map(Path, topology_paths):
        topology = json.loads(path.read_text())
        caches[path.parent.name] = [c for c in topology["caches"] if c["type"] in ("Data", "Unified")]
    return caches
