"""In cache or past the caches: a bandwidth cell whose arrays fit the
last-level cache its threads can use measures that cache, not memory.

Judged per cell from its footprint (the family's arrays x bytes per array,
as the harness recorded them) and the LLC capacity its runs' CPUs share
(llc_usable_bytes, from topology.json's cache instances when the runs were
collected). A cell is past the caches only when its footprint is at least
PAST_CACHES_FACTOR (4) x that capacity: STREAM's rule, and size: auto's.
Below that it is "in cache" (the arrays fit) or "near the caches" (1-4 x:
some lines still hit, and on AMD the capacity, the L3 plus the L2s it
victimises, is larger than the L3 alone). Either is marked wherever it is
shown and feeds no headline: not the first screen, not the % of peak, not
the effective concurrency at the peak (DESIGN section 5).
"""

from __future__ import annotations

import math

import pandas as pd

from membench.plan import families, knobs

IN_CACHE = "in cache"
NEAR_CACHES = "near the caches"
PAST_CACHES = "past the caches"
# The one threshold of "past the caches": footprint / usable LLC at or above it.
PAST_CACHES_FACTOR = 4
# The mark an in-cache cell carries in tables and figures.
MARK = "◇"


def cache_fit(footprint: float, usable: float) -> str | None:
    """"in cache" when the footprint fits the usable LLC, "near the caches"
    below PAST_CACHES_FACTOR x it, else "past the caches"; None when either
    is unknown."""
    if footprint is None or usable is None or math.isnan(footprint) or math.isnan(usable) or usable <= 0:
        return None
    if footprint <= usable:
        return IN_CACHE
    return NEAR_CACHES if footprint < PAST_CACHES_FACTOR * usable else PAST_CACHES


def cell_cache_columns(kernel: str, ok: pd.DataFrame) -> dict:
    """The cell table's footprint_bytes, llc_usable_bytes (the most any of
    its ok runs could use: a run that could hold the arrays makes the cell
    in cache) and cache columns."""
    # latency and transfer families go small on purpose
    if not families.family(kernel).bandwidth or "arrays" not in ok or "size_bytes" not in ok:
        return {}
    footprint = float((ok["arrays"].astype(float) * ok["size_bytes"].astype(float)).max())
    usable = float(ok["llc_usable_bytes"].astype(float).max()) if "llc_usable_bytes" in ok else math.nan
    return {"footprint_bytes": footprint, "llc_usable_bytes": usable, "cache": cache_fit(footprint, usable)}


def in_cache(cells: pd.DataFrame) -> pd.Series:
    """True for the rows judged in cache or near the caches: short of
    PAST_CACHES_FACTOR x the usable LLC (False where not judged)."""
    if "cache" not in cells:
        return pd.Series(False, index=cells.index)
    return cells["cache"].isin([IN_CACHE, NEAR_CACHES])


def past_caches(cells: pd.DataFrame) -> pd.DataFrame:
    """The rows that may feed a headline."""
    return cells[~in_cache(cells)]


def marked(text: str, row) -> str:
    """A label with the cache mark when its row is short of past the caches."""
    value = row.get("cache") if hasattr(row, "get") else getattr(row, "cache", None)
    return f"{text} {MARK} {value}" if value in (IN_CACHE, NEAR_CACHES) else text


def mark_in_cache(cells: pd.DataFrame) -> pd.DataFrame:
    """The cells with the mark in their requested size ("8MiB ◇ in cache",
    "64MiB ◇ near the caches"), the axis every table and figure names a size
    by: such a cell then carries its mark wherever it is shown."""
    inside = in_cache(cells)
    if not inside.any():
        return cells
    cells, size = cells.copy(), knobs.asked("size")
    cells[size] = cells[size].astype(object)
    cells.loc[inside, size] = [
        f"{asked} {MARK} {where}" for asked, where in zip(cells.loc[inside, size], cells.loc[inside, "cache"])
    ]
    return cells


def note(cells: pd.DataFrame) -> str | None:
    """What the report says once: how many cells ran in cache and that
    they are left out of every headline."""
    inside = cells[in_cache(cells)].drop_duplicates(["system", "cell"]) if "cell" in cells else cells[in_cache(cells)]
    if inside.empty:
        return None
    n = len(inside)
    near = int((inside["cache"] == NEAR_CACHES).sum())
    return (
        f"{n} cell{'s' if n != 1 else ''} {'is' if n == 1 else 'are'} short of {PAST_CACHES_FACTOR} × the last-level cache "
        f"{'its' if n == 1 else 'their'} threads can use (the arrays' footprint, arrays × size, against the LLC instances "
        f"the threads' CPUs share; STREAM's rule): {n - near} fit{'s' if n - near == 1 else ''} in it, marked {MARK} {IN_CACHE}, "
        f"{near} {'is' if near == 1 else 'are'} within {PAST_CACHES_FACTOR} × of it, marked {MARK} {NEAR_CACHES} (some lines "
        "still hit). Both are left out of the first screen, the % of peak and the effective concurrency at the peak, "
        "which are about memory."
    )
