"""Pure statistics over the tidy measurement table: per-cell summaries of
the repetitions (separate processes) and the list of cells that did not run."""

from __future__ import annotations

import pandas as pd

from membench.analyse.caches import cell_cache_columns
from membench.core import disturbance
from membench.plan import knobs
from membench.analyse.peak import nodes_holding_pages, page_node_bound
from membench.store.placement_classes import placement_summary, placement_words

# A cell as requested, plus what the host resolved it to: who measured it,
# its names, and the record columns of its axes (the knob table's).
_NAMES = ["system", "experiment", "cell", "kernel", "variant", "op"]
CELL_KEYS = [*_NAMES, *(column for column in knobs.summary_columns() if column not in _NAMES)]
OBTAINED_KEYS = ["threads", "size_bytes", "policy"]
# Axes that tell series apart in figures and table rows (threads and op have
# their own place).
SERIES_AXES = ["system", *knobs.series_columns()]  # the knob table's series axes, per system
# a series named by its affinity alone is named by its value
AFFINITY = knobs.column("affinity")


def add_series(table: pd.DataFrame, axes: list[str] = SERIES_AXES) -> pd.DataFrame:
    """Label each row by those of `axes` that vary within the table."""
    varying = [a for a in axes if a in table and table[a].nunique(dropna=False) > 1]
    table = table.copy()
    if not varying:
        table["series"] = table[AFFINITY].astype(str) if AFFINITY in table else "all"
    elif varying == [AFFINITY]:
        table["series"] = table[AFFINITY].astype(str)
    else:
        table["series"] = table[varying].astype(str).apply(
            lambda row: ", ".join(f"{knobs.knob_word(a)}={v}" for a, v in row.items()), axis=1
        )
    return table


def _pattern_counts(values: pd.Series, label=str, limit: int = 3) -> str:
    """"[0, 1]" x3; "[1, 0]" x1 -> a compact text of the most common
    distinct patterns (at most `limit`, then how many runs the rest hold)."""
    counts = values.dropna().value_counts()
    text = "; ".join(f"{label(pattern)} x{n}" for pattern, n in counts.head(limit).items())
    rest = int(counts.iloc[limit:].sum())
    return text + (f"; {len(counts) - limit} more x{rest}" if rest else "")


def distribution(values: pd.Series, prefix: str) -> dict:
    """n-independent summary of one metric over repetitions."""
    values = values.astype(float)
    return {
        f"{prefix}_mean": values.mean(),
        f"{prefix}_std": values.std(ddof=1) if len(values) > 1 else float("nan"),
        f"{prefix}_min": values.min(),
        f"{prefix}_max": values.max(),
        f"{prefix}_median": values.median(),
    }


def traffic_split(ok: pd.DataFrame) -> dict[str, pd.Series]:
    """The memory traffic of each ok record split into reads (the kernel
    table's reads plus write-allocate reads: what Little's law counts) and
    writes (write-backs, posted), in GB/s at the best iteration, from the
    bytes the harness recorded (bytes_read_per_iter, bytes_written_per_iter:
    the kernel table's counts, never restated here). Records from before
    those keys: where write-allocate applies (more bytes with it than
    without), reads + write-allocate reads are the STREAM count; where it
    does not (non-temporal stores, read-modify-write, read-only) the split
    is not recorded and stays unknown."""
    if "gbps_wa" not in ok or "bytes_per_iter_wa" not in ok:
        return {}
    total = ok["bytes_per_iter_wa"].astype(float)
    reads = ok["bytes_read_per_iter"].astype(float) if "bytes_read_per_iter" in ok else pd.Series(float("nan"), index=ok.index)
    writes = ok["bytes_written_per_iter"].astype(float) if "bytes_written_per_iter" in ok else pd.Series(float("nan"), index=ok.index)
    stream = ok["bytes_per_iter"].astype(float)
    older = reads.isna() & (total > stream)
    reads = reads.where(~older, stream)
    writes = writes.where(~older, total - stream)
    gbps = ok["gbps_wa"].astype(float)
    return {"gbps_read": gbps * reads / total, "gbps_write": gbps * writes / total}


def disturbed_mask(table: pd.DataFrame) -> pd.Series:
    """True for the rows the disturbed rule marks (membench.core.disturbance);
    a table without the column (older measurements) marks none."""
    if "disturbed" not in table:
        return pd.Series(False, index=table.index)
    return table["disturbed"].map(disturbance.is_disturbed).astype(bool)


def undisturbed(table: pd.DataFrame) -> pd.DataFrame:
    """The rows a conclusion may use: every row the disturbed rule does not
    mark (not recorded counts as not marked, and is said so beside)."""
    return table[~disturbed_mask(table)]


def disturbance_counts(ok: pd.DataFrame) -> dict:
    """How many of a cell's ok repetitions were disturbed, by what, how
    many recorded nothing, and how many ran beside other busy tasks."""
    marked = disturbed_mask(ok)
    kinds: dict[str, int] = {}
    for text in ok.loc[marked, "disturbed_by"].dropna() if "disturbed_by" in ok else []:
        for cause in str(text).split("; "):
            kind = disturbance.cause_kind(cause)
            kinds[kind] = kinds.get(kind, 0) + 1
    unknown = int(ok["disturbed"].isna().sum()) if "disturbed" in ok else len(ok)
    return {
        "n_disturbed": int(marked.sum()),
        # kept: other tasks kept other CPUs busy beside them (disturbance.neighbour)
        "n_neighbour": int(ok["neighbour"].notna().sum()) if "neighbour" in ok else 0,
        "disturbed_by": "; ".join(f"{kind} x{n}" for kind, n in kinds.items()) or None,
        "n_disturbance_not_recorded": unknown,
    }


def summarise_cells(table: pd.DataFrame) -> pd.DataFrame:
    """One row per (cell, op[, working set]), in the order the records come
    (the cells' canonical order, which collect gives measurements.csv
    however the run was built, then the kernel's op order): repetitions by
    status, and
    the distributions of the ok ones: bandwidth (GB/s = 1e9 B/s) and, for
    latency kernels, ns per load. The distributions are over the ok
    repetitions the disturbed rule does not mark (n_used); n_disturbed says
    how many it marked and disturbed_by by what, and <metric>_median_all is
    the median with them."""
    keys = [k for k in CELL_KEYS if k in table] + (["working_set_bytes"] if "working_set_bytes" in table else [])
    rows = []
    for key, group in table.groupby(keys, dropna=False, sort=False):
        ok = group[group["status"] == "ok"]
        row = dict(zip(keys, key))
        for obtained in OBTAINED_KEYS + [c for c in group if c.startswith("feature_")]:
            row[obtained] = group[obtained].iloc[0]
        row.update(
            n_ok=len(ok),
            n_skipped=int((group["status"] == "skipped").sum()),
            n_failed=int((group["status"] == "failed").sum()),
        )
        if ok.empty:
            rows.append(row)
            continue
        row.update(disturbance_counts(ok))
        used = undisturbed(ok)
        row["n_used"] = len(used)
        if "sweep_end" in ok:  # runs whose chase sweep the C stop rule ended as held past the caches
            row["sweep_held"] = int((ok["sweep_end"] == "held").sum())
        for metric, prefix in (("gbps", "gbps"), ("ns_per_load", "ns")):
            if metric in ok and ok[metric].notna().any():
                row[f"{prefix}_median_all"] = ok[metric].astype(float).median()
        # core_ghz: the clock the chase measured beside its latency (cycles in the hierarchy table)
        # delay_ns: the loaded family's injected delay as measured (a pause count's cost varies by CPU)
        for metric, prefix in (("gbps", "gbps"), ("gbps_wa", "gbps_wa"), ("ns_per_load", "ns"), ("core_ghz", "core_ghz"),
                               ("delay_ns", "delay_ns")):
            if metric in ok and ok[metric].notna().any():
                # NaN when every repetition was disturbed: the cell stays, its numbers do not
                row.update(distribution(used[metric].dropna(), prefix))
        for prefix, values in traffic_split(used).items():
            if values.notna().any():
                row.update(distribution(values.dropna(), prefix))
        row.update(
            hugepage_fraction_mean=ok["hugepage_fraction"].astype(float).mean(),
            placement_classes=placement_summary(ok) or "not classified (no topology.json)",
            placement_words=placement_words(ok) or "not classified (no topology.json)",
            migrated_runs=int(ok["migrated"].fillna(False).astype(bool).sum()) if "migrated" in ok else 0,
        )
        row.update(cell_cache_columns(row.get("kernel"), ok))
        if "node_name" in ok:
            row["nodes_obtained"] = _pattern_counts(ok["node_name"])
        if "page_nodes" in ok:
            row["page_nodes_used"] = nodes_holding_pages(ok["page_nodes"])
            row["page_node_bound"] = page_node_bound(ok["page_nodes"])  # the peak a cell is held against
        if "placement_problems" in ok:
            flagged = ok["placement_problems"].dropna()
            row.update(placement_mismatches=len(flagged), placement_notes=_pattern_counts(flagged) or None)
        rows.append(row)
    return pd.DataFrame(rows)


def problem_cells(table: pd.DataFrame) -> pd.DataFrame:
    """Every (cell, status, reason) that is not ok, with how often."""
    bad = table[table["status"] != "ok"]
    keys = ["system", "experiment", "cell", "status", "reason"]
    if bad.empty:
        return pd.DataFrame(columns=[*keys, "records"])
    return bad.groupby(keys, dropna=False).size().reset_index(name="records")
