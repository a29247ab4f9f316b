"""The cache-to-cache figure of one experiment, from
results/summary/c2c_pairs.csv: a heat map per op ordered by topology when
the full matrix was measured (pairs: all, at most 64 CPUs), else the pair
medians per locality class (a few pairs per class, bounded at any size).
"""

from __future__ import annotations

from membench.figures.style import plt
import numpy as np
import pandas as pd

from membench.plan.c2c_pairs import CLASSES
from membench.figures.style import COLORBLIND, empty, to_svg

NS_LABEL = "ns per hand-off (half round trip; clean: one load)"


def _order(pairs: pd.DataFrame) -> list[tuple]:
    """Every CPU of the pairs with its place, in topology order: package,
    node, L3, L2, core, CPU."""
    places = {}
    for side in "ab":
        cols = [f"cpu_{side}", *(f"cpu_{side}_{k}" for k in ("package", "node", "l3", "l2", "core"))]
        for row in pairs[cols].itertuples(index=False):
            cpu, *where = row
            places[int(cpu)] = tuple(-1 if pd.isna(v) else int(v) for v in where)
    return sorted(((*where, cpu) for cpu, where in places.items()))


def heatmap_svg(pairs: pd.DataFrame, name: str) -> str:
    ops = list(dict.fromkeys(pairs["op"]))
    order = _order(pairs)
    cpus = [entry[-1] for entry in order]
    index = {cpu: i for i, cpu in enumerate(cpus)}
    n = len(cpus)
    fig, axes = plt.subplots(1, len(ops), figsize=(4.6 * len(ops) + 0.6, 4.4), squeeze=False)
    for ax, op in zip(axes[0], ops):
        grid = np.full((n, n), np.nan)
        for row in pairs[pairs["op"] == op].itertuples():
            i, j = index[int(row.cpu_a)], index[int(row.cpu_b)]
            grid[i, j] = grid[j, i] = row.handoff_ns_median
        image = ax.imshow(grid, cmap="viridis", interpolation="nearest")
        fig.colorbar(image, ax=ax, shrink=0.8, label=NS_LABEL if op == ops[-1] else None)
        # package and L3 boundaries
        for k in range(1, n):
            if order[k][0] != order[k - 1][0]:
                ax.axhline(k - 0.5, color="white", lw=1.2), ax.axvline(k - 0.5, color="white", lw=1.2)
            elif order[k][2] != order[k - 1][2]:
                ax.axhline(k - 0.5, color="white", lw=0.5, ls=":"), ax.axvline(k - 0.5, color="white", lw=0.5, ls=":")
        step = max(1, n // 16)
        ticks = list(range(0, n, step))
        ax.set_xticks(ticks, [str(cpus[t]) for t in ticks], fontsize=7, rotation=90)
        ax.set_yticks(ticks, [str(cpus[t]) for t in ticks], fontsize=7)
        ax.set_title(f"{op}: {n} CPUs in topology order", fontsize=9)
        ax.set_xlabel("CPU (package, node, L3, L2, core order)")
    fig.suptitle("cache-to-cache latency, every pair (lines: package and L3 boundaries)", fontsize=10)
    fig.tight_layout()
    return to_svg(fig, name)


def classes_svg(pairs: pd.DataFrame, name: str) -> str:
    ops = list(dict.fromkeys(pairs["op"]))
    present = [c for c in CLASSES if c in set(pairs["pair_class"])]
    fig, ax = plt.subplots(figsize=(max(5.0, 1.4 * len(present) + 2.5), 3.6))
    width = 0.8 / max(len(ops), 1)
    for k, op in enumerate(ops):
        part = pairs[pairs["op"] == op]
        colour = COLORBLIND[k % len(COLORBLIND)]
        label = op
        for x, cls in enumerate(present):
            values = part.loc[part["pair_class"] == cls, "handoff_ns_median"].astype(float)
            if values.empty:
                continue
            pos = x - 0.4 + width * (k + 0.5)
            jitter = np.linspace(-width / 4, width / 4, len(values)) if len(values) > 1 else [0.0]
            ax.scatter(pos + np.asarray(jitter), values, s=14, color=colour, alpha=0.8, label=label)
            label = None
            ax.hlines(values.median(), pos - width / 2.5, pos + width / 2.5, color=colour, lw=2)
    ax.set_xticks(range(len(present)), present)
    ax.set_ylabel(NS_LABEL, fontsize=8)
    ax.set_ylim(bottom=0)
    ax.set_title("cache-to-cache latency per sampled pair (bar: class median)", fontsize=10)
    ax.legend(title="op", loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    fig.tight_layout()
    return to_svg(fig, name)


def c2c_svg(pairs: pd.DataFrame, experiment: str, name: str) -> str:
    mine = pairs[pairs["experiment"] == experiment] if not pairs.empty else pairs
    if mine.empty:
        return empty("no successful cache-to-cache measurements in this experiment", name)
    full = mine[mine["full_matrix"].astype(str) == "True"]
    if not full.empty:
        systems = list(dict.fromkeys(full["system"]))
        return heatmap_svg(full[(full["system"] == systems[0]) & (full["variant"] == full["variant"].iloc[0])], name)
    return classes_svg(mine, name)
