"""A run within a budget (issue 51): which rounds measure every cell and
which only the cells whose answers are undecided.

Without `budget:` every cell gets its repeats, round by round. With one,
rounds 0 .. min_repeats-1 are fixed (every cell), and rounds from there up
to a cell's repeats are adaptive: each is planned after the one before from
the findings so far (membench.findings.next_round, a Snakemake checkpoint).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import replace
from pathlib import Path

from membench.plan.grammar import Cell

UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}


def seconds(value) -> float | None:
    """A budget in seconds: a number, or "4m", "90s", "1.5h"; None for none."""
    if value is None or value == "":
        return None
    if isinstance(value, (int, float)):
        return float(value)
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*(s|m|min|h)?\s*", str(value))
    if not match:
        raise ValueError(f"budget {value!r}: seconds, or a number with s, m or h (\"4m\", \"90s\")")
    return float(match[1]) * UNITS[match[2] or ""]


# The config key under which the workflow records the cells a budget too
# small for every cell's fixed rounds leaves out (membench.plan.estimate, a first answer);
# set on the parsed config, never by a user (the schema has no such key).
LEFT_OUT = "_left_out_for_budget"


def fixed_repeats(cell: Cell, config: dict) -> int:
    """The rounds that measure this cell whatever the findings say."""
    if seconds(config.get("budget")) is None:
        return cell.repeats
    if cell.id in (config.get(LEFT_OUT) or ()):
        return 0
    return min(cell.repeats, int(config.get("min_repeats", 3)))


def fixed_rounds(cells: list[Cell], config: dict) -> int:
    return max((fixed_repeats(cell, config) for cell in cells), default=0)


def all_rounds(cells: list[Cell]) -> int:
    """The most rounds any cell may get (its repeats)."""
    return max((cell.repeats for cell in cells), default=0)


def looks(config: dict, first_decidable: int) -> int:
    """How many times a run within this config's budget may look at one
    comparison: after every round from the first with `first_decidable`
    runs an arm (or min_repeats, if more) to the most repeats; 1 without a
    budget (one look, at the end)."""
    if seconds(config.get("budget")) is None:
        return 1
    most = max((int(e.get("repeats", config.get("repeats", 1))) for e in config.get("experiments", {}).values()), default=1)
    first = max(int(config.get("min_repeats", 3)), first_decidable)
    return max(1, most - first + 1)


def with_fixed_repeats(cells: list[Cell], config: dict) -> list[Cell]:
    """The cells as the fixed rounds measure them (what `make status` and
    `make plan` count as to be measured; the planned rounds are said apart)."""
    return [replace(cell, repeats=fixed_repeats(cell, config)) for cell in cells]


def key(fixed_study_digests: list[str], config: dict, cells: list[Cell]) -> str:
    """Names a run's planned rounds (their plans and manifests): the fixed
    rounds' studies and the budget's settings, so that another budget or
    config plans anew."""
    parts = [*fixed_study_digests, str(seconds(config.get("budget"))), str(config.get("min_repeats")), str(all_rounds(cells))]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:12]


def planned_rounds(rounds_dir: Path, run_key: str) -> list[dict]:
    """The planned rounds written so far for this key, in order: each plan's
    round, how many repetitions it asked for, why, and the seconds spent
    before it."""
    plans = []
    for path in rounds_dir.glob(f"plan*-{run_key}.json"):
        try:
            plan = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        plans.append({"round": plan.get("round"), "requests": len(plan.get("requests", [])), "why": plan.get("why", ""),
                      "spent_s": plan.get("spent_s")})  # fmt: skip
    return sorted(plans, key=lambda p: p["round"] if isinstance(p["round"], int) else -1)


def ended(plans: list[dict], cells: list[Cell]) -> bool:
    """Whether the planned rounds are over: the last plan measured nothing,
    or it was the last round any cell's repeats allow."""
    return bool(plans) and (not plans[-1]["requests"] or plans[-1]["round"] >= all_rounds(cells) - 1)


def planned_line(system: str, plans: list[dict], cells: list[Cell]) -> str:
    """What the planned rounds did, in one line (`make status`, `make plan`)."""
    if not plans:
        return f"{system}: planned rounds: none yet (each is planned from the findings once the fixed rounds are stored)"
    asked = sum(p["requests"] for p in plans)
    last = plans[-1]
    over = "" if not ended(plans, cells) else "; the run ended" if not last["requests"] else "; the repeats are used up"
    return (f"{system}: planned rounds: {sum(1 for p in plans if p['requests'])} measured {asked} repetitions; "
            f"the last plan (round {last['round']}): {last['why']}{over}")
