"""Records of older versions, read as this version's: each version's step,
in memory only (a stored file is never changed), as the record schema's
header documents (workflow/schemas/record.schema.yaml).

The steps name the keys and families they lift by the knob table and the
families' traits (membench.plan.knobs, membench.plan.families): a step
writes the keys the next version has, and those are the table's until a
later version renames one (its own step then says so)."""

from __future__ import annotations

from membench import SCHEMA_VERSION
from membench.core import record_schema
from membench.plan import families, knobs

V1_PAGE_BYTES = 4096  # the version-1 chase grouped 4 KiB pages


class SchemaVersionError(ValueError):
    pass


def migrate(record: dict) -> dict:
    """The record in the current version (a new dict; the argument is
    unchanged); a version newer than this membench is refused."""
    version = record.get("schema")
    if version == SCHEMA_VERSION or type(version) is not int:
        return record  # the schema names a missing or wrong-typed version
    if version > SCHEMA_VERSION or version < 1:
        raise SchemaVersionError(record_schema.version_problem(version))
    out = dict(record)
    for step in range(version, SCHEMA_VERSION):
        out = MIGRATIONS[step](out)
    out["schema"] = SCHEMA_VERSION
    out["migrated_from"] = version
    return out


def _lifted(record) -> tuple[object, list[str]]:
    """(the record in this version, []), or (None, [why]) for a version
    this membench cannot read; anything but a dict as it is."""
    try:
        return (migrate(record) if type(record) is dict else record), []
    except SchemaVersionError as error:
        return None, [str(error)]


def problems(record, stored: bool = True) -> list[str]:
    """record_schema.problems of the record migrated to this version; a
    version this membench cannot read is one problem naming it."""
    record, why = _lifted(record)
    return why or record_schema.problems(record, stored)


class Checker(record_schema.Checker):
    """record_schema.Checker of records of any version this membench reads."""

    def problems(self, record) -> list[str]:
        record, why = _lifted(record)
        return why or super().problems(record)


def _chases(record: dict) -> bool:
    """Whether the record is a pointer chase's (a family with chase groups)."""
    return record.get("kernel") in families.named(lambda traits: "chase_group" in traits.knobs)


def _from_v1(record: dict) -> dict:
    """Version 1 -> 2 (a new dict; a step of migrate)."""
    out = dict(record)
    out["schema"] = 2
    group_asked, spacing_asked = knobs.asked("chase_group"), knobs.asked("chase_spacing")
    if "page_group" in out or "page_group_bytes" in out:
        group = out.pop("page_group_bytes", None)
        pages = out.pop("page_group", None)
        if group is None and type(pages) is int:
            group = pages * V1_PAGE_BYTES
        if _chases(out) and out.get(group_asked) is None and group:
            # the group the chase was asked for: the cell-id axis added
            # later takes it (membench.store.claims), never today's default
            out[group_asked] = group
        if group is not None and type(out.get("working_set_bytes")) is int:
            group = min(group, out["working_set_bytes"])
        out.setdefault("group_bytes", group)
        out.setdefault("group_full", None if group is None else False)
    line = out.get("line_bytes")
    if _chases(out) and out.get(spacing_asked) is None and type(line) is int:
        # a version-1 chase put one pointer in every cache line (the spacing
        # axis came later, at one per 256 B): the spacing is the line size
        out[spacing_asked] = line
        out.setdefault("pointer_spacing_bytes", line)
    if _chases(out) and "cycle_walks" not in out:
        loads, seconds, cycle = out.get("loads"), out.get("seconds"), out.get("cycle_length")
        ok = type(loads) is int and type(seconds) is list and type(cycle) is int and cycle > 0
        out["cycle_walks"] = loads * len(seconds) / cycle if ok else None
    return out


# What a version-2 record lacks: its disturbance was not recorded (null),
# which is never read as "quiet" (membench.core.disturbance).
V2_DISTURB_KEYS = ("disturb_timed_s", "disturb_nivcsw", "disturb_wait_s", "disturb_steal_s", "disturb_steal_cpus",
                   "disturb_others_running", "disturb_core_ghz")  # fmt: skip
V2_C2C_KEYS = ("sample_switched", "samples_switched", "handoff_basis", "handoff_all_ns")


def _from_v2(record: dict) -> dict:
    """Version 2 -> 3 (a new dict; a step of migrate): the disturbance
    keys as null ("not recorded") in every record of a process that ran;
    c2c's per-sample keys likewise, and its median over all samples is
    the one it had."""
    out = dict(record)
    out["schema"] = 3
    if "host" in out:  # a harness wrote it (placeholders carry no harness keys)
        for key in V2_DISTURB_KEYS:
            out.setdefault(key, None)
        if out.get("kernel") in families.named(lambda traits: traits.pairs):
            out.setdefault("handoff_all_ns", out.get("handoff_ns"))
            for key in V2_C2C_KEYS:
                out.setdefault(key, None)
    return out


def _from_v3(record: dict) -> dict:
    """Version 3 -> 4 (a new dict; a step of migrate): the affinity as
    asked moves to its own key, and `affinity` is the one handed to the
    harness, as the harness itself writes it (version 3 stored the asked
    one there, the handed one as `affinity_resolved`)."""
    out = dict(record)
    out["schema"] = 4
    if "affinity" in out:
        out[knobs.asked("affinity")] = out["affinity"]
        out["affinity"] = out.pop("affinity_resolved", out["affinity"])
    return out


# migrate's steps: version -> the function that lifts a record from it to
# the next version (each composes with the others; a new version adds one)
MIGRATIONS = {1: _from_v1, 2: _from_v2, 3: _from_v3}
