"""Effective concurrency (Little's law): how many bytes, and cache lines,
a bandwidth cell kept in flight = bandwidth x latency.

Pure functions over the per-cell summary. The latency is the idle latency
of the same system under the matching memory placement (the random chase at
its largest working set, with the reference tools' 256 KiB groups when those
were measured): the median over its repetitions, named with its group size
and shown with its spread. A bandwidth cell without a matching latency says
so instead of showing a number.
"""

from __future__ import annotations

import math

import pandas as pd

from membench.plan.grammar import DEFAULT_CHASE_GROUP, group_text, size_text
from membench.plan import families

LATENCY_KERNEL, LATENCY_OP = families.idle_latency()


def placement_class(policy: str) -> str:
    """The placement a latency must share with a bandwidth cell: first touch
    and local are "local"; remote and interleave are themselves; an explicit
    bind/preferred matches only the same request."""
    if policy in ("default", "local"):
        return "local"
    if policy.startswith("interleave"):
        return "interleave"
    return policy


def placement_key(policy: str, affinity: str) -> str:
    """placement_class, plus the threads' node for an explicit bind or
    preferred from one node (affinity node:I): in a node x node matrix,
    bind:1 from node 0 (remote) and from node 1 (local) are different
    latencies, and a bandwidth pair takes the latency of its own pair."""
    placement = placement_class(policy)
    if str(affinity).startswith("node:") and placement.startswith(("bind", "preferred")):
        return f"{placement} from {affinity}"
    return placement


def _placements(cells: pd.DataFrame) -> pd.Series:
    return pd.Series([placement_key(p, a) for p, a in zip(cells["policy_requested"], cells["affinity"])], index=cells.index)


PAGE_BYTES = {"4k": 4096, "thp": 2**21, "hugetlb-2m": 2**21, "hugetlb-1g": 2**30}
LATENCY_COLUMNS = ["system", "placement", "pages", "group", "ns", "ns_min", "ns_max", "runs", "working_set_bytes", "source"]


def _one_per_placement(cells: pd.DataFrame, choose: str, by: str, size: str) -> pd.DataFrame:
    """Per (system, placement, pages), the row whose `by` column is the
    largest (choose="idxmax") or smallest ("idxmin"), as a latency table."""
    if cells.empty:
        return pd.DataFrame(columns=LATENCY_COLUMNS)
    cells = cells.assign(placement=_placements(cells))
    chosen = cells.loc[getattr(cells.groupby(["system", "placement", "pages"])[by], choose)()]
    return pd.DataFrame(
        {
            "system": chosen["system"],
            "placement": chosen["placement"],
            "pages": chosen["pages"],
            "group": chosen["group"],
            "ns": chosen["ns_median"],
            "ns_min": chosen["ns_min"],
            "ns_max": chosen["ns_max"],
            "runs": chosen["n_ok"],
            "working_set_bytes": chosen[size],
            "source": chosen["cell"],
        }
    ).reset_index(drop=True)


def _with_group(cells: pd.DataFrame) -> pd.DataFrame:
    """The chase group of each latency cell as text ("256 KiB", "full");
    runs recorded before the group was an axis had multichase-unlike 64 KiB
    groups and say that it is unknown."""
    if "chase_group_requested" not in cells:
        return cells.assign(group="group not recorded")
    return cells.assign(group=cells["chase_group_requested"].map(lambda g: "group not recorded" if pd.isna(g) else group_text(g)))


def _keys(cells: pd.DataFrame) -> list[pd.Series]:
    return [cells["system"], _placements(cells), cells["pages"]]


# How far below the largest working set a group's own largest may lie and
# still count as an idle (memory) latency: a factor of 4, two octaves.
DRAM_REACH = 4


def _prefer_default_group(cells: pd.DataFrame) -> pd.DataFrame:
    """Per (system, placement, pages) only the default-group cells when
    there are any: the latency the reference tools would report."""
    default = group_text(DEFAULT_CHASE_GROUP)
    has_default = (cells["group"] == default).groupby(_keys(cells)).transform("any")
    return cells[(cells["group"] == default) | ~has_default]


def latency_spread(latency: pd.Series) -> str:
    """"median of 10 runs; 108.0–113.2 ns (−1.9 %/+2.8 %)"."""
    ns, low, high = latency["ns"], latency["ns_min"], latency["ns_max"]
    runs = int(latency["runs"])
    if runs < 2:
        return f"{runs} run, no spread"
    return f"median of {runs} runs; {low:.1f}–{high:.1f} ns ({100 * (low / ns - 1):+.1f} %/{100 * (high / ns - 1):+.1f} %)"


def locality_text(group: str) -> str:
    """"256 KiB groups", "one random cycle (full)", "group not recorded"."""
    if group == "full":
        return "one random cycle (full)"
    return group if group.endswith("recorded") else f"{group} groups"


def idle_source(latency: pd.Series) -> str:
    """What an idle latency is: "idle chase, 4k pages, 256 KiB groups,
    local, 1 GiB"."""
    where = f"{latency['placement']}, {size_text(latency['working_set_bytes'])}"
    return f"idle chase, {latency['pages']} pages, {locality_text(latency['group'])}, {where}"


def idle_latencies(cells: pd.DataFrame) -> pd.DataFrame:
    """Per (system, placement, pages): the random chase at the largest
    working set its group reached, with where it came from. Groups whose
    largest working set is within DRAM_REACH of the largest any group
    reached are candidates (1 GiB next to 4 GiB: both far beyond the
    caches; 32 KiB next to 1 GiB: not), and among them the default 256 KiB
    groups win: a `full` chase swept further does not stand in for them."""
    chase = cells[(cells["kernel"] == LATENCY_KERNEL) & (cells["op"] == LATENCY_OP) & (cells["n_ok"] > 0)]
    if not chase.empty:
        chase = _with_group(chase)
        group_largest = chase.groupby(_keys(chase) + ["group"])["working_set_bytes"].transform("max")
        chase = chase[chase["working_set_bytes"] == group_largest]
        overall = chase.groupby(_keys(chase))["working_set_bytes"].transform("max")
        chase = _prefer_default_group(chase[chase["working_set_bytes"] * DRAM_REACH >= overall])
    return _one_per_placement(chase, "idxmax", "working_set_bytes", "working_set_bytes")


def loaded_latencies(cells: pd.DataFrame) -> pd.DataFrame:
    """Per (system, placement, pages): the chasing thread's latency under
    the heaviest load measured (the most GB/s the load threads moved)."""
    loaded = cells[cells["kernel"].isin(families.named(lambda f: f.metric == families.LOADED)) & (cells["n_ok"] > 0)]
    loaded = _prefer_default_group(_with_group(loaded)) if not loaded.empty else loaded
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
    is the read traffic: the kernel's reads plus its write-allocate reads
    (a store miss waits for its line like a load); the write-backs are
    posted and wait no latency, so they are shown beside it
    (write_traffic_gbps), not counted. Write-allocate is a model (the
    kernel table's: none for NT stores or read-modify-write; some CPUs also
    skip it for full-line writes)."""
    latencies = idle_latencies(cells)
    loaded = loaded_latencies(cells)
    bandwidth = cells[cells["kernel"].isin(families.named(lambda f: f.bandwidth)) & (cells["n_ok"] > 0)]
    rows = []
    for row in bandwidth.itertuples():
        placement = placement_key(row.policy_requested, row.affinity)
        traffic = getattr(row, "gbps_read_mean", math.nan)
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
            "write_traffic_gbps": getattr(row, "gbps_write_mean", math.nan),
            "cache": getattr(row, "cache", None),
        }
        if latency is None or math.isnan(traffic):
            out.update(
                latency_ns=math.nan,
                bytes_in_flight=math.nan,
                lines_in_flight=math.nan,
                lines_per_thread=math.nan,
                latency_source=(
                    f"no idle latency measured on {row.system} with {placement} placement"
                    if latency is None
                    else "read traffic not recorded (records from before bytes_read_per_iter with no "
                    "write-allocate to tell reads from writes): measure the cell again"
                ),
            )
        else:
            in_flight = traffic * latency["ns"]  # 1e9 B/s x 1e-9 s = bytes
            lines = in_flight / line_bytes[row.system]
            out.update(
                latency_ns=latency["ns"],
                bytes_in_flight=in_flight,
                lines_in_flight=lines,
                lines_per_thread=lines / row.threads,
                latency_source=f"{idle_source(latency)} ({latency_spread(latency)})",
                latency_cell=latency["source"],
            )
        under_load = _match(loaded, row.system, placement, row.pages)
        if under_load is None or math.isnan(traffic):
            out.update(loaded_latency_ns=math.nan, lines_in_flight_loaded=math.nan, loaded_latency_source="no loaded latency measured")
        else:
            out.update(
                loaded_latency_ns=under_load["ns"],
                lines_in_flight_loaded=traffic * under_load["ns"] / line_bytes[row.system],
                loaded_latency_source=(
                    f"loaded chase, heaviest load, {under_load['pages']} pages, {locality_text(under_load['group'])} "
                    f"({under_load['source']}; {latency_spread(under_load)})"
                ),
            )
        rows.append(out)
    return pd.DataFrame(rows)
