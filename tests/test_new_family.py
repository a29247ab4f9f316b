"""A new bandwidth family is its C file, its declarations in families.h,
its rows in the kernel table, its entry in variants.yaml and its row in
plan/families.py: nothing else (issues 43, 53). A copy of the workflow gets
a fixture family, "fill" (a memset of the scalar and a sum over one array,
validated: tests/fixtures/new_family/fill.c), by those five files alone,
the path the real families take (families.h, checked against the table's
rows: tests/test_family_declarations.py); one Snakemake run then plans,
builds, measures and reports it."""

import json
from pathlib import Path

import pytest

from helpers_run import edit_once, measured_change
from test_family_declarations import mismatch
from membench.findings import answers

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "new_family"
# What adding the family changes in the copy, and nothing more.
FIVE_FILES = {"kernels/families/fill.c", "kernels/families/families.h", "kernels/families/kernel_table.c",
              "kernels/families/variants.yaml", "workflow/scripts/membench/plan/families.py"}  # fmt: skip

# families.h: the family's functions, as every family declares its own.
DECLARATIONS = """
/* ---- family "fill" (fill.c): test fixture ---- */
MB_WEAK void mb_fill_set(mb_arrays_t *A);
MB_WEAK void mb_fill_sum(mb_arrays_t *A);
MB_WEAK void mb_fill_model_set(double *v, double s);
MB_WEAK void mb_fill_model_sum(double *v, double s);
MB_FAMILY_HOOKS(fill);

#endif
"""
# The kernel table: one family row, one row per op (STREAM counting: set
# writes a, sum reads it).
TABLE_ARRAYS = """
static const char *const fill_arrays[] = {"a"};

const mb_family_t mb_family_table[] = {"""
FAMILY_ROW = """
    {.name = "fill", .narrays = 1, .array_names = fill_arrays, .elem_size = sizeof(double),
     .scalar = 3.0, .init = mb_fill_init, .validate = mb_fill_validate, .corrupt = mb_fill_corrupt,
     .description = "test fixture: a[j] = s, then sum += a[j], on one double array a=1, s=3"},
};
const size_t mb_family_count"""
KERNEL_ROWS = """
    {.family = "fill", .op = "set", .fn = mb_fill_set, .writes = 1, .model = mb_fill_model_set,
     .description = "a[j] = s"},
    {.family = "fill", .op = "sum", .fn = mb_fill_sum, .reads = 1, .model = mb_fill_model_sum,
     .description = "sum += a[j]"},
};
const size_t mb_kernel_count"""
VARIANTS_ENTRY = """  fill:
    description: test fixture, a memset of the scalar and a sum over one double array
    sources: [families/fill.c]
    ops: [set, sum]
    memory: {arrays: 1}
    variants:
      default:
        description: plain C, compiled -O2
        cflags: [-O2]
        features: {vector_bits: 0, nt_stores: false, sw_prefetch: false, opt_level: "-O2"}
"""
FAMILIES_ROW = """    "fill": Family(BANDWIDTH),
}  # fmt: skip"""
CONFIG = {
    "system": "testbox",
    "repeats": 1,
    "ntimes": 3,
    "experiments": {"filling": {"kernel": "fill", "threads": [1], "affinity": ["close"], "size": ["2MiB"]}},
}


def add_fill_family(workdir: Path) -> None:
    families_dir = workdir / "kernels" / "families"
    (families_dir / "fill.c").write_text((FIXTURE / "fill.c").read_text())
    edit_once(families_dir / "families.h", "\n#endif\n", DECLARATIONS)
    table = families_dir / "kernel_table.c"
    edit_once(table, "\nconst mb_family_t mb_family_table[] = {", TABLE_ARRAYS)
    edit_once(table, "\n};\nconst size_t mb_family_count", FAMILY_ROW)
    edit_once(table, "\n};\nconst size_t mb_kernel_count", KERNEL_ROWS)
    variants_file = families_dir / "variants.yaml"
    variants_file.write_text(variants_file.read_text() + VARIANTS_ENTRY)
    families_py = workdir / "workflow" / "scripts" / "membench" / "plan" / "families.py"
    edit_once(families_py, "\n}  # fmt: skip", "\n" + FAMILIES_ROW)


@pytest.fixture(scope="module")
def measured(tmp_path_factory, venv_bin):
    workdir = measured_change(tmp_path_factory.mktemp("new_family"), add_fill_family, FIVE_FILES, venv_bin, CONFIG)
    assert mismatch(workdir / "kernels" / "families") == (set(), set())
    return workdir


def test_its_records_are_measured_validated_and_stored(measured):
    paths = sorted((measured / "results" / "testbox" / "runs").rglob("r*.jsonl"))
    records = [json.loads(line) for path in paths for line in path.read_text().splitlines()]
    assert {(r["kernel"], r["op"]) for r in records} == {("fill", "set"), ("fill", "sum")}
    for record in records:
        assert record["status"] == "ok" and record["valid"] is True, record.get("reason")
        assert record["gbps"] > 0 and record["experiment"] == "filling"
    set_record = next(r for r in records if r["op"] == "set")
    assert set_record["bytes_per_iter"] == 2 * 2**20  # one write of the 2 MiB array


def test_the_summary_and_the_report_show_it(measured):
    cells = (measured / "results" / "summary" / "cells.csv").read_text()
    assert "filling/fill-default/" in cells
    report = (measured / "results" / "report.html").read_text()
    assert 'id="experiment-filling"' in report and "filling/fill-default/" in report
    assert answers.OWN_QUESTION in report  # the question of a family that names no paper
