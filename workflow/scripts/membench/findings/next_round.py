"""The next round of a run within a budget (issue 51): after each round the
findings are drawn from every repetition stored so far, and the next round
measures only the cells that undecided findings rest on, while the budget
lasts.

A finding names the cells its answer rests on (findings.json `cells`); a
decided one (better, worse, the same within the margin, or a quantity
held) gets no more runs. The next round takes the undecided findings in the
config's order, each with all of its cells (both arms of a comparison, so
they stay interleaved in the round's shuffled order), while the round's
expected time fits what is left of the budget: the budget is exceeded by
at most the one cell whose time was misjudged. Each cell's expected time is
the median of its stored repetitions' own times, plus the gap between
measurements.
"""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path

import pandas as pd

from membench.analyse.summary import write_summaries
from membench.core import layout
from membench.findings.document import write_answers
from membench.store.collect import collect_runs

# Seconds between one measurement and the next (the round's own work:
# process start, identity checks, the atomic write); bench/pipeline_overhead.py.
GAP_S = 0.3


def run_files(manifests: list[str]) -> list[str]:
    """The repetition files the round manifests list (kept and measured)."""
    files = []
    for manifest in manifests:
        content = json.loads(Path(manifest).read_text())
        files += [path for key in ("runs", "kept", "measured") for path in content.get(key, [])]
    return list(dict.fromkeys(files))


def spent_seconds(manifests: list[str]) -> float:
    """Measuring time of the rounds so far, retries of disturbed tries
    included (a manifest that cannot be read counts nothing)."""
    total = 0.0
    for manifest in manifests:
        try:
            total += float(json.loads(Path(manifest).read_text()).get("seconds", 0.0))
        except (OSError, ValueError):
            continue
    return total


def findings_so_far(files: list[str], config: dict, system: str, topology: str, environment: str) -> dict:
    """findings.json as the pipeline would draw it from these repetitions
    (collect, analyse, findings: the same functions, in a scratch folder)."""
    with tempfile.TemporaryDirectory(prefix="membench-next-round-") as scratch:
        work = Path(scratch)
        measurements = layout.measurements_path(work, system)
        measurements.parent.mkdir(parents=True)
        collect_runs(files, str(measurements), topology)
        names = {k: str(work / f"{k}.csv") for k in ("cells", "problems", "c2c_classes")}
        # no modes and no c2c pairs: they change a finding's words, never whether it is decided
        write_summaries(measurements=[str(measurements)], cells_out=names["cells"], problems_out=names["problems"],
                        modes_out=None, c2c_classes_out=names["c2c_classes"])  # fmt: skip
        derived = write_answers(config=config, cells_csv=names["cells"], problems_csv=names["problems"], modes_csv=None,
                                c2c_classes_csv=names["c2c_classes"], measurements=[str(measurements)],
                                system_files={system: {"topology": topology, "environment": environment}},
                                findings_out=str(work / "findings.json"), findings_csv_out=str(work / "findings.csv"),
                                sections_out=str(work / "sections.json"), interim=True)  # fmt: skip
        return derived["findings"]


def cell_seconds(files: list[str], manifests: list[str] = ()) -> dict[str, float]:
    """cell id -> what one more repetition of it is expected to take: the
    median of its repetitions' seconds as the rounds measured them (tries
    included, `repetition_seconds` of a manifest), else of its records'
    first start to last end (the timed part only), plus the gap between
    measurements."""
    measured: dict[str, float] = {}
    for manifest in manifests:
        measured.update(json.loads(Path(manifest).read_text()).get("repetition_seconds", {}))
    spans: dict[str, list[float]] = {}
    for path in files:
        starts, ends, cell = [], [], None
        for line in Path(path).read_text().splitlines():
            record = json.loads(line)
            cell = record.get("cell", cell)
            if record.get("t_start") is not None and record.get("t_end") is not None:
                starts.append(float(record["t_start"]))
                ends.append(float(record["t_end"]))
        if cell is not None and (path in measured or starts):
            spans.setdefault(cell, []).append(measured[path] if path in measured else max(ends) - min(starts))
    return {cell: float(pd.Series(values).median()) + GAP_S for cell, values in spans.items()}


def choose(findings: dict, system: str, costs: dict[str, float], left_s: float | None,
           may_repeat=lambda cell: True) -> tuple[list[str], str]:
    """The cells the next round measures, and why it stops or what it
    measures: undecided findings in order, all of each one's cells that may
    have another repetition (`may_repeat`: within their repeats), while
    their expected time fits `left_s` (None: no budget)."""
    undecided = [f for f in findings["findings"] if f["system"] == system and not f.get("decided") and f.get("cells")]
    if not undecided:
        return [], "every finding is decided"
    undecided = [f for f in undecided if any(may_repeat(cell) for cell in f["cells"])]
    if not undecided:
        return [], "the undecided findings' cells have had all their repeats"
    chosen: list[str] = []
    used, left_out = 0.0, []
    for finding in undecided:
        new = [cell for cell in finding["cells"] if cell not in chosen and may_repeat(cell)]
        cost = sum(costs.get(cell, 0.0) for cell in new)
        if left_s is not None and used + cost > left_s:
            left_out.append(finding["experiment"])
            continue
        chosen += new
        used += cost
    if not chosen:
        return [], f"the budget is spent ({', '.join(left_out)} undecided)"
    said = f"{len(chosen)} cells for {len(undecided) - len(left_out)} undecided findings, about {used:.0f} s"
    return chosen, said + (f"; left out for the budget: {', '.join(left_out)}" if left_out else "")


# A look at the findings costs seconds (collect, summaries, findings: about
# 4 s here for the default config); rounds of a few cells measure less than
# that. A plan therefore holds for the rounds after it until they have
# measured LOOK_SHARE x its own cost (at most MAX_AHEAD rounds), and the
# findings are looked at again after them: fewer looks, each worth more.
LOOK_SHARE = 2.0
MAX_AHEAD = 4


def rounds_ahead(planning_s: float, round_s: float) -> int:
    """How many more rounds a plan holds for (module constants)."""
    if round_s <= 0:
        return 0
    return max(0, min(MAX_AHEAD, math.ceil(LOOK_SHARE * planning_s / round_s) - 1))


def continued(previous: dict | None, round_index: int, manifests: list[str], budget_s: float | None,
              may_repeat=lambda cell: True) -> tuple[list[str], str, dict] | None:
    """The previous round's plan, held for this round (rounds_ahead), when
    it says so, every one of its cells may have another repetition and
    the budget holds its expected seconds; None: look at the findings."""
    if not previous or not previous.get("requests") or int(previous.get("ahead_until", -1)) < round_index:
        return None
    cells = list(dict.fromkeys(r["cell"] for r in previous["requests"]))
    spent = spent_seconds(manifests)
    expected = float(previous.get("expected_s", 0.0))
    if not all(may_repeat(cell) for cell in cells) or (budget_s is not None and spent + expected > budget_s):
        return None
    looked = previous.get("why_looked", previous["why"])
    why = f"{looked} (the plan of round {previous.get('looked_at', previous['round'])}'s look at the findings, held)"
    numbers = {k: previous[k] for k in ("decided", "findings", "expected_s", "ahead_until", "looked_at") if k in previous}
    numbers["why_looked"] = looked
    return cells, why, {**numbers, "spent_s": spent, "budget_s": budget_s}


def plan(manifests: list[str], config: dict, system: str, topology: str, environment: str,
         budget_s: float | None, may_repeat=lambda cell: True) -> tuple[list[str], str, dict]:
    """(cells to measure next, why, the numbers behind it); may_repeat: see choose."""
    files = run_files(manifests)
    spent = spent_seconds(manifests)
    left = None if budget_s is None else budget_s - spent
    if left is not None and left <= 0:
        return [], f"the budget is spent ({spent:.0f} of {budget_s:.0f} s)", {"spent_s": spent, "budget_s": budget_s}
    findings = findings_so_far(files, config, system, topology, environment)
    costs = cell_seconds(files, manifests)
    cells, why = choose(findings, system, costs, left, may_repeat)
    decided = sum(1 for f in findings["findings"] if f["system"] == system and f.get("decided"))
    total = sum(1 for f in findings["findings"] if f["system"] == system)
    expected = sum(costs.get(cell, 0.0) for cell in cells)
    return cells, why, {"spent_s": spent, "budget_s": budget_s, "decided": decided, "findings": total, "expected_s": expected}
