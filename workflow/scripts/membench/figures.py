"""Figures of one experiment as SVG text (seaborn/matplotlib, no display).

- scaling: GB/s vs threads per op, mean +- std markers inside a shaded
  min-max band (Fig. 2 of the Colfax paper);
- histogram: every repetition in 1 GB/s bins per (threads, series), one
  colour per op (Figs. 3-7); placement: every run of the last op as a dot
  per thread count, coloured by its placement class, modes marked;
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
import math
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from membench.collect import read_measurements  # noqa: E402
from membench.figure_kinds import kinds_for  # noqa: E402, F401 (figures.kinds_for)
from membench.records import write_text_atomic  # noqa: E402
from membench.matrix import group_text, size_text  # noqa: E402
from membench.matrix_figure import matrix_svg  # noqa: E402
from membench.node_matrix import experiment_matrices  # noqa: E402
from membench.peak_lines import draw_peak_lines, figure_systems, peak_lines  # noqa: E402
from membench.placement import OTHER, figure_classes  # noqa: E402
from membench.stats import add_series  # noqa: E402

GBPS_LABEL = "bandwidth (GB/s = 1e9 B/s)"

# seaborn's "colorblind" palette and its whitegrid/paper look, set without
# importing seaborn: it imports scipy.stats, seconds of every figure job.
COLORBLIND = ["#0173b2", "#de8f05", "#029e73", "#d55e00", "#cc78bc", "#ca9161", "#fbafe4", "#949494", "#ece133", "#56b4e9"]
THEME = {
    "axes.facecolor": "white", "axes.edgecolor": "#cccccc", "axes.grid": True, "axes.axisbelow": True,
    "grid.color": "#cccccc", "grid.linewidth": 0.8, "axes.spines.right": True, "axes.spines.top": True,
    "font.size": 9.6, "axes.labelsize": 9.6, "axes.titlesize": 9.6, "xtick.labelsize": 8.8, "ytick.labelsize": 8.8,
    "legend.fontsize": 8.8, "legend.title_fontsize": 9.6, "lines.linewidth": 1.2, "lines.markersize": 4.8,
    "xtick.bottom": False, "ytick.left": False, "legend.frameon": True,
}  # fmt: skip


def colours(n: int) -> list[str]:
    return [COLORBLIND[i % len(COLORBLIND)] for i in range(n)]


class _Seaborn:
    """seaborn, imported by the figures that draw with it, on first use."""

    def __getattr__(self, name):
        import seaborn

        return getattr(seaborn, name)


sns = _Seaborn()


def to_svg(fig, name: str, dpi: float | None = None) -> str:
    """SVG text whose ids (and the references to them) carry the figure's
    name, so several figures can be inlined in one HTML page: matplotlib
    numbers its groups the same way in every figure (axes_1, patch_1, ...)."""
    buffer = io.StringIO()
    with plt.rc_context({"svg.hashsalt": name, "svg.fonttype": "none"}):
        fig.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None}, dpi=dpi or "figure")
    plt.close(fig)
    text = buffer.getvalue()
    text = text[text.index("<svg") :]
    return re.sub(r'(\bid="|url\(#|href="#)([^"\)]+)', lambda m: f"{m.group(1)}{name}-{m.group(2)}", text)


def _empty(message: str, name: str) -> str:
    fig, ax = plt.subplots(figsize=(6, 1.2))
    ax.axis("off")
    ax.text(0.5, 0.5, message, ha="center", va="center")
    return to_svg(fig, name)


def scaling_svg(cells: pd.DataFrame, name: str, peaks: list[tuple[float, str]] = ()) -> str:
    """Bandwidth vs threads from the per-cell summary; the peaks
    (membench.peak_lines) as dashed reference lines."""
    cells = add_series(cells[cells["n_ok"] > 0])
    if cells.empty:
        return _empty("no successful measurements in this experiment", name)
    ops = list(dict.fromkeys(cells["op"]))
    series = list(dict.fromkeys(cells["series"]))
    palette = dict(zip(series, colours(len(series))))
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
        draw_peak_lines(ax, peaks)
    for ax in list(axes.flat)[len(ops) :]:
        ax.remove()
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, title="mean ± std, band min–max", loc="upper center",
               bbox_to_anchor=(0.5, 0), ncol=min(4, len(series)))  # fmt: skip
    fig.tight_layout()
    return to_svg(fig, name)


# Bounded figures at any study size: runs are drawn as raster layers inside
# the SVG (text and axes stay vector), bins never exceed MAX_BINS per panel.
RASTER_DPI = 150
MAX_BINS = 120
MAX_COLUMNS = 3


def _bins(values: pd.Series) -> tuple[np.ndarray, str]:
    """1 GB/s bins (the Colfax figures), wider when a panel's range would
    need more than MAX_BINS."""
    low, high = np.floor(values.min()), np.ceil(values.max()) + 1
    width = max(1.0, float(np.ceil((high - low) / MAX_BINS)))
    return np.arange(low, high + width, width), ("1 GB/s bins" if width == 1 else f"{width:g} GB/s bins")


def _facets(nrows: int, ncols: int, width: float, height: float, **share):
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False, **share)
    return fig, axes


def histogram_svg(measurements: pd.DataFrame, name: str) -> str:
    """Every repetition in 1 GB/s bins, one panel per (threads, series),
    one step line per op; panels of one thread count share their x axis."""
    ok = add_series(measurements[(measurements["status"] == "ok") & measurements["gbps"].notna()])
    if ok.empty:
        return _empty("no successful measurements in this experiment", name)
    ops = list(dict.fromkeys(ok["op"]))
    palette = dict(zip(ops, colours(len(ops))))
    threads, series = sorted(ok["threads"].unique()), list(dict.fromkeys(ok["series"]))
    fig, axes = _facets(len(threads), len(series), 3.6, 1.9)
    widths = set()
    for row, count in enumerate(threads):
        bins, width = _bins(ok.loc[ok["threads"] == count, "gbps"])
        widths.add(width)
        for col, label in enumerate(series):
            ax = axes[row, col]
            part = ok[(ok["threads"] == count) & (ok["series"] == label)]
            if part.empty:
                ax.text(0.5, 0.5, "not measured", ha="center", va="center", transform=ax.transAxes, color="grey")
            ax.yaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
            for op in ops:
                values = part.loc[part["op"] == op, "gbps"]
                if not values.empty:
                    counts, edges = np.histogram(values, bins=bins)
                    ax.stairs(counts, edges, color=palette[op], label=op, rasterized=True)
            ax.set_xlim(bins[0], bins[-1])
            if row == 0:
                ax.set_title(label)
            if col == len(series) - 1:
                ax.yaxis.set_label_position("right")
                ax.set_ylabel(f"threads = {count}")
            elif col == 0:
                ax.set_ylabel("runs")
    fig.supxlabel(f"{GBPS_LABEL}, {' / '.join(sorted(widths))}")
    handles = [plt.Line2D([], [], color=palette[op]) for op in ops]
    fig.legend(handles, ops, loc="upper center", bbox_to_anchor=(0.5, 0), ncol=len(ops))
    fig.tight_layout()
    return to_svg(fig, name, dpi=RASTER_DPI)


def _mode_marks(modes: pd.DataFrame | None, experiments, op: str) -> dict:
    """(series, threads) -> the mode centres found in that cell."""
    if modes is None or modes.empty:
        return {}
    modes = add_series(modes[modes["experiment"].isin(experiments)])
    return {
        (row.series, row.threads): [float(v) for v in str(row.mode_values).split(";")]
        for row in modes[(modes["op"] == op) & modes["mode_values"].notna()].itertuples()
    }


def _explaining(modes: pd.DataFrame | None, experiments) -> list[str]:
    """Factors that explain cells of these experiments, the most variance
    explained (summed over cells) first."""
    if modes is None or modes.empty:
        return []
    mine = modes[modes["experiment"].isin(experiments) & (modes["verdict"] == "explained")]
    return list(mine.groupby("best_factor")["explained_share"].sum().sort_values(ascending=False).index)


def placement_svg(measurements: pd.DataFrame, name: str, modes: pd.DataFrame | None = None) -> str:
    """Every repetition of the kernel's last op (triad for STREAM), one dot
    per run at its GB/s (log scale, so modes look alike at every thread
    count), one row per thread count, one panel per series, coloured by the
    placement class the run obtained (membench.placement.figure_classes:
    at most 8 classes, the rest "other"); black ticks: the modes found."""
    ok = add_series(measurements[(measurements["status"] == "ok") & measurements["gbps"].notna()])
    if ok.empty:
        return _empty("no successful measurements in this experiment", name)
    op = list(dict.fromkeys(ok["op"]))[-1]
    ok = ok[ok["op"] == op]
    ok = ok.assign(placement=figure_classes(ok, _explaining(modes, ok["experiment"].unique())))
    classes = [c for c in ok["placement"].value_counts().index if c != OTHER] + ([OTHER] if (ok["placement"] == OTHER).any() else [])
    palette = {c: "#8c8c8c" if c == OTHER else colour for c, colour in zip(classes, colours(len(classes)))}
    threads, series = sorted(ok["threads"].unique()), list(dict.fromkeys(ok["series"]))
    row_of = {t: i for i, t in enumerate(threads)}
    marks = _mode_marks(modes, ok["experiment"].unique(), op)
    ncols = min(MAX_COLUMNS, len(series))
    nrows = -(-len(series) // ncols)
    fig, axes = _facets(nrows, ncols, 4.2, 1.1 + 0.45 * len(threads), sharex=True)
    rng = np.random.default_rng(0)
    dot = 9 if len(ok) / max(1, len(series) * len(threads)) < 100 else 3
    for ax, label in zip(axes.flat, series):
        part = ok[ok["series"] == label]
        for cls in classes:
            mine = part[part["placement"] == cls]
            if mine.empty:
                continue
            y = mine["threads"].map(row_of).to_numpy() + rng.uniform(-0.33, 0.33, len(mine))
            ax.scatter(mine["gbps"], y, s=dot, color=palette[cls], alpha=0.7, lw=0, rasterized=True)
        for count in threads:
            for centre in marks.get((label, count), []):
                ax.plot([centre, centre], [row_of[count] - 0.45, row_of[count] + 0.45], color="black", lw=1.2)
        ax.set_xscale("log")
        ax.xaxis.set_major_locator(matplotlib.ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        ax.set_yticks(range(len(threads)), [str(t) for t in threads])
        ax.set_ylim(-0.6, len(threads) - 0.4)
        ax.set_title(label)
        ax.set_xlabel(f"{op} {GBPS_LABEL}, log scale")
        ax.set_ylabel("threads")
    for ax in list(axes.flat)[len(series) :]:
        ax.remove()
    handles = [plt.Line2D([], [], marker="o", ls="", color=palette[c]) for c in classes]
    handles.append(plt.Line2D([], [], color="black"))
    labels = [f"{c} ({(ok['placement'] == c).sum()} runs)" for c in classes] + ["mode found (gaussian KDE)"]
    fig.legend(handles, labels, title="placement class obtained", loc="upper center", bbox_to_anchor=(0.5, 0),
               ncol=min(2, len(labels)), fontsize="small")  # fmt: skip
    fig.tight_layout()
    return to_svg(fig, name, dpi=RASTER_DPI)


def size_svg(cells: pd.DataFrame, name: str, peaks: list[tuple[float, str]] = ()) -> str:
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
    draw_peak_lines(ax, peaks)
    ax.legend(title="mean ± std, band min–max", fontsize="small")
    fig.tight_layout()
    return to_svg(fig, name)


def ladder_svg(measurements: pd.DataFrame, name: str, peaks: list[tuple[float, str]] = ()) -> str:
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
    draw_peak_lines(ax, peaks)
    ax.tick_params(axis="x", rotation=60)
    ax.legend(title="dots: repetitions, bars: mean", fontsize="small")
    fig.tight_layout()
    return to_svg(fig, name)


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
    cells = cells[cells["n_ok"] > 0]
    if "chase_group_requested" in cells:
        cells = cells.assign(chase_group_requested=cells["chase_group_requested"].map(group_text))
    ok = add_series(cells, ["system", "pages", "policy_requested", "variant", "chase_group_requested"])
    if ok.empty:
        return _empty("no successful latency measurements in this experiment", name)
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
    ok = add_series(cells[cells["n_ok"] > 0], ["system", "op", "pages", "policy_requested", "threads"])
    if ok.empty:
        return _empty("no successful loaded-latency measurements in this experiment", name)
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for label, part in ok.groupby("series", sort=False):
        part = part.sort_values("gbps_mean")
        ax.errorbar(part["gbps_mean"], part["ns_mean"], xerr=part["gbps_std"].fillna(0), yerr=part["ns_std"].fillna(0),
                    marker="o", ms=4, capsize=3, label=label)  # fmt: skip
        for row in part.itertuples():
            label = f"delay {row.load_delay_requested}"
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


# The measurement columns the figures read (a study's table has many more).
FIGURE_COLUMNS = [
    "system", "experiment", "cell", "kernel", "variant", "op", "threads", "threads_requested", "affinity",
    "policy_requested", "pages", "pages_requested", "init", "size_requested", "status", "gbps",
    "threads_per_node", "threads_per_package", "node_imbalance", "smt_shared_cores", "oversubscribed_cpus",
    "migrated_threads", "page_locality", "hugepages",
]  # fmt: skip


def plot_figure(
    kind: str, experiment: str, cells_csv: str, measurements: list[str], topology: list[str], output: str,
    modes_csv: str | None = None, environment: list[str] = (), peak_settings: dict | None = None,
    problems_csv: str | None = None, c2c_pairs_csv: str | None = None,
) -> None:
    plt.rcParams.update(THEME)
    name = f"{experiment}-{kind}"
    if kind == "handoff":  # c2c
        from membench.c2c_figures import c2c_svg

        svg = c2c_svg(pd.read_csv(c2c_pairs_csv) if c2c_pairs_csv else pd.DataFrame(), experiment, name)
    elif kind == "matrix":
        cells = pd.read_csv(cells_csv)
        problems = pd.read_csv(problems_csv or Path(cells_csv).with_name("problems.csv"))
        topologies = {Path(p).parent.name: json.loads(Path(p).read_text()) for p in topology}
        matrices = experiment_matrices(cells, problems, topologies, experiment)
        svg = matrix_svg(matrices, name, to_svg, sns) if matrices else _empty("no measurements", name)
    elif kind in ("scaling", "latency", "loaded", "size"):
        cells = pd.read_csv(cells_csv)
        cells = cells[cells["experiment"] == experiment]
        if kind == "latency":
            svg = latency_svg(cells, data_caches(topology), name)
        elif kind in ("scaling", "size"):
            peaks = peak_lines(cells, figure_systems(topology, environment), peak_settings)
            svg = {"scaling": scaling_svg, "size": size_svg}[kind](cells, name, peaks)
        else:
            svg = loaded_svg(cells, name, line_sizes(topology))
    else:
        table = read_measurements(measurements, FIGURE_COLUMNS)
        table = table[table["experiment"] == experiment]
        if kind == "placement":
            svg = placement_svg(table, name, pd.read_csv(modes_csv) if modes_csv else None)
        elif kind == "ladder":
            cells = pd.read_csv(cells_csv)
            peaks = peak_lines(cells[cells["experiment"] == experiment], figure_systems(topology, environment), peak_settings)
            svg = ladder_svg(table, name, peaks)
        else:
            svg = histogram_svg(table, name)
    write_text_atomic(Path(output), svg)
