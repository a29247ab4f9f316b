"""Read:write mixes, the numbers (pure functions over the per-cell summary;
membench.findings.mix_tables builds the report's tables from them).

- The injection bandwidth (MLC's --peak_injection_bandwidth, placement
  verified): the mix cells with a number, and whether a write mix's median
  beats all reads (r1w0), by how much and whether beyond the spread of both.
- The loaded-latency curve with Little's law at each point: per load op (a mix
  or triad/read) and injection delay, the load threads' read traffic x the
  chasing thread's latency = lines in flight (the rule of
  membench.analyse.concurrency: reads and write-allocate reads wait, the
  posted write-backs do not).
"""

from __future__ import annotations

import math

import pandas as pd

from membench.analyse.concurrency import lines_in_flight, read_traffic
from membench.analyse.stats import add_series
from membench.plan import families, knobs

# op -> MLC's name of the mix; the ratio counts the kernel's read and write
# streams (STREAM convention). Order = MLC's columns.
MIXES = {
    "r1w0": "all reads",
    "r3w1": "3:1",
    "r2w1": "2:1",
    "r1w1": "1:1",
    "r2w1nt": "2:1 NT (stream-triad like)",
}
ALL_READS = "r1w0"


def mix_cells(cells: pd.DataFrame) -> pd.DataFrame | None:
    """The mix cells with a number, each with its series (the axes that
    vary besides system, placement and threads); None without any."""
    ok = cells[(cells["n_ok"] > 0) & cells["op"].isin(MIXES)]
    if ok.empty:
        return None
    return add_series(ok, knobs.series_columns(leaving=("policy",)))


def beat(write: pd.Series, reads: pd.Series) -> dict | None:
    """A write mix's median above the all-reads median: its gain (a share)
    and whether beyond the spread (even its slowest run beat the fastest
    all-reads run); None when it does not beat it."""
    if not write["gbps_median"] > reads["gbps_median"]:
        return None
    return {"gain": write["gbps_median"] / reads["gbps_median"] - 1, "beyond": bool(write["gbps_min"] > reads["gbps_max"])}


def little_points(cells: pd.DataFrame, line_bytes: dict[str, int]) -> pd.DataFrame | None:
    """One row per point of the loaded-latency curves, in the curves' order,
    with Little's law by the one rule of membench.analyse.concurrency: the
    load threads' read traffic (read_gbps) x the chasing thread's latency =
    bytes_in_flight and lines_in_flight, and lines_per_loader. None without
    a loaded cell with a number."""
    ok = cells[cells["kernel"].isin(families.named(lambda f: f.metric == families.LOADED)) & (cells["n_ok"] > 0)]
    if ok.empty:
        return None
    ok = add_series(ok, ["system", *knobs.columns("variant", "affinity", "policy", "pages", "size", "chase_group")])
    ok = ok.sort_values(["series", "op", "threads", knobs.asked("load_delay")], kind="stable")
    reads = [read_traffic(row, "median") for _, row in ok.iterrows()]
    lines = [
        lines_in_flight(r, ns, line_bytes[system]) if system in line_bytes else math.nan
        for r, ns, system in zip(reads, ok["ns_median"], ok["system"])
    ]
    loaders = [max(1, int(t) - 1) for t in ok["threads"]]
    return ok.assign(
        read_gbps=reads,
        bytes_in_flight=[r * ns for r, ns in zip(reads, ok["ns_median"])],
        lines_in_flight=lines,
        lines_per_loader=[n / k for n, k in zip(lines, loaders)],
    )
