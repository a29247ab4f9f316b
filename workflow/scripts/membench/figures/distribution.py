"""Distributions of every repetition: histograms in 1 GB/s bins per
(threads, series), one colour per op (Figs. 3-7 of the Colfax paper), and
the placement figure (every run as a dot coloured by its placement class,
modes marked).
"""

from __future__ import annotations

from membench.figures.style import plt
import matplotlib.ticker
import numpy as np
import pandas as pd

from membench.analyse.stats import add_series, disturbed_mask
from membench.figures import nothing_drawn
from membench.figures.style import GBPS_LABEL, colours, empty, to_svg
from membench.store.placement_classes import OTHER, figure_classes


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


def _ok_runs(measurements: pd.DataFrame) -> pd.DataFrame:
    """The runs with a bandwidth: ok and a gbps value (a study whose every
    run was skipped or failed may have no gbps column at all)."""
    if "gbps" not in measurements or "status" not in measurements:
        return measurements.iloc[:0].assign(gbps=pd.Series(dtype=float), status=pd.Series(dtype=object))
    return measurements[(measurements["status"] == "ok") & measurements["gbps"].notna()]


def _facets(nrows: int, ncols: int, width: float, height: float, **share):
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False, **share)
    return fig, axes


def histogram_svg(measurements: pd.DataFrame, name: str) -> str:
    """Every repetition in 1 GB/s bins, one panel per (threads, series),
    one step line per op; panels of one thread count share their x axis.
    Disturbed repetitions (membench.core.disturbance) are a dotted step of
    their own, never added to the others'."""
    if _ok_runs(measurements).empty:
        return empty(nothing_drawn.from_runs(measurements), name)
    ok = add_series(_ok_runs(measurements))
    ok = ok.assign(_disturbed=disturbed_mask(ok).to_numpy())
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
                for marked, style in ((False, "-"), (True, ":")):
                    values = part.loc[(part["op"] == op) & (part["_disturbed"] == marked), "gbps"]
                    if not values.empty:
                        counts, edges = np.histogram(values, bins=bins)
                        ax.stairs(counts, edges, color=palette[op], ls=style, label=op, rasterized=True)
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
    labels = list(ops)
    if ok["_disturbed"].any():
        handles.append(plt.Line2D([], [], color="grey", ls=":"))
        labels.append(f"disturbed ({int(ok['_disturbed'].sum())} runs, dotted)")
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0), ncol=len(labels))
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
    placement class the run obtained (membench.store.placement_classes.figure_classes:
    at most 8 classes, the rest "other"); black ticks: the modes found."""
    if _ok_runs(measurements).empty:
        return empty(nothing_drawn.from_runs(measurements), name)
    ok = add_series(_ok_runs(measurements))
    op = list(dict.fromkeys(ok["op"]))[-1]
    ok = ok[ok["op"] == op]
    ok = ok.assign(placement=figure_classes(ok, _explaining(modes, ok["experiment"].unique())))
    ok = ok.assign(_disturbed=disturbed_mask(ok).to_numpy())
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
            quiet = ~mine["_disturbed"].to_numpy()
            ax.scatter(mine["gbps"][quiet], y[quiet], s=dot, color=palette[cls], alpha=0.7, lw=0, rasterized=True)
            # disturbed runs: hollow, so they are seen and never read as the machine's
            ax.scatter(mine["gbps"][~quiet], y[~quiet], s=dot * 2, facecolors="none", edgecolors=palette[cls],
                       lw=0.8, rasterized=True)  # fmt: skip
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
    if ok["_disturbed"].any():
        handles.append(plt.Line2D([], [], marker="o", ls="", markerfacecolor="none", color="grey"))
        labels.append(f"disturbed ({int(ok['_disturbed'].sum())} runs, hollow; left out of the modes)")
    fig.legend(handles, labels, title="placement class obtained", loc="upper center", bbox_to_anchor=(0.5, 0),
               ncol=min(2, len(labels)), fontsize="small")  # fmt: skip
    fig.tight_layout()
    return to_svg(fig, name, dpi=RASTER_DPI)
