"""Figures of one experiment as SVG text (seaborn/matplotlib, no display).

- scaling: GB/s vs threads per op, mean +- std markers inside a shaded
  min-max band (Fig. 2 of the Colfax paper);
- histogram: every repetition in 1 GB/s bins per (threads, series), one
  colour per op (Figs. 3-7); placement: the same, stacked by the placement
  each run obtained;
- size: GB/s vs bytes per array (the ORNL spill);
- ladder: McCalpin's versions, every repetition and the mean;
- latency: ns per load vs working set, caches marked; loaded: the chasing
  thread's latency vs the load threads' GB/s.
A "series" is the combination of the axes other than threads and op that
vary inside the experiment (affinity, variant, policy, ...).
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from membench.collect import read_measurements  # noqa: E402
from membench.records import write_text_atomic  # noqa: E402
from membench.stats import add_series, page_nodes_text  # noqa: E402

GBPS_LABEL = "bandwidth (GB/s = 1e9 B/s)"


def to_svg(fig, name: str) -> str:
    """SVG text whose ids (and the references to them) carry the figure's
    name, so several figures can be inlined in one HTML page: matplotlib
    numbers its groups the same way in every figure (axes_1, patch_1, ...)."""
    buffer = io.StringIO()
    with plt.rc_context({"svg.hashsalt": name, "svg.fonttype": "none"}):
        fig.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    text = buffer.getvalue()
    text = text[text.index("<svg") :]
    return re.sub(r'(\bid="|url\(#|href="#)([^"\)]+)', lambda m: f"{m.group(1)}{name}-{m.group(2)}", text)


def _empty(message: str, name: str) -> str:
    fig, ax = plt.subplots(figsize=(6, 1.2))
    ax.axis("off")
    ax.text(0.5, 0.5, message, ha="center", va="center")
    return to_svg(fig, name)


def scaling_svg(cells: pd.DataFrame, name: str) -> str:
    """Bandwidth vs threads from the per-cell summary."""
    cells = add_series(cells[cells["n_ok"] > 0])
    if cells.empty:
        return _empty("no successful measurements in this experiment", name)
    ops = list(dict.fromkeys(cells["op"]))
    series = list(dict.fromkeys(cells["series"]))
    palette = dict(zip(series, sns.color_palette("colorblind", len(series))))
    ncols = min(2, len(ops))
    nrows = -(-len(ops) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(5.2 * ncols, 3.4 * nrows), squeeze=False)
    for ax, op in zip(axes.flat, ops):
        for label in series:
            part = cells[(cells["op"] == op) & (cells["series"] == label)].sort_values("threads")
            if part.empty:
                continue
            colour = palette[label]
            ax.fill_between(part["threads"], part["gbps_min"], part["gbps_max"], color=colour, alpha=0.2, lw=0)
            ax.errorbar(
                part["threads"], part["gbps_mean"], yerr=part["gbps_std"].fillna(0),
                color=colour, marker="o", ms=4, capsize=3, label=label,
            )  # fmt: skip
        ax.set_title(op)
        ax.set_xlabel("threads")
        ax.set_ylabel(GBPS_LABEL)
        ax.set_xticks(sorted(cells["threads"].unique()))
        ax.set_ylim(bottom=0)
    for ax in list(axes.flat)[len(ops) :]:
        ax.remove()
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, title="mean ± std, band min–max", loc="upper center",
               bbox_to_anchor=(0.5, 0), ncol=min(4, len(series)))  # fmt: skip
    fig.tight_layout()
    return to_svg(fig, name)


def histogram_svg(measurements: pd.DataFrame, name: str) -> str:
    """Every repetition, 1 GB/s bins, one panel per (threads, series)."""
    ok = add_series(measurements[measurements["status"] == "ok"])
    if ok.empty:
        return _empty("no successful measurements in this experiment", name)
    low, high = np.floor(ok["gbps"].min()), np.ceil(ok["gbps"].max()) + 1
    grid = sns.displot(
        ok, x="gbps", hue="op", row="threads", col="series", bins=np.arange(low, high + 1, 1.0),
        element="step", fill=False, height=2.4, aspect=1.6, facet_kws={"sharey": False, "margin_titles": True},
        hue_order=list(dict.fromkeys(ok["op"])),
    )  # fmt: skip
    grid.set_titles(row_template="threads = {row_name}", col_template="{col_name}")
    grid.set_axis_labels(GBPS_LABEL + ", 1 GB/s bins", "runs")
    return to_svg(grid.figure, name)


def placement_label(row) -> str:
    """What a run obtained, in a few words: thread CPUs and page nodes."""
    pages = page_nodes_text(row["page_nodes"]) if isinstance(row["page_nodes"], str) else "not sampled"
    return f"CPUs {row['cpus']}; pages {pages}"


def placement_svg(measurements: pd.DataFrame, name: str) -> str:
    """The distribution of the last op of the kernel (triad for STREAM),
    coloured by the placement each run obtained: the modes of the Colfax
    paper explained by recorded data."""
    ok = add_series(measurements[measurements["status"] == "ok"])
    if ok.empty:
        return _empty("no successful measurements in this experiment", name)
    op = list(dict.fromkeys(ok["op"]))[-1]
    ok = ok[ok["op"] == op]
    ok = ok.assign(placement=ok.apply(placement_label, axis=1))
    low, high = np.floor(ok["gbps"].min()), np.ceil(ok["gbps"].max()) + 1
    grid = sns.displot(
        ok, x="gbps", hue="placement", row="threads", col="series", bins=np.arange(low, high + 1, 1.0),
        multiple="stack", height=2.4, aspect=1.6, facet_kws={"sharey": False, "margin_titles": True},
    )  # fmt: skip
    grid.set_titles(row_template="threads = {row_name}", col_template="{col_name}")
    grid.set_axis_labels(f"{op} {GBPS_LABEL}, 1 GB/s bins", "runs")
    return to_svg(grid.figure, name)


def size_svg(cells: pd.DataFrame, name: str) -> str:
    """Bandwidth vs bytes per array (log x): caches, then memory, then the
    spill past a node's memory (the ORNL experiment)."""
    ok = add_series(cells[cells["n_ok"] > 0], ["system", "variant", "threads", "affinity", "policy_requested", "pages", "init"])
    if ok.empty:
        return _empty("no successful measurements in this experiment", name)
    ok = ok.assign(curve=ok["op"] + ("" if ok["series"].nunique() == 1 else ", " + ok["series"]))
    fig, ax = plt.subplots(figsize=(8, 4.2))
    for curve, part in ok.groupby("curve", sort=False):
        part = part.sort_values("size_bytes")
        line = ax.errorbar(part["size_bytes"], part["gbps_mean"], yerr=part["gbps_std"].fillna(0), marker="o", ms=4, capsize=3, label=curve)
        ax.fill_between(part["size_bytes"], part["gbps_min"], part["gbps_max"], color=line[0].get_color(), alpha=0.15, lw=0)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("bytes per array (log scale)")
    ax.set_ylabel(GBPS_LABEL)
    ax.set_ylim(bottom=0)
    ax.legend(title="mean ± std, band min–max", fontsize="small")
    fig.tight_layout()
    return to_svg(fig, name)


def ladder_svg(measurements: pd.DataFrame, name: str) -> str:
    """McCalpin's ladder: GB/s of every version, each repetition a dot and
    the mean a bar, one colour per system (or series)."""
    # The variant is the x axis, and the page size follows it (pages: variant).
    ok = add_series(
        measurements[measurements["status"] == "ok"],
        ["system", "affinity", "policy_requested", "pages_requested", "init", "size_requested"],
    )
    if ok.empty:
        return _empty("no successful measurements in this experiment", name)
    order = list(dict.fromkeys(ok["variant"]))
    several = ok["series"].nunique() > 1  # seaborn cannot dodge a single hue level
    fig, ax = plt.subplots(figsize=(max(6, 0.55 * len(order) + 2), 3.8))
    sns.stripplot(ok, x="variant", y="gbps", hue="series", order=order, dodge=several, alpha=0.6, size=4, ax=ax)
    sns.pointplot(
        ok, x="variant", y="gbps", hue="series", order=order, dodge=0.4 if several else False, errorbar=None,
        markers="_", markersize=14, linestyles="none", legend=False, ax=ax,
    )  # fmt: skip
    ax.set_xlabel("version")
    ax.set_ylabel(GBPS_LABEL)
    ax.set_ylim(bottom=0)
    ax.tick_params(axis="x", rotation=60)
    ax.legend(title="dots: repetitions, bars: mean", fontsize="small")
    fig.tight_layout()
    return to_svg(fig, name)


def latency_svg(cells: pd.DataFrame, caches: dict[str, list[dict]], name: str) -> str:
    """ns per load vs working set (log2 x), random and stride chase, with
    each system's data-cache sizes marked."""
    ok = add_series(cells[cells["n_ok"] > 0], ["system", "pages", "policy_requested", "variant"])
    if ok.empty:
        return _empty("no successful latency measurements in this experiment", name)
    ok = ok.assign(curve=ok["op"] + ("" if ok["series"].nunique() == 1 else ", " + ok["series"]))
    curves = list(dict.fromkeys(ok["curve"]))
    palette = dict(zip(curves, sns.color_palette("colorblind", len(curves))))
    fig, ax = plt.subplots(figsize=(8, 4.2))
    sns.lineplot(ok, x="working_set_bytes", y="ns_mean", hue="curve", hue_order=curves, palette=palette, marker="o", ms=4, ax=ax)
    for curve, part in ok.groupby("curve", sort=False):
        part = part.sort_values("working_set_bytes")
        ax.fill_between(part["working_set_bytes"], part["ns_min"], part["ns_max"], color=palette[curve], alpha=0.15, lw=0)
    ax.set_xscale("log", base=2)
    for system, levels in caches.items():
        for cache in levels:
            ax.axvline(cache["size_bytes"], color="grey", ls=":", lw=1)
            label = f"L{cache['level']}" + (f" {system}" if len(caches) > 1 else "")
            ax.text(cache["size_bytes"], 1.0, label, transform=ax.get_xaxis_transform(), ha="center", va="bottom", fontsize=8)
    ax.set_xlabel("working set (bytes, log scale)")
    ax.set_ylabel("latency (ns per load)")
    ax.set_ylim(bottom=0)
    ax.legend(title="mean over repetitions, band min–max", fontsize="small")
    fig.tight_layout()
    return to_svg(fig, name)


def loaded_svg(cells: pd.DataFrame, name: str) -> str:
    """Latency vs bandwidth: each injection delay is one point (the
    load threads' GB/s, the chasing thread's ns per load)."""
    ok = add_series(cells[cells["n_ok"] > 0], ["system", "op", "pages", "policy_requested", "threads"])
    if ok.empty:
        return _empty("no successful loaded-latency measurements in this experiment", name)
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for label, part in ok.groupby("series", sort=False):
        part = part.sort_values("gbps_mean")
        ax.errorbar(part["gbps_mean"], part["ns_mean"], xerr=part["gbps_std"].fillna(0), yerr=part["ns_std"].fillna(0),
                    marker="o", ms=4, capsize=3, label=label)  # fmt: skip
        for row in part.itertuples():
            ax.annotate(f"delay {row.load_delay_requested}", (row.gbps_mean, row.ns_mean), fontsize=7,
                        xytext=(4, 4), textcoords="offset points")  # fmt: skip
    ax.set_xlabel("load threads' " + GBPS_LABEL)
    ax.set_ylabel("chasing thread's latency (ns per load)")
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax.legend(fontsize="small")
    fig.tight_layout()
    return to_svg(fig, name)


# Figure kinds per kernel family: the ladder replaces the thread scaling for
# the single-thread read-only versions; latency kernels have their own.
KINDS = {"readonly": ("ladder",), "chase": ("latency",), "loaded": ("loaded",)}
DEFAULT_KINDS = ("scaling", "histogram", "placement")


def kinds_for(experiment: dict) -> tuple[str, ...]:
    """The figures of one (validated) experiment; a size sweep adds the
    bandwidth-vs-size (spill) curve."""
    kinds = KINDS.get(experiment["kernel"], DEFAULT_KINDS)
    if experiment["kernel"] not in ("chase", "loaded") and len(experiment.get("size", [])) > 1:
        kinds = (*kinds, "size")
    return kinds


def data_caches(topology_paths: list[str]) -> dict[str, list[dict]]:
    """system -> its data/unified caches (from results/<system>/topology.json)."""
    caches = {}
    for path in map(Path, topology_paths):
        topology = json.loads(path.read_text())
        caches[path.parent.name] = [c for c in topology["caches"] if c["type"] in ("Data", "Unified")]
    return caches


def plot_figure(
    kind: str, experiment: str, cells_csv: str, measurements: list[str], topology: list[str], output: str
) -> None:
    sns.set_theme(style="whitegrid", context="paper")
    name = f"{experiment}-{kind}"
    if kind in ("scaling", "latency", "loaded", "size"):
        cells = pd.read_csv(cells_csv)
        cells = cells[cells["experiment"] == experiment]
        if kind == "latency":
            svg = latency_svg(cells, data_caches(topology), name)
        else:
            svg = {"scaling": scaling_svg, "loaded": loaded_svg, "size": size_svg}[kind](cells, name)
    else:
        table = read_measurements(measurements)
        table = table[table["experiment"] == experiment]
        svg = {"histogram": histogram_svg, "ladder": ladder_svg, "placement": placement_svg}[kind](table, name)
    write_text_atomic(Path(output), svg)
