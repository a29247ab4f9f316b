"""The config's grammar and its expansion into measurement cells.

The axes, sizes and chase groups as the config writes them, and the cells:
each named experiment is the cross product of its axes, minus its
exclusions. Validation (every problem at once) is membench.plan.checks.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import socket
from dataclasses import asdict, dataclass

from membench.plan import families, knobs
from membench.plan.c2c_pairs import pair_specs
from membench.plan.knobs import (  # noqa: F401 (named here too: the config's values are read by them)
    AFFINITY_ALIASES, DEFAULT_CHASE_GROUP, DEFAULT_CHASE_SPACING, GROUP_PAGE, SIZE_UNITS, canonical_affinity,
    group_text, parse_group, parse_size, path_safe,
)  # fmt: skip
from membench.plan.request import Knobs
from membench.plan.variants import variant_names
from membench.core.text import size_text  # noqa: F401 (sizes are named by it)

# The axes the config writes (an experiment's lists), in the knob table's order.
AXES = tuple(k.name for k in knobs.axes(configured=True))


class ConfigError(ValueError):
    """A config that cannot run; the message lists every problem found."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        lines = "\n".join(f"  - {p}" for p in problems)
        noun = "problem" if len(problems) == 1 else "problems"
        super().__init__(f"invalid membench config ({len(problems)} {noun}):\n{lines}")


@dataclass(frozen=True, kw_only=True)
class Cell(Knobs):
    """One point of an experiment's matrix, as requested (before the host
    resolves "all" threads or "auto" size): the knobs it shares with its
    request (membench.plan.request.Knobs), its experiment, pages as the
    config names them, its repetitions, and the op loaded's load threads run."""

    experiment: str
    pages: str
    repeats: int
    load_op: str = knobs.default("load_op")

    # worked out once a cell: planning names each cell once a round (27,000
    # times for 27 cells at 1000 repeats), and a cell never changes
    @functools.cached_property
    def id(self) -> str:
        """Path-safe, unique name: <experiment>/<kernel>-<variant>/<axes>,
        the axes as the knob table names them (membench.plan.knobs.id_axes)."""
        return f"{self.experiment}/{self.kernel}-{self.variant}/{knobs.id_axes(self)}"

    def as_dict(self) -> dict:
        return asdict(self)


def resolve_system_name(name: str) -> str:
    return socket.gethostname().split(".")[0] if name == "auto" else name


def system_names(config: dict) -> list[str]:
    """The systems a validated config measures: the names under `systems`,
    or the one `system`."""
    if config.get("systems"):
        return list(config["systems"])
    return [resolve_system_name(config["system"])]


def _excluded(values: dict, exclude: list[dict]) -> bool:
    return any(all(values[axis] == knobs.knob(axis).value(wanted) for axis, wanted in entry.items())
               for entry in exclude)  # fmt: skip


def expand(config: dict, variants_table: dict) -> list[Cell]:
    """Every cell of every experiment of a validated config, in config order,
    duplicates (e.g. both close and compact) listed once."""
    return distinct_cells(experiment_cells(name, experiment, variants_table)
                          for name, experiment in config["experiments"].items())  # fmt: skip


def distinct_cells(per_experiment) -> list[Cell]:
    """The cells of experiments already expanded, in their order, a cell id
    met twice (e.g. both close and compact) listed once."""
    cells: dict[str, Cell] = {}
    for its_cells in per_experiment:
        for cell in its_cells:
            cells.setdefault(cell.id, cell)
    return list(cells.values())


# The axes a canonical order sorts on, after the experiment: numbers by
# value ("all", "auto", "node" after them), versions in the variant table's
# order (McCalpin's v001 ... v015), the rest as the config first names them.
ORDERED_AXES = tuple(k.name for k in knobs.axes())


def canonical_order(cells: list[Cell], variants_table: dict) -> list[Cell]:
    """The cells in one order that depends on the cells alone, never on the
    order they were measured or read in: one set of records makes one
    table, one figure and one report, however it was built."""
    first_named: dict[str, dict] = {axis: {} for axis in ("experiment", *ORDERED_AXES)}
    for cell in cells:
        for axis, seen in first_named.items():
            seen.setdefault(str(getattr(cell, axis, "")), len(seen))

    def rank(axis: str, cell: Cell) -> tuple:
        value = getattr(cell, axis, "")
        if axis == "variant":
            names = variant_names(variants_table, cell.kernel) if cell.kernel in variants_table.get("families", {}) else []
            return (names.index(value), "") if value in names else (len(names), str(value))
        if isinstance(value, int) and not isinstance(value, bool):
            return (0, value)
        return (1, first_named[axis][str(value)])

    return sorted(cells, key=lambda cell: (first_named["experiment"][cell.experiment],
                                           *(rank(axis, cell) for axis in ORDERED_AXES)))  # fmt: skip


def experiment_cells(name: str, experiment: dict, variants_table: dict) -> list[Cell]:
    """The cross product of one experiment's axes, minus its exclusions."""
    kernel = experiment["kernel"]
    axes = axis_values(experiment, variants_table)
    settings = {k.name: k.value(experiment.get(k.config_key, k.default)) for k in knobs.cell_settings(kernel)}
    if families.family(kernel).pairs:
        # the pair sets threads (2, or every CPU) and the CPUs (resolved
        # where it is measured); threads and affinity are not c2c axes
        axes.update(pair=pair_specs(experiment["pairs"], experiment["pairs_per_class"], experiment["pair_classes"]),
                    threads=[2], affinity=["none"])  # fmt: skip
    cells = []
    for combo in itertools.product(*axes.values()):
        values = dict(zip(axes, combo))
        if _excluded(values, experiment["exclude"]):
            continue
        if values["pair"] == "all":
            values["threads"] = "all"
        cells.append(Cell(experiment=name, kernel=kernel, repeats=experiment["repeats"], **settings, **values))
    return cells


def axis_values(experiment: dict, variants_table: dict) -> dict[str, list]:
    """{axis: its values as a cell holds them} of one experiment, each axis
    of the knob table in its order (an axis the config does not write, the
    pair, at its default until the pairs choose it)."""
    axes = {k.name: [k.value(v) for v in experiment.get(k.config_key, [k.default])] if k.configured else [k.default]
            for k in knobs.axes()}  # fmt: skip
    if "all" in axes["variant"]:
        axes["variant"] = variant_names(variants_table, experiment["kernel"])
    return axes


def shuffle_key(cell_id: str, repeat: int, seed: int) -> int:
    """A deterministic pseudo-random sort key per (cell, repetition): a
    round measures its cells in this order, different in every round, so
    that slow drift of the machine spreads over all cells. Eight bytes of a
    digest: no ties that would fall back to config order, at any size."""
    digest = hashlib.sha256(f"{seed}/{cell_id}/{repeat}".encode()).digest()
    return int.from_bytes(digest[:8], "big")
