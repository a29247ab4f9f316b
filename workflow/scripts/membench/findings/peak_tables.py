"""Bandwidth against the theoretical peak, as report tables (pure
functions over membench.analyse.peak.cell_shares)."""

from __future__ import annotations


import pandas as pd

from membench.analyse.stats import add_series
from membench.core.text import DASH, percent

RULE = (
    "Share = memory traffic (GB/s with write-allocate reads where the kernel has them) / the peak the cell is held "
    "against: local and interleaved traffic against the memory peak of the NUMA nodes holding its pages (the "
    "system's peak split evenly over its nodes with CPUs, times the nodes holding at least 5 % of the sampled pages "
    "in the median run); remote traffic against the interconnect (links × GB/s per link and direction) where the "
    "config states it, else the memory peak of the pages' nodes."
)




def peak_table(shares: pd.DataFrame) -> dict | None:
    """One row per cell and op that has a peak: GB/s by the STREAM count,
    the traffic, the peak and what it is, the mean's and best run's share."""
    if shares.empty:
        return None
    rows = []
    shares = add_series(shares)
    several = shares["series"].nunique() > 1
    for r in shares.itertuples():
        rows.append(
            [r.system, r.op, str(r.threads), *([r.series] if several else []), f"{r.gbps_mean:.2f}", f"{r.traffic_gbps:.2f}",
             f"{r.peak_gbps:.1f}", r.peak_of, percent(r.peak_share), percent(r.peak_share_best)]
        )  # fmt: skip
    return {
        "title": "Bandwidth against the theoretical peak",
        "note": f"{RULE} The peak and its source per system: see Machine.",
        "columns": ["system", "op", "threads", *(["series"] if several else []), "GB/s", "traffic GB/s", "peak GB/s",
                    "peak of", "% of peak", "% of peak, best run"],  # fmt: skip
        "rows": rows,
    }


def share_of(shares: pd.DataFrame, cells: pd.DataFrame, op: str) -> str:
    """The mean share of peak of these cells' op (the placement table's
    "% of peak" column); "–" without a peak."""
    if shares.empty:
        return DASH
    mine = shares[shares["cell"].isin(cells["cell"]) & shares["system"].isin(cells["system"]) & (shares["op"] == op)]
    return percent(mine["peak_share"].mean()) if not mine.empty else DASH
