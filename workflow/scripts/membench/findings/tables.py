"""The papers' tables, from the per-cell summary (pure functions).

Each returns {"title", "note", "columns", "rows"} for the report template.
"""

from __future__ import annotations

import math

import pandas as pd

from membench.analyse.caches import marked
from membench.plan.grammar import size_text
from membench.findings.mix_tables import injection_table
from membench.findings.peak_tables import RULE, peak_table, percent, share_of
from membench.analyse.stats import add_series
from membench.core.text import DASH, number, percent
from membench.plan import families, knobs

FEATURE_LABELS = {
    "opt_level": "opt",
    "partial_sums": "partial sums",
    "vector_bits": "vector bits",
    "sw_prefetch": "SW prefetch",
    "large_pages": "large pages",
    "pages_per_loop": "4 KiB pages accessed",
    "nt_stores": "NT stores",
}


def _feature_text(value) -> str:
    """McCalpin's convention: Y for a feature a version has, blank otherwise."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, (bool,)) or str(value) in ("True", "False"):
        return "Y" if str(value) == "True" else ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


# Axes besides the version that may vary inside a read-only experiment; a
# version's row is split by them instead of averaging over them.
# threads: the threads the harness ran; the other knobs as asked.
VERSION_SPLIT = ["threads", *knobs.asked_keys("affinity", "policy", "pages", "init", "size", "prefetch_distance")]
# the placements the Colfax table sets side by side, as asked
AFFINITY = knobs.asked("affinity")


def _by_version(frame: pd.DataFrame, axes: list[str] = VERSION_SPLIT):
    """(row label, rows) per version and combination of the other varying
    axes, in the order they come; the label names those axes when any vary."""
    frame = add_series(frame, [a for a in axes if a in frame])
    several = frame["series"].nunique() > 1
    for (variant, series), part in frame.groupby(["variant", "series"], sort=False):
        yield (f"{variant} ({series})" if several else variant), part


def _mean_range(cells: pd.DataFrame) -> str:
    """GB/s as "mean (min – max)" over the repetitions of these cells."""
    if cells.empty:
        return DASH
    return f"{cells['gbps_mean'].mean():.2f} ({cells['gbps_min'].min():.2f} – {cells['gbps_max'].max():.2f})"


def _as_mccalpin(feature: str, value):
    """His "4 KiB pages accessed" column counts a flat loop as 1 page at a
    time; the variant table says 0 (not page-structured)."""
    if feature == "feature_pages_per_loop" and value == value and value is not None:
        return max(1, int(value))
    return value


def feature_table(cells: pd.DataFrame) -> dict:
    """One row per version: its feature columns, then GB/s per system as
    mean (min – max over repetitions)."""
    ok = cells[cells["n_ok"] > 0]
    order = list(FEATURE_LABELS)
    features = sorted(
        (c for c in cells if c.startswith("feature_")),
        key=lambda c: order.index(c.removeprefix("feature_")) if c.removeprefix("feature_") in order else len(order),
    )
    systems = list(dict.fromkeys(ok["system"]))
    rows = []
    for label, part in _by_version(ok):
        first = part.iloc[0]
        row = [label, *(_feature_text(_as_mccalpin(f, first[f])) for f in features)]
        for system in systems:
            row.append(_mean_range(part[part["system"] == system]))
        rows.append(row)
    labels = [FEATURE_LABELS.get(f.removeprefix("feature_"), f.removeprefix("feature_")) for f in features]
    return {
        "title": "Versions and their features (McCalpin's table)",
        "note": "GB/s = 1e9 B/s read, mean (min – max) over repetitions; Y = the version has the feature.",
        "columns": ["version", *labels, *(f"{s} GB/s" for s in systems)],
        "rows": rows,
    }


def range_table(cells: pd.DataFrame) -> dict:
    """GB/s per thread count (rows) and system (columns) as min – max over
    repetitions (the table of RWTH Aachen's page on Sun machines: placement
    changes results)."""
    ok = add_series(cells[cells["n_ok"] > 0], knobs.columns("variant", "affinity", "policy", "pages"))
    systems = list(dict.fromkeys(ok["system"]))
    several = ok["series"].nunique() > 1
    rows = []
    for (threads, series), part in ok.groupby(["threads", "series"], sort=True):
        row = [str(threads), *([series] if several else [])]
        for system in systems:
            mine = part[part["system"] == system]
            row.append(f"{mine['gbps_min'].min():.2f} – {mine['gbps_max'].max():.2f}" if not mine.empty else DASH)
        rows.append(row)
    return {
        "title": "GB/s by threads and system, min – max (the table of RWTH Aachen's page on Sun machines)",
        "note": "Ranges over repetitions, each a separate process with its own placement.",
        "columns": ["threads", *(["series"] if several else []), *systems],
        "rows": rows,
    }


def placement_table(cells: pd.DataFrame, shares: pd.DataFrame | None = None) -> dict:
    """Bandwidth by memory placement (the EC2 NUMA blog post's local / remote /
    interleaved table): one row per system, threads and policy, one column
    per op, mean (min – max); with known peaks (membench.analyse.peak) a "% of
    peak" column per op."""
    with_peak = shares is not None and not shares.empty
    ok = cells[cells["n_ok"] > 0]
    ops = list(dict.fromkeys(ok["op"]))
    rows = []
    ok = add_series(ok, knobs.series_columns(leaving=("policy",)))
    several = ok["series"].nunique() > 1
    for (system, threads, series, policy, resolved), part in ok.groupby(
        ["system", "threads", "series", knobs.asked("policy"), "policy"], sort=False
    ):
        row = [system, str(threads), *([series] if several else []), policy if policy == resolved else f"{policy} → {resolved}"]
        for op in ops:
            row.append(_mean_range(part[part["op"] == op]))
        row += [share_of(shares, part, op) for op in ops] if with_peak else []
        rows.append(row)
    return {
        "title": "Bandwidth by memory placement (the EC2 NUMA blog post's table)",
        "note": "GB/s, mean (min – max) over repetitions; the policy as requested → as applied."
        + (f" % of peak: the mean's. {RULE}" if with_peak else ""),
        "columns": ["system", "threads", *(["series"] if several else []), "policy", *ops,
                    *([f"{op} % of peak" for op in ops] if with_peak else [])],  # fmt: skip
        "rows": rows,
    }




def concurrency_table(ec: pd.DataFrame, kernel: str) -> dict:
    """Effective concurrency of an experiment's bandwidth cells. For the
    read-only versions McCalpin's layout: versions x systems, in cache
    lines; otherwise one row per cell and op with both latencies."""
    note = (
        "Little's law: bytes in flight = read traffic (GB/s of the kernel table's reads plus write-allocate "
        "reads; the write-backs, shown beside it, are posted and wait no latency) × ns; cache lines = bytes / line "
        "size. Write-allocate is a model: one read per line written with ordinary stores, none for non-temporal "
        "stores or read-modify-write; some CPUs skip it for full-line writes. "
        "Idle latency: the random chase at its largest working set, same system and placement; "
        "loaded latency: the chase under the heaviest load measured. The source of each latency is named."
    )
    with_peak = "lines_for_peak" in ec and ec["lines_for_peak"].notna().any()
    if with_peak:
        note += (" Lines for peak: the peak's GB/s × the same idle latency / line size, the concurrency reaching the "
                 "peak would take at that latency; the share measured of it equals the traffic's share of peak.")  # fmt: skip
    if "ladder" in families.family(kernel).figures:  # one row per version (McCalpin's second table)
        systems = list(dict.fromkeys(ec["system"]))
        rows = []
        for label, part in _by_version(ec, ["affinity", "pages", "placement"]):
            row = [label]
            for system in systems:
                mine = part[part["system"] == system]
                text = number(mine["lines_in_flight"].mean(), 1) if not mine.empty else DASH
                if with_peak and not mine.empty and mine["lines_for_peak"].notna().any():
                    text += f" ({percent(mine['lines_share'].mean())} of {mine['lines_for_peak'].mean():.0f} for peak)"
                row.append(text)
            rows.append(row)
        sources = "; ".join(sorted(set(ec["latency_source"])))
        return {
            "title": "Effective concurrency, cache lines in flight (McCalpin's second table)",
            "note": f"{note} Latencies used: {sources}.",
            "columns": ["version", *systems],
            "rows": rows,
        }
    # Each latency's source is said once, under the table; rows name it by its mark.
    sources = list(dict.fromkeys(ec["latency_source"]))
    mark = {source: f"[{i}]" for i, source in enumerate(sources, start=1)}
    rows = [
        [
            r.system, marked(r.op, r), str(r.threads), r.affinity, r.pages, r.placement, number(r.gbps, 2),
            number(r.traffic_gbps, 2), number(getattr(r, "write_traffic_gbps", math.nan), 2), number(r.latency_ns, 1),
            number(r.bytes_in_flight, 0), number(r.lines_in_flight, 1), number(r.lines_per_thread, 1),
            number(r.loaded_latency_ns, 1), number(r.lines_in_flight_loaded, 1), mark[r.latency_source],
            *([number(r.lines_for_peak, 1), percent(r.lines_share)] if with_peak else []),
        ]
        for r in ec.itertuples()
    ]  # fmt: skip
    return {
        "title": "Effective concurrency (Little's law)",
        "note": note,
        "columns": [
            "system", "op", "threads", "affinity", "pages", "placement", "GB/s", "read GB/s", "write GB/s", "idle ns", "bytes in flight", "lines",
            "lines / thread", "loaded ns", "lines (loaded)", "idle latency",
            *(["lines for peak", "% of it"] if with_peak else []),
        ],  # fmt: skip
        "rows": rows,
        "footnotes": [f"{mark[source]} {source}" for source in sources],
    }


def idle_latency_table(latencies: pd.DataFrame) -> dict:
    return {
        "title": "Idle latency per system, placement and page size",
        "note": (
            "The random chase's memory plateau (the hierarchy's memory row, one rule: membench.analyse.memory_plateau), "
            "with the reference tools' 256 KiB groups when measured: the median over the undisturbed runs of each run's "
            "median over the plateau's points past the caches (runs counts runs, not points; ns per dependent load, "
            "each its stretch-min-mean: every stretch of the cycle at its fastest walk; min–max over the runs and their "
            "distance from the median show the spread); without a plateau, the largest working set measured. The "
            "working set is the plateau's largest; the group and the pointer spacing are named; a latency not taken "
            "past the caches is flagged ⚑ (it may hold cache hits)."
        ),
        "columns": ["system", "placement", "pages", "group", "spacing", "ns per load", "runs", "min–max ns", "spread", "working set", "cell"],
        "rows": [
            [
                r.system, r.placement, r.pages, r.group, getattr(r, "spacing", "spacing not recorded"), number(r.ns, 1), str(r.runs),
                f"{number(r.ns_min, 1)}–{number(r.ns_max, 1)}", f"{percent(r.ns_min / r.ns - 1, 1, signed=True)}/{percent(r.ns_max / r.ns - 1, 1, signed=True)}",
                size_text(r.working_set_bytes) + (f" {r.flag}" if isinstance(getattr(r, "flag", None), str) else ""), r.source,
            ]
            for r in latencies.itertuples()
        ],  # fmt: skip
    }


def _change(before: float, after: float, digits: int = 1) -> str:
    """"62.1 → 80.3 (+29 %)"; the percentage is left out where before is 0."""
    if any(v is None or (isinstance(v, float) and math.isnan(v)) for v in (before, after)):
        return DASH
    pct = f" ({percent((after - before) / before, signed=True, spaced=False)})" if before else ""
    return f"{before:.{digits}f} → {after:.{digits}f}{pct}"


def affinity_change_table(cells: pd.DataFrame, before: str = "none", after: str = "spread") -> dict | None:
    """The Colfax before/after: per op and thread count, the OS's placement
    (none) against explicit affinity (spread): mean, std and min over the
    repetitions. None when the experiment lacks either affinity."""
    ok = cells[cells["n_ok"] > 0]
    if not {before, after} <= set(ok[AFFINITY]):
        return None
    axes = [a for a in ["system", *knobs.series_columns(leaving=("affinity",))] if a in ok]
    varying = [a for a in axes if ok[a].nunique(dropna=False) > 1]
    others = add_series(ok, varying) if varying else ok.assign(series="all")
    several = bool(varying)
    rows = []
    for (series, op, threads), part in others.groupby(["series", "op", "threads"], sort=False):
        first = part[part[AFFINITY] == before]
        second = part[part[AFFINITY] == after]
        if first.empty or second.empty:
            continue
        a, b = first.iloc[0], second.iloc[0]
        rows.append(
            [*([series] if several else []), op, str(threads), f"{int(a['n_ok'])} / {int(b['n_ok'])}",
             _change(a["gbps_mean"], b["gbps_mean"]), _change(a.get("gbps_std"), b.get("gbps_std"), 2),
             _change(a["gbps_min"], b["gbps_min"])]
        )  # fmt: skip
    if not rows:
        return None
    return {
        "title": f"Affinity {before} → {after} (the Colfax paper's before and after)",
        "note": f"GB/s over repetitions with the OS placing threads ({before}) and with explicit affinity ({after}); "
        "the change in mean, in spread (standard deviation) and in the worst run (min).",
        "columns": [*(["series"] if several else []), "op", "threads", f"runs {before} / {after}", "mean", "std", "min"],
        "rows": rows,
    }


# The tables of each paper's question (a family's `paper` trait) beside its
# experiments' own: McCalpin's versions by feature, the Sun machines' ranges, MLC's mixes.
TABLES = {"mccalpin": (feature_table,), "sun": (range_table,), "mlc": (injection_table,)}


def tables_for(kernel: str, cells: pd.DataFrame, ec: pd.DataFrame, shares: pd.DataFrame | None = None) -> list[dict]:
    """The paper tables of one experiment, its bandwidth against the peak
    (where a system's peak is known), then its effective concurrency."""
    if cells.empty:
        return []
    traits = families.family(kernel)
    tables = [table for make in TABLES.get(traits.paper, ()) if (table := make(cells))]
    if "scaling" in traits.figures:  # the thread scaling's families: not the readonly ladder, not latencies
        change = affinity_change_table(cells)
        if change:
            tables.append(change)
    if traits.bandwidth and cells[knobs.asked("policy")].nunique() > 1:
        tables.append(placement_table(cells, shares))
    against_peak = peak_table(shares) if shares is not None else None
    if against_peak:
        tables.append(against_peak)
    if not ec.empty and ec["latency_ns"].notna().any():  # else the concurrency section says why
        tables.append(concurrency_table(ec, kernel))
    return tables
