"""What a config may amount to, checked before anything is expanded.

YAML lets a short file stand for a huge value (anchors and aliases: nine
aliases of nine aliases ... make 9^9 values from 100 lines), and keeps the
last of two equal keys without a word (an experiment written twice is one
experiment). An experiment's cells are the cross product of its axes, so
eight axes of ten values are 10^8 cells, hours of planning before the first
word. Each is refused here in one line, with what to do:
- a config file is read with duplicate keys refused (`read_config`);
- a config's values are counted, aliases expanded, up to MAX_VALUES
  (`too_large`), before validation walks or prints them;
- the cells and repetitions each system would measure are counted from the
  axis lengths, before the cross product is made (`count_problems`).
"""

from __future__ import annotations

import re
import reprlib
from pathlib import Path

import yaml

from membench.plan import knobs
from membench.plan.grammar import ConfigError, parse_group, parse_size
from membench.plan.variants import variant_names

# Values (mappings, lists, scalars) in a config, aliases expanded: the
# largest real config (every family, node matrices) has a few hundred.
MAX_VALUES = 100_000
# Cells and repetitions one system may be asked for: the largest study
# measured (Colfax's) had 27,000 repetitions; a round per repeat keeps
# every cell in one job.
MAX_CELLS = 100_000
MAX_REPETITIONS = 1_000_000


class _StrictLoader(yaml.SafeLoader):
    """A safe loader that refuses a mapping with the same key twice."""


def _no_duplicate_keys(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    loader.flatten_mapping(node)
    seen: dict = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            first = seen.setdefault(key, key_node.start_mark.line + 1)
        except TypeError:
            continue  # an unhashable key: the constructor below says so
        if first != key_node.start_mark.line + 1:
            raise ConfigError([
                f"{Path(key_node.start_mark.name).name}:{key_node.start_mark.line + 1}: the key {key!r} is written "
                f"twice (first at line {first}); YAML would keep only the last one: rename one or merge them"
            ])  # fmt: skip
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _no_duplicate_keys)


def read_config(path: str | Path):
    """A config file's value, duplicate keys and oversized values refused
    (ConfigError, one line)."""
    with open(path, encoding="utf-8") as fh:
        try:
            value = yaml.load(fh, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader
        except yaml.YAMLError as error:
            raise ConfigError([f"{path}: not YAML ({str(error).splitlines()[0]})"]) from None
    problem = too_large(value)
    if problem:
        raise ConfigError([f"{path}: {problem}"])
    return value


def config_file_problems(paths) -> list[str]:
    """What read_config refuses in each of `paths` (the files Snakemake
    read the config from, which its own loader lets pass)."""
    problems = []
    for path in paths:
        try:
            read_config(path)
        except ConfigError as error:
            problems += error.problems
        except OSError:
            pass  # Snakemake has said it
    return problems


def config_file_problems_raise(paths) -> None:
    """ConfigError listing what config_file_problems finds, if anything."""
    problems = config_file_problems(paths)
    if problems:
        raise ConfigError(problems)


def too_large(value, limit: int = MAX_VALUES) -> str | None:
    """Why `value` is too large to check (aliases counted as often as they
    are used), or None; stops counting at `limit`."""
    count, todo = 0, [value]
    while todo:
        item = todo.pop()
        count += 1
        if count > limit:
            return (
                f"the config holds over {limit} values once its YAML aliases (*name) are expanded; "
                "a membench config holds a few hundred: write the values out, or split the study"
            )
        if isinstance(item, dict):
            todo += item.keys()
            todo += item.values()
        elif isinstance(item, list):
            todo += item
    return None


# The experiment keys whose lists are axes of the cross product
# (membench.plan.grammar.experiment_cells): the knob table's, "variants"
# apart (counted by its own rule: `all` is every variant of the family).
AXIS_KEYS = tuple(k.config_key for k in knobs.axes(configured=True) if k.config_key != "variants")


def cell_count(experiment: dict, variants_table: dict) -> int:
    """Cells of one experiment (defaults applied), before its exclusions:
    the product of its axes' lengths, made without making the product."""
    variants = experiment.get("variants") or ["default"]
    count = len(variant_names(variants_table, experiment["kernel"])) if "all" in variants else len(variants)
    for key in AXIS_KEYS:
        value = experiment.get(key)
        count *= len(value) if isinstance(value, list) and value else 1
    return count


def count_problems(config: dict, variants_table: dict) -> list[str]:
    """The cells and repetitions the config makes per system, refused past
    MAX_CELLS or MAX_REPETITIONS, said before anything is expanded."""
    counts = {name: cell_count(e, variants_table) for name, e in config["experiments"].items()}
    cells = sum(counts.values())
    repetitions = sum(counts[name] * _int_or_one(e.get("repeats")) for name, e in config["experiments"].items())
    if not counts:
        return []
    if cells <= MAX_CELLS and repetitions <= MAX_REPETITIONS:
        return []
    biggest = max(counts, key=counts.get)
    experiment = config["experiments"][biggest]
    axes = " x ".join(
        f"{len(experiment[k])} {k}" for k in AXIS_KEYS if isinstance(experiment.get(k), list) and len(experiment[k]) > 1
    )
    return [
        f"experiments: the config makes {cells:,} cells and {repetitions:,} repetitions per system "
        f"(experiments.{biggest}: {counts[biggest]:,} cells, {axes or 'its variants'}); allowed: at most "
        f"{MAX_CELLS:,} cells and {MAX_REPETITIONS:,} repetitions (counted before exclude entries): fewer values "
        "per axis, or several smaller studies"
    ]


# Bounds the harness enforces on values the schema's patterns cannot bound
# (tests/test_config_limits.py reads them from --list-options and the
# harness's parser): bytes of an array, the chase's sweep and group, and
# CPU ids (cpu_set_t's 1024 CPUs: MB_MAX_CPUS in kernels/harness).
MIN_SIZE = 4096  # a page: the schema's minimum for sizes as integers
MAX_SIZE = 1125899906842624  # 1 PiB: the harness's --size, --sweep-from, --group
MAX_CPU = 1023


def value_bound_problems(where: str, experiment: dict) -> list[str]:
    """Sizes written with a unit outside MIN_SIZE..MAX_SIZE (the schema
    bounds only those written as integers), and CPU ids past MAX_CPU."""
    problems = []
    # (key, value, parse, least): a chase group's least is checked with its page rule
    sizes = [(f"size[{i}]", s, parse_size, MIN_SIZE) for i, s in enumerate(_list(experiment.get("size")))]
    sizes += [(f"chase_group[{i}]", g, parse_group, 0) for i, g in enumerate(_list(experiment.get("chase_group")))]
    if "sweep_from" in experiment:
        sizes.append(("sweep_from", experiment["sweep_from"], parse_size, MIN_SIZE))
    for key, text, parse, least in sizes:
        if not isinstance(text, str):
            continue
        try:
            size = parse(text)
        except (TypeError, ValueError):
            continue  # the schema says what is wrong
        if isinstance(size, int) and not least <= size <= MAX_SIZE:
            problems.append(f"{where}.{key}: {text!r} is {size} bytes; allowed: {MIN_SIZE} (4 KiB) to {MAX_SIZE} (1 PiB)")
    for i, affinity in enumerate(_list(experiment.get("affinity"))):
        if isinstance(affinity, str) and affinity.startswith("cpus:"):
            over = [n for n in re.findall(r"[0-9]+", affinity) if int(n) > MAX_CPU]
            if over:
                problems.append(f"{where}.affinity[{i}]: {affinity!r} names CPU {over[0]}; allowed: CPU ids 0 to {MAX_CPU}")
    return problems


def _list(value) -> list:
    return value if isinstance(value, list) else []


def _int_or_one(value) -> int:
    return value if type(value) is int and value > 0 else 1


def short_repr(value, limit: int = 120) -> str:
    """repr of a config value, cut short (an unknown key's value may be a
    whole tree): bounded work, whatever the value's size."""
    shortener = reprlib.Repr()
    shortener.maxlevel, shortener.maxdict, shortener.maxlist, shortener.maxstring = 3, 4, 6, limit
    text = shortener.repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
