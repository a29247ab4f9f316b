"""The report's read:write mix tables, built from the numbers of
membench.analyse.injection (which decides nothing in words):

- The injection bandwidth table (MLC's --peak_injection_bandwidth, placement
  verified): per system, placement and thread count, one column per mix, GB/s
  by the STREAM count (median over repetitions, min–max beside it). A write
  mix whose median beats all reads (r1w0) is flagged in its cell and listed
  under the table, with whether the beat lies beyond the spread of both; it is
  never averaged into anything.
- The loaded-latency curve with Little's law at each point.

Each returns {"title", "note", "columns", "rows"} for the report template.
"""

from __future__ import annotations

import math

import pandas as pd

from membench.analyse.concurrency import placement_class
from membench.analyse.injection import ALL_READS, MIXES, beat, little_points, mix_cells
from membench.core.text import DASH, number, percent
from membench.plan import knobs

FLAG = "⚑"


def _cell_text(row: pd.Series, flagged: bool) -> str:
    """"12.3 (11.9–12.6)" plus the memory traffic with write-allocate reads
    where it differs: "12.3 (11.9–12.6) · 16.4 traffic"."""
    text = f"{number(row['gbps_median'], 1)} ({number(row['gbps_min'], 1)}–{number(row['gbps_max'], 1)})"
    wa = row.get("gbps_wa_median")
    if wa is not None and not (isinstance(wa, float) and math.isnan(wa)) and abs(wa - row["gbps_median"]) > 1e-9:
        text += f" · {number(wa, 1)} traffic"
    return f"{FLAG} {text}" if flagged else text


def beats(write: pd.Series, reads: pd.Series) -> str | None:
    """Why a write mix's row is flagged against all reads, or None: its
    median above the all-reads median, beyond the spread when even its
    slowest run beat the fastest all-reads run."""
    found = beat(write, reads)
    if found is None:
        return None
    where = "beyond the spread: its slowest run beat the fastest all-reads run" if found["beyond"] else "within the spread of the runs"
    return f"{number(write['gbps_median'], 1)} GB/s vs all reads {number(reads['gbps_median'], 1)} GB/s ({percent(found['gain'], 1, signed=True, spaced=False)}; {where})"


def injection_table(cells: pd.DataFrame) -> dict | None:
    """Injection bandwidth: one row per (system, placement, threads and any
    other axis that varies), one column per mix measured. None without mix
    cells."""
    ok = mix_cells(cells)
    if ok is None:
        return None
    several = ok["series"].nunique() > 1
    mixes = [m for m in MIXES if m in set(ok["op"])]
    rows, flags = [], []
    for (system, asked, policy, threads, series), part in ok.groupby(["system", knobs.asked("policy"), "policy", "threads", "series"], sort=False):
        by_op = {r["op"]: r for _, r in part.iterrows()}
        reads = by_op.get(ALL_READS)
        placement = asked if asked == policy else f"{asked} → {policy}"
        mismatched = int(part["placement_mismatches"].fillna(0).sum()) if "placement_mismatches" in part else 0
        if mismatched:
            placement += f" ⚠ not as asked in {mismatched} runs"
        row = [system, placement, str(threads), *([series] if several else [])]
        for mix in mixes:
            if mix not in by_op:
                row.append(DASH)
                continue
            why = beats(by_op[mix], reads) if reads is not None and mix != ALL_READS else None
            row.append(_cell_text(by_op[mix], why is not None))
            if why:
                flags.append(f"{system}, {placement_class(asked)} ({placement}), {threads} thread{'s' if threads != 1 else ''}{f', {series}' if several else ''}: {mix} ({MIXES[mix]}) {why}")
        rows.append(row)
    return {
        "title": "Injection bandwidth per read:write mix (MLC's peak injection bandwidth)",
        "note": (
            "GB/s = 1e9 B/s by the STREAM count (bytes the kernel loads and stores), the median over repetitions "
            "(each its best iteration), min–max in brackets; “traffic” = the same with the write-allocate read of "
            "every line written with ordinary stores (non-temporal stores and all reads have none). The ratio "
            "names the kernel's read and write streams: r3w1 w = a + b + c, r2w1 w = a + s·b, r1w1 w = s·a, "
            f"r2w1nt w = a + s·b with non-temporal stores. {FLAG} = a write mix whose median beats all reads "
            "(STREAM count), listed below the table."
        ),
        "columns": ["system", "placement", "threads", *(["series"] if several else []), *(f"{m} {MIXES[m]}" for m in mixes)],
        "rows": rows,
        "flags": flags,
        "flags_title": "Write mixes faster than all reads",
    }


def delay_text(row) -> str:
    """The injection delay as asked (pause count) and as measured: "50
    (0.71 µs)"; the count alone where the records predate delay_ns."""
    measured = row.get("delay_ns_median", math.nan) if hasattr(row, "get") else math.nan
    asked = str(row[knobs.asked("load_delay")])
    if measured is None or pd.isna(measured) or not row[knobs.asked("load_delay")]:
        return asked
    return f"{asked} ({measured / 1000:.2f} µs)" if measured >= 1000 else f"{asked} ({measured:.0f} ns)"


def _why_none(row) -> str:
    """A point with no number says why: every run disturbed, or none kept."""
    disturbed = row.get("n_disturbed", 0)
    if disturbed and not pd.isna(disturbed) and int(disturbed) == int(row["n_ok"]):
        return f"{DASH} (all {int(row['n_ok'])} runs disturbed)"
    return DASH


def loaded_little_table(cells: pd.DataFrame, line_bytes: dict[str, int]) -> dict | None:
    """One row per point of the loaded-latency curves: the load threads'
    GB/s (STREAM count and read traffic), the chasing thread's latency
    (median over repetitions) and Little's law at that point, lines in
    flight in all and per load thread (membench.analyse.injection.little_points)."""
    points = little_points(cells, line_bytes)
    if points is None:
        return None
    several = points["series"].nunique() > 1
    rows = []
    for _, row in points.iterrows():
        gbps = number(row["gbps_median"], 2) if not pd.isna(row["gbps_median"]) else _why_none(row)
        rows.append(
            [*([row["series"]] if several else []), row["op"], MIXES.get(row["op"], row["op"]), str(row["threads"]),
             delay_text(row), gbps, number(row["read_gbps"], 2), number(row["ns_median"], 1),
             number(row["bytes_in_flight"], 0), number(row["lines_in_flight"], 1), number(row["lines_per_loader"], 1)]
        )  # fmt: skip
    return {
        "title": "Loaded latency per load mix, with Little's law at each point",
        "note": (
            "Each row is one point of a latency-versus-bandwidth curve (one curve per load op): the load threads' "
            "GB/s (STREAM count, then read traffic: the kernel's reads plus write-allocate reads), the chasing "
            "thread's latency (median over repetitions) and Little's law: read traffic × latency = bytes in "
            "flight, / line size = cache lines in flight, and per load thread. The write-backs are posted and "
            "wait no latency, so they are not counted (the same rule as the effective concurrency). The latency "
            "is the chaser's under that same load, the best estimate of what the load threads' own misses wait. "
            "The delay is the pause count asked, then one delay as measured on the load threads' CPUs (a pause "
            "costs 10 to 140 cycles by CPU model)."
        ),
        "columns": [*(["series"] if several else []), "load op", "mix", "threads", "delay (measured)", "GB/s", "read traffic GB/s",
                    "loaded ns", "bytes in flight", "lines in flight", "lines / load thread"],  # fmt: skip
        "rows": rows,
    }
