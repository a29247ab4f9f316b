"""What `make compare` says before its rows: the false-alarm rate of the
whole comparison, which rows the repetitions can support a verdict for
(per experiment: the smallest change its rows could call), and, for the
undecided rows, the config edit that measures the repetitions that would
decide them (rounds keep what is stored: only the new repetitions run)."""

from __future__ import annotations

import math
from collections import defaultdict

from membench.compare.verdicts import REALISTIC
from membench.core.text import percent


def _pct(x: float) -> str:
    return percent(x, 1 if x < 0.1 else 0, spaced=False)


def false_alarm_line(result: dict) -> str:
    gate = sum(1 for r in result["rows"] if r.get("role") == "gate")
    return (f"False alarms: when no gate row changed by more than ±{percent(result['threshold'], 1, spaced=False)}, the chance that any of "
            f"the {gate} gate rows says worse or better is at most {percent(1 - result['confidence'], spaced=False)} for the whole "
            f"comparison (Welch intervals on log values with Hsu's df, min n - 1; Holm over the gate rows: each at "
            f"{percent(result['row_confidence'], 3, spaced=False)}). Within one sitting each: runs of another day, reboot or host "
            f"may differ by more (docs/compare.md).")  # fmt: skip


def support_lines(rows: list[dict]) -> list[str]:
    """Per experiment: runs per side, and the change beyond which its rows
    can give a verdict (or that none can, with fewer than 2 runs a side)."""
    by_experiment = defaultdict(list)
    for row in rows:
        by_experiment[row["experiment"]].append(row)
    lines = ["What the repetitions can tell (per experiment: runs per side; the change its rows can call):"]
    for experiment, mine in by_experiment.items():
        ns = sorted({min(r["n_base"], r["n_new"]) for r in mine})
        runs = f"{ns[0]}" if len(ns) == 1 else f"{ns[0]}–{ns[-1]}"
        able = [r["detectable"] for r in mine if isinstance(r["detectable"], float) and math.isfinite(r["detectable"])]
        if not able:
            why = "2 runs a side needed" if ns[-1] < 2 else "none could call a change under 100 % at these runs and spreads"
            lines.append(f"  {experiment}: {len(mine)} rows, {runs} run(s) a side: no verdict possible ({why})")
            continue
        able.sort()
        median = able[len(able) // 2]
        text = f"  {experiment}: {len(able)} of {len(mine)} rows, {runs} runs a side: changes beyond ±{_pct(able[0])}"
        text += f" (half of them beyond ±{_pct(median)}, all beyond ±{_pct(able[-1])})" if len(able) > 1 else ""
        lines.append(text)
    return lines


def config_edit(rows: list[dict]) -> list[str]:
    """The config edit that measures just the repetitions that would decide
    the undecided rows, per experiment (the largest count its rows need)."""
    need, hopeless = {}, defaultdict(int)
    counts = defaultdict(int)
    for row in rows:
        if row["verdict"] != "undecided":
            continue
        if row["n_needed"]:
            need[row["experiment"]] = max(need.get(row["experiment"], 0), int(row["n_needed"]))
            counts[row["experiment"]] += 1
        else:
            hopeless[row["experiment"]] += 1
    lines = []
    if need:
        lines += ["To decide the undecided rows, measure more repetitions (rounds keep what is stored: only the",
                  "new repetitions run). In the config of each side, then `make run CONFIG=...` and compare again:",
                  "  experiments:"]  # fmt: skip
        for experiment, n in need.items():
            lines += [f"    {experiment}:", f"      repeats: {n}    # {counts[experiment]} undecided row(s) need {n} a side"]
    if hopeless:
        listed = ", ".join(f"{e} ({n})" for e, n in hopeless.items())
        lines.append(f"Undecided with no realistic count (over {REALISTIC} a side, or the estimate on a threshold edge): "
                     f"{listed}; a wider THRESHOLD or a quieter machine would decide them.")  # fmt: skip
    return lines
