#!/usr/bin/env python3
"""The verdict methods `make compare` could use, measured side by side on
stored runs (not a test; README, "Comparing two result sets", quotes it):

    .venv/bin/python bench/verdict_options.py RESULTS [RESULTS ...] [--splits 200]

RESULTS: one system's directory (results/<system>, holding runs/). Each
cell's repetitions are split at random into two disjoint sides of n runs
(n = 2, 3, 5 and half of what is stored), many ways:
- no change: the sides as measured; a false alarm is a comparison with any
  row called worse or better;
- planted: one cell's NEW side 15 % slower (every op): the share of its
  rows called worse (power), and of splits with a false row elsewhere;
- 1 % at n = 2: one cell 1 % slower; any worse or better row is wrong.

Options (each row's values on the log scale; threshold 2 %, 5 % for the
whole comparison): mw-bonf (Hodges-Lehmann with the Mann-Whitney interval,
Bonferroni over rows: what `make compare` did), welch-bonf, welch-holm,
welch-bh, student-holm (pooled variance), moderated-holm (each row's
variance shrunk towards its family's, experiment x metric x op, limma's
empirical Bayes).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
from scipy import stats as sps
from scipy.special import digamma, polygamma

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "workflow" / "scripts"))

import rank_interval  # noqa: E402  (bench/, beside this script)

THRESHOLD, ALPHA = 0.02, 0.05
EDGES = (math.log(1 - THRESHOLD), math.log(1 + THRESHOLD))


def load(system_dir: Path) -> dict:
    """(experiment, cell, op, working set, metric) -> {repeat: value}."""
    rows = defaultdict(dict)
    for path in sorted((system_dir / "runs").glob("**/r*.jsonl")):
        for line in path.read_text().splitlines():
            r = json.loads(line)
            if r.get("status") != "ok":
                continue
            for metric, higher in (("gbps", True), ("ns_per_load", False)):
                v = r.get(metric)
                if v is not None and v > 0:
                    key = (r["experiment"], r["cell"], r.get("op"), r.get("working_set_bytes"), metric, higher)
                    rows[key][r["repeat"]] = v
    return rows


def edge_p(d, se, df, higher):
    """Two-sided p of the row against the threshold edges: 2 x the smaller
    one-sided p of 'below the lower edge' and 'above the upper edge'."""
    if not (se > 0 and df > 0):
        return 1.0
    p_down = sps.t.cdf((d - EDGES[0]) / se, df)  # small when d is far below the lower edge
    p_up = sps.t.sf((d - EDGES[1]) / se, df)
    return min(1.0, 2 * min(p_down, p_up))


def welch(b, n):
    vb, vn = np.var(b, ddof=1), np.var(n, ddof=1)
    se2 = vb / len(b) + vn / len(n)
    df = se2**2 / ((vb / len(b)) ** 2 / (len(b) - 1) + (vn / len(n)) ** 2 / (len(n) - 1)) if se2 > 0 else 0
    return n.mean() - b.mean(), math.sqrt(se2), df


def student_var(b, n):
    df = len(b) + len(n) - 2
    return ((len(b) - 1) * np.var(b, ddof=1) + (len(n) - 1) * np.var(n, ddof=1)) / df, df


def trigamma_inverse(x):
    y = 0.5 + 1 / x
    for _ in range(50):
        tri = polygamma(1, y)
        step = tri * (1 - tri / x) / polygamma(2, y)
        y += step
        if -step / y < 1e-8:
            break
    return y


def family_prior(variances, dfs):
    """limma's fitFDist: (s0^2, d0) from the rows' variances."""
    v, d = np.asarray(variances), np.asarray(dfs, dtype=float)
    ok = v > 0
    if ok.sum() < 3:
        return 0.0, 0.0
    z = np.log(v[ok])
    e = z - digamma(d[ok] / 2) + np.log(d[ok] / 2)
    emean, evar = e.mean(), e.var(ddof=1) - polygamma(1, d[ok] / 2).mean()
    if evar <= 0:
        return math.exp(emean), 1e6
    d0 = 2 * trigamma_inverse(evar)
    return math.exp(emean + digamma(d0 / 2) - math.log(d0 / 2)), d0


def multiplicity(p, how):
    """Rows called changed at ALPHA for the whole comparison."""
    p = np.asarray(p)
    m = len(p)
    order = np.argsort(p)
    called = np.zeros(m, bool)
    if how == "bonf":
        return p <= ALPHA / m
    if how == "holm":
        for j, i in enumerate(order):
            if p[i] > ALPHA / (m - j):
                break
            called[i] = True
        return called
    if how == "bh":
        ok = np.nonzero(p[order] <= ALPHA * np.arange(1, m + 1) / m)[0]
        if len(ok):
            called[order[: ok[-1] + 1]] = True
        return called
    raise ValueError(how)


def verdicts(option, pairs):
    """pairs: [(family, base log values, new log values, higher)] -> [worse|better|other]."""
    m = len(pairs)
    direction = ["down" if n.mean() < b.mean() else "up" for _, b, n, _ in pairs]
    if option == "mw-bonf":
        out = []
        for _, b, n, higher in pairs:
            row = rank_interval.compare_values(np.exp(b), np.exp(n), higher_is_better=higher,
                                               confidence=1 - ALPHA / m)  # fmt: skip
            out.append(row["verdict"] if row["verdict"] in ("worse", "better") else "other")
        return out
    name, how = option.split("-")
    p = []
    if name == "moderated":
        fams = defaultdict(list)
        for i, (fam, b, n, _) in enumerate(pairs):
            fams[fam].append(i)
        var = {}
        for fam, idx in fams.items():
            vs = [student_var(pairs[i][1], pairs[i][2]) for i in idx]
            s0, d0 = family_prior([v for v, _ in vs], [d for _, d in vs])
            for i, (v, d) in zip(idx, vs):
                var[i] = ((d0 * s0 + d * v) / (d0 + d), d0 + d) if d0 > 0 else (v, d)
    for i, (_, b, n, higher) in enumerate(pairs):
        if name == "welch":
            d, se, df = welch(b, n)
        else:
            v, df = var[i] if name == "moderated" else student_var(b, n)
            d, se = n.mean() - b.mean(), math.sqrt(v * (1 / len(b) + 1 / len(n)))
        p.append(edge_p(d, se, df, higher))
    called = multiplicity(p, how)
    out = []
    for c, (_, b, n, higher), dirn in zip(called, pairs, direction):
        if not c:
            out.append("other")
        else:
            out.append("worse" if (dirn == "down") == higher else "better")
    return out


OPTIONS = ["mw-bonf", "welch-bonf", "welch-holm", "welch-bh", "student-holm", "moderated-holm"]


def run(rows: dict, n: int, splits: int, seed: int):
    rng = np.random.default_rng(seed)
    keys = [k for k, v in rows.items() if len(v) >= 2 * n]
    cells = sorted({k[1] for k in keys})
    if not keys:
        return None
    stats = {o: defaultdict(float) for o in OPTIONS}
    for s in range(splits):
        split = {}
        for cell in cells:
            reps = sorted({r for k in keys if k[1] == cell for r in rows[k]})
            pick = rng.permutation(reps)
            split[cell] = (pick[:n], pick[n:2 * n])
        planted_cell = cells[s % len(cells)]
        for scenario, factor in (("none", 1.0), ("planted", 0.85), ("one_percent", 0.99)):
            pairs, planted = [], []
            for k in keys:
                a, b = split[k[1]]
                if not all(r in rows[k] for r in (*a, *b)):
                    continue
                base = np.log([rows[k][r] for r in a])
                new = np.log([rows[k][r] for r in b])
                hit = k[1] == planted_cell and scenario != "none"
                if hit:
                    new = new + math.log(factor if k[5] else 1 / factor)
                pairs.append(((k[0], k[4], k[2] if k[3] is None else "sweep"), base, new, k[5]))
                planted.append(hit)
            for option in OPTIONS:
                v = verdicts(option, pairs)
                false = [x for x, h in zip(v, planted) if not h and x != "other"]
                st = stats[option]
                st[f"{scenario}_any_false"] += bool(false) / splits
                st[f"{scenario}_false_rows"] += len(false) / len(pairs) / splits
                if scenario != "none":
                    hits = [x for x, h in zip(v, planted) if h]
                    st[f"{scenario}_worse"] += sum(x == "worse" for x in hits) / max(len(hits), 1) / splits
                    st[f"{scenario}_better"] += sum(x == "better" for x in hits) / max(len(hits), 1) / splits
    return len(keys), len(cells), stats


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", nargs="+", type=Path)
    parser.add_argument("--splits", type=int, default=200)
    parser.add_argument("--n", type=int, nargs="*", default=[2, 3, 5])
    args = parser.parse_args(argv)
    for results in args.results:
        rows = load(results)
        most = max(len(v) for v in rows.values())
        for n in sorted(set(args.n + [most // 2])):
            found = run(rows, n, args.splits, seed=n)
            if not found:
                continue
            m, cells, stats = found
            print(f"\n{results}  n = {n} per side: {m} rows, {cells} cells, {args.splits} splits")
            print(f"{'option':<16}{'no change: any':>16}{'rows':>8}{'15 %: worse':>13}{'any false':>11}"
                  f"{'1 %: any':>10}")  # fmt: skip
            for option, st in stats.items():
                print(f"{option:<16}{st['none_any_false']:>16.3f}{st['none_false_rows']:>8.4f}"
                      f"{st['planted_worse']:>13.3f}{st['planted_any_false']:>11.3f}"
                      f"{st['one_percent_any_false'] + st['one_percent_worse'] + st['one_percent_better']:>10.3f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
