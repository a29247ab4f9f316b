"""Bandwidth figures: GB/s vs threads (Fig. 2 of the Colfax paper) with a
shaded min-max band, GB/s vs bytes per array (the ORNL spill), and
McCalpin's version ladder.
"""

from __future__ import annotations

from membench.figures.style import plt
import pandas as pd

from membench.analyse.caches import MARK, in_cache
from membench.analyse.stats import add_series
from membench.core.paths import VARIANTS_FILE
from membench.plan import knobs, variants
from membench.figures.peak_lines import draw_peak_lines
from membench.figures.style import GBPS_LABEL, colours, empty, fixed_jitter, sns, to_svg


def scaling_svg(cells: pd.DataFrame, name: str, peaks: list[tuple[float, str]] = ()) -> str:
    """Bandwidth vs threads from the per-cell summary; the peaks
    (membench.figures.peak_lines) as dashed reference lines."""
    cells = add_series(cells[cells["n_ok"] > 0])
    if cells.empty:
        return empty("no successful measurements in this experiment", name)
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


def size_svg(cells: pd.DataFrame, name: str, peaks: list[tuple[float, str]] = ()) -> str:
    """Bandwidth vs bytes per array (log x): caches, then memory, then the
    spill past a node's memory (the ORNL experiment)."""
    ok = add_series(cells[cells["n_ok"] > 0], ["system", knobs.column("variant"), "threads", *knobs.columns("affinity", "policy", "pages", "init")])
    if ok.empty:
        return empty("no successful measurements in this experiment", name)
    ok = ok.assign(curve=ok["op"] + ("" if ok["series"].nunique() == 1 else ", " + ok["series"]))
    fig, ax = plt.subplots(figsize=(8, 4.2))
    for curve, part in ok.groupby("curve", sort=False):
        part = part.sort_values("size_bytes")
        line = ax.errorbar(part["size_bytes"], part["gbps_mean"], yerr=part["gbps_std"].fillna(0), marker="o", ms=4, capsize=3, label=curve)
        ax.fill_between(part["size_bytes"], part["gbps_min"], part["gbps_max"], color=line[0].get_color(), alpha=0.15, lw=0)
        inside = part[in_cache(part)]  # none where the cells were not judged (no cache column)
        for x, y, where in zip(inside["size_bytes"], inside["gbps_mean"], inside.get("cache", [])):  # a cache, not memory: said at the point
            ax.annotate(f"{MARK} {where}", (x, y), textcoords="offset points", xytext=(4, 6), fontsize="small")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("bytes per array (log scale)")
    ax.set_ylabel(GBPS_LABEL)
    ax.set_ylim(bottom=0)
    draw_peak_lines(ax, peaks)
    ax.legend(title="mean ± std, band min–max", fontsize="small")
    fig.tight_layout()
    return to_svg(fig, name)


def version_order(kernel: str, names) -> list[str]:
    """The versions in the variant table's order (McCalpin's v001 ... v015,
    then the ladders), never in the order they were measured."""
    table = variants.load_variants(VARIANTS_FILE)
    known = variants.variant_names(table, kernel) if kernel in variants.families(table) else []
    return sorted(names, key=lambda name: (known.index(name), "") if name in known else (len(known), str(name)))


def ladder_svg(measurements: pd.DataFrame, name: str, peaks: list[tuple[float, str]] = ()) -> str:
    """McCalpin's ladder: GB/s of every version, each repetition a dot and
    the mean a bar, one colour per system (or series)."""
    # The variant is the x axis, and the page size follows it (pages: variant).
    ok = add_series(
        measurements[measurements["status"] == "ok"],
        ["system", *knobs.asked_keys("affinity", "policy", "pages", "init", "size")],
    )
    if ok.empty:
        return empty("no successful measurements in this experiment", name)
    order = version_order(ok["kernel"].iloc[0], ok["variant"].unique())
    several = ok["series"].nunique() > 1  # seaborn cannot dodge a single hue level
    fig, ax = plt.subplots(figsize=(max(6, 0.55 * len(order) + 2), 3.8))
    with fixed_jitter():  # the same dots, the same bytes, on every run
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
