"""Modes of a cell's distribution and what explains them.

Modes: peaks of a Gaussian kernel density estimate (scipy.stats.gaussian_kde,
Scott's bandwidth) found with scipy.signal.find_peaks; a peak counts as a
mode when it is prominent (MIN_PROMINENCE of the highest density) and holds
enough runs (MIN_SUPPORT); runs are assigned to modes by the density's
valleys between them. Below MIN_RUNS repetitions no modes are claimed.

Attribution: for every placement factor that varies within the cell
(membench.store.placement_classes), the between-class share of the variance (eta squared:
sum of squares between class means / total sum of squares) and a
Kruskal-Wallis test (scipy.stats.kruskal) of the classes. A factor explains
the spread when its test passes at ALPHA corrected for the number of factors
tried (Bonferroni) and it holds at least MIN_SHARE of the variance; when none
does, the verdict says plainly that nothing recorded explains the modes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from membench.store.placement_classes import FACTORS, class_counts, factor_levels
from membench.core.text import DASH, percent

MIN_RUNS = 8
MIN_PROMINENCE = 0.05
MIN_SUPPORT_RUNS = 2
MIN_SUPPORT_SHARE = 0.05
ALPHA = 0.05
MIN_SHARE = 0.25
GRID_POINTS = 512


@dataclass(frozen=True)
class Mode:
    centre: float  # GB/s (or ns) at the density peak
    runs: int
    low: float  # smallest and largest run assigned to the mode
    high: float


def _assign(values: np.ndarray, grid: np.ndarray, density: np.ndarray, peaks: list[int]) -> np.ndarray:
    """Index of the mode of each value: split at the lowest density between
    neighbouring peaks."""
    cuts = [grid[a + int(np.argmin(density[a:b + 1]))] for a, b in zip(peaks, peaks[1:])]
    return np.searchsorted(np.asarray(cuts), values, side="right")


def find_modes(values) -> list[Mode] | None:
    """The modes of one cell's repetitions, lowest first; None when there
    are fewer than MIN_RUNS values (too few to tell modes from noise)."""
    values = np.asarray(pd.Series(values, dtype=float).dropna(), dtype=float)
    if len(values) < MIN_RUNS:
        return None
    if np.ptp(values) <= 1e-9 * max(1.0, abs(values.mean())):
        return [Mode(float(values[0]), len(values), float(values.min()), float(values.max()))]
    # imported here: ~1 s that a study without a cell of MIN_RUNS never pays
    from scipy.signal import find_peaks
    from scipy.stats import gaussian_kde

    kde = gaussian_kde(values)
    width = float(np.sqrt(kde.covariance[0, 0]))
    grid = np.linspace(values.min() - 3 * width, values.max() + 3 * width, GRID_POINTS)
    density = kde(grid)
    peaks, _ = find_peaks(density, prominence=MIN_PROMINENCE * density.max())
    peaks = sorted(peaks.tolist(), key=lambda p: grid[p])
    need = max(MIN_SUPPORT_RUNS, math.ceil(MIN_SUPPORT_SHARE * len(values)))
    # Drop peaks too thin to be a mode, the thinnest first, and re-split.
    while len(peaks) > 1:
        counts = np.bincount(_assign(values, grid, density, peaks), minlength=len(peaks))
        thinnest = int(np.argmin(counts))
        if counts[thinnest] >= need:
            break
        peaks.pop(thinnest)
    if not peaks:
        peaks = [int(np.argmax(density))]
    member = _assign(values, grid, density, peaks)
    return [
        Mode(float(grid[p]), int((member == i).sum()), float(values[member == i].min()), float(values[member == i].max()))
        for i, p in enumerate(peaks)
    ]


@dataclass(frozen=True)
class Attribution:
    factor: str
    levels: int
    share: float  # between-class share of the variance (eta squared)
    p_value: float  # Kruskal-Wallis
    slow_level: str  # the class with the lowest mean
    slow_runs: int
    slow_mean: float
    rest_mean: float


def attribute(values: pd.Series, levels: pd.DataFrame) -> list[Attribution]:
    """Every factor that splits the runs into two or more classes (levels:
    the class of each run per factor, as text), the strongest (lowest p)
    first."""
    from scipy.stats import kruskal  # as in find_modes: only a cell with modes pays for it

    v = values.astype(float).to_numpy()
    total = float(((v - v.mean()) ** 2).sum())
    found = []
    for factor in levels:
        codes, names = pd.factorize(levels[factor].fillna("unknown"), sort=True)
        if len(names) < 2:
            continue
        counts = np.bincount(codes)
        means = np.bincount(codes, weights=v) / counts
        share = float((counts * (means - v.mean()) ** 2).sum() / total) if total > 0 else 0.0
        order = np.argsort(codes, kind="stable")
        groups = np.split(v[order], np.cumsum(counts)[:-1])
        try:
            p_value = float(kruskal(*groups).pvalue)
        except ValueError:  # every value identical: nothing to explain
            p_value = 1.0
        slow = int(np.argmin(means))
        rest = v[codes != slow]
        found.append(
            Attribution(factor, len(names), share, p_value, str(names[slow]), int(counts[slow]),
                        float(means[slow]), float(rest.mean()))
        )  # fmt: skip
    return sorted(found, key=lambda a: (a.p_value, -a.share))


def _modes_text(modes: list[Mode] | None, unit: str) -> str:
    if modes is None:
        return DASH
    return "; ".join(f"{m.centre:.1f} {unit} ×{m.runs}" for m in modes)


def _candidate_text(a: Attribution, n: int, unit: str) -> str:
    label = LABELS.get(a.factor, a.factor)
    return (
        f"{label} {a.slow_level} ({a.slow_runs} of {n} runs) slower, {a.slow_mean:.1f} vs {a.rest_mean:.1f} {unit} "
        f"on average, {percent(a.share, spaced=False)} of the variance, Kruskal–Wallis p = {a.p_value:.2g}"
    )


def verdict(values: pd.Series, modes: list[Mode] | None, found: list[Attribution], unit: str = "GB/s") -> tuple[str, str]:
    """(explained | unexplained | one mode | too few, the sentences the
    report prints). Unexplained: several modes and no factor explains them."""
    n = len(values)
    if modes is None:
        return "too few", f"{n} repetitions: too few to tell modes from noise (at least {MIN_RUNS} needed)."
    spread = values.std(ddof=1) / values.mean() if values.mean() else math.nan
    what = f"{len(modes)} modes" if len(modes) > 1 else f"one mode (coefficient of variation {percent(spread, 1, spaced=False)})"
    kind = "unexplained" if len(modes) > 1 else "one mode"
    subject = "the modes are" if len(modes) > 1 else "its spread is"
    if not found:
        return kind, (
            f"{what}; every run has the same placement by every recorded factor: {subject} not explained "
            f"by anything recorded."
        )
    best, alpha = found[0], ALPHA / len(found)
    tried = "; ".join(_candidate_text(a, n, unit) for a in found)
    if best.p_value < alpha and best.share >= MIN_SHARE:
        return "explained", f"{what}; explained by {LABELS.get(best.factor, best.factor)}: {tried}."
    if all(a.factor == ROUND_FACTOR for a in found):  # no placement factor varied: said as before, the round beside it
        return kind, (
            f"{what}; every run has the same placement by every recorded factor: {subject} not explained "
            f"by anything recorded (the round, tried: {tried}; p < {alpha:.2g} with ≥ {percent(MIN_SHARE, spaced=False)} "
            f"of the variance needed)."
        )  # fmt: skip
    return kind, (
        f"{what}; {subject} not explained by recorded placement or the round (no factor reaches p < {alpha:.2g} with "
        f"≥ {percent(MIN_SHARE, spaced=False)} of the variance): {tried}."
    )


# Besides placement, what a run shares with every cell measured in its
# round: the host's state then (a hypervisor that moves the vCPUs between
# dies every few seconds makes every 2-thread cell of a round read ~1.6 x on
# this project's EPYC guest). Each run's round is scored by the other cells
# of its thread count measured in it: the mean of their log ratios to their
# own medians (the cell's own runs never count). A cell's rounds are then
# cut in two at the widest gap between their scores, "read high" above it
# and "read low" below: the cut is drawn from the other cells alone, so
# under no shared state it splits this cell's runs at random and the test
# below stays at its rate. A cell measured alone has no such class.
ROUND_FACTOR = "round_others"
ROUND_GAP = math.log(1.05)
ROUND_LABEL = "the other cells of its thread count in the same round"
LABELS = {**FACTORS, ROUND_FACTOR: ROUND_LABEL}


def round_scores(ok: pd.DataFrame, metric: str = "gbps") -> pd.Series:
    """Each record's round as the other cells of its thread count read it
    (ROUND_FACTOR, a log ratio); NaN where no other cell ran at that thread
    count in that round."""
    if not {"repeat", "cell", "threads", metric}.issubset(ok) or ok.empty:
        return pd.Series(np.nan, index=ok.index, dtype=float)
    op = ok["op"].astype(str) if "op" in ok else pd.Series("", index=ok.index)
    system = ok["system"].astype(str) if "system" in ok else pd.Series("", index=ok.index)
    logs = np.log(ok[metric].astype(float).where(ok[metric].astype(float) > 0))
    ratio = logs - logs.groupby([system, ok["cell"], op]).transform("median")
    at = [system, ok["threads"].astype(str), ok["repeat"]]
    total, count = ratio.groupby(at).transform("sum"), ratio.groupby(at).transform("count")
    own_total, own_count = ratio.groupby([*at, ok["cell"]]).transform("sum"), ratio.groupby([*at, ok["cell"]]).transform("count")
    return (total - own_total) / (count - own_count).where(count > own_count)


def round_classes(scores: pd.Series) -> pd.Series | None:
    """One cell's rounds cut at the widest gap between their scores (module
    comment above); None with fewer than two distinct scores, or where the
    widest gap is under ROUND_GAP: other cells that never moved together by
    5 % show no host state worth trying (and each factor tried costs every
    factor a share of the test's rate)."""
    known = np.sort(scores.dropna().unique())
    if len(known) < 2 or np.max(np.diff(known)) < ROUND_GAP:
        return None
    widest = int(np.argmax(np.diff(known)))
    cut = (known[widest] + known[widest + 1]) / 2
    return scores.map(lambda x: None if pd.isna(x) else "read high" if x > cut else "read low").astype(object)


def cell_modes(ok: pd.DataFrame, metric: str = "gbps", unit: str = "GB/s") -> dict:
    """One row of the modes table for the ok runs of one cell and op."""
    values = ok[metric].astype(float)
    modes = find_modes(values)
    levels = factor_levels(ok)
    # the round explains modes (a host state), not the small spread of one mode
    rounds = round_classes(ok[ROUND_FACTOR]) if ROUND_FACTOR in ok and modes is not None and len(modes) > 1 else None
    if rounds is not None:
        levels[ROUND_FACTOR] = rounds
    found = attribute(values, levels) if modes is not None else []
    varying = [f for f in levels if levels[f].fillna("unknown").nunique() > 1]
    kind, sentence = verdict(values, modes, found, unit)
    best = found[0] if found else None
    median = float(values.median()) if len(values) else math.nan
    return {
        "n": len(values),
        # half the range over the median: every run lies within ±spread of it
        "spread": float((values.max() - values.min()) / 2 / median) if median > 0 else math.nan,
        "modes": len(modes) if modes is not None else None,
        "mode_centres": _modes_text(modes, unit),
        "mode_values": ";".join(f"{m.centre:.6g}" for m in modes) if modes else None,
        "best_factor": best.factor if best else None,
        "explained_share": best.share if best else None,
        "kruskal_p": best.p_value if best else None,
        "classes": "; ".join(f"{LABELS[f]} {class_counts(levels[f])}" for f in varying) or "every run alike",
        "verdict": kind,
        "explanation": sentence,
    }


def modes_table(table: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """One row per bandwidth cell and op (keys: the cell's columns): its
    modes and what explains them. Latency kernels are left out."""
    ok = table[(table["status"] == "ok")]
    if "gbps" not in ok:
        return pd.DataFrame(columns=[*keys, "n", "modes", "verdict", "explanation"])
    ok = ok[ok["gbps"].notna()]
    ok = pd.concat([ok, round_scores(ok).rename(ROUND_FACTOR)], axis=1)  # one new column, no copy per insert
    keys = [k for k in keys if k in ok]
    rows = [
        {**dict(zip(keys, key)), "threads": group["threads"].iloc[0], **cell_modes(group)}
        for key, group in ok.groupby(keys, dropna=False, sort=False)
    ]
    return pd.DataFrame(rows, columns=[*keys, "threads", "n", "spread", "modes", "mode_centres", "mode_values", "best_factor", "explained_share",
                                       "kruskal_p", "classes", "verdict", "explanation"])  # fmt: skip
