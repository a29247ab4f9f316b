"""The config's grammar and its expansion into measurement cells.

The axes, sizes and chase groups as the config writes them, and the cells:
each named experiment is the cross product of its axes, minus its
exclusions. Validation (every problem at once) is membench.plan.checks.
"""

from __future__ import annotations

import hashlib
import itertools
import re
import socket
from dataclasses import asdict, dataclass

from membench.plan import families, knobs
from membench.plan.c2c_pairs import pair_specs
from membench.plan.knobs import DEFAULT_CHASE_GROUP, DEFAULT_CHASE_SPACING, group_text  # noqa: F401 (named here too)
from membench.plan.request import Knobs
from membench.plan.variants import variant_names
from membench.core.text import size_text  # noqa: F401 (sizes are named by it)

AXES = (
    "variant",
    "threads",
    "affinity",
    "policy",
    "pages",
    "init",
    "size",
    "prefetch_distance",
    "load_op",
    "load_delay",
    "chase_group",
    "chase_spacing",
)
AFFINITY_ALIASES = {"compact": "close", "scatter": "spread"}
GROUP_PAGE = 4096
SIZE_UNITS = {
    "B": 1,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "KiB": 2**10,
    "MiB": 2**20,
    "GiB": 2**30,
}


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

    @property
    def id(self) -> str:
        """Path-safe, unique name: <experiment>/<kernel>-<variant>/<axes>."""
        traits = families.family(self.kernel)
        if traits.pairs:  # the pair sets threads and CPUs
            axes = "_".join(path_safe(str(v)) for v in (f"p{self.pair}", self.policy, self.pages, f"s{self.size}"))
            return f"{self.experiment}/{self.kernel}-{self.variant}/{axes}"
        axes = "_".join(
            path_safe(str(v))
            for v in (
                f"t{self.threads}",
                self.affinity,
                self.policy,
                self.pages,
                self.init,
                f"s{self.size}",
            )
        )
        if self.prefetch_distance != "variant":
            axes += f"_pf{self.prefetch_distance}"
        if "load_op" in traits.knobs:
            axes += f"_{self.load_op}_d{self.load_delay}"
        if "chase_group" in traits.knobs:
            axes += "_g" + group_text(self.chase_group).replace(" ", "")
            if self.chase_spacing != DEFAULT_CHASE_SPACING:
                axes += f"_sp{self.chase_spacing}"
        return f"{self.experiment}/{self.kernel}-{self.variant}/{axes}"

    def as_dict(self) -> dict:
        return asdict(self)


def path_safe(value: str) -> str:
    return value.replace(":", "=").replace(",", "+")


def parse_size(value: int | str) -> int | str:
    """Bytes from an int or a string with a unit; "auto" stays "auto"."""
    if isinstance(value, int) or value == "auto":
        return value
    match = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]+)", value)
    if not match or match.group(2) not in SIZE_UNITS:
        raise ValueError(f"not a size: {value!r}")
    return int(float(match.group(1)) * SIZE_UNITS[match.group(2)])


def parse_group(value: int | str) -> int | str:
    """Bytes per chase group from an int, a size ("256KiB") or "N pages"
    (4 KiB each); "full" stays "full"."""
    if isinstance(value, int) or value == "full":
        return value
    match = re.fullmatch(r"([0-9]+)\s*pages?", value)
    return int(match.group(1)) * GROUP_PAGE if match else parse_size(value)



def canonical_affinity(value: str) -> str:
    return AFFINITY_ALIASES.get(value, value)


def resolve_system_name(name: str) -> str:
    return socket.gethostname().split(".")[0] if name == "auto" else name


def system_names(config: dict) -> list[str]:
    """The systems a validated config measures: the names under `systems`,
    or the one `system`."""
    if config.get("systems"):
        return list(config["systems"])
    return [resolve_system_name(config["system"])]


def _excluded(values: dict, exclude: list[dict]) -> bool:
    def same(axis, wanted):
        if axis == "affinity":
            wanted = canonical_affinity(wanted)
        if axis == "size":
            wanted = parse_size(wanted)
        if axis == "chase_group":
            wanted = parse_group(wanted)
        return values[axis] == wanted

    return any(all(same(k, v) for k, v in entry.items()) for entry in exclude)


def expand(config: dict, variants_table: dict) -> list[Cell]:
    """Every cell of every experiment of a validated config, in config order,
    duplicates (e.g. both close and compact) listed once."""
    cells: dict[str, Cell] = {}
    for name, experiment in config["experiments"].items():
        for cell in experiment_cells(name, experiment, variants_table):
            cells.setdefault(cell.id, cell)
    return list(cells.values())


# The axes a canonical order sorts on, after the experiment: numbers by
# value ("all", "auto", "node" after them), versions in the variant table's
# order (McCalpin's v001 ... v015), the rest as the config first names them.
ORDERED_AXES = ("variant", "threads", "affinity", "policy", "pages", "init", "size", "prefetch_distance",
                "load_op", "load_delay", "chase_group", "chase_spacing", "pair")  # fmt: skip


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
    variants = experiment["variants"]
    if "all" in variants:
        variants = variant_names(variants_table, kernel)
    axes = {
        "variant": variants,
        "threads": experiment["threads"],
        "affinity": [canonical_affinity(a) for a in experiment["affinity"]],
        "policy": experiment["policy"],
        "pages": experiment["pages"],
        "init": experiment["init"],
        "size": [parse_size(s) for s in experiment["size"]],
        "prefetch_distance": experiment["prefetch_distance"],
        "load_op": experiment["load_op"],
        "load_delay": experiment["load_delay"],
        "chase_group": [parse_group(g) for g in experiment["chase_group"]],
        "chase_spacing": experiment.get("chase_spacing", [DEFAULT_CHASE_SPACING]),
        "pair": [""],
    }
    c2c = {}
    if families.family(kernel).pairs:
        # the pair sets threads (2, or every CPU) and the CPUs (resolved
        # where it is measured); threads and affinity are not c2c axes
        per_class = experiment["pairs_per_class"]
        axes.update(
            pair=pair_specs(experiment["pairs"], per_class, experiment["pair_classes"]),
            threads=[2],
            affinity=["none"],
        )
        c2c = {
            "pairs_per_class": per_class,
            "c2c_samples": experiment["c2c_samples"],
            "c2c_roundtrips": experiment["c2c_roundtrips"],
        }
    cells = []
    for combo in itertools.product(*axes.values()):
        values = dict(zip(axes, combo))
        if _excluded(values, experiment["exclude"]):
            continue
        cells.append(
            Cell(
                experiment=name,
                kernel=kernel,
                repeats=experiment["repeats"],
                ntimes=experiment["ntimes"],
                sweep_from=parse_size(experiment["sweep_from"]),
                points_per_octave=experiment["points_per_octave"],
                **c2c,
                **{**values, **({"threads": "all"} if values["pair"] == "all" else {})},
            )
        )
    return cells


def shuffle_key(cell_id: str, repeat: int, seed: int) -> int:
    """A deterministic pseudo-random sort key per (cell, repetition): a
    round measures its cells in this order, different in every round, so
    that slow drift of the machine spreads over all cells. Eight bytes of a
    digest: no ties that would fall back to config order, at any size."""
    digest = hashlib.sha256(f"{seed}/{cell_id}/{repeat}".encode()).digest()
    return int.from_bytes(digest[:8], "big")
