"""The node x node matrix shorthand: `affinity: node:each` (the threads on
each NUMA node I in turn) and `policy: bind:each` (the memory bound to each
node J in turn). Used together they give every (CPU node I, memory node J)
pair, the cross product of the axes as for any other value; either alone
gives a row (node:0 with bind:each) or a column of the matrix.

When the pairs are made: the config is planned before the system is probed
(Snakemake builds the job graph on a fresh machine before topology.json
exists), so the config's cells, and the requests a round's study carries,
keep `node:each` / `bind:each` as one each. The round job, which has
topology.json as an input, makes the pairs (pair_requests):
one concrete cell per node of that system (affinity node:I, policy bind:J),
each measured, stored and verified like any other cell, with its own run
file and request digest. A round is rerun when topology.json changes, so
the pairs always follow the system. Every node the kernel lists is a row
and a column: a node without CPUs (CXL, HBM) yields skipped cells in its
row, a node without memory skipped cells in its column, each with its
reason (membench.measure.harness.resolve), never an error.
"""

from __future__ import annotations

import dataclasses

from membench.plan.grammar import Cell, path_safe

EACH_AFFINITY = "node:each"
EACH_POLICY = "bind:each"


def uses_pairs(experiment: dict) -> bool:
    """Whether a (validated) experiment asks for the node matrix."""
    return EACH_AFFINITY in experiment.get("affinity", []) or EACH_POLICY in experiment.get("policy", [])


def topology_nodes(topology: dict) -> list[int]:
    """Every node of a system: those with memory or CPUs (sysfs lists both)."""
    return sorted({n["node"] for n in topology["nodes"]} | {c["node"] for c in topology["cpus"]})


def _pair_changes(rows: list, columns: list) -> list[dict]:
    """The affinity and policy of every concrete pair, rows (CPU node)
    outer, columns (memory node) inner; None leaves that axis as it is."""
    out = []
    for row in rows:
        for column in columns:
            changes = {}
            if row is not None:
                changes["affinity"] = f"node:{row}"
            if column is not None:
                changes["policy"] = f"bind:{column}"
            out.append(changes)
    return out


def pair_cells(cell: Cell, nodes: list[int]) -> list[Cell]:
    """The concrete cells of one config cell: itself when it names no
    `each`, else one per node (per pair when both axes say each), rows
    (CPU node) outer, columns (memory node) inner."""
    rows = nodes if cell.affinity == EACH_AFFINITY else [None]
    columns = nodes if cell.policy == EACH_POLICY else [None]
    if rows == [None] and columns == [None]:
        return [cell]
    return [dataclasses.replace(cell, **changes) for changes in _pair_changes(rows, columns)]


def expand_pairs(cells: list[Cell], topology: dict | None) -> list[Cell]:
    """Every cell with its `each` axes made concrete for one system; without
    a topology (not probed yet) the `each` cells are left out: there is
    nothing they could name."""
    if topology is None:
        return [c for c in cells if c.affinity != EACH_AFFINITY and c.policy != EACH_POLICY]
    nodes = topology_nodes(topology)
    out: dict[str, Cell] = {}
    for cell in cells:
        for concrete in pair_cells(cell, nodes):
            out.setdefault(concrete.id, concrete)
    return list(out.values())


def pair_requests(cell_id: str, request: dict, topology: dict | None) -> list[tuple[str, dict]]:
    """What pair_cells does for a cell, for one request of a round's study
    (membench.plan.rounds) and its cell id: (id, request) of every concrete
    pair, the id's `each` part named as the concrete cell's id names it;
    none without a topology, as expand_pairs."""
    rows = [EACH_AFFINITY] if request["affinity"] == EACH_AFFINITY else [None]
    columns = [EACH_POLICY] if request["policy"] == EACH_POLICY else [None]
    if rows == [None] and columns == [None]:
        return [(cell_id, request)]
    if topology is None:
        return []
    nodes = topology_nodes(topology)
    rows = nodes if rows != [None] else rows
    columns = nodes if columns != [None] else columns
    folder, axes = cell_id.rsplit("/", 1)
    out = []
    for changes in _pair_changes(rows, columns):
        # the id's axes are path_safe values joined by "_": the each
        # values are whole parts of it (Cell.id)
        named = {path_safe(request[knob]): path_safe(value) for knob, value in changes.items()}
        concrete = "_".join(named.get(part, part) for part in axes.split("_"))
        out.append((f"{folder}/{concrete}", {**request, **changes}))
    return out
