"""A new latency family, and code that asks the table by trait (issue 53).
A copy of the workflow gets "hop", a second chase-like family (the chase's
loop and cycle under a family of its own, metric LATENCY) by its rows in
the kernel table, its entry in variants.yaml, its row in plan/families.py
and its name in the record schema's per-family blocks (its records carry
the latency keys): four files, no C file of its own since its rows name
the chase's functions (families.h declares them already). A family with a
knob of its own, "strider" (the chase's op stride, its --stride a
configured knob that no other family lists), is those four files and the
knob's row in plan/knobs.py and its key in the config schema: six. One
Snakemake run then plans, builds, measures, validates and reports each."""

import json
from pathlib import Path

import pytest

from helpers_run import edit_once, measured_change
from test_family_declarations import mismatch

FOUR_FILES = {"kernels/families/kernel_table.c", "kernels/families/variants.yaml",
              "workflow/scripts/membench/plan/families.py", "workflow/schemas/record.schema.yaml"}  # fmt: skip
SIX_FILES = FOUR_FILES | {"workflow/scripts/membench/plan/knobs.py", "workflow/schemas/config.schema.yaml"}

FAMILY_ROW = """
    {.name = "hop", .narrays = 1, .array_names = chase_arrays, .elem_size = sizeof(void *),
     .run = mb_chase_run, .min_threads = 1, .max_threads = 1, .pin = 1, .options = mb_chase_options,
     .description = "test fixture: the chase's random walk under a family of its own"},
};
const size_t mb_family_count"""
KERNEL_ROWS = """
    {.family = "hop", .op = "random", .fn = mb_chase_chase, .reads = 1,
     .description = "p = *p over the chase's random single cycle"},
};
const size_t mb_kernel_count"""
VARIANTS_ENTRY = """  hop:
    description: test fixture, the chase's random walk under a family of its own
    sources: [families/chase.c, families/chase_cycle.c, families/chase_walk.c, families/chase_sweep.c]
    ops: [random]
    memory: {arrays: 1, order_bytes_per_line: 4}
    variants:
      default:
        description: the chase loop, compiled -O2
        cflags: [-O2]
        features: {vector_bits: 0, nt_stores: false, sw_prefetch: false, opt_level: "-O2"}
"""
CHASE_KNOBS = '"threads", "affinity", "sweep_from", "points_per_octave"'
FAMILIES_ROW = """    "hop": Family(LATENCY, knobs=("threads", "affinity", "sweep_from", "points_per_octave", *_CHASE),
                  latency_op="random", min_threads=1, max_threads=1, figures=("latency",), auto_size=REACH),
}  # fmt: skip"""
# strider's knob: the chase's --stride (default 64 in kernels/families/chase.c).
STRIDE_KNOB_ROW = """    Knob("chase_stride", 64, request="chase_stride", option="stride", record="chase_stride_requested",
         in_request=OWN, in_record=OWN, in_id=IdPart("st", CHANGED), **_BYTES),
    Knob("sweep_from","""  # noqa: E501
STRIDE_CONFIG_KEY = """      chase_stride:
        description: strider only, bytes from one pointer to the next (a multiple of 8).
        type: array
        minItems: 1
        items: {type: integer, minimum: 8, maximum: 1073741824, multipleOf: 8}
        default: [64]
      sweep_from:"""
STRIDE_RECORD_KEY = """  chase_stride_requested: {description: "strider: its stride as configured, bytes; null elsewhere", anyOf: [{$ref: "#/definitions/count"}, {type: "null"}]}
  chase_group_requested:"""  # noqa: E501
CONFIG = {
    "system": "testbox",
    "repeats": 1,
    "experiments": {"hopping": {"kernel": "hop", "threads": [1], "affinity": ["close"], "size": ["1MiB"],
                                "sweep_from": "256KiB", "points_per_octave": 1}},
}  # fmt: skip


def add_hop_family(workdir: Path) -> None:
    add_family(workdir, "hop", "random", CHASE_KNOBS)


def add_strider_family(workdir: Path) -> None:
    """strider, and chase_stride a knob of its own (the chase lists it not)."""
    add_family(workdir, "strider", "stride", CHASE_KNOBS + ', "chase_stride"', record_key=STRIDE_RECORD_KEY)
    plan = workdir / "workflow" / "scripts" / "membench" / "plan"
    edit_once(plan / "knobs.py", '    Knob("sweep_from",', STRIDE_KNOB_ROW)
    edit_once(workdir / "workflow" / "schemas" / "config.schema.yaml", "      sweep_from:", STRIDE_CONFIG_KEY)


def add_family(workdir: Path, name: str, op: str, knobs: str, record_key: str = "") -> None:
    """A chase-like family `name` running the chase's op `op`, listing
    `knobs` (the text between its row's "knobs=(" and the chase's knobs)."""
    families_dir = workdir / "kernels" / "families"
    table = families_dir / "kernel_table.c"
    edit_once(table, "\n};\nconst size_t mb_family_count", FAMILY_ROW.replace('"hop"', f'"{name}"'))
    edit_once(table, "\n};\nconst size_t mb_kernel_count",
              KERNEL_ROWS.replace('"hop"', f'"{name}"').replace('"random"', f'"{op}"'))  # fmt: skip
    entry = VARIANTS_ENTRY.replace("  hop:", f"  {name}:").replace("[random]", f"[{op}]")
    (families_dir / "variants.yaml").write_text((families_dir / "variants.yaml").read_text() + entry)
    row = FAMILIES_ROW.replace('"hop"', f'"{name}"').replace(f"knobs=({CHASE_KNOBS}", f"knobs=({knobs}")
    edit_once(workdir / "workflow" / "scripts" / "membench" / "plan" / "families.py", "\n}  # fmt: skip", "\n" + row)
    schema = workdir / "workflow" / "schemas" / "record.schema.yaml"
    edit_once(schema, "{kernel: {const: chase}}", f"{{kernel: {{enum: [chase, {name}]}}}}")
    edit_once(schema, "{not: {enum: [chase, loaded, c2c]}}", f"{{not: {{enum: [chase, {name}, loaded, c2c]}}}}")
    if record_key:
        edit_once(schema, "  chase_group_requested:", record_key)


@pytest.fixture(scope="module")
def measured(tmp_path_factory, venv_bin):
    workdir = measured_change(tmp_path_factory.mktemp("new_latency_family"), add_hop_family, FOUR_FILES, venv_bin, CONFIG)
    assert mismatch(workdir / "kernels" / "families") == (set(), set())
    return workdir


def test_its_records_are_latencies_validated_and_stored(measured):
    paths = sorted((measured / "results" / "testbox" / "runs").rglob("r*.jsonl"))
    records = [json.loads(line) for path in paths for line in path.read_text().splitlines()]
    assert records and {(r["kernel"], r["op"]) for r in records} == {("hop", "random")}
    for record in records:
        assert record["status"] == "ok" and record["valid"] is True, record.get("reason")
        assert record["ns_per_load"] > 0 and record["gbps"] is None and record["experiment"] == "hopping"


def test_the_summary_and_the_report_show_it(measured):
    cells = (measured / "results" / "summary" / "cells.csv").read_text()
    assert "hopping/hop-default/" in cells
    report = (measured / "results" / "report.html").read_text()
    assert 'id="experiment-hopping"' in report


STRIDER_CONFIG = {
    "system": "testbox",
    "repeats": 1,
    "experiments": {"striding": {"kernel": "strider", "threads": [1], "affinity": ["close"], "size": ["1MiB"],
                                 "sweep_from": "512KiB", "points_per_octave": 1, "chase_stride": [64, 128]}},
}  # fmt: skip


def test_a_family_with_a_knob_of_its_own_measures_each_value(tmp_path_factory, venv_bin):
    workdir = measured_change(tmp_path_factory.mktemp("knob_family"), add_strider_family, SIX_FILES, venv_bin, STRIDER_CONFIG)
    paths = sorted((workdir / "results" / "testbox" / "runs").rglob("r*.jsonl"))
    records = [json.loads(line) for path in paths for line in path.read_text().splitlines()]
    assert {(r["kernel"], r["op"]) for r in records} == {("strider", "stride")}
    assert all(r["status"] == "ok" and r["valid"] is True for r in records)
    assert {r["chase_stride_requested"] for r in records} == {64, 128}
    assert {r["stride_bytes"] for r in records} == {64, 128}
