"""The evidence behind a finding: a measured quantity with its interval, or
an effect between two groups of repetitions with its interval and whether
it is decided at the repetitions there are.

Pure functions over the values of undisturbed repetitions (separate
processes). The rules, in one place (README, "Findings"):

- A quantity is the median of its runs. Its interval is the range of the
  runs, which covers the median of the runs' population with probability
  1 - 2 x 0.5^n (distribution-free: 50 % at 2 runs, 75 % at 3, 94 % at
  5). It is decided when at least DECIDE_RUNS runs lie within
  +/-DECIDE_SPREAD of their median.
- An effect B/A is the ratio of geometric means, with a 95 % interval from
  Welch's t on the logarithms and Hsu's degrees of freedom, min(n) - 1
  (conservative at small, unequal n, where Welch-Satterthwaite's are not).
  It is decided when both sides have at least 2 runs and the interval
  excludes 1 (no change).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special  # Student's t quantile (stdtrit): scipy.stats' values, without its ~1 s import

from membench.core.text import percent, percent_span

DECIDE_RUNS = 3
DECIDE_SPREAD = 0.10
CONFIDENCE = 0.95
# What a number without runs says: cells that never ran are not compared at
# all, so an empty side means every run of it was skipped, failed or disturbed.
NO_RUN = "no undisturbed run"


def _values(values) -> np.ndarray:
    array = np.asarray([float(v) for v in values if v is not None and not math.isnan(float(v))], dtype=float)
    return array


def range_coverage(n: int) -> float:
    """The chance that the range of n runs covers the population median."""
    return 1.0 - 2.0 * 0.5**n if n >= 2 else 0.0


def quantity(values, unit: str) -> dict:
    """A measured number: median, n, range, and whether it is decided."""
    runs = _values(values)
    n = int(runs.size)
    if n == 0:
        return {"value": None, "unit": unit, "n": 0, "interval": None, "interval_kind": None,
                "decided": False, "status": NO_RUN}  # fmt: skip
    median = float(np.median(runs))
    low, high = float(runs.min()), float(runs.max())
    spread = (high - low) / 2 / abs(median) if median else math.inf
    decided = n >= DECIDE_RUNS and spread <= DECIDE_SPREAD
    return {
        "value": median,
        "unit": unit,
        "n": n,
        "interval": [low, high] if n >= 2 else None,
        "interval_kind": f"range of {n} runs ({percent(range_coverage(n), spaced=False)} coverage of the median)" if n >= 2 else None,
        "decided": decided,
        "status": "decided" if decided else f"undecided at n={n}",
    }


def effect(base, new) -> dict:
    """new / base as a ratio of geometric means, with its 95 % interval."""
    a, b = _values(base), _values(new)
    a, b = a[a > 0], b[b > 0]
    n = [int(a.size), int(b.size)]
    if min(n) == 0:
        return {"value": None, "unit": "x", "n": n, "interval": None, "interval_kind": None,
                "decided": False, "status": NO_RUN}  # fmt: skip
    la, lb = np.log(a), np.log(b)
    ratio = float(math.exp(lb.mean() - la.mean()))
    if min(n) < 2:
        return {"value": ratio, "unit": "x", "n": n, "interval": None, "interval_kind": None,
                "decided": False, "status": f"undecided at n={min(n)}"}  # fmt: skip
    se = math.sqrt(la.var(ddof=1) / n[0] + lb.var(ddof=1) / n[1])
    t = float(special.stdtrit(min(n) - 1, 0.5 + CONFIDENCE / 2))
    low, high = math.exp(math.log(ratio) - t * se), math.exp(math.log(ratio) + t * se)
    decided = low > 1 or high < 1
    return {
        "value": ratio,
        "unit": "x",
        "n": n,
        "interval": [low, high],
        "interval_kind": f"{percent(CONFIDENCE, spaced=False)} interval, Welch's t on logs with Hsu's df = {min(n) - 1}",
        "decided": decided,
        "status": "decided" if decided else f"undecided at n={min(n)}",
    }


def change_text(result: dict) -> str:
    """An effect in words: "+19 % (95 % interval +8 – +31 %), decided"."""
    if result["value"] is None:
        return NO_RUN
    text = percent(result["value"] - 1, signed=True)
    if result["interval"]:
        low, high = result["interval"]
        text += f" ({percent_span(low - 1, high - 1, signed=True)})"
    return f"{text}, {result['status']}"


def quantity_text(result: dict, digits: int = 1) -> str:
    """A quantity in words: "98.4 ns (95.6–101.2, n=3), decided"."""
    if result["value"] is None:
        return NO_RUN
    text = f"{result['value']:.{digits}f} {result['unit']}"
    if result["interval"]:
        low, high = result["interval"]
        text += f" ({low:.{digits}f}–{high:.{digits}f}, n={result['n']})"
    else:
        text += f" (n={result['n']})"
    return f"{text}, {result['status']}"
