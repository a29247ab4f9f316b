"""The peak as a reference line in the bandwidth figures (membench.analyse.peak
says which peak each cell is held against)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from membench.analyse.peak import cell_shares, system_peaks
from membench.core.text import percent

MAX_LINES = 4  # per figure; beyond it each system's highest and lowest peak
OFF_SCALE = 4  # a peak this many times above the axis's top is named, not drawn


def figure_systems(topology: list[str], environment: list[str]) -> dict[str, dict]:
    """system -> {"topology", "environment"} from results/<system>/*.json."""
    systems: dict[str, dict] = {}
    for kind, paths in (("topology", topology), ("environment", environment)):
        for path in map(Path, paths):
            systems.setdefault(path.parent.name, {})[kind] = json.loads(path.read_text())
    return systems


def peak_lines(cells: pd.DataFrame, systems: dict[str, dict], settings: dict | None) -> list[tuple[float, str]]:
    """(GB/s, label) of each distinct peak the figure's cells are held
    against; none when no system's peak is known."""
    peaks = system_peaks(systems, settings)
    shares = cell_shares(cells, peaks)
    if shares.empty:
        return []
    several = shares["system"].nunique() > 1
    distinct = shares.drop_duplicates(["system", "peak_gbps"]).sort_values("peak_gbps", ascending=False)
    if len(distinct) > MAX_LINES:
        grouped = distinct.groupby("system", sort=False)["peak_gbps"]
        distinct = distinct[distinct["peak_gbps"].isin(grouped.max()) | distinct["peak_gbps"].isin(grouped.min())]
    return [
        (r.peak_gbps, f"peak {r.peak_gbps:.1f} GB/s: {r.peak_of}{f', {r.system}' if several else ''} ({peaks[r.system]['source']})")
        for r in distinct.itertuples()
    ]


def draw_peak_lines(ax, lines: list[tuple[float, str]]) -> None:
    """Dashed grey lines, labelled at their left end, with room above them.
    A peak more than OFF_SCALE times above the data would squash it into
    the bottom of the axes: it is named at the top, off scale, instead."""
    top = ax.get_ylim()[1]
    drawn = [(v, label) for v, label in lines if v <= OFF_SCALE * top]
    for value, label in drawn:
        ax.axhline(value, color="#555555", ls="--", lw=1)
        ax.text(0.01, value, label, transform=ax.get_yaxis_transform(), va="bottom", ha="left", fontsize=7, color="#333333")
    off = [v for v in lines if v not in drawn]
    if drawn:
        top = max(top, 1.08 * max(v for v, _ in drawn))
    if off:  # headroom above the data for the notes
        top *= 1 + 0.07 * (len(off) + 1)
    ax.set_ylim(top=top)
    for i, (value, label) in enumerate(off):
        ax.text(0.01, 0.98 - 0.07 * i, f"↑ off scale, {label}: the axis ends at {percent(top / value)} of it",
                transform=ax.transAxes, va="top", ha="left", fontsize=7, color="#333333")  # fmt: skip
