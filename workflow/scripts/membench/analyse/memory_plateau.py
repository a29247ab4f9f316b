"""The memory plateau of a chase sweep: the one rule by which the
hierarchy's memory row and the idle latency are found (issue 50), and the
per-run values the idle latency is the statistic of.

A sweep's curve (touched-line bytes -> ns, the median over undisturbed runs
at each point) is cut into plateaus. Its final plateau, the one that reaches
the largest working set, is memory when
- it lies past LLC_REACH x the sysfs last-level cache, or past the sysfs LLC;
- or every cache level sysfs names had its own plateau before it;
- or a run of this curve stopped "held" by the C stop rule
  (kernels/families/chase_sweep.c), which judged that run past the caches on
  its own points: a noisy point in the pooled curve can hide a cache
  plateau that each run saw (a guest whose sysfs LLC is its host's 300 MiB
  L3 stops, rightly, long before 8 x that).
Sysfs sizes never name a plateau memory or cache alone: the curve does,
and where the two disagree the derivation says so.

The points used are those of the final plateau at or past LLC_REACH x the
end of the last cache (the sysfs LLC when the sweep got that far, else the
last cache plateau the curve shows): there at most 1/LLC_REACH of the loads
can hit in that cache. Where fewer than three runs got that far (the stop
rule held the others nearer), 4 x, then 2 x, with the bound said; a plateau
with no such point uses all its points and says so.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from membench.core.text import percent, size_text
from membench.plan import latency_sweep

# The plateau cut: a point belongs to the plateau in hand while its latency
# lies within FLAT of the plateau's median (log terms), one stray point
# forgiven; caches differ by 2-10x, noise and the TLB slope by far less.
FLAT = latency_sweep.FLAT
# Memory points lie at or past this many times the last cache's size.
LLC_REACH = 8


@dataclass(frozen=True)
class Plateau:
    first_bytes: int
    last_bytes: int
    next_bytes: int | None  # the first working set past the plateau (None: the sweep ended)
    ns: float  # median of the plateau's points
    points: int


@dataclass(frozen=True)
class Memory:
    """The memory plateau and the points of it the latency is taken over."""

    plateau: Plateau
    first_bytes: int  # touched-line bytes of the first point used
    last_bytes: int
    points: int
    ns: float  # median of the points used (per-point medians over runs)
    why: str  # why the final plateau is memory
    reach: str  # which cache's end the points are past, or why all points are used
    short: bool  # no point LLC_REACH x past the last cache: every point of the plateau used


def plateaus(lines, ns, flat: float = FLAT) -> list[Plateau]:
    """Runs of at least two sweep points with flat latency, in order of
    working set (the cut of membench.plan.latency_sweep.segments, the one
    the C stop rule mirrors)."""
    order = np.argsort(np.asarray(lines, dtype=float))
    ws = np.asarray(lines, dtype=float)[order]
    y = np.asarray(ns, dtype=float)[order]
    found = []
    for segment in latency_sweep.segments(y, flat) if len(ws) else []:
        if len(segment) < 2:
            continue
        last = segment[-1]
        found.append(Plateau(first_bytes=int(ws[segment[0]]), last_bytes=int(ws[last]),
                             next_bytes=int(ws[last + 1]) if last + 1 < len(ws) else None,
                             ns=float(np.median(y[segment])), points=len(segment)))  # fmt: skip
    return found


def _why_memory(found: list[Plateau], levels: list[tuple[str, int]], held: bool) -> str | None:
    """Why the final plateau is memory, or None when nothing says it is."""
    if not found or found[-1].next_bytes is not None:
        return None
    final, llc = found[-1], (levels[-1][1] if levels else 0)
    if llc and final.last_bytes > llc:
        return f"past the sysfs LLC {size_text(llc)}"
    if levels and len(found) - 1 >= len(levels):
        return "after a plateau of every cache level sysfs names"
    if held:
        return "a run of it stopped held by the sweep's stop rule, which found it past the caches on that run's own curve"
    return None


def _held_text() -> str:
    return (f"the sweep held within {percent(latency_sweep.HELD, spaced=False)} over {latency_sweep.SPAN_OCTAVES} doublings "
            "past the caches, its stop rule (docs/latency_sweep.md)")  # fmt: skip


# Past how many times the last cache the latency's points lie, the farthest
# first: at 8 x at most 1/8 of the loads can hit in it. A nearer reach is
# taken only where fewer than ENOUGH_RUNS runs got that far (the stop rule
# ends a sweep once it held flat over two doublings), its bound said.
REACHES = (LLC_REACH, 4, 2)
ENOUGH_RUNS = 3  # the fewest runs an answer is given from (membench.findings.evidence.MIN_RUNS)


def _reach(on: pd.Series, runs_at: pd.Series | None, ends: list[tuple[int | None, str]], fastest: Plateau):
    """(the points used, what they are past) for the farthest reach (8 x
    the sysfs LLC or the last cache plateau, then 4 x, 2 x) that
    ENOUGH_RUNS runs got to, else the one most runs got to; None when no
    point is even 2 x past a cache end."""
    best = None
    for times in REACHES:
        for end, name in ends:
            far = on[on.index >= times * end] if end else on.iloc[0:0]
            if far.empty:
                continue
            reached = int(runs_at.get(far.index[0], 0)) if runs_at is not None else ENOUGH_RUNS  # sweeps go upward
            said = f"at or past {times} × " + name.format(size_text(end)) + _hits_bound(far, end, fastest)
            if times < LLC_REACH:
                said += f" ({reached} runs got this far; fewer than {ENOUGH_RUNS} reached {LLC_REACH} ×)"
            if reached >= ENOUGH_RUNS:
                return far, said
            if best is None or reached > best[2]:
                best = (far, said, reached)
    return None if best is None else best[:2]


def find_memory(lines, ns, levels: list[tuple[str, int]], held: bool = False, runs=None) -> Memory | None:
    """The memory plateau of one curve (touched-line bytes, ns per point;
    runs: the undisturbed runs at each point) and the points its latency is
    taken over; None when the curve shows no memory plateau (see the
    module's rule)."""
    curve = pd.Series(np.asarray(ns, dtype=float), index=np.asarray(lines, dtype=float)).dropna().sort_index()
    runs_at = None if runs is None else pd.Series(np.asarray(runs, dtype=float), index=np.asarray(lines, dtype=float)).groupby(level=0).sum()
    found = plateaus(curve.index.values, curve.values)
    why = _why_memory(found, levels, held)
    if why is None:
        return None
    final = found[-1]
    llc = levels[-1][1] if levels else None
    before = found[-2] if len(found) > 1 else None
    on = curve[(curve.index >= final.first_bytes) & (curve.index <= final.last_bytes)]
    ends = [(llc, f"the LLC (sysfs {size_text(llc)})" if llc else ""),
            (before.last_bytes if before else None, "the last cache plateau, which ends at {}")]  # fmt: skip
    chosen = _reach(on, runs_at, ends, found[0])
    short = chosen is None
    if short:
        reach = "every point of the plateau: none lies 2 × past the last cache, some loads may still hit it"
    else:
        on, reach = chosen
    if held:
        why += "; " + _held_text()
    return Memory(plateau=final, first_bytes=int(on.index.min()), last_bytes=int(on.index.max()), points=len(on),
                  ns=float(on.median()), why=why, reach=reach, short=short)  # fmt: skip


def _hits_bound(far: pd.Series, end: int, fastest: Plateau) -> str:
    """How far low cache hits can make the latency: a cache holds at most its
    capacity of a random chase's lines, whatever its associativity or
    replacement, so at N x its size at most s = 1/N of the loads hit, each
    no faster than the fastest plateau C: read = (1 - s) M + s C, so the
    memory latency M is at most (read - C) s / (1 - s) above the reading."""
    times = far.index.min() / end
    text = f": at most 1/{times:.0f} of the loads can hit in it, whatever its associativity"
    if fastest.ns < far.median() and times > 1:
        text += f", so at most {(far.median() - fastest.ns) / (times - 1):.1f} ns low"
    return text


def memory_text(memory: Memory, note: str = "") -> str:
    """How the memory latency was found, in one sentence."""
    used = size_text(memory.first_bytes) + (f"–{size_text(memory.last_bytes)}" if memory.last_bytes != memory.first_bytes else "")
    plateau = memory.plateau
    return (f"final plateau {size_text(plateau.first_bytes)}–{size_text(plateau.last_bytes)}{note} ({plateau.points} points), "
            f"memory because {memory.why}; latency over {memory.points} point{'s' * (memory.points != 1)} {used} of lines, "
            f"{memory.reach}")  # fmt: skip


def run_values(chase: pd.DataFrame, lines: pd.Series, first_bytes: int, last_bytes: int) -> pd.Series:
    """Each undisturbed run's own median over the memory points (its
    records of op random at those touched-line bytes): one value per run,
    so n counts runs, not points. `lines` is the touched-line bytes of each
    record of `chase`; a run is one (cell, repeat), and its value is indexed
    by its first record's index (which names its cell)."""
    on = chase[(lines >= first_bytes) & (lines <= last_bytes)].dropna(subset=["ns_per_load"])
    if on.empty:
        return pd.Series(dtype=float)
    run = on["repeat"] if "repeat" in on else pd.Series(range(len(on)), index=on.index)
    groups = on["ns_per_load"].astype(float).groupby([on["cell"], run], sort=False)
    return pd.Series(groups.median().values, index=groups.apply(lambda g: g.index[0]).values, dtype=float)


def held_runs(chase_cells: pd.DataFrame) -> int:
    """How many runs of a curve stopped "held" (cells' sweep_held counts);
    0 where the records predate it."""
    return int(chase_cells["sweep_held"].fillna(0).sum()) if "sweep_held" in chase_cells else 0
