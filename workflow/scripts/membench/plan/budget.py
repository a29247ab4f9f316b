"""A run within a budget (issue 51): which rounds measure every cell and
which only the cells whose answers are undecided.

Without `budget:` every cell gets its repeats, round by round. With one,
rounds 0 .. min_repeats-1 are fixed (every cell), and rounds from there up
to a cell's repeats are adaptive: each is planned after the one before from
the findings so far (membench.findings.next_round, a Snakemake checkpoint).
"""

from __future__ import annotations

import re

from membench.plan.grammar import Cell

UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}


def seconds(value) -> float | None:
    """A budget in seconds: a number, or "4m", "90s", "1.5h"; None for none."""
    if value is None or value == "":
        return None
    if isinstance(value, (int, float)):
        return float(value)
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*(s|m|min|h)?\s*", str(value))
    if not match:
        raise ValueError(f"budget {value!r}: seconds, or a number with s, m or h (\"4m\", \"90s\")")
    return float(match[1]) * UNITS[match[2] or ""]


def fixed_repeats(cell: Cell, config: dict) -> int:
    """The rounds that measure this cell whatever the findings say."""
    if seconds(config.get("budget")) is None:
        return cell.repeats
    return min(cell.repeats, int(config.get("min_repeats", 3)))


def fixed_rounds(cells: list[Cell], config: dict) -> int:
    return max((fixed_repeats(cell, config) for cell in cells), default=0)


def all_rounds(cells: list[Cell]) -> int:
    """The most rounds any cell may get (its repeats)."""
    return max((cell.repeats for cell in cells), default=0)
