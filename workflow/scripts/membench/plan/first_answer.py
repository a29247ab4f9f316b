"""A first answer within a small budget (issue 51): where the budget
cannot hold the fixed rounds of every cell (`make run BUDGET=60s`), the
fixed rounds measure the cells of a first answer, and as many of the rest
as the budget holds; the others are left out for the budget, said so
before the run starts and in the findings.

A first answer, by the model's seconds (membench.plan.estimate: a
stated model, the same on every parse of the same host, so a rerun plans
the same rounds): first the idle latency (each latency experiment's first
cell), then each other experiment's first cell at each of its thread
counts (one-thread and all-thread STREAM in the default config; every
locality class of a cache-to-cache experiment), the cheapest first, so
that the budget answers as many experiments as it can; then every other cell in the config's order. A cell is
of the first answer is kept while the fixed rounds' seconds stay within
the budget, any other while they stay within half of it (the other half is
for the rounds that decide); the first cell is kept whatever it costs.
"""

from __future__ import annotations

from membench.plan import budget, families
from membench.plan.estimate import Host, model_seconds
from membench.plan.grammar import Cell


def _first_cells(cells: list[Cell]) -> list[Cell]:
    """The first answer's cells, in the order they are kept (module doc)."""
    latency = {c.experiment for c in cells if families.family(c.kernel).metric == families.LATENCY}
    firsts = [next(c for c in cells if c.experiment == name) for name in dict.fromkeys(c.experiment for c in cells) if name in latency]
    seen: set[tuple[str, str]] = set()
    for cell in cells:
        # a pair family's cells are its locality classes, each its own answer (and a host lacks some)
        key = (cell.experiment, cell.id if families.family(cell.kernel).pairs else str(cell.threads))
        if cell.experiment not in latency and key not in seen:
            seen.add(key)
            firsts.append(cell)
    return firsts


def left_out(cells: list[Cell], config: dict, host: Host) -> list[str]:
    """The ids of the cells a budget too small for every cell's fixed rounds
    leaves out (module doc); none where the budget holds them all, or
    without a budget."""
    limit = budget.seconds(config.get("budget"))
    if limit is None:
        return []
    cost = {cell.id: budget.fixed_repeats(cell, config) * model_seconds(cell, host) for cell in cells}
    if sum(cost.values()) <= limit:
        return []
    first = _first_cells(cells)
    latency = [c for c in first if families.family(c.kernel).metric == families.LATENCY]
    # after the idle latency, the cheapest first: as many experiments answered as the budget holds
    first = latency + sorted((c for c in first if c not in latency), key=lambda c: cost[c.id])
    kept, used = set(), 0.0
    for cell in first + [c for c in cells if c not in first]:
        # the rest only while half the budget is left for the rounds that decide
        within = limit if cell in first else limit / 2
        if not kept or used + cost[cell.id] <= within:
            kept.add(cell.id)
            used += cost[cell.id]
    return [cell.id for cell in cells if cell.id not in kept]


def with_left_out(config: dict, cells: list[Cell], host: Host) -> dict:
    """The config with the cells its budget leaves out under budget.LEFT_OUT
    (read by budget.fixed_repeats: no fixed rounds for them)."""
    return {**config, budget.LEFT_OUT: left_out(cells, config, host)}


def left_out_line(config: dict, cells: list[Cell]) -> str | None:
    """What the budget left out, in one line; None where it left out nothing."""
    ids = set(config.get(budget.LEFT_OUT) or ())
    if not ids:
        return None
    by_experiment: dict[str, list[int]] = {}
    for cell in cells:
        counts = by_experiment.setdefault(cell.experiment, [0, 0])
        counts[0] += cell.id in ids
        counts[1] += 1
    parts = [f"{name} ({'every one' if out == total else out} of {total} cells)" for name, (out, total) in by_experiment.items() if out]
    limit = budget.seconds(config.get("budget"))
    return (f"budget {limit:.0f} s: a first answer (the idle latency, each experiment at each thread count) and what "
            f"else fits; left out for the budget: {', '.join(parts)} (a larger BUDGET, or no budget:, measures them)")
