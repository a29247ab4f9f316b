"""Config validation: every problem at once, before anything runs.

Each problem names the key path, the offending value and what is allowed,
for type as well as value: the JSON schema (workflow/schemas) catches the
shape, the checks here what a schema cannot say (backwards CPU ranges, a
sweep that starts above its size, an exclude that leaves no cell). `load`
validates and expands a config into its cells (membench.plan.grammar):
the schema's defaults are applied once and each experiment is expanded
once, and the checks that need them are handed the results
(tests/test_config_once.py).
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

import jsonschema
import yaml

from membench.plan.grammar import (
    AXES,
    GROUP_PAGE,
    Cell,
    ConfigError,
    distinct_cells,
    experiment_cells,
    parse_group,
    parse_size,
)
from membench.plan.config_limits import count_problems, short_repr, too_large, value_bound_problems
from membench.plan.families import FAMILIES
from membench.plan.figure_kinds import DEFAULT_KINDS
from membench.plan.peak_config import config_problems as peak_config_problems
from membench.plan.variants import all_variant_names, families


def load_schema(path: Path) -> dict:
    """The config schema, its kernel enum filled in from the family table
    (a family is declared in plan/families.py, not again in the schema)."""
    with open(path) as fh:
        schema = yaml.safe_load(fh)
    schema["$defs"]["experiment"]["properties"]["kernel"]["enum"] = list(FAMILIES)
    return schema


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
            f"{where}: unknown key {short_repr(key)} (value {short_repr(error.instance[key])}); "
            f"allowed keys: {', '.join(known)}"
            for key in error.instance
            if key not in known
        ]
    if error.validator == "required":
        return [f"{where}: {error.message}"]
    if error.validator == "enum":
        allowed = ", ".join(str(v) for v in error.validator_value)
        return [f"{where}: {error.instance!r} is not allowed; allowed: {allowed}"]
    if error.validator in ("minimum", "maximum"):
        bound = ">=" if error.validator == "minimum" else "<="
        return [f"{where}: {error.instance!r} is not allowed; allowed: {bound} {error.validator_value}"]
    if error.validator in ("minItems", "minProperties"):
        return [f"{where}: {error.instance!r} is empty; give at least {error.validator_value}"]
    # The deepest schema node says best what this key accepts.
    nodes = _schema_at(root, error.absolute_schema_path)
    allowed = next((_allowed(n) for n in reversed(nodes) if _allowed(n)), error.message)
    if error.validator == "type":
        got = YAML_TYPES.get(type(error.instance).__name__, type(error.instance).__name__)
        return [f"{where}: {error.instance!r} is {got}, of the wrong type; allowed: {allowed}"]
    return [f"{where}: {error.instance!r} is not allowed; allowed: {allowed}"]


# What a value of each Python type is called in YAML terms.
YAML_TYPES = {
    "list": "a list",
    "dict": "a mapping",
    "str": "a string",
    "int": "an integer",
    "float": "a number",
    "bool": "true/false",
    "NoneType": "empty (null)",
}


def _allowed(node: dict) -> str | None:
    """What a schema node accepts, in words: its x-allowed hint, its enum,
    or its type (a list of what its items accept)."""
    if "x-allowed" in node:
        return node["x-allowed"]
    if "enum" in node:
        return ", ".join(map(str, node["enum"]))
    kind = node.get("type")
    if kind == "array":
        return f"a list of: {_allowed(node.get('items', {})) or 'values'}"
    if kind == "integer":
        return ("an integer" + (f" >= {node['minimum']}" if "minimum" in node else "")
                + (f" and <= {node['maximum']}" if "maximum" in node else ""))  # fmt: skip
    if kind == "boolean":
        return "true or false"
    if kind == "object":
        return "a mapping" + (f" of {', '.join(node['properties'])}" if "properties" in node else "")
    if kind == "string":
        return "a single string"
    return None


def _apply_defaults(config: dict, schema: dict) -> dict:
    config = copy.deepcopy(config)
    for key, spec in schema["properties"].items():
        if "default" in spec:
            config.setdefault(key, copy.deepcopy(spec["default"]))
    experiment_spec = schema["$defs"]["experiment"]["properties"]
    for experiment in config["experiments"].values():
        for key, spec in experiment_spec.items():
            # x-kernels: a key of those families only (no default elsewhere)
            if "default" in spec and experiment.get("kernel") in spec.get("x-kernels", [experiment.get("kernel")]):
                experiment.setdefault(key, copy.deepcopy(spec["default"]))
        experiment.setdefault("repeats", config["repeats"])
        experiment.setdefault("ntimes", config["ntimes"])
    return config


# The config key of each axis an exclude entry may name.
AXIS_KEYS = {axis: "variants" if axis == "variant" else axis for axis in AXES}


def _semantic_problems(config: dict, schema: dict, variants_table: dict) -> dict[str, list[str]]:
    """Checks the schema cannot express (variant names, exclude entries,
    CPU ranges, sweep bounds), run on the raw config so they are reported
    together with schema errors; problems by experiment name. Every check
    guards its own types: a value of the wrong type is the schema's to
    report, never a traceback here."""
    experiments = config.get("experiments")
    if not isinstance(experiments, dict):
        return {}
    return {
        name: _experiment_problems(f"experiments.{name}", experiment, schema, variants_table)
        for name, experiment in experiments.items()
        if isinstance(experiment, dict)
    }


def _experiment_problems(where: str, experiment: dict, schema: dict, variants_table: dict) -> list[str]:
    problems = []
    kernel = experiment.get("kernel")
    traits = FAMILIES.get(kernel) if isinstance(kernel, str) else None
    if traits and traits.max_threads == 1 and any(t != 1 for t in _list_of(experiment.get("threads"))):
        problems.append(
            f"{where}.threads: {experiment.get('threads')!r} is not allowed for {kernel}; "
            "allowed: [1] (one pinned thread chases; use kernel loaded for latency under load)"
        )
    for i, affinity in enumerate(_list_of(experiment.get("affinity"))):
        problems += _backwards_ranges(f"{where}.affinity[{i}]", affinity)
    problems += _pair_problems(where, experiment)
    problems += value_bound_problems(where, experiment)
    if traits and "sweep_from" in traits.knobs:
        problems += _sweep_problems(where, experiment)
    problems += _kernel_only_problems(where, experiment, schema)
    for i, group in enumerate(_list_of(experiment.get("chase_group"))):
        problem = _group_problem(group)
        if problem:
            problems.append(f"{where}.chase_group[{i}]: {group!r} is not allowed; {problem}")
    is_family = isinstance(kernel, str) and kernel in families(variants_table)
    # a variant of any architecture (one of another gives skipped records)
    known = all_variant_names(variants_table, kernel) if is_family else None
    for i, variant in enumerate(_list_of(experiment.get("variants"))):
        if known is not None and isinstance(variant, str) and variant != "all" and variant not in known:
            problems.append(
                f"{where}.variants[{i}]: {variant!r} is not a variant of {kernel}; allowed: all, {', '.join(known)}"
            )
    for i, entry in enumerate(_list_of(experiment.get("exclude"))):
        for key, value in entry.items() if isinstance(entry, dict) else ():
            problems += _exclude_problems(f"{where}.exclude[{i}]", key, value, schema, known)
    return problems


def _kernel_only_problems(where: str, experiment: dict, schema: dict) -> list[str]:
    """Keys of other families (x-kernels), and for c2c the axes its pairs
    set (threads, affinity): named, never ignored."""
    kernel = experiment.get("kernel")
    problems = []
    for key, spec in schema["$defs"]["experiment"]["properties"].items():
        kernels = spec.get("x-kernels")
        if kernels and key in experiment and kernel not in kernels:
            problems.append(f"{where}.{key}: {experiment[key]!r} is a key of kernel {', '.join(kernels)} only; "
                            f"allowed: leave it out for kernel {kernel}")
    if isinstance(kernel, str) and kernel in FAMILIES and FAMILIES[kernel].pairs:
        for key in ("threads", "affinity"):
            if key in experiment:
                problems.append(f"{where}.{key}: {experiment[key]!r} is not allowed for c2c; allowed: leave it "
                                "out (the pairs set the CPUs: pairs, pairs_per_class, pair_classes)")
    return problems


def _backwards_ranges(where: str, affinity) -> list[str]:
    if not isinstance(affinity, str) or not affinity.startswith("cpus:"):
        return []
    return [
        f"{where}: {affinity!r} has the range {low}-{high} backwards; allowed: ranges low-high "
        f"(here {high}-{low})"
        for low, high in re.findall(r"([0-9]+)-([0-9]+)", affinity)
        if int(low) > int(high)
    ]


# Thread counts that name the whole machine: on one node's CPUs
# (affinity node:each) they would be skipped in every cell of the matrix.
MACHINE_WIDE_THREADS = ("all", "cores")


def _pair_problems(where: str, experiment: dict) -> list[str]:
    """The node matrix's rows put the threads on one node: a thread count
    meant for the whole machine cannot fit there."""
    if "node:each" not in _list_of(experiment.get("affinity")):
        return []
    return [
        f"{where}.threads[{i}]: {threads!r} is not allowed with affinity node:each (the threads of one "
        "node); allowed: an integer >= 1, node (one per core of the node) or node-smt (every CPU of the node)"
        for i, threads in enumerate(_list_of(experiment.get("threads")))
        if threads in MACHINE_WIDE_THREADS
    ]


def _sweep_problems(where: str, experiment: dict) -> list[str]:
    """The chase sweep runs from sweep_from up to each size: never downwards."""
    try:
        start = parse_size(experiment.get("sweep_from", "4KiB"))
    except (TypeError, ValueError):
        return []  # the schema reports it
    problems = []
    for size in _list_of(experiment.get("size")):
        try:
            end = parse_size(size)
        except (TypeError, ValueError):
            continue
        if isinstance(end, int) and isinstance(start, int) and start > end:
            problems.append(
                f"{where}.sweep_from: {experiment.get('sweep_from', '4KiB')!r} ({start} bytes) exceeds "
                f"size {size!r} ({end} bytes); allowed: at most the smallest size of the sweep"
            )
    return problems


def _exclude_problems(where: str, key, value, schema: dict, known_variants: list[str] | None) -> list[str]:
    """An exclude entry names a real axis and a value that axis accepts; a
    typo would otherwise match nothing and exclude nothing."""
    if key not in AXES:
        return [f"{where}: unknown axis {key!r} (value {value!r}); allowed axes: {', '.join(AXES)}"]
    item = schema["$defs"]["experiment"]["properties"][AXIS_KEYS[key]]["items"]
    if key == "variant" and known_variants is not None:
        allowed = ", ".join(known_variants)
        ok = isinstance(value, str) and value in known_variants
    else:
        allowed = item.get("x-allowed") or ", ".join(map(str, item.get("enum", []))) or item.get("type")
        ok = jsonschema.Draft202012Validator(item).is_valid(value)
    if ok:
        problems = _backwards_ranges(f"{where}.{key}", value) if key == "affinity" else []
        return problems
    return [f"{where}.{key}: {value!r} is not allowed; allowed: one value of the {key} axis: {allowed}"]


GROUP_ALLOWED = (
    "allowed: full, or whole 4 KiB pages per group: bytes (262144), a size (256KiB) or a page count (64 pages)"
)


def _group_problem(group) -> str | None:
    """Why a chase group given as text cannot run (None if it can);
    integers and values of the wrong type or shape are the schema's to
    report."""
    if not isinstance(group, str):
        return None
    try:
        size = parse_group(group)
    except (TypeError, ValueError):
        return None
    if size == "full" or (size >= GROUP_PAGE and size % GROUP_PAGE == 0):
        return None
    return f"it is {size} bytes; {GROUP_ALLOWED}"


def _list_of(value) -> list:
    return value if isinstance(value, list) else []


def _empty_experiments(defaulted: dict, cells: dict[str, list[Cell]]) -> list[str]:
    """An experiment whose exclude entries remove every cell would measure
    nothing and say nothing: an error. Checked on experiments that are
    otherwise valid (the others cannot be expanded): `cells` holds theirs,
    `defaulted` the config with the defaults applied."""
    return [
        f"experiments.{name}.exclude: {defaulted['experiments'][name]['exclude']!r} removes every cell of the "
        "experiment; allowed: entries that leave at least one cell"
        for name, its_cells in cells.items()
        if not its_cells
    ]


# Bytes a file system takes per path component (ext4, xfs, btrfs, tmpfs,
# NFS), and what a written file's temporary name adds to its own
# (membench.core.atomic_files: ".<name>.XXXXXXXX.tmp").
MAX_COMPONENT = 255
TEMPORARY_EXTRA = len("..XXXXXXXX.tmp")
LONGEST_KIND = max((k for kinds in (*(f.figures for f in FAMILIES.values()), DEFAULT_KINDS, ("size", "matrix")) for k in kinds), key=len)


def _shown(name: str) -> str:
    return repr(name if len(name) <= 40 else name[:37] + "...")


def name_length_problems(config: dict, cells: dict[str, list[Cell]]) -> list[str]:
    """Names that become path components (a system's results folder, an
    experiment's runs folder and figure files, each cell id's parts) longer
    than the file system takes: said with the config, before anything runs.
    `cells`: the cells of each experiment otherwise valid."""
    problems = []
    systems = list(config["systems"]) if isinstance(config.get("systems"), dict) else [config.get("system")]
    for key, name in zip(["systems." if config.get("systems") else "system"] * len(systems), systems):
        if isinstance(name, str) and len(name.encode()) > MAX_COMPONENT - TEMPORARY_EXTRA:
            where = f"systems.{_shown(name)}" if key == "systems." else "system"
            problems.append(f"{where}: {_shown(name)} is {len(name.encode())} bytes; allowed: at most "
                            f"{MAX_COMPONENT - TEMPORARY_EXTRA} bytes (it names results/<system>/ and bin/<system>/)")  # fmt: skip
    experiments = config.get("experiments") if isinstance(config.get("experiments"), dict) else {}
    most = MAX_COMPONENT - TEMPORARY_EXTRA - len(f"-{LONGEST_KIND}.svg")
    for name in experiments:
        if isinstance(name, str) and len(name.encode()) > most:
            problems.append(f"experiments.{_shown(name)}: the name is {len(name.encode())} bytes; allowed: at most {most} "
                            f"bytes (it names results/<system>/runs/<experiment>/ and results/figures/<experiment>-<kind>.svg)")  # fmt: skip
    for name, its_cells in cells.items():
        if not isinstance(name, str) or len(name.encode()) > most:
            continue
        longest = max((part for cell in its_cells for part in cell.id.split("/")[1:]),
                      key=lambda p: len(p.encode()), default="")  # fmt: skip
        if len(longest.encode()) > MAX_COMPONENT:
            problems.append(f"experiments.{name}: a cell id's folder {_shown(longest)} is {len(longest.encode())} "
                            f"bytes; allowed: at most {MAX_COMPONENT} bytes (shorter variant or axis values)")  # fmt: skip
    return problems


def validate(config: dict, schema: dict, variants_table: dict) -> dict:
    """The config with defaults applied, or ConfigError listing every problem."""
    return _validated(config, schema, variants_table)[0]


def _validated(config: dict, schema: dict, variants_table: dict) -> tuple[dict, dict[str, list[Cell]]]:
    """The config with defaults applied and each experiment's cells, or
    ConfigError listing every problem. The defaults are applied once, to the
    experiments the schema and the checks above let pass, and those are
    expanded once, unless their counts are refused."""
    if not isinstance(config, dict):
        raise ConfigError([f"(top level): expected a mapping, got {short_repr(config)}"])
    oversized = too_large(config)  # before anything walks or prints it
    if oversized:
        raise ConfigError([oversized])
    validator = jsonschema.Draft202012Validator(schema)
    problems, broken = [], set()
    for error in sorted(validator.iter_errors(config), key=lambda e: list(map(str, e.absolute_path))):
        problems.extend(_explain(error, schema))
        path = list(error.absolute_path)
        broken.add(path[1] if len(path) > 1 and path[0] == "experiments" else None)
    for name, found in _semantic_problems(config, schema, variants_table).items():
        problems += found
        if found:
            broken.add(name)
    problems += peak_config_problems(config.get("systems"))
    defaulted, cells = None, {}
    if isinstance(config.get("experiments"), dict):
        intact = {n: config["experiments"][n] for n in config["experiments"] if n not in broken}
        defaulted = _apply_defaults({**config, "experiments": intact}, schema)
        # counted from the axis lengths before any cross product is made
        counted = count_problems(defaulted, variants_table)
        problems += counted
        if not counted:
            cells = {n: experiment_cells(n, e, variants_table) for n, e in defaulted["experiments"].items()}
        problems += _empty_experiments(defaulted, cells)
    problems += name_length_problems(config, cells)
    if problems:
        raise ConfigError(sorted(problems))
    return defaulted, cells  # with no problem, every experiment is intact


def load(config: dict, schema_path: Path, variants_table: dict) -> tuple[dict, list[Cell]]:
    """The config with defaults applied and its cells in config order (a
    cell id met twice listed once), or ConfigError listing every problem."""
    config, cells = _validated(config, load_schema(schema_path), variants_table)
    return config, distinct_cells(cells.values())
