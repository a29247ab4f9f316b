"""Config validation and expansion into measurement cells.

Validation reports every problem at once (key path, offending value, what is
allowed) before anything runs; expansion turns each named experiment into the
cross product of its axes, minus its exclusions.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import re
import socket
from dataclasses import asdict, dataclass
from pathlib import Path

import jsonschema
import yaml

from membench.variants import families, variant_names

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
)
AFFINITY_ALIASES = {"compact": "close", "scatter": "spread"}
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


@dataclass(frozen=True)
class Cell:
    """One point of an experiment's matrix, as requested (before the host
    resolves "all" threads or "auto" size)."""

    experiment: str
    kernel: str
    variant: str
    threads: int | str
    affinity: str
    policy: str
    pages: str
    init: str
    size: int | str
    repeats: int
    ntimes: int
    prefetch_distance: int | str = "variant"
    load_op: str = "triad"
    load_delay: int = 0
    sweep_from: int = 4096
    points_per_octave: int = 2

    @property
    def id(self) -> str:
        """Path-safe, unique name: <experiment>/<kernel>-<variant>/<axes>."""
        axes = "_".join(
            _path_safe(str(v))
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
        if self.kernel == "loaded":
            axes += f"_{self.load_op}_d{self.load_delay}"
        return f"{self.experiment}/{self.kernel}-{self.variant}/{axes}"

    def as_dict(self) -> dict:
        return asdict(self)


def _path_safe(value: str) -> str:
    return value.replace(":", "=").replace(",", "+")


def load_schema(path: Path) -> dict:
    with open(path) as fh:
        return yaml.safe_load(fh)


def parse_size(value: int | str) -> int | str:
    """Bytes from an int or a string with a unit; "auto" stays "auto"."""
    if isinstance(value, int) or value == "auto":
        return value
    match = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]+)", value)
    if not match or match.group(2) not in SIZE_UNITS:
        raise ValueError(f"not a size: {value!r}")
    return int(float(match.group(1)) * SIZE_UNITS[match.group(2)])


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


def _describe_path(path) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out or "(top level)"


def _schema_at(root: dict, schema_path) -> list[dict]:
    """Every schema node along a jsonschema error's schema path, resolving
    local $refs, so the nearest description can explain what is allowed."""
    nodes, node = [], root
    for key in schema_path:
        if isinstance(node, dict) and key not in node and "$ref" in node:
            node = _resolve_ref(root, node["$ref"])
        node = node[key]
        if isinstance(node, dict):
            nodes.append(node)
    return nodes


def _resolve_ref(root: dict, ref: str) -> dict:
    node = root
    for part in ref.removeprefix("#/").split("/"):
        node = node[part]
    return node


def _explain(error: jsonschema.ValidationError, root: dict) -> list[str]:
    where = _describe_path(error.absolute_path)
    if error.validator == "additionalProperties":
        known = sorted(error.schema.get("properties", {}))
        return [
            f"{where}: unknown key {key!r} (value {error.instance[key]!r}); "
            f"allowed keys: {', '.join(known)}"
            for key in error.instance
            if key not in known
        ]
    if error.validator == "required":
        return [f"{where}: {error.message}"]
    if error.validator == "enum":
        allowed = ", ".join(str(v) for v in error.validator_value)
        return [f"{where}: {error.instance!r} is not allowed; allowed: {allowed}"]
    if error.validator == "minimum":
        return [f"{where}: {error.instance!r} is not allowed; allowed: >= {error.validator_value}"]
    if error.validator in ("minItems", "minProperties"):
        return [f"{where}: {error.instance!r} is empty; give at least {error.validator_value}"]
    nodes = _schema_at(root, error.absolute_schema_path)
    hints = [n["x-allowed"] for n in nodes if "x-allowed" in n]
    hints += [n["description"] for n in nodes if "description" in n]
    allowed = hints[0] if hints else error.message
    return [f"{where}: {error.instance!r} is not allowed; allowed: {allowed}"]


def _apply_defaults(config: dict, schema: dict) -> dict:
    config = copy.deepcopy(config)
    for key, spec in schema["properties"].items():
        if "default" in spec:
            config.setdefault(key, copy.deepcopy(spec["default"]))
    experiment_spec = schema["$defs"]["experiment"]["properties"]
    for experiment in config["experiments"].values():
        for key, spec in experiment_spec.items():
            if "default" in spec:
                experiment.setdefault(key, copy.deepcopy(spec["default"]))
        experiment.setdefault("repeats", config["repeats"])
        experiment.setdefault("ntimes", config["ntimes"])
    return config


def _semantic_problems(config: dict, variants_table: dict) -> list[str]:
    """Checks the schema cannot express (variant names, exclude axes), run
    on the raw config so they are reported together with schema errors."""
    problems = []
    experiments = config.get("experiments")
    if not isinstance(experiments, dict):
        return problems
    for name, experiment in experiments.items():
        if not isinstance(experiment, dict):
            continue
        where = f"experiments.{name}"
        if experiment.get("kernel") == "chase" and any(t != 1 for t in _list_of(experiment.get("threads"))):
            problems.append(
                f"{where}.threads: {experiment.get('threads')!r} is not allowed for chase; "
                "allowed: [1] (one pinned thread chases; use kernel loaded for latency under load)"
            )
        if experiment.get("kernel") not in families(variants_table):
            continue
        known = variant_names(variants_table, experiment["kernel"])
        for i, variant in enumerate(_list_of(experiment.get("variants"))):
            if variant != "all" and variant not in known:
                problems.append(
                    f"{where}.variants[{i}]: {variant!r} is not a variant of "
                    f"{experiment['kernel']}; allowed: all, {', '.join(known)}"
                )
        for i, entry in enumerate(_list_of(experiment.get("exclude"))):
            for key, value in entry.items() if isinstance(entry, dict) else ():
                if key not in AXES:
                    problems.append(
                        f"{where}.exclude[{i}]: unknown axis {key!r} (value "
                        f"{value!r}); allowed axes: {', '.join(AXES)}"
                    )
    return problems


def _list_of(value) -> list:
    return value if isinstance(value, list) else []


def validate(config: dict, schema: dict, variants_table: dict) -> dict:
    """The config with defaults applied, or ConfigError listing every problem."""
    if not isinstance(config, dict):
        raise ConfigError([f"(top level): expected a mapping, got {config!r}"])
    validator = jsonschema.Draft202012Validator(schema)
    problems = []
    for error in sorted(validator.iter_errors(config), key=lambda e: list(map(str, e.absolute_path))):
        problems.extend(_explain(error, schema))
    problems += _semantic_problems(config, variants_table)
    if problems:
        raise ConfigError(problems)
    return _apply_defaults(config, schema)


def _excluded(values: dict, exclude: list[dict]) -> bool:
    def same(axis, wanted):
        if axis == "affinity":
            wanted = canonical_affinity(wanted)
        if axis == "size":
            wanted = parse_size(wanted)
        return values[axis] == wanted

    return any(all(same(k, v) for k, v in entry.items()) for entry in exclude)


def expand(config: dict, variants_table: dict) -> list[Cell]:
    """Every cell of every experiment of a validated config, in config order,
    duplicates (e.g. both close and compact) listed once."""
    cells: dict[str, Cell] = {}
    for name, experiment in config["experiments"].items():
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
        }
        for combo in itertools.product(*axes.values()):
            values = dict(zip(axes, combo))
            if _excluded(values, experiment["exclude"]):
                continue
            cell = Cell(
                experiment=name,
                kernel=kernel,
                repeats=experiment["repeats"],
                ntimes=experiment["ntimes"],
                sweep_from=parse_size(experiment["sweep_from"]),
                points_per_octave=experiment["points_per_octave"],
                **values,
            )
            cells.setdefault(cell.id, cell)
    return list(cells.values())


def load(config: dict, schema_path: Path, variants_table: dict) -> tuple[dict, list[Cell]]:
    config = validate(config, load_schema(schema_path), variants_table)
    return config, expand(config, variants_table)


def shuffle_priority(cell_id: str, repeat: int, seed: int) -> int:
    """A deterministic pseudo-random priority per job, so that Snakemake runs
    the repetitions of different cells interleaved rather than in config
    order (slow drift of the machine then spreads over all cells)."""
    digest = hashlib.sha256(f"{seed}/{cell_id}/{repeat}".encode()).digest()
    return int.from_bytes(digest[:2], "big") % 1000
