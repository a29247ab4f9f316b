"""How one compared row reads: its ratio and interval, what it is, its
verdict (the terminal table, compare.txt and compare.html share these)."""

from __future__ import annotations

import math

from membench.core.text import DASH, percent, size_text


def interval_text(row: dict) -> str:
    if not isinstance(row.get("ratio"), float) or not math.isfinite(row["ratio"]):
        return DASH
    if min(row["n_base"] or 0, row["n_new"] or 0) < 2:
        return f"{row['ratio']:.3f} [no interval: 2 runs a side needed]"
    if not (math.isfinite(row["ratio_high"]) and math.isfinite(row["ratio_low"])) or row["ratio_low"] <= 0:
        return f"{row['ratio']:.3f} [no useful interval: wider than 10x at these runs and spreads]"
    return f"{row['ratio']:.3f} [{row['ratio_low']:.3f}, {row['ratio_high']:.3f}]"


def spread_text(row: dict) -> str:
    spread = row.get("spread")
    return f"±{percent(spread, 1, spaced=False)}" if isinstance(spread, float) and math.isfinite(spread) else DASH


def what_text(row: dict) -> str:
    """cell, op, working set and placement class in one column."""
    parts = [row["cell"], row["op"] or ""]
    if row.get("sweep_level"):
        parts.append(f"sweep {row['sweep_level']}")
    elif row["working_set_bytes"] is not None:
        parts.append(f"ws={size_text(row['working_set_bytes'])}")
    if row["placement_class"] != "all":
        parts.append(f"[{row['placement_class']}]")
    return " ".join(p for p in parts if p)


def verdict_text(row: dict) -> str:
    text = row["verdict"]
    if row["verdict"] == "undecided":
        text += f" ({row['n_needed']} runs a side would decide)" if row["n_needed"] else " (no realistic count)"
    return text + (" ≠" if row["placement_differs"] else "") + (" !" if row["confounded"] else "")
