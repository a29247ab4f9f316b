"""The record contract as a JSON Schema (workflow/schemas/record.schema.yaml):
loading it once and saying what in a record of this version breaks it
(older versions are migrated first, by membench.store.record_versions).

Speed: a study of 27,000 repetitions holds ~100,000 records, at 120
threads with lists of 120 CPU ids each. They are checked by a validator
compiled from the schema by fastjsonschema; only a record it rejects goes
through jsonschema, whose errors name every key that is wrong and why.
A Checker validates in full only the first record of a shape (same keys,
status, kernel, version); the next ones of that shape (the other ops of
the process, the next repetitions) check only the keys whose values differ
from the last valid record, each against the subschemas that apply to that
key in that shape (compiled once per shape and key). That is exact
because the schema's constraints are per key (`properties`, also under
if/then) or `required` lists, and its `if` conditions test only
SHAPE_KEYS (tests/test_record_schema.py checks that).
"""

from __future__ import annotations

import copy
import functools
import itertools
import marshal
import operator

import fastjsonschema
import jsonschema
import yaml

from membench import SCHEMA_VERSION
from membench.core import paths

SCHEMA_FILE = paths.RECORD_SCHEMA

@functools.cache
def schema(stored: bool = True) -> dict:
    """The schema of a stored record; stored=False: of the harness's own
    output (without the keys membench adds, the `stored` block)."""
    with open(SCHEMA_FILE) as fh:
        loaded = yaml.safe_load(fh)
    if stored:
        return loaded
    harness = copy.deepcopy(loaded)
    harness["allOf"] = [part for part in harness["allOf"] if part != {"$ref": "#/definitions/stored"}]
    return harness


@functools.cache
def _validators(stored: bool):
    return fastjsonschema.compile(schema(stored)), jsonschema.Draft7Validator(schema(stored))


def family_blocks(kernel: str, root: dict | None = None) -> list[str]:
    """The per-family blocks (definitions) the schema applies to records of
    this kernel: every allOf entry whose condition tests the kernel alone."""
    root = root or schema()
    chosen = []
    for part in root["allOf"]:
        condition = part.get("if", {})
        if set(condition.get("properties", {})) == {"kernel"} and jsonschema.Draft7Validator(condition).is_valid({"kernel": kernel}):
            chosen.append(part["then"]["$ref"].rsplit("/", 1)[-1])
    return chosen


# Keys whose values decide which parts of the schema apply: a record whose
# differ from the last valid one is checked in full.
SHAPE_KEYS = ("status", "kernel", "schema", "migrated_from")
CONTAINERS = (list, dict)


def _exact(value) -> bytes:
    """A container as bytes that tell its items' types apart ([1] == [True]
    and {"0": 1} == {"0": 1.0} in Python; not here). marshal version 2
    writes no back-references: equal bytes are equal values and types."""
    return marshal.dumps(value, 2)


def _resolve(root: dict, node: dict) -> dict:
    while "$ref" in node:
        target = root
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = target
    return node


def key_subschemas(root: dict, probe: dict) -> dict[str, list[dict]]:
    """key -> every subschema that applies to its value in records of the
    shape `probe` (the values of SHAPE_KEYS): `properties` of the root and
    of each allOf part and if/then/else branch taken for the probe."""
    out: dict[str, list[dict]] = {}

    def walk(node: dict) -> None:
        node = _resolve(root, node)
        for key, sub in node.get("properties", {}).items():
            out.setdefault(key, []).append(sub)
        for part in node.get("allOf", []):
            walk(part)
        if "if" in node:
            condition = {"definitions": root.get("definitions", {}), **node["if"]}
            branch = node.get("then" if jsonschema.Draft7Validator(condition).is_valid(probe) else "else")
            if branch:
                walk(branch)

    walk(root)
    return out


@functools.cache
def _keys_validator(stored: bool, probe: tuple, keys: tuple):
    """The compiled check of some keys' values (an object of just those) in
    records of one shape: every subschema that applies to each key."""
    root = schema(stored)
    subs = key_subschemas(root, dict(probe))
    properties = {key: {"allOf": subs.get(key, [])} for key in keys}
    return fastjsonschema.compile({"definitions": root.get("definitions", {}), "properties": properties})


class Checker:
    """problems() of many records, fast (see the module's docstring)."""

    def __init__(self, stored: bool = True):
        self.stored = stored
        self.full, _ = _validators(stored)
        self.keys: list[str] = []  # the last valid record's keys, in order
        self.values: list = []
        self.exact: dict[int, bytes] = {}  # position of a container -> _exact(it)
        self.probe: tuple = ()

    def _remember(self, keys: list[str], values: list, record: dict) -> None:
        self.keys, self.values = keys, values
        self.exact = {i: _exact(v) for i, v in enumerate(values) if type(v) in CONTAINERS}
        self.shape = [i for i, key in enumerate(keys) if key in SHAPE_KEYS]
        self.probe = tuple((key, record[key]) for key in SHAPE_KEYS if key in record)

    def valid(self, record: dict) -> bool:
        keys = list(record)
        if keys == self.keys:
            # Position by position (C loops): which values differ from the
            # last valid record's, in value or type; equal containers also
            # in their items' types.
            values = list(record.values())
            differs = list(map(operator.or_, map(operator.ne, values, self.values),
                               map(operator.is_not, map(type, values), map(type, self.values))))  # fmt: skip
            exact = self.exact
            for i, old in exact.items():
                if not differs[i] and _exact(values[i]) != old:
                    differs[i] = True
            changed = list(itertools.compress(range(len(values)), differs))
            if not any(differs[i] for i in self.shape):
                names = tuple(keys[i] for i in changed)
                try:
                    _keys_validator(self.stored, self.probe, names)(dict(zip(names, (values[i] for i in changed))))
                except fastjsonschema.JsonSchemaException:
                    return False
                for i in changed:
                    if type(values[i]) in CONTAINERS:
                        exact[i] = _exact(values[i])
                    else:
                        exact.pop(i, None)
                self.values = values
                return True
        try:
            self.full(record)
        except fastjsonschema.JsonSchemaException:
            return False
        self._remember(keys, list(record.values()), record)
        return True

    def problems(self, record) -> list[str]:
        """As problems(record): a record of this version (an older one is
        migrated first by membench.store.record_versions)."""
        if type(record) is dict and record.get("schema") == SCHEMA_VERSION and self.valid(record):
            return []
        return problems(record, self.stored)


def _where(error: jsonschema.ValidationError) -> str:
    path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    return path.lstrip(".") or "record"


def _describe(error: jsonschema.ValidationError) -> list[str]:
    """One line per leaf error: the key, its value and what is allowed (the
    key's description from the schema, with its unit)."""
    if error.context:
        # anyOf/oneOf: the alternatives' errors say more than "not valid under any"
        leaves = [line for sub in error.context for line in _describe(sub)]
        if error.validator in ("anyOf", "oneOf"):
            return [f"{_where(error)}={error.instance!r} is not allowed: " + "; or ".join(
                sorted({line.split(": ", 1)[-1] for line in leaves}))]
        return leaves
    if error.validator == "required":
        return [f"{_where(error) + ': ' if error.absolute_path else ''}{error.message.replace(' is a required property', '')} is missing"]
    if error.validator == "const" and error.absolute_path and error.absolute_path[-1] == "valid":
        return [f"valid={error.instance!r}: an ok record must have validated (valid true)"]
    if error.validator == "type" and error.absolute_path and error.absolute_path[-1] == "reason":
        if error.instance is None:
            return ["reason is null: a record that is not ok must say why"]
    message = error.message
    if error.validator == "enum":
        message = f"{error.instance!r} is not one of {error.validator_value}"
    return [f"{_where(error)}={error.instance!r}: {message}"]


def problems(record, stored: bool = True) -> list[str]:
    """What in one record of this version breaks the schema (empty when
    nothing); a record of another version is said to be one."""
    if type(record) is not dict:
        return [f"a record must be a JSON object, not {type(record).__name__}"]
    if type(record.get("schema")) is int and record["schema"] != SCHEMA_VERSION:
        return [version_problem(record["schema"])]
    fast, full = _validators(stored)
    try:
        fast(record)
        return []
    except fastjsonschema.JsonSchemaException:
        pass
    found, said = [], set()
    for error in sorted(full.iter_errors(record), key=lambda e: list(e.absolute_path)):
        for line in _describe(error):
            where = line.split("=", 1)[0] if "=" in line.split(":", 1)[0] else line
            if where not in said:  # one line per key (its first broken rule)
                said.add(where)
                found.append(line)
    return found or ["rejected by the record schema"]


def version_problem(version: int) -> str:
    """Why a record of another version is not one of this version's."""
    if version > SCHEMA_VERSION:
        return (f"record schema version {version} is newer than this membench's {SCHEMA_VERSION}: "
                f"read it with the membench that wrote it (or a newer one)")  # fmt: skip
    if version < 1:
        return f"record schema version {version} is older than 1 and cannot be read"
    return f"record schema version {version} is not {SCHEMA_VERSION}: membench.store.record_versions migrates it"
