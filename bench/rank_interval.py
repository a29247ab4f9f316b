"""The rank interval that `make compare` used until issue 31, kept for
bench/verdict_options.py, which measures it beside the Welch intervals
that `make compare` now uses (membench.compare.verdicts): one cell and
metric, BASE against NEW.

Ratio NEW/BASE and its interval: the Hodges-Lehmann estimate of the shift
between log(NEW) and log(BASE) (the median of every pairwise difference
log(new_j) - log(base_i)), with the distribution-free confidence interval
that inverts the Mann-Whitney test (order statistics k and nm + 1 - k of
those differences, k from the exact null distribution of U for small
samples, its normal approximation with the tie correction above
EXACT_MAX_PAIRS pairs). Back on the ratio scale: exp of each.

Why not a bootstrap of the ratio of medians: with 5 repetitions a
bootstrap median takes only 5 values and the percentile interval covers
well under 95 %, so a 1 % change at n = 5 could be called a change; the
Mann-Whitney interval keeps its coverage at every n (at n = 3 per side no
95 % interval exists, and none is claimed), it is deterministic (the same
files give the same verdict), it agrees with the rank test printed beside
it, and it costs one sort, not thousands of resamples.

The confidence is the caller's: `make compare` used to ask each row for
1 - (1 - 95 %) / rows (Bonferroni), and at that level the interval cannot
exist at 5 runs a side once a comparison has more than a few rows: why it
was replaced (membench.compare.verdicts says more).

Verdict against a threshold t (a fraction, 0.02 = 2 %), on the interval
[low, high] of the ratio: wholly outside [1 - t, 1 + t] in the bad
direction: worse; in the good direction: better; wholly inside: same;
anything else: undecided. GB/s: higher is better; ns: lower is better.

Repetitions needed (undecided only): the interval's half-width h shrinks as
1/sqrt(n). A verdict needs a half-width below d, the distance from the
estimate to the nearest threshold edge (on the log scale), so each side
needs n x (h / d)^2 repetitions, assuming the spread stays as measured. Where
no interval exists yet (too few repetitions), h is the large-sample one:
z x sigma x sqrt(pi/3 x (1/n + 1/m)), sigma the pooled robust spread
(1.4826 x MAD) of the log values.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy.stats import mannwhitneyu, norm

# the verdict against the threshold is make compare's own (the caller puts
# workflow/scripts on sys.path, as bench/verdict_options.py does)
from membench.compare.verdicts import verdict

EXACT_MAX_PAIRS = 2500  # n x m up to which U's null distribution is exact
OUTER_MAX_PAIRS = 1_000_000  # above: order statistics by bisection, not by listing every pair
NEEDED_CAP = 1_000_000


@lru_cache(maxsize=256)
def u_null_cdf(n: int, m: int) -> np.ndarray:
    """P(U <= u) for u = 0..nm under no difference (no ties): the count of
    arrangements with U = u obeys N(u; i, j) = N(u - j; i - 1, j) + N(u; i, j - 1)
    (the largest value comes from the first sample, beating all j of the
    second, or from the second); computed as probabilities."""
    row = [np.ones(1) for _ in range(m + 1)]  # i = 0: U is 0
    for i in range(1, n + 1):
        new = [np.ones(1)]  # j = 0
        for j in range(1, m + 1):
            p = np.zeros(i * j + 1)
            p[j:j + len(row[j])] += i / (i + j) * row[j]
            p[: len(new[j - 1])] += j / (i + j) * new[j - 1]
            new.append(p)
        row = new
    return np.cumsum(row[m])


def lower_rank(n: int, m: int, confidence: float, tie_sum: float = 0.0) -> int:
    """k (1-based) such that the k-th smallest and k-th largest of the nm
    pairwise differences bound an interval of at least `confidence`; 0 when
    no such interval exists at these sample sizes. tie_sum: sum of t^3 - t
    over tied groups of the pooled sample (normal approximation only)."""
    alpha = 1 - confidence
    if n * m <= EXACT_MAX_PAIRS:
        cdf = u_null_cdf(n, m)
        c = int(np.searchsorted(cdf, alpha / 2 * (1 + 1e-12), side="right")) - 1  # largest c, P(U <= c) <= alpha/2
        return c + 1
    total = n + m
    var = n * m / 12 * ((total + 1) - tie_sum / (total * (total - 1)))
    c = math.floor(n * m / 2 - 0.5 - norm.ppf(1 - alpha / 2) * math.sqrt(max(var, 0.0)))
    return max(c + 1, 0)


def _order_statistics(base: np.ndarray, new: np.ndarray, ks: list[int]) -> list[float]:
    """The ks-th smallest (1-based) pairwise differences new_j - base_i."""
    base, new = np.sort(base), np.sort(new)
    pairs = len(base) * len(new)
    if pairs <= OUTER_MAX_PAIRS:
        diffs = np.subtract.outer(new, base).ravel()
        part = np.partition(diffs, [k - 1 for k in ks])
        return [float(part[k - 1]) for k in ks]
    # count of differences <= v is sum_j #{base_i >= new_j - v}
    out = []
    for k in ks:
        low, high = new[0] - base[-1], new[-1] - base[0]
        for _ in range(200):
            mid = (low + high) / 2
            if mid in (low, high):
                break
            below = pairs - np.searchsorted(base, new - mid, side="left").sum()
            if below >= k:
                high = mid
            else:
                low = mid
        out.append(float(high))
    return out


def hodges_lehmann(base_log: np.ndarray, new_log: np.ndarray, confidence: float) -> tuple[float, float, float]:
    """(estimate, low, high) of the shift new - base; low/high are -inf/inf
    when the samples are too small for an interval at this confidence."""
    n, m = len(base_log), len(new_log)
    pooled = np.concatenate([base_log, new_log])
    _, counts = np.unique(pooled, return_counts=True)
    tie_sum = float((counts.astype(float) ** 3 - counts).sum())
    k = lower_rank(n, m, confidence, tie_sum)
    pairs = n * m
    middle = [(pairs + 1) // 2, pairs // 2 + 1]
    ks = middle + ([k, pairs + 1 - k] if k >= 1 else [])
    stats = _order_statistics(base_log, new_log, ks)
    estimate = (stats[0] + stats[1]) / 2
    if k < 1:
        return estimate, -math.inf, math.inf
    return estimate, stats[2], stats[3]


def repetitions_needed(estimate: float, low: float, high: float, n: int, m: int, spread: float,
                       confidence: float, threshold: float) -> int | None:
    """Repetitions per side that would make the interval decide (the rule
    in the module doc); None when the estimate sits on a threshold edge
    (no number of repetitions is enough to tell) or above NEEDED_CAP."""
    edges = (math.log(1 - threshold), math.log(1 + threshold))
    distance = min(abs(estimate - e) for e in edges)
    if math.isfinite(low) and math.isfinite(high):
        half = (high - low) / 2
    else:
        half = norm.ppf(1 - (1 - confidence) / 2) * spread * math.sqrt(math.pi / 3 * (1 / n + 1 / m))
    if distance <= 0 or half <= 0:
        return None
    # at least one more than now, and enough for an interval to exist at all
    floor = max(n, m) + 1
    while lower_rank(floor, floor, confidence) < 1:
        floor += 1
    needed = max(math.ceil(max(n, m) * (half / distance) ** 2), floor)
    return needed if needed <= NEEDED_CAP else None


def compare_values(base, new, *, higher_is_better: bool, threshold: float = 0.02,
                   confidence: float = 0.95) -> dict:
    """Every statistic of one row of the comparison (keys as in
    compare.csv). Values must be positive (GB/s, ns)."""
    base = np.asarray(base, dtype=float)
    new = np.asarray(new, dtype=float)
    base, new = base[np.isfinite(base) & (base > 0)], new[np.isfinite(new) & (new > 0)]
    n, m = len(base), len(new)
    row = {"n_base": n, "n_new": m, "median_base": float(np.median(base)) if n else math.nan,
           "median_new": float(np.median(new)) if m else math.nan}  # fmt: skip
    if n == 0 or m == 0:
        return {**row, "ratio": math.nan, "ratio_low": math.nan, "ratio_high": math.nan, "p_value": math.nan,
                "verdict": "undecided", "n_needed": None}  # fmt: skip
    base_log, new_log = np.log(base), np.log(new)
    estimate, low, high = hodges_lehmann(base_log, new_log, confidence)
    p_value = float(mannwhitneyu(new, base, alternative="two-sided").pvalue) if n > 0 and m > 0 else math.nan
    decided = verdict(math.exp(low), math.exp(high), higher_is_better, threshold)
    needed = None
    if decided == "undecided":
        deviations = np.concatenate([base_log - np.median(base_log), new_log - np.median(new_log)])
        spread = 1.4826 * float(np.median(np.abs(deviations)))
        needed = repetitions_needed(estimate, low, high, n, m, spread, confidence, threshold)
    return {
        **row,
        "ratio": math.exp(estimate),
        "ratio_low": math.exp(low),
        "ratio_high": math.exp(high),
        "p_value": p_value,
        "verdict": decided,
        "n_needed": needed,
    }
