"""Why a figure has nothing to draw, in its own words.

A study whose every run was skipped (threads beyond the CPUs, hugetlb pages
with none reserved), failed (a killed harness) or disturbed (a busy machine)
still gets each of its figures: one line saying so, with the counts and the
most common reason, instead of a traceback and no report.
"""

from __future__ import annotations

import pandas as pd


def _most_common_reason(table: pd.DataFrame) -> str | None:
    if "reason" not in table or table["reason"].dropna().empty:
        return None
    return str(table["reason"].dropna().astype(str).value_counts().index[0])


def from_runs(runs: pd.DataFrame, what: str = "measurements") -> str:
    """For a table of runs (one row per record) with no ok value: what
    became of them."""
    status = runs["status"].fillna("unknown") if "status" in runs else pd.Series(dtype=object)
    counts = status.value_counts()
    parts = [f"{int(n)} {name}" for name, n in counts.items() if name != "ok"]
    if counts.get("ok"):
        parts.append(f"{int(counts['ok'])} ok without a value")
    text = f"no successful {what} in this experiment"
    if not parts:
        return text + " (no records stored)"
    reason = _most_common_reason(runs[status != "ok"])
    return f"{text}: records {', '.join(parts)}" + (f" ({_short(reason)})" if reason else "")


def from_cells(cells: pd.DataFrame, what: str = "measurements", value: str | None = None) -> str:
    """For a table of cells (membench.analyse.stats.summarise_cells) with
    no cell to draw: how many repetitions were skipped, failed or disturbed,
    and (with `value`) how many cells had no usable value."""
    total = {key: int(pd.to_numeric(cells[key], errors="coerce").fillna(0).sum()) if key in cells else 0
             for key in ("n_ok", "n_skipped", "n_failed", "n_disturbed")}  # fmt: skip
    parts = [f"{total[key]} {key[2:]}" for key in ("n_skipped", "n_failed", "n_disturbed") if total[key]]
    text = f"no successful {what} in this experiment"
    if total["n_ok"] and value is not None:
        text += f": no cell has a {value} above 0 (every repetition left out or none valid)"
        return text + (f"; repetitions {', '.join(parts)}" if parts else "")
    if not parts:
        return text + (" (no cells stored)" if cells.empty else "")
    return f"{text}: repetitions {', '.join(parts)}"


def _short(text: str, limit: int = 90) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
