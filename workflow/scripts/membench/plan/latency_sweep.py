"""The chase sweep's stopping rule, read back by the analysis and the
estimate: a mirror of kernels/families/chase_sweep.c, where the rule is
written and runs (tests/test_latency_sweep.py checks the two agree on the
same planted sweeps). Its derivation is docs/latency_sweep.md.

The sweep stops after a point of op random once the trailing points are
held within HELD of their median over SPAN_OCTAVES doublings of touched
lines, and that run is past the caches: every cache level sysfs names had
its own plateau before it, or the run begins past the sysfs LLC.
"""

from __future__ import annotations

import math

FLAT = 0.25  # the plateau cut (membench.analyse.hierarchy.FLAT, MB_SWEEP_FLAT)
HELD = 0.02  # MB_SWEEP_HELD
SPAN_OCTAVES = 2  # MB_SWEEP_SPAN_OCTAVES
REPETITION_S = 15.0  # MB_SWEEP_REPETITION_S: no op-random point started after
POINT_S = 2.0  # MB_CHASE_EXTEND_S: no walk added to a point after
# The size auto sweep's reach in touched lines, x the chasing CPU's LLC: a
# level sysfs hides up to 2 x the LLC, then memory held over two doublings
# (4 x, 8 x, 16 x); never less than FLOOR_BYTES allocated.
LLC_REACH = 16
FLOOR_BYTES = 2**30


def segments(ns, flat: float = FLAT) -> list[list[int]]:
    """The analysis's cut of a curve (ns in working-set order) into runs
    within `flat` of their median, a stray point forgiven, neighbours
    merged, on log ns: the one cut (membench.analyse.memory_plateau.plateaus
    names its runs of two points or more)."""
    import numpy as np  # here, not at the top: planning (common.smk, the time model) loads no numpy

    y = np.log(np.asarray(ns, dtype=float))
    tolerance = math.log1p(flat)
    if len(y) == 0:
        return []
    found, current, i = [], [0], 1
    while i < len(y):
        centre = np.median(y[current])
        if abs(y[i] - centre) < tolerance:
            current.append(i)
        elif i + 1 < len(y) and abs(y[i + 1] - centre) < tolerance:
            current += [i, i + 1]
            i += 1
        else:
            found.append(current)
            current = [i]
        i += 1
    found.append(current)
    merged = [found[0]]
    for segment in found[1:]:
        if abs(np.median(y[segment]) - np.median(y[merged[-1]])) < tolerance:
            merged[-1] = merged[-1] + segment
        else:
            merged.append(segment)
    return merged


def held_from(lines, ns) -> int | None:
    """The first index of the trailing run held within HELD of its median
    over SPAN_OCTAVES doublings, or None."""
    import numpy as np  # as in segments

    y = np.log(np.asarray(ns, dtype=float))
    n = len(y)
    if n < 2:
        return None
    start = n - 1
    for j in range(n - 2, -1, -1):
        tail = y[j:]
        if np.max(np.abs(tail - np.median(tail))) > math.log1p(HELD):
            break
        start = j
    if lines[n - 1] < lines[start] * 2**SPAN_OCTAVES * (1 - 1e-9):
        return None
    return start


def answer_in(lines, ns, levels: int, llc_lines: float | None) -> bool:
    """Whether the sweep may stop after these points (touched-line bytes
    ascending, ns per load): the rule of kernels/families/chase_sweep.c."""
    start = held_from(lines, ns)
    if start is None:
        return False
    cut = segments(ns)
    before = sum(len(segment) >= 2 for segment in cut[:-1])
    every_level = levels > 0 and before >= levels and cut[-1][0] <= start
    past_llc = bool(llc_lines) and lines[start] > llc_lines
    return every_level or past_llc


def stop_after(lines, ns, levels: int, llc_lines: float | None) -> int:
    """How many of a full sweep's points the rule measures (all of them
    when it never holds)."""
    for n in range(1, len(ns) + 1):
        if answer_in(lines[:n], ns[:n], levels, llc_lines):
            return n
    return len(ns)


def span_per_line(spacing, line_bytes: int) -> int:
    """Bytes of a chase's span per cache line it touches: one pointer per
    `spacing` bytes, one line per pointer; a pointer in every line where the
    spacing is a line or less, or unknown (None, NaN: records from before
    the spacing axis had one per line)."""
    try:
        spacing = float(spacing)
    except (TypeError, ValueError):
        return line_bytes
    return int(spacing) if spacing > line_bytes else line_bytes


def touched_bytes(working_set, spacing, line_bytes: int):
    """The bytes of cache lines a chase over `working_set` bytes (a number,
    or an array of them) touches: caches hold lines, so the levels, the
    stop rule and the reach are in these, not in the span."""
    return working_set * line_bytes // span_per_line(spacing, line_bytes)


def reach_bytes(llc_bytes: int, spacing: int, line_bytes: int) -> int:
    """size auto of the chase: LLC_REACH x the LLC in touched lines (the
    span of touched_bytes' rule), at least FLOOR_BYTES: the most a
    repetition allocates, and only when the rule has not held before it."""
    return max(LLC_REACH * llc_bytes * span_per_line(spacing, line_bytes) // line_bytes, FLOOR_BYTES)
