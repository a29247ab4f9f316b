"""Effective concurrency (Little's law): how many bytes, and cache lines,
a bandwidth cell kept in flight = bandwidth x latency.

Pure functions over the per-cell summary. The latency is the idle latency
of the same system under the matching memory placement (the random chase at
its largest working set); a bandwidth cell without a matching latency says
so instead of showing a number.
"""

from __future__ import annotations

import math

import pandas as pd

LATENCY_KERNEL, LATENCY_OP = "chase", "random"


def placement_class(policy: str) -> str:
    """The placement a latency must share with a bandwidth cell: first touch
    and local are "local"; remote and interleave are themselves; an explicit
    bind/preferred matches only the same request."""
    if policy in ("default", "local"):
        return "local"
    if policy.startswith("interleave"):
        return "interleave"
    return policy


PAGE_BYTES = {"4k": 4096, "thp": 2**21, "hugetlb-2m": 2**21, "hugetlb-1g": 2**30}
LATENCY_COLUMNS = ["system", "placement", "pages", "ns", "working_set_bytes", "source"]


def _one_per_placement(cells: pd.DataFrame, choose: str, by: str, size: str) -> pd.DataFrame:
    """Per (system, placement, pages), the row whose `by` column is the
    largest (choose="idxmax") or smallest ("idxmin"), as a latency table."""
    if cells.empty:
        return pd.DataFrame(columns=LATENCY_COLUMNS)
    cells = cells.assign(placement=cells["policy_requested"].map(placement_class))
    chosen = cells.loc[getattr(cells.groupby(["system", "placement", "pages"])[by], choose)()]
    return pd.DataFrame(
        {
            "system": chosen["system"],
            "placement": chosen["placement"],
            "pages": chosen["pages"],
            "ns": chosen["ns_mean"],
            "working_set_bytes": chosen[size],
            "source": chosen["cell"],
        }
    ).reset_index(drop=True)


def idle_latencies(cells: pd.DataFrame) -> pd.DataFrame:
    """Per (system, placement, pages): the random chase at the largest
    working set measured, with where it came from."""
    chase = cells[(cells["kernel"] == LATENCY_KERNEL) & (cells["op"] == LATENCY_OP) & (cells["n_ok"] > 0)]
    return _one_per_placement(chase, "idxmax", "working_set_bytes", "working_set_bytes")


def loaded_latencies(cells: pd.DataFrame) -> pd.DataFrame:
    """Per (system, placement, pages): the chasing thread's latency under
    the heaviest load measured (the most GB/s the load threads moved)."""
    loaded = cells[(cells["kernel"] == "loaded") & (cells["n_ok"] > 0)]
    return _one_per_placement(loaded, "idxmax", "gbps_mean", "size_bytes")


def _match(latencies: pd.DataFrame, system: str, placement: str, pages: str) -> pd.Series | None:
    """Same system and placement; the same page size when measured, else
    the smallest pages (4k) measured — and the source says which."""
    same = latencies[(latencies["system"] == system) & (latencies["placement"] == placement)]
    if same.empty:
        return None
    exact = same[same["pages"] == pages]
    if not exact.empty:
        return exact.iloc[0]
    return same.iloc[same["pages"].map(lambda p: PAGE_BYTES.get(p, math.inf)).argmin()]


def effective_concurrency(cells: pd.DataFrame, line_bytes: dict[str, int]) -> pd.DataFrame:
    """One row per bandwidth cell (and op): GB/s x ns = bytes in flight,
    / line size = cache lines, / threads = lines per thread. The bandwidth
    is the memory traffic, write-allocate reads included (a store miss is a
    line in flight too); for NT stores and read-only kernels it equals the
    STREAM count."""
    latencies = idle_latencies(cells)
    loaded = loaded_latencies(cells)
    bandwidth = cells[~cells["kernel"].isin([LATENCY_KERNEL, "loaded"]) & (cells["n_ok"] > 0)]
    rows = []
    for row in bandwidth.itertuples():
        placement = placement_class(row.policy_requested)
        traffic = row.gbps_wa_mean if not math.isnan(row.gbps_wa_mean) else row.gbps_mean
        latency = _match(latencies, row.system, placement, row.pages)
        out = {
            "system": row.system,
            "experiment": row.experiment,
            "cell": row.cell,
            "variant": row.variant,
            "op": row.op,
            "threads": row.threads,
            "affinity": row.affinity,
            "placement": placement,
            "pages": row.pages,
            "gbps": row.gbps_mean,
            "traffic_gbps": traffic,
        }
        if latency is None:
            out.update(
                latency_ns=math.nan,
                bytes_in_flight=math.nan,
                lines_in_flight=math.nan,
                lines_per_thread=math.nan,
                latency_source=f"no idle latency measured on {row.system} with {placement} placement",
            )
        else:
            in_flight = traffic * latency["ns"]  # 1e9 B/s x 1e-9 s = bytes
            lines = in_flight / line_bytes[row.system]
            out.update(
                latency_ns=latency["ns"],
                bytes_in_flight=in_flight,
                lines_in_flight=lines,
                lines_per_thread=lines / row.threads,
                latency_source=(
                    f"idle chase, {latency['pages']} pages, {placement}, "
                    f"{latency['working_set_bytes'] / 2**20:.0f} MiB"
                ),
                latency_cell=latency["source"],
            )
        under_load = _match(loaded, row.system, placement, row.pages)
        if under_load is None:
            out.update(loaded_latency_ns=math.nan, lines_in_flight_loaded=math.nan, loaded_latency_source="no loaded latency measured")
        else:
            out.update(
                loaded_latency_ns=under_load["ns"],
                lines_in_flight_loaded=traffic * under_load["ns"] / line_bytes[row.system],
                loaded_latency_source=f"loaded chase, heaviest load, {under_load['pages']} pages ({under_load['source']})",
            )
        rows.append(out)
    return pd.DataFrame(rows)
