"""The verdicts of `make compare`: every row of a comparison, BASE against NEW.

Per row (one cell, op, working set and metric), on the log values of its
repetitions (processes are the unit: one value per process, as stored):
the ratio NEW/BASE is exp of the difference of the mean logs (the ratio of
geometric means) and its interval is Welch's t interval of that difference
(each side its own spread) with Hsu's degrees of freedom, min(n) - 1: the
Welch-Satterthwaite df are unreliable in the far tail the whole
comparison's level reaches (at 2 vs 5 runs with spreads 3 % vs 1 % their
false alarms ran 22x nominal); min(n) - 1 keeps the rate at or under the
stated one for any ratio of spreads (tests/test_compare_rates.py measures
it over many seeds).

Against the threshold t (a fraction; 0.02 = 2 %): the row's p is that of
the nearer threshold edge (two-sided: twice the smaller one-sided p of
"below 1 - t" and "above 1 + t"), so a change inside the threshold is never
evidence. Rows come in two roles. The *gate* rows (the headline numbers of
findings.json, membench.compare.gate) are few: Holm's step-down procedure
over them calls rows changed, so that when no gate row changed by more than
the threshold the chance that any is called `worse` or `better` is at most
1 - confidence (5 %) for the whole comparison; their interval is shown at
the level Holm stopped at, 1 - (1 - confidence) / (gate rows - called). The
other rows are *exploratory*: Benjamini-Hochberg over them keeps the
expected share of false calls among those called at 1 - confidence, and
each interval is at the false-coverage level 1 - R (1 - confidence) / m (R
called of m; Benjamini-Yekutieli). A row without an interval (fewer than 2
runs a side) counts in neither m. A row is `worse`/`better` exactly when
its interval lies wholly beyond a threshold edge, `same` when it lies
wholly inside, `undecided` otherwise; make compare's exit code reads the
gate rows only. That rule, the interval and the default threshold (2 %)
are membench.findings.evidence's, which answers each finding by them too.

Why this and not the rank interval (bench/rank_interval.py, what
`make compare` used before): the Mann-Whitney interval cannot be narrower
than its sample sizes allow (at 5 runs a side no interval beyond 99.2 %
exists, at 3 runs none beyond 90 %), so at a whole comparison's level it
never decides at the repetitions people run. bench/verdict_options.py
measures both, and Student's, limma's moderated t and Benjamini-Hochberg,
on real and planted pairs (README, "Comparing two result sets").

Repetitions that would decide (undecided only): the smallest n per side at
which a change the size of the estimate is called with 95 % power, (t(level,
n - 1) + t(0.95, n - 1)) x s x sqrt(2 / n) below the distance from the
estimate to the nearest threshold edge, s the row's pooled spread; None when
the estimate sits on an edge or more than REALISTIC repetitions would be
needed.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special  # Student's t by its special functions: the same values, ~50x faster a call than scipy.stats.t

# One interval, one rule and one margin for make compare and the findings' answers (the findings stage comes first).
from membench.findings.evidence import MARGIN, interval, verdict, welch

REALISTIC = 60  # repetitions per side beyond which no count is suggested
MAX_LOG_HALF_WIDTH = math.log(10)  # an interval wider than 10x either way is not shown
POWER = 0.95  # the chance n_needed gives of calling a change the size of the estimate


def positive(values) -> np.ndarray:
    values = np.asarray(values, dtype=float)
    return values[np.isfinite(values) & (values > 0)]


def edge_p(d: float, se: float, df: float, threshold: float) -> float:
    """Two-sided p against the threshold's edges (small when d lies far
    beyond one of them)."""
    low, high = math.log(1 - threshold), math.log(1 + threshold)
    if not math.isfinite(se):
        return 1.0
    if se == 0:
        return 0.0 if d < low or d > high else 1.0
    return min(1.0, 2 * min(float(special.stdtr(df, (d - low) / se)), float(special.stdtr(df, -(d - high) / se))))


def holm_level(p_values: list[float], alpha: float) -> tuple[float, int]:
    """(per-row confidence at which Holm stopped, rows called changed)."""
    m = len(p_values)
    called = 0
    for j, p in enumerate(sorted(p_values)):
        if p > alpha / (m - j):
            break
        called += 1
    return 1 - alpha / max(m - called, 1), called


def repetitions_needed(d: float, spread: float, n: int, level: float, threshold: float) -> int | None:
    """Repetitions per side that would decide (module doc), or None."""
    edges = (math.log(1 - threshold), math.log(1 + threshold))
    distance = min(abs(d - e) for e in edges)
    if not (math.isfinite(spread) and spread > 0) or distance <= 0:
        return None
    k = np.arange(max(n + 1, 2), REALISTIC + 1)
    if not len(k):
        return None
    width = special.stdtrit(k - 1, 1 - (1 - level) / 2) + special.stdtrit(k - 1, POWER)
    deciding = k[width * spread * np.sqrt(2 / k) < distance]
    return int(deciding[0]) if len(deciding) else None


def row_statistics(base, new) -> dict:
    """What one row's verdict is made of, before the whole comparison's
    level is known: n, medians, the mean log difference, se, df, spread."""
    base, new = positive(base), positive(new)
    n, m = len(base), len(new)
    out = {"n_base": n, "n_new": m, "median_base": float(np.median(base)) if n else math.nan,
           "median_new": float(np.median(new)) if m else math.nan}  # fmt: skip
    if n == 0 or m == 0:
        return {**out, "_d": math.nan, "_se": math.nan, "_df": math.nan, "_spread": math.nan}
    d, se, df, spread = welch(np.log(base), np.log(new))
    return {**out, "_d": d, "_se": se, "_df": df, "_spread": spread}


def bh_level(p_values: list[float], alpha: float) -> tuple[float, int]:
    """(per-row confidence of the false-coverage intervals, rows called) of
    Benjamini-Hochberg at `alpha` over these p values."""
    m = len(p_values)
    called = 0
    for j, p in enumerate(sorted(p_values), start=1):
        if p <= alpha * j / m:
            called = j
    return 1 - alpha * max(called, 1) / max(m, 1), called


def decide_rows(rows: list[dict], *, threshold: float, confidence: float) -> float:
    """Every row's verdict (rows carry row_statistics' keys, _higher and
    _gate: True for a gate row, the default); sets each row's role and
    row_confidence; returns the gate rows' level (Holm's)."""
    alpha = 1 - confidence
    p_values = [edge_p(r["_d"], r["_se"], r["_df"], threshold) if math.isfinite(r["_d"]) else 1.0 for r in rows]
    testable = [math.isfinite(r["_se"]) for r in rows]
    gate = [r.pop("_gate", True) for r in rows]
    gate_level, _ = holm_level([p for p, t, g in zip(p_values, testable, gate) if t and g], alpha)
    detail_level, _ = bh_level([p for p, t, g in zip(p_values, testable, gate) if t and not g], alpha)
    for row, p, is_gate in zip(rows, p_values, gate):
        level = gate_level if is_gate else detail_level
        row.update(role="gate" if is_gate else "exploratory", row_confidence=level)
        d, se, df, spread = row.pop("_d"), row.pop("_se"), row.pop("_df"), row.pop("_spread")
        higher = row.pop("_higher")
        if not math.isfinite(d):
            row.update(ratio=math.nan, ratio_low=math.nan, ratio_high=math.nan, p_value=math.nan,
                       verdict="undecided", n_needed=None, spread=math.nan, detectable=math.nan)  # fmt: skip
            continue
        low, high = interval(d, se, df, level)
        decided = verdict(math.exp(max(low, -700)), math.exp(min(high, 700)), higher, threshold)
        # the smallest change this row could call: the threshold plus the interval's half-width,
        # none past a doubling; an interval wider than 10x either way says nothing and is not shown
        half = (high - low) / 2 if math.isfinite(high) else math.inf
        detectable = math.exp(math.log(1 + threshold) + half) - 1 if half < math.log(2) else math.nan
        if MAX_LOG_HALF_WIDTH < half < math.inf:
            low, high = math.nan, math.nan
        needed = None
        if decided == "undecided":
            needed = repetitions_needed(d, spread, max(row["n_base"], row["n_new"]), level, threshold)
        row.update(ratio=math.exp(d), ratio_low=math.exp(low), ratio_high=math.exp(high), p_value=p,
                   verdict=decided, n_needed=needed, spread=spread, detectable=detectable)  # fmt: skip
    return gate_level


def compare_values(base, new, *, higher_is_better: bool, threshold: float = MARGIN, confidence: float = 0.95) -> dict:
    """One row compared on its own (the whole comparison's level is this
    row's): the keys of compare.csv's statistics."""
    row = {**row_statistics(base, new), "_higher": higher_is_better}
    decide_rows([row], threshold=threshold, confidence=confidence)
    return row
