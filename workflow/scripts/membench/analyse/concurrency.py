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
import re

import pandas as pd

from membench.plan.grammar import DEFAULT_CHASE_GROUP, group_text, size_text
from membench.analyse import memory_plateau
from membench.plan import families, knobs, latency_sweep
from membench.core.text import percent

# The record keys of the knobs a latency's placement and curve are told by, as asked.
POLICY, GROUP, SPACING, AFFINITY = (knobs.asked(name) for name in ("policy", "chase_group", "chase_spacing", "affinity"))

LATENCY_KERNEL, LATENCY_OP = families.idle_latency()


def read_traffic(row, stat: str = "mean") -> float:
    """The traffic Little's law counts, for a bandwidth or loaded cell: the
    GB/s memory read (the kernel's reads plus its write-allocate reads,
    membench.analyse.stats.traffic_split), at `stat` over repetitions. The
    write-backs are posted and wait no latency, so they are not counted;
    NaN where reads were not told from writes."""
    value = row.get(f"gbps_read_{stat}", math.nan) if hasattr(row, "get") else getattr(row, f"gbps_read_{stat}", math.nan)
    return math.nan if value is None or pd.isna(value) else float(value)


def lines_in_flight(read_gbps: float, ns: float, line_bytes: int) -> float:
    """Little's law, the one rule of every table: read GB/s x ns = bytes in
    flight (1e9 B/s x 1e-9 s), / line size = cache lines in flight."""
    return read_gbps * ns / line_bytes


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
    return pd.Series([placement_key(p, a) for p, a in zip(cells[POLICY], cells[AFFINITY])], index=cells.index)


PAGE_BYTES = {"4k": 4096, "thp": 2**21, "hugetlb-2m": 2**21, "hugetlb-1g": 2**30}
LATENCY_COLUMNS = ["system", "placement", "pages", "group", "spacing", "spacing_bytes", "ns", "ns_min", "ns_max", "runs", "working_set_bytes", "source"]
# An idle latency counts as past the caches when its touched lines are past
# this many times the LLC (membench.analyse.memory_plateau: the one rule).
LLC_REACH = memory_plateau.LLC_REACH


def _one_per_placement(cells: pd.DataFrame, choose: str, by: str, size: str) -> pd.DataFrame:
    """Per (system, placement, pages), the row whose `by` column is the
    largest (choose="idxmax") or smallest ("idxmin"), as a latency table."""
    cells = cells[cells[by].notna()] if by in cells else cells  # every run disturbed: no number to choose by
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
            "spacing": chosen["spacing"],
            "spacing_bytes": chosen["spacing_bytes"],
            "ns": chosen["ns_median"],
            "ns_min": chosen["ns_min"],
            "ns_max": chosen["ns_max"],
            "runs": chosen["n_used"] if "n_used" in chosen else chosen["n_ok"],  # the runs the number is over
            "working_set_bytes": chosen[size],
            "source": chosen["cell"],
        }
    ).reset_index(drop=True)


def _with_group(cells: pd.DataFrame) -> pd.DataFrame:
    """The chase group of each latency cell as text ("256 KiB", "full");
    runs recorded before the group was an axis had multichase-unlike 64 KiB
    groups and say that it is unknown. Its spacing as a number (spacing_bytes,
    NaN where not recorded: the rules use it) and as the words findings
    shows today (spacing: "256 B", "spacing not recorded")."""
    spacing = pd.to_numeric(cells.get(SPACING, pd.Series(math.nan, index=cells.index)), errors="coerce")
    words = spacing.map(lambda s: "spacing not recorded" if pd.isna(s) else f"{int(s)} B")
    cells = cells.assign(spacing_bytes=spacing, spacing=words)
    if GROUP not in cells:
        return cells.assign(group="group not recorded")
    return cells.assign(group=cells[GROUP].map(lambda g: "group not recorded" if pd.isna(g) else group_text(g)))


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


def _prefer_default_spacing(cells: pd.DataFrame) -> pd.DataFrame:
    """Per (system, placement, pages) only the default-spacing cells (one
    pointer per 256 B, multichase's stride) when there are any: several
    spacings at the largest working set give one latency, named."""
    default = cells["spacing_bytes"] == knobs.DEFAULT_CHASE_SPACING
    has_default = default.groupby(_keys(cells)).transform("any")
    return cells[default | ~has_default]


def _same_spacing(spacing_bytes: pd.Series, spacing) -> pd.Series:
    """The rows of this spacing (not recorded: those that record none)."""
    return spacing_bytes.isna() if pd.isna(spacing) else spacing_bytes == spacing


def reach_flag(latency: pd.Series, llc_bytes: int | None, line_bytes: int = 64) -> str | None:
    """"⚑ ..." when the idle latency's working set (in touched lines) is
    short of LLC_REACH x the LLC: it may hold cache hits; None when it is,
    or when the LLC is not known."""
    if not llc_bytes:
        return None
    lines = latency_sweep.touched_bytes(latency["working_set_bytes"], latency["spacing_bytes"], line_bytes)
    if lines >= LLC_REACH * llc_bytes:
        return None
    return f"⚑ {size_text(int(lines))} of lines, short of {LLC_REACH} × the LLC ({size_text(LLC_REACH * llc_bytes)})"


def latency_spread(latency: pd.Series) -> str:
    """"median of 10 runs; 108.0–113.2 ns (−1.9 %/+2.8 %)"."""
    ns, low, high = latency["ns"], latency["ns_min"], latency["ns_max"]
    runs = int(latency["runs"])
    if runs < 2:
        return f"{runs} run, no spread"
    return f"median of {runs} runs; {low:.1f}–{high:.1f} ns ({percent(low / ns - 1, 1, signed=True)}/{percent(high / ns - 1, 1, signed=True)})"


def locality_text(group: str) -> str:
    """"256 KiB groups", "one random cycle (full)", "group not recorded"."""
    if group == "full":
        return "one random cycle (full)"
    return group if group.endswith("recorded") else f"{group} groups"


def spacing_text(spacing_bytes) -> str:
    """"one pointer per 256 B", "spacing not recorded"."""
    return "spacing not recorded" if pd.isna(spacing_bytes) else f"one pointer per {int(spacing_bytes)} B"


def idle_source(latency: pd.Series) -> str:
    """What an idle latency is: "idle chase, 4k pages, 256 KiB groups, one
    pointer per 256 B, local, 1 GiB", and its flag when not past 8 x LLC."""
    where = f"{latency['placement']}, {size_text(latency['working_set_bytes'])}"
    spacing = spacing_text(latency.get("spacing_bytes"))
    flag = latency.get("flag")
    rule = latency.get("rule")
    rule = f" ({rule})" if isinstance(rule, str) and rule != "largest working set" else ""
    return f"idle chase, {latency['pages']} pages, {locality_text(latency['group'])}, {spacing}, {where}{rule}" + (f" {flag}" if isinstance(flag, str) else "")


def idle_latencies(cells: pd.DataFrame, llc_bytes: dict[str, int] | None = None, line_bytes: dict[str, int] | None = None,
                   runs: pd.DataFrame | None = None, cache_sizes: dict[str, list] | None = None) -> pd.DataFrame:
    """Per (system, placement, pages): the memory latency of the random
    chase's sweep (membench.analyse.memory_plateau: the one rule of the
    hierarchy's memory row), the median over the undisturbed runs in `runs`
    of each run's median over the memory plateau's points (n = runs; without
    `runs`, the median of the points' medians). A curve with no memory
    plateau (a single working set, a node matrix pair, a sweep cut short)
    gives its largest working set, flagged. Which curve: groups whose
    largest working set is within DRAM_REACH of the largest any group
    reached are candidates (1 GiB next to 4 GiB: both far beyond the caches;
    32 KiB next to 1 GiB: not), and among them the default 256 KiB groups
    and one pointer per 256 B win. cache_sizes: system -> [(level, bytes)]
    as sysfs names them (the LLC alone where not given)."""
    chase = cells[(cells["kernel"] == LATENCY_KERNEL) & (cells["op"] == LATENCY_OP) & (cells["n_ok"] > 0)]
    if not chase.empty:
        chase = _with_group(chase)
        group_largest = chase.groupby(_keys(chase) + ["group"])["working_set_bytes"].transform("max")
        chase = chase[chase["working_set_bytes"] == group_largest]
        overall = chase.groupby(_keys(chase))["working_set_bytes"].transform("max")
        chase = _prefer_default_spacing(_prefer_default_group(chase[chase["working_set_bytes"] * DRAM_REACH >= overall]))
    latencies = _one_per_placement(chase, "idxmax", "working_set_bytes", "working_set_bytes")
    sizes = {system: list((cache_sizes or {}).get(system) or ([("LLC", llc)] if llc else [])) for system, llc in (llc_bytes or {}).items()}
    sizes.update({s: list(v) for s, v in (cache_sizes or {}).items() if s not in sizes})
    if not latencies.empty:
        latencies = _memory_plateau_latencies(latencies, cells, sizes, line_bytes or {}, runs)
    latencies["flag"] = [
        None if row.get("past_caches") is True else reach_flag(row, (llc_bytes or {}).get(row["system"]), (line_bytes or {}).get(row["system"], 64))
        for _, row in latencies.iterrows()
    ]  # a latency not taken past the caches is flagged wherever it is used
    return latencies


# What a curve's records need: the keys of one sweep and its values.
CURVE_COLUMNS = ["system", "experiment", "cell", "repeat", "kernel", "op",
                 *knobs.columns("policy", "affinity", "pages", "chase_group", "chase_spacing"), "working_set_bytes", "ns_per_load", "ns_median",
                 "ns_min", "ns_max", "n_ok", "n_used", "sweep_held"]  # fmt: skip


def curve_records(frame: pd.DataFrame, latency: pd.Series) -> pd.DataFrame:
    """The rows of `frame` (cells or run records) on one idle latency's
    sweep: the same system, placement, pages, group and spacing, op random."""
    chase = frame[(frame["kernel"] == LATENCY_KERNEL) & (frame["op"] == LATENCY_OP)]
    chase = _with_group(chase[[c for c in CURVE_COLUMNS if c in chase]])
    if chase.empty:
        return chase
    chase = chase.assign(placement=_placements(chase))
    return chase[(chase["system"] == latency["system"]) & (chase["placement"] == latency["placement"])
                 & (chase["pages"] == latency["pages"]) & (chase["group"] == latency["group"])
                 & _same_spacing(chase["spacing_bytes"], latency["spacing_bytes"])]  # fmt: skip


def latency_run_values(runs: pd.DataFrame, latency: pd.Series, line_bytes: int = 64) -> pd.Series:
    """The undisturbed runs behind one idle latency, one value a run: its
    median over the memory plateau's points (membench.analyse.memory_plateau),
    or its value at the one working set where no plateau was found."""
    chase = curve_records(runs, latency) if not runs.empty else runs
    if chase.empty:
        return pd.Series(dtype=float)
    lines = latency_sweep.touched_bytes(chase["working_set_bytes"], latency["spacing_bytes"], line_bytes)
    first = latency.get("lines_first")
    if first is None or pd.isna(first):
        at = latency_sweep.touched_bytes(latency["working_set_bytes"], latency["spacing_bytes"], line_bytes)
        return memory_plateau.run_values(chase, lines, at, at)
    return memory_plateau.run_values(chase, lines, int(first), int(latency["lines_last"]))


def _memory_plateau_latencies(latencies: pd.DataFrame, cells: pd.DataFrame, sizes: dict, line_bytes: dict,
                              runs: pd.DataFrame | None) -> pd.DataFrame:
    """Each idle latency where its sweep has a memory plateau: the plateau's
    statistic (see idle_latencies), with its points and runs; else the
    largest point, as chosen."""
    latencies = latencies.assign(points=1, rule="largest working set", lines_first=math.nan, lines_last=math.nan, past_caches=None)
    for i, latency in latencies.iterrows():
        system_lines = line_bytes.get(latency["system"], 64)
        same = curve_records(cells[cells["n_ok"] > 0], latency)
        same = same[same["ns_median"].notna()]
        lines = latency_sweep.touched_bytes(same["working_set_bytes"], latency["spacing_bytes"], system_lines)
        curve = same.assign(lines=lines).groupby("lines")["ns_median"].median()
        levels = sizes.get(latency["system"], [])
        held = memory_plateau.held_runs(same) > 0 if "sweep_held" in same else bool(levels) and latency_sweep.answer_in(
            curve.index.values, curve.values, len(levels), levels[-1][1])
        runs_at = same.assign(lines=lines).groupby("lines")["n_used" if "n_used" in same else "n_ok"].sum().reindex(curve.index)
        found = memory_plateau.find_memory(curve.index.values, curve.values, levels, held, runs_at.fillna(0).values)
        if found is None:
            continue
        latencies.loc[i, ["lines_first", "lines_last", "points"]] = [found.first_bytes, found.last_bytes, found.points]
        latencies.loc[i, "rule"] = memory_plateau.memory_text(found)
        latencies.at[i, "past_caches"] = not found.short
        on = same[(lines >= found.first_bytes) & (lines <= found.last_bytes)]
        latencies.loc[i, "working_set_bytes"] = int(on["working_set_bytes"].max())
        values = latency_run_values(runs, latencies.loc[i], system_lines) if runs is not None else pd.Series(dtype=float)
        if values.empty:  # no run records at hand: the points' medians
            latencies.loc[i, ["ns", "ns_min", "ns_max", "runs"]] = [found.ns, on["ns_min"].min(), on["ns_max"].max(),
                                                                   int(on["n_used"].max() if "n_used" in on else on["n_ok"].max())]  # fmt: skip
        else:
            latencies.loc[i, ["ns", "ns_min", "ns_max", "runs"]] = [float(values.median()), float(values.min()), float(values.max()), len(values)]
    return latencies


def read_share(op: str, variant: str = knobs.default("variant")) -> float:
    """The share of a kernel's STREAM-counted bytes that memory reads,
    write-allocate reads included: 1 for ordinary stores (a line written is
    a line read first: triad's 16 read + 8 written bytes are 24 read from
    memory), reads / (reads + writes) for non-temporal stores (r2w1nt, the
    nt variants), where the written bytes are not read."""
    match = re.fullmatch(r"r(\d+)w(\d+)(nt)?", op)
    if not match:
        return 1.0  # triad, read, copy, ...: ordinary stores or reads only
    reads, writes = int(match[1]), int(match[2])
    nontemporal = bool(match[3]) or str(variant).startswith("nt")
    return reads / (reads + writes) if nontemporal and writes else 1.0


def loaded_latencies(cells: pd.DataFrame) -> pd.DataFrame:
    """Per (system, placement, pages): the chasing thread's latency under
    the heaviest load measured, by read traffic (the bytes memory read for
    the load threads, write-allocate reads included: comparable across
    read:write mixes, where the STREAM count is not)."""
    loaded = cells[cells["kernel"].isin(families.named(lambda f: f.metric == families.LOADED)) & (cells["n_ok"] > 0)]
    loaded = _prefer_default_group(_with_group(loaded)) if not loaded.empty else loaded
    if not loaded.empty:
        variants = loaded["variant"] if "variant" in loaded else pd.Series("default", index=loaded.index)
        loaded = loaded.assign(read_gbps=[g * read_share(op, v) for g, op, v in zip(loaded["gbps_mean"], loaded["op"], variants)])
    return _one_per_placement(loaded, "idxmax", "read_gbps", "size_bytes")


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


def _under_load(under_load: pd.Series | None, traffic: float, line_bytes: int) -> dict:
    """A bandwidth cell's lines in flight at the loaded latency of its
    placement (the heaviest load measured), and where that latency comes from."""
    if under_load is None or math.isnan(traffic):
        return {"loaded_latency_ns": math.nan, "lines_in_flight_loaded": math.nan, "loaded_latency_source": "no loaded latency measured"}
    return {
        "loaded_latency_ns": under_load["ns"],
        "lines_in_flight_loaded": lines_in_flight(traffic, under_load["ns"], line_bytes),
        "loaded_latency_source": (
            f"loaded chase, heaviest load by read traffic, {under_load['pages']} pages, {locality_text(under_load['group'])}, "
            f"{spacing_text(under_load['spacing_bytes'])} ({under_load['source']}; {latency_spread(under_load)})"
        ),
    }


def _at_idle(row, placement: str, traffic: float, latency: dict | None, line_bytes: int) -> dict:
    """A bandwidth cell's lines in flight at the idle latency, or why none."""
    if latency is None or math.isnan(traffic):
        why = (f"no idle latency measured on {row.system} with {placement} placement" if latency is None
               else "read traffic not recorded (records from before bytes_read_per_iter with no "
               "write-allocate to tell reads from writes): measure the cell again")  # fmt: skip
        return {"latency_ns": math.nan, "bytes_in_flight": math.nan, "lines_in_flight": math.nan,
                "lines_per_thread": math.nan, "latency_source": why}  # fmt: skip
    lines = lines_in_flight(traffic, latency["ns"], line_bytes)
    return {"latency_ns": latency["ns"], "bytes_in_flight": traffic * latency["ns"],  # 1e9 B/s x 1e-9 s = bytes
            "lines_in_flight": lines, "lines_per_thread": lines / row.threads,
            "latency_source": f"{idle_source(latency)} ({latency_spread(latency)})", "latency_cell": latency["source"]}  # fmt: skip


def effective_concurrency(cells: pd.DataFrame, line_bytes: dict[str, int], llc_bytes: dict[str, int] | None = None,
                          latencies: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per bandwidth cell (and op): GB/s x ns = bytes in flight,
    / line size = cache lines, / threads = lines per thread. The bandwidth
    is the read traffic: the kernel's reads plus its write-allocate reads
    (a store miss waits for its line like a load); the write-backs are
    posted and wait no latency, so they are shown beside it
    (write_traffic_gbps), not counted. Write-allocate is a model (the
    kernel table's: none for NT stores or read-modify-write; some CPUs also
    skip it for full-line writes). latencies: idle_latencies(), when the
    caller has them (over the runs: the first screen's idle latency)."""
    latencies = idle_latencies(cells, llc_bytes, line_bytes) if latencies is None else latencies
    loaded = loaded_latencies(cells)
    bandwidth = cells[cells["kernel"].isin(families.named(lambda f: f.bandwidth)) & (cells["n_ok"] > 0)]
    rows = []
    for row in bandwidth.itertuples():
        placement = placement_key(getattr(row, POLICY), getattr(row, AFFINITY))
        traffic = read_traffic(row)
        latency = _match(latencies, row.system, placement, row.pages)
        out = {
            "system": row.system,
            "experiment": row.experiment,
            "cell": row.cell,
            "variant": row.variant,
            "op": row.op,
            "threads": row.threads,
            "affinity": getattr(row, AFFINITY),
            "placement": placement,
            "pages": row.pages,
            "gbps": row.gbps_mean,
            "traffic_gbps": traffic,
            "write_traffic_gbps": getattr(row, "gbps_write_mean", math.nan),
            "cache": getattr(row, "cache", None),
        }
        out.update(_at_idle(row, placement, traffic, latency, line_bytes[row.system]))
        out.update(_under_load(_match(loaded, row.system, placement, row.pages), traffic, line_bytes[row.system]))
        rows.append(out)
    return pd.DataFrame(rows)
