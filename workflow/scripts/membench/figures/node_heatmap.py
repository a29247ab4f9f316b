"""The node x node heat map (seaborn): one panel per matrix of an
experiment (per system), rows CPU node, columns memory node, the median in
each cell. A pair whose verified placement differed is annotated with "!",
a pair that did not run is grey and says "skip" / "fail" (the reasons are in
the report's table under the figure). Bounded: the annotation shrinks with
the node count and stops at 16 nodes per side (larger matrices keep their
colours only); a misplaced pair also gets a red frame."""

from __future__ import annotations

from membench.figures.style import plt
import numpy as np

from membench.analyse.node_matrix import NodeMatrix
from membench.figures.style import sns, to_svg
from membench.core.text import DASH

ANNOTATE_UP_TO = 16
SHORT = {"skipped": "skip", "failed": "fail", "missing": DASH, "disturbed": "dist"}


def _labels(keys, notes: dict, what: str) -> list[str]:
    return [f"{k}{'*' if k in notes else ''}" for k in keys]


def matrix_svg(matrices: list[NodeMatrix], name: str) -> str:
    n = len(matrices)
    side = max(max(len(m.status.index), len(m.status.columns)) for m in matrices)
    cell_in = 0.55 if side <= 8 else 0.38
    width = min(1.6 + cell_in * side, 9.0)
    fig, axes = plt.subplots(n, 1, figsize=(width, (1.0 + cell_in * side) * n), squeeze=False)
    for ax, matrix in zip(axes[:, 0], matrices):
        values = matrix.median.to_numpy(dtype=float)
        shown = np.isin(matrix.status.to_numpy(), ["ok", "mismatch"])
        annot = np.empty(values.shape, dtype=object)
        for (i, j), state in np.ndenumerate(matrix.status.to_numpy()):
            if state in ("ok", "mismatch"):
                text = f"{values[i, j]:.0f}" if values[i, j] >= 100 else f"{values[i, j]:.1f}"
                annot[i, j] = text + ("!" if state == "mismatch" else "")
            else:
                annot[i, j] = SHORT.get(state, state)
        ax.set_facecolor("#d9d9d9")
        cmap = "rocket_r" if matrix.metric == "ns" else "mako"
        if shown.any():
            sns.heatmap(
                np.where(shown, values, np.nan), ax=ax, cmap=cmap, annot=annot if side <= ANNOTATE_UP_TO else False,
                fmt="", annot_kws={"fontsize": 8 if side <= 8 else 6}, linewidths=0.5, linecolor="white",
                cbar_kws={"label": "latency (ns)" if matrix.metric == "ns" else "bandwidth (GB/s = 1e9 B/s)"},
                xticklabels=_labels(matrix.status.columns, matrix.column_notes, "memory"),
                yticklabels=_labels(matrix.status.index, matrix.row_notes, "CPU"),
            )  # fmt: skip
        for (i, j), state in np.ndenumerate(matrix.status.to_numpy()):
            if state == "mismatch":  # never silently included: a red frame
                ax.add_patch(plt.Rectangle((j + 0.04, i + 0.04), 0.92, 0.92, fill=False, edgecolor="#d00000", linewidth=2))
            if state not in ("ok", "mismatch") and side <= ANNOTATE_UP_TO:
                ax.text(j + 0.5, i + 0.5, annot[i, j], ha="center", va="center", fontsize=7, color="#404040")
        if not shown.any():
            ax.set_xlim(0, values.shape[1])
            ax.set_ylim(values.shape[0], 0)
            ax.set_xticks(np.arange(values.shape[1]) + 0.5, [str(c) for c in matrix.status.columns])
            ax.set_yticks(np.arange(values.shape[0]) + 0.5, [str(r) for r in matrix.status.index])
        ax.set_xlabel("memory node (pages bound there)")
        ax.set_ylabel("CPU node (threads there)")
        ax.set_title(matrix.title, fontsize=9)
        ax.tick_params(axis="y", rotation=0)
    fig.tight_layout()
    return to_svg(fig, name)
