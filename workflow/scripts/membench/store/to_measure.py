"""What a run would measure, and why, in membench's words (`make plan`).

Per system: each cell with repetitions to measure, how many, and why
(never measured, or stored for another request: which knob, stored and
asked), then the total and the time it would take at the pace of the
rounds stored so far. Reads results/ only, as `make status` does."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from membench.core import layout
from membench.core.text import size_text
from membench.measure.identity import REQUEST_KNOBS
from membench.plan import families, knobs, node_pairs, rounds
from membench.plan.grammar import Cell
from membench.store.progress import duration, pace

@dataclass
class CellPlan:
    cell: Cell
    new: list[int] = field(default_factory=list)  # repetitions never stored
    changed: dict[int, str] = field(default_factory=dict)  # repetition -> what changed

    @property
    def count(self) -> int:
        return len(self.new) + len(self.changed)


def first_record(path: str) -> dict | None:
    try:
        with open(path) as fh:
            record = json.loads(fh.readline())
        return record if isinstance(record, dict) else None
    except (OSError, ValueError):
        return None


def what_changed(record: dict, request: dict) -> str:
    """"ntimes: stored 5, asked 6", "chase_group: stored 64 KiB, asked 256
    KiB": the knobs whose stored value differs, each in its unit."""
    text = {key: knobs.BY_REQUEST[key].text for key in REQUEST_KNOBS}
    said = [
        f"{key}: stored {text[key](record[stored_key])}, asked {text[key](request[key])}"
        for key, stored_key in REQUEST_KNOBS.items()
        if key in request and stored_key in record and record[stored_key] != request[key]
    ]
    return "; ".join(said) or "stored for another request"


def cell_words(cell: Cell) -> str:
    """A cell as a person names it: variant, threads (or the CPU pair),
    placement, size, and the knobs that set it apart."""
    size = size_text(cell.size) if isinstance(cell.size, int) else f"size {cell.size}"
    who = f"pair {cell.pair}" if cell.pair else f"t{cell.threads} {cell.affinity}"
    words = [cell.variant, who, size]
    if cell.policy != "default":
        words.append(f"policy {cell.policy}")
    if cell.pages != "variant":
        words.append(f"pages {cell.pages}")
    if families.family(cell.kernel).metric == families.LOADED:
        words.append(f"{cell.load_op} delay {cell.load_delay}")
    return " ".join(words)


def cells_text(plans: list[CellPlan], shown: int = 3) -> str:
    names = list(dict.fromkeys(cell_words(plan.cell) for plan in plans))
    return "; ".join(names[:shown]) + (f"; and {len(names) - shown} more" if len(names) > shown else "")


def system_plan(cells: list[Cell], system: str, results: Path, variants_table: dict) -> list[CellPlan]:
    runs = str(layout.runs_dir(results, system))
    try:
        topology = json.loads(layout.topology_path(results, system).read_text())
    except (OSError, ValueError):
        topology = None
    planned = []
    for cell in node_pairs.expand_pairs(cells, topology):
        request = rounds.cell_request(cell, system, None, variants_table)
        plan = CellPlan(cell)
        for k in range(cell.repeats):
            record = first_record(layout.run_path(runs, cell, k))
            if record is None:
                plan.new.append(k)
            elif record.get("request_digest") != rounds.digest({**request, "repeat": k}):
                plan.changed[k] = what_changed(record, request)
        planned.append(plan)
    return planned


def plan_lines(cells: list[Cell], system: str, results: Path, variants_table: dict) -> list[str]:
    """Per experiment, what is new and what is measured again (and which
    knob changed), then what is kept."""
    planned = system_plan(cells, system, results, variants_table)
    total = sum(plan.cell.repeats for plan in planned)
    count = sum(plan.count for plan in planned)
    if not count:
        return [f"{system}: nothing to measure: all {total} repetitions are stored for this config "
                "(a run redraws tables, figures and report only where they are out of date)"]  # fmt: skip
    seconds = pace(layout.rounds_dir(results, system))
    when = f"about {duration(count * seconds)} at the pace of the rounds stored" if seconds else "no round stored yet to tell the time"
    lines = [f"{system}: {count} of {total} repetitions to measure ({when}):"]
    experiments = list(dict.fromkeys(plan.cell.experiment for plan in planned))
    for experiment in experiments:
        mine = [plan for plan in planned if plan.cell.experiment == experiment]
        new = [plan for plan in mine if plan.new]
        if new:
            n = sum(len(plan.new) for plan in new)
            lines.append(f"  {experiment}: {n} new repetition(s) of {len(new)} cell(s) ({new[0].cell.kernel}: {cells_text(new)})")
        for reason in dict.fromkeys(why for plan in mine for why in plan.changed.values()):
            again = [plan for plan in mine if reason in plan.changed.values()]
            n = sum(list(plan.changed.values()).count(reason) for plan in again)
            lines.append(f"  {experiment}: {n} measured again, {reason} ({len(again)} cell(s): {cells_text(again)})")
    kept = total - count
    if kept:
        lines.append(f"  {kept} stored repetition(s) kept: same request (a kernel rebuilt to other bytes, or another "
                     "machine layout, measures its cells again; that is known once built and probed)")  # fmt: skip
    return lines
