"""The one text formatter every output uses (report, tables, compare,
terminal lines): bytes in binary units, numbers with a dash where a value
is missing, never "nan"."""

from __future__ import annotations

import math

DASH = "–"


def missing(value) -> bool:
    """None, NaN, or pandas' NA: no value to show."""
    if value is None:
        return True
    try:
        return bool(value != value) or (isinstance(value, float) and math.isnan(value))
    except TypeError:  # pandas.NA refuses bool()
        return True


def number(value, digits: int = 2) -> str:
    """A table's number: a dash when missing, `digits` decimals for floats."""
    if missing(value):
        return DASH
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def percent(share) -> str:
    """A share as a whole percentage, "63 %"; a dash when missing."""
    return DASH if missing(share) else f"{100 * share:.0f} %"


def size_text(size) -> str:
    """Bytes in the largest binary unit they reach: "256 KiB", "1 GiB",
    "1.5 MiB"; a dash when missing."""
    if missing(size):
        return DASH
    size = float(size)
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size >= scale:
            value = size / scale
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{size:.0f} B"
