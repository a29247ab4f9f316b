"""The one text formatter every output uses (report, tables, compare,
terminal lines, disturbance reasons): numbers, percentages, bytes in binary
units, and the dash where a value is missing, never "nan". No other module
writes the dash or formats a percentage or a byte count itself
(tests/test_formats.py)."""

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


def significant(value, digits: int = 3) -> str:
    """A ratio or statistic: `digits` decimals, or `digits` significant
    digits past 1000 or under 0.01; a dash when missing."""
    if missing(value):
        return DASH
    if isinstance(value, float):
        return f"{value:.{digits}g}" if abs(value) >= 1000 or abs(value) < 0.01 else f"{value:.{digits}f}"
    return str(value)


def percent(share, digits: int = 0, signed: bool = False, spaced: bool = True) -> str:
    """A share as a percentage: "63 %"; `signed` "+5.2 %"; in running text
    beside a ± or a word (`spaced` False) "±5.0%"; a dash when missing."""
    if missing(share):
        return DASH
    sign = "+" if signed else ""
    return f"{100 * share:{sign}.{digits}f}{' ' if spaced else ''}%"


def percent_span(low, high, digits: int = 0, signed: bool = False) -> str:
    """Two shares as one range of percentages: "+8 to +31 %"."""
    return f"{percent(low, digits, signed)[:-2]} to {percent(high, digits, signed)}"


def size_text(size, digits: int | None = None) -> str:
    """Bytes in the largest binary unit they reach: "256 KiB", "1 GiB",
    "1.5 MiB" (one decimal where not whole; `digits` fixes the decimals);
    a dash when missing."""
    if missing(size):
        return DASH
    size = float(size)
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size >= scale:
            value = size / scale
            if digits is not None:
                return f"{value:.{digits}f} {unit}"
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{size:.0f} B"


def gib_text(size) -> str:
    """Memory in whole GiB, "63 GiB" (a machine's memory, as said in
    conditions); a dash when missing."""
    return DASH if missing(size) else f"{size / 2**30:.0f} GiB"


# The write-allocate model's caveat: the first screen says it beside every
# modelled memory traffic, the terminal once under the summary.
WRITE_ALLOCATE_CAVEAT = ("write-allocate model: every stored line read first; Intel server cores since Ice Lake "
                         "can skip that read for full-line stores")  # fmt: skip
