"""The evidence behind a finding: a measured quantity with its interval, or
an effect between two groups of repetitions, answered better, worse or the
same within a margin, or not yet (docs/findings-evidence.md).

Pure functions over the values of undisturbed repetitions (separate
processes). The rules, in one place:

- No interval from fewer than MIN_RUNS runs (a side): below that the
  answer says how many more runs it needs. Two runs give a range that
  covers the median half the time and a t interval with one degree of
  freedom (t = 12.7): neither is worth printing.
- A quantity is the median of its runs. Its interval is the range of the
  runs, which covers the median of the runs' population with probability
  1 - 2 x 0.5^n (distribution-free: 75 % at 3 runs, 94 % at 5), and from
  6 runs the k-th smallest to k-th largest run for the largest k that
  keeps 75 % (median_interval): more runs narrow it, so a run that adds
  repetitions (a budget's planned rounds) can decide a quantity one stray
  run left open. The chance it misses is the quantity's false-alarm rate.
  It is decided when the interval lies within +/-DECIDE_SPREAD of the median.
- An effect B/A is the ratio of geometric means with a 95 % interval from
  Welch's t on the logarithms and Hsu's degrees of freedom, min(n) - 1
  (conservative at small, unequal n, where Welch-Satterthwaite's are not).
  Where both arms were measured in the same rounds (values indexed by
  ROUND, and at least PAIRED_SHARE of the smaller arm's runs have a
  partner), the interval is the paired t on each round's log ratio
  instead, with df = pairs - 1: a round measures both arms within seconds
  in shuffled order, so what moves a whole round (a host that moves the
  vCPUs, a neighbour's burst) moves both arms and cancels in the ratio.
  Without such drift the paired interval is as wide as Welch's at equal
  n; with it, narrower. Which one is used depends on the design (which
  rounds hold both arms), never on the values.
  The interval wholly inside +/-MARGIN is `same`; otherwise one that
  excludes 1 is `better` or `worse`; anything else is undecided. `verdict`
  below is make compare's rule too (membench.compare.verdicts imports it
  and MARGIN: one rule, one margin, the Makefile's THRESHOLD ?= 2).
- False alarms, at any n (Hsu's df keep them at or under the nominal
  rate; tests/test_same_is_an_answer.py measures them): a pair with no
  change is called better or worse at most CHANGE_FALSE_ALARM (5 %, the
  interval's two tails); a pair that changed by the margin or more is
  called the same at most SAME_FALSE_ALARM (2.5 %: the interval inside the
  margin is two one-sided t tests, each at 2.5 %).
"""

from __future__ import annotations

import contextvars
import math
from contextlib import contextmanager

import numpy as np
import pandas as pd
from scipy import special  # Student's t by its special functions: scipy.stats' values, without its ~1 s import

from membench.core.text import percent, percent_span

MIN_RUNS = 3
# The index name of values that carry their round (the record's `repeat`):
# two arms measured in the same rounds are compared round by round.
ROUND = "round"
PAIRED_SHARE = 2 / 3
DECIDE_SPREAD = 0.10
MARGIN = 0.02  # "the same": make compare's default threshold (Makefile THRESHOLD ?= 2, in percent)
CHANGE_FALSE_ALARM = 0.05  # the interval's two tails
SAME_FALSE_ALARM = 0.025  # one tail: each of the two one-sided tests
CONFIDENCE = 1 - CHANGE_FALSE_ALARM
# An undecided interval still bounds the effect; past a doubling either way the bound says nothing.
LARGEST_BOUND = math.log(2)
# What a number without runs says: cells that never ran are not compared at
# all, so an empty side means every run of it was skipped, failed or disturbed.
NO_RUN = "no undisturbed run"
ANSWERS = ("better", "worse", "same", "undecided")
# How many times a run may look at one comparison: a run within a budget
# draws the findings after its rounds and stops measuring a comparison at
# its first decided answer, so the false-alarm rate is spent over the looks
# (Bonferroni: the rates of the looks add up to at most the rate stated).
# Spent as Haybittle and Peto spend it: each look a round's planner takes
# is INTERIM_RATE strict (a comparison stops early only on a clear answer),
# and the last look, the findings the report prints, gets what is left
# (5 % - 9 x 0.1 % = 4.1 % over the default config's 10 looks). A comparison
# an early look decided stays decided at the last look, on the same runs
# (its interval only narrows, from 99.9 % to 95.9 %). One look without a
# budget. Set by looks().
_LOOKS = contextvars.ContextVar("membench_evidence_looks", default=(1, False))
INTERIM_RATE = 0.001


@contextmanager
def looks(count: int, interim: bool = False):
    """Evidence drawn inside this block is one of `count` looks of a run
    within a budget: a round's planner's (interim) or the last."""
    token = _LOOKS.set((max(1, int(count)), bool(interim)))
    try:
        yield
    finally:
        _LOOKS.reset(token)


def look_rate() -> tuple[float, str]:
    """This look's two-sided rate and how it was spent, in words (module
    comment above _LOOKS)."""
    count, interim = _LOOKS.get()
    if count == 1:
        return CHANGE_FALSE_ALARM, ""
    each = min(INTERIM_RATE, CHANGE_FALSE_ALARM / 2 / (count - 1))  # the earlier looks spend at most half
    last = CHANGE_FALSE_ALARM - (count - 1) * each
    spent = (f"{percent(each, 1, spaced=False)} at each of the {count - 1} earlier looks of a run within a budget, "
             f"{percent(last, 1, spaced=False)} at the last: {percent(CHANGE_FALSE_ALARM, spaced=False)} in all")  # fmt: skip
    return (each, f" (an early look: {spent})") if interim else (last, f" ({spent})")


def _values(values) -> np.ndarray:
    array = np.asarray([float(v) for v in values if v is not None and not math.isnan(float(v))], dtype=float)
    return array


def range_coverage(n: int) -> float:
    """The chance that the range of n runs covers the population median."""
    return 1.0 - 2.0 * 0.5**n if n >= 2 else 0.0


def runs_needed_text(more: int, per_arm: bool) -> str:
    """What an answer below MIN_RUNS still needs: "needs 1 more run an arm"."""
    return f"needs {more} more run{'s' if more != 1 else ''}" + (" an arm" if per_arm else "")


def welch(base_log: np.ndarray, new_log: np.ndarray) -> tuple[float, float, float, float]:
    """(difference of means, its standard error, Hsu's degrees of freedom,
    pooled spread) of two samples of log values; se and df are nan with
    fewer than 2 values on a side."""
    n, m = len(base_log), len(new_log)
    d = float(new_log.mean() - base_log.mean())
    if n < 2 or m < 2:
        spread = float(np.std(np.concatenate([base_log, new_log]), ddof=1)) if n + m > 2 and min(n, m) >= 2 else math.nan
        return d, math.nan, math.nan, spread
    vb, vn = float(np.var(base_log, ddof=1)), float(np.var(new_log, ddof=1))
    se2 = vb / n + vn / m
    if se2 <= 0:
        return d, 0.0, math.inf, 0.0
    df = min(n, m) - 1  # Hsu (module doc)
    return d, math.sqrt(se2), df, math.sqrt((vb + vn) / 2)


def interval(d: float, se: float, df: float, level: float) -> tuple[float, float]:
    """The difference's interval at `level` (log scale); -inf/inf without one."""
    if not math.isfinite(se):
        return -math.inf, math.inf
    if se == 0:
        return d, d
    half = float(special.stdtrit(df, 1 - (1 - level) / 2)) * se
    return d - half, d + half


def verdict(low: float, high: float, higher_is_better: bool, threshold: float) -> str:
    """worse | better | same | undecided from the ratio's interval: wholly
    beyond a threshold edge, wholly inside the threshold, or neither
    (make compare's rule, and the findings' before their own step)."""
    down, up = 1 - threshold, 1 + threshold
    if high < down:
        return "worse" if higher_is_better else "better"
    if low > up:
        return "better" if higher_is_better else "worse"
    if low >= down and high <= up:
        return "same"
    return "undecided"


def answer_of(low: float, high: float, higher_is_better: bool, margin: float = MARGIN) -> str:
    """A finding's answer from its interval: compare's verdict, and where
    that is undecided, an interval that excludes 1 still says the
    direction (a change smaller than the margin's far edge, yet a change)."""
    called = verdict(low, high, higher_is_better, margin)
    if called == "undecided" and (low > 1 or high < 1):
        return "better" if (low > 1) == higher_is_better else "worse"
    return called


def effect_bound(low: float, high: float) -> float | None:
    """The largest change an interval allows, as a share (0.09: "no effect
    larger than 9 %"); None past a doubling either way, where it says nothing."""
    if low <= 0 or max(-math.log(low), math.log(high)) >= LARGEST_BOUND:
        return None
    return max(1 - low, high - 1)


def paired_logs(base, new) -> tuple[np.ndarray, np.ndarray] | None:
    """Each shared round's log values of both arms, where both arms are
    indexed by ROUND and enough of the smaller arm's runs have a partner
    (module doc); None otherwise (the arms are then compared unpaired)."""
    if not all(isinstance(x, pd.Series) and x.index.name == ROUND for x in (base, new)):
        return None
    a, b = (x.astype(float)[x.astype(float) > 0].groupby(level=0).median() for x in (base, new))
    shared = a.index.intersection(b.index)
    if len(shared) < MIN_RUNS or len(shared) < PAIRED_SHARE * min(len(a), len(b)):
        return None
    return np.log(a[shared].to_numpy()), np.log(b[shared].to_numpy())


def paired(base_log: np.ndarray, new_log: np.ndarray) -> tuple[float, float, float]:
    """(mean log ratio, its standard error, df) of paired log values."""
    diff = new_log - base_log
    return float(diff.mean()), float(np.std(diff, ddof=1) / math.sqrt(diff.size)), diff.size - 1


def _no_effect(n: list[int], ratio: float | None, status: str) -> dict:
    return {"value": ratio, "unit": "x", "n": n, "interval": None, "interval_kind": None, "decided": False,
            "status": status, "answer": "undecided", "margin": MARGIN, "false_alarm": None, "effect_bound": None}  # fmt: skip


def effect(base, new, higher_is_better: bool = True) -> dict:
    """new / base as a ratio of geometric means, with its 95 % interval and
    its answer (module doc); higher_is_better names better and worse."""
    a, b = _values(base), _values(new)
    a, b = a[a > 0], b[b > 0]
    n = [int(a.size), int(b.size)]
    if min(n) == 0:
        return _no_effect(n, None, NO_RUN)
    d, se, df, _ = welch(np.log(a), np.log(b))
    if min(n) < MIN_RUNS:
        return _no_effect(n, math.exp(d), runs_needed_text(MIN_RUNS - min(n), per_arm=True))
    pairs = paired_logs(base, new)
    if pairs is not None:
        d, se, df = paired(*pairs)
        how = f"paired t on the log ratios of the {df + 1} rounds that measured both arms, df = {df}"
    else:
        how = f"Welch's t on logs with Hsu's df = {min(n) - 1}"
    rate_here, over = look_rate()
    level = 1 - rate_here  # this look's share of the rate (1 look: 95 %)
    low, high = (math.exp(x) for x in interval(d, se, df, level))
    answer = answer_of(low, high, higher_is_better)
    decided = answer != "undecided"
    rate = SAME_FALSE_ALARM if answer == "same" else CHANGE_FALSE_ALARM if decided else None
    return {
        "value": math.exp(d),
        "unit": "x",
        "n": n,
        "interval": [low, high],
        "interval_kind": f"{percent(level, 0 if not over else 1, spaced=False)} interval{over}, {how}",
        "decided": decided,
        "status": "decided" if decided else f"undecided at n={min(n)}",
        "answer": answer,
        "margin": MARGIN,
        # same: a change of the margin or more called so (each one-sided test); better/worse: no change called a change
        "false_alarm": rate,
        "effect_bound": None if decided else effect_bound(low, high),
    }


def quantity(values, unit: str) -> dict:
    """A measured number: median, n, range, and whether it is decided."""
    runs = _values(values)
    n = int(runs.size)
    if n == 0:
        return {"value": None, "unit": unit, "n": 0, "interval": None, "interval_kind": None,
                "decided": False, "status": NO_RUN, "false_alarm": None}  # fmt: skip
    median = float(np.median(runs))
    if n < MIN_RUNS:
        return {"value": median, "unit": unit, "n": n, "interval": None, "interval_kind": None,
                "decided": False, "status": runs_needed_text(MIN_RUNS - n, per_arm=False), "false_alarm": None}  # fmt: skip
    low, high, inner, coverage = median_interval(runs)
    spread = (high - low) / 2 / abs(median) if median else math.inf
    decided = spread <= DECIDE_SPREAD
    kind = (f"range of {n} runs" if inner == 1 else f"runs {inner} to {n - inner + 1} of {n} in order")
    return {
        "value": median,
        "unit": unit,
        "n": n,
        "interval": [low, high],
        "interval_kind": f"{kind} ({percent(coverage, spaced=False)} coverage of the median)",
        "decided": decided,
        "status": "decided" if decided else f"undecided at n={n}",
        "false_alarm": 1.0 - coverage if decided else None,  # the interval misses the median
    }


# The median's interval keeps at least the coverage three runs' range has
# (75 %) as runs are added, and narrows: from 6 runs on the extremes drop
# out, so more runs can decide a quantity that one stray run left open.
MEDIAN_COVERAGE = 1.0 - 2.0 * 0.5**MIN_RUNS


def median_interval(runs: np.ndarray) -> tuple[float, float, int, float]:
    """(low, high, k, coverage): the k-th smallest and k-th largest run for
    the largest k whose interval still covers the population median with
    probability >= MEDIAN_COVERAGE (distribution-free: 1 - 2 P(X < k), X
    binomial(n, 1/2))."""
    ordered = np.sort(runs)
    n = ordered.size
    inner, coverage = 1, range_coverage(n)
    for k in range(2, n // 2 + 1):
        covers = 1.0 - 2.0 * float(special.bdtr(k - 1, n, 0.5))
        if covers < MEDIAN_COVERAGE:
            break
        inner, coverage = k, covers
    return float(ordered[inner - 1]), float(ordered[n - inner]), inner, coverage


def _span_digits(low: float, high: float) -> int:
    """One decimal where the interval is within +/-10 %, whole percent past it."""
    return 1 if max(abs(low - 1), abs(high - 1)) < 0.1 else 0


def change_text(result: dict) -> str:
    """An effect in words: "+19 % (+8 to +31 %), decided"; "same within
    ±2 % (interval -1.1 to +0.9 %), decided"; "-1 % (-9 to +8 %), no
    effect larger than 9 %, undecided at n=8"; "-13 %, needs 2 more runs an arm"."""
    if result["value"] is None:
        return NO_RUN
    if not result["interval"]:
        return f"{percent(result['value'] - 1, signed=True)}, {result['status']}"
    low, high = result["interval"]
    digits = _span_digits(low, high)
    span = percent_span(low - 1, high - 1, digits, signed=True)
    if result.get("answer") == "same":
        return f"same within ±{percent(result['margin'], spaced=True)} (interval {span}), {result['status']}"
    text = f"{percent(result['value'] - 1, digits, signed=True)} ({span})"
    if result.get("effect_bound") is not None:
        # rounded up to a whole percent: the bound must not read smaller than it is
        text += f", no effect larger than {percent(math.ceil(100 * result['effect_bound'] - 1e-9) / 100)}"
    return f"{text}, {result['status']}"


def quantity_text(result: dict, digits: int = 1) -> str:
    """A quantity in words: "98.4 ns (95.6–101.2, n=3), decided"; "89.0 ns (n=2), needs 1 more run"."""
    if result["value"] is None:
        return NO_RUN
    text = f"{result['value']:.{digits}f} {result['unit']}"
    if result["interval"]:
        low, high = result["interval"]
        text += f" ({low:.{digits}f}–{high:.{digits}f}, n={result['n']})"
    else:
        text += f" (n={result['n']})"
    return f"{text}, {result['status']}"


def changed(result: dict) -> bool:
    """Is this effect a decided change (better or worse), not "the same"?"""
    return result.get("answer") in ("better", "worse")
