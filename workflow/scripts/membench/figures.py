"""Figures of one experiment as SVG text (seaborn/matplotlib, no display).

- scaling: GB/s vs threads per op, mean +- std markers inside a shaded
  min-max band (Fig. 2 of the Colfax paper);
- histogram: every repetition in 1 GB/s bins per (threads, series), one
  colour per op (Figs. 3-7).
A "series" is the combination of the axes other than threads and op that
vary inside the experiment (affinity, variant, policy, ...).
"""

from __future__ import annotations

import io
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from membench.collect import read_measurements  # noqa: E402
from membench.records import write_text_atomic  # noqa: E402
from membench.stats import add_series  # noqa: E402

GBPS_LABEL = "bandwidth (GB/s = 1e9 B/s)"


def to_svg(fig, name: str) -> str:
    """SVG text with ids salted by the figure's name, so several figures can
    be inlined in one HTML page without clashing ids."""
    buffer = io.StringIO()
    with plt.rc_context({"svg.hashsalt": name, "svg.fonttype": "none"}):
        fig.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    text = buffer.getvalue()
    return text[text.index("<svg") :]


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


def ladder_svg(measurements: pd.DataFrame, name: str) -> str:
    """McCalpin's ladder: GB/s of every version, each repetition a dot and
    the mean a bar, one colour per system (or series)."""
    ok = add_series(measurements[measurements["status"] == "ok"])
    if ok.empty:
        return _empty("no successful measurements in this experiment", name)
    order = list(dict.fromkeys(ok["variant"]))
    fig, ax = plt.subplots(figsize=(max(6, 0.55 * len(order) + 2), 3.8))
    sns.stripplot(ok, x="variant", y="gbps", hue="series", order=order, dodge=True, alpha=0.6, size=4, ax=ax)
    sns.pointplot(
        ok, x="variant", y="gbps", hue="series", order=order, dodge=0.4, errorbar=None,
        markers="_", markersize=14, linestyles="none", legend=False, ax=ax,
    )  # fmt: skip
    ax.set_xlabel("version")
    ax.set_ylabel(GBPS_LABEL)
    ax.set_ylim(bottom=0)
    ax.tick_params(axis="x", rotation=60)
    ax.legend(title="dots: repetitions, bars: mean", fontsize="small")
    fig.tight_layout()
    return to_svg(fig, name)


# Figure kinds per kernel family: the ladder replaces the thread scaling for
# the single-thread read-only versions.
KINDS = {"readonly": ("ladder", "histogram")}
DEFAULT_KINDS = ("scaling", "histogram")


def kinds_for(kernel: str) -> tuple[str, ...]:
    return KINDS.get(kernel, DEFAULT_KINDS)


def plot_figure(kind: str, experiment: str, cells_csv: str, measurements: list[str], output: str) -> None:
    sns.set_theme(style="whitegrid", context="paper")
    name = f"{experiment}-{kind}"
    if kind == "scaling":
        cells = pd.read_csv(cells_csv)
        svg = scaling_svg(cells[cells["experiment"] == experiment], name)
    else:
        table = read_measurements(measurements)
        table = table[table["experiment"] == experiment]
        svg = {"histogram": histogram_svg, "ladder": ladder_svg}[kind](table, name)
    write_text_atomic(Path(output), svg)
