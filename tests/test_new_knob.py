"""A new knob is its row in plan/knobs.py, its families' rows in
plan/families.py and its keys in both schemas: nothing else (issue 53).
A copy of the workflow gets `chase_stride` (the chase's --stride, until
then a harness constant: tests/test_knobs.py's NOT_CONFIGURED) as a
configured axis by those four files alone; in that copy the knob then
reaches the config's axes, the cell ids, the request and its digest, the
harness's argv, the record keys the round writes and reads back, and the
summary's cell columns."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from helpers_run import changed_copy, edit_once
from membench.measure import harness
from membench.plan import checks, rounds, variants
from membench.plan.request import Request

REPO = Path(__file__).resolve().parents[1]
# What adding the knob changes in the copy, and nothing more.
FOUR_FILES = {"workflow/scripts/membench/plan/knobs.py", "workflow/scripts/membench/plan/families.py",
              "workflow/schemas/config.schema.yaml", "workflow/schemas/record.schema.yaml"}  # fmt: skip

# The row: the chase's --stride (default 64 in kernels/families/chase.c),
# named in a cell id only off its default, so every earlier id stays.
KNOB_ROW = """    Knob("chase_stride", 64, request="chase_stride", option="stride", record="chase_stride_requested",
         in_request=OWN, in_record=OWN, in_id=IdPart("st", CHANGED), **_BYTES),
    Knob("sweep_from","""
CHASE_FAMILY = """"chase": Family(LATENCY, knobs=("threads", "affinity", "sweep_from", "points_per_octave", "chase_stride", *_CHASE),"""
CONFIG_KEY = """      chase_stride:
        description: >-
          chase only: bytes between consecutive pointers of op stride, the
          chase prefetchers follow (a multiple of 8).
        type: array
        minItems: 1
        items: {type: integer, minimum: 8, maximum: 1073741824, multipleOf: 8}
        default: [64]
      sweep_from:"""
RECORD_KEY = """  chase_stride_requested: {description: "chase: op stride's stride as in the config, bytes; null for other families", anyOf: [{$ref: "#/definitions/count"}, {type: "null"}]}
  chase_group_requested:"""  # noqa: E501

CONFIG = {
    "system": "box",
    "experiments": {
        "strides": {"kernel": "chase", "chase_stride": [64, 128, 4096], "exclude": [{"chase_stride": 4096}]},
        "bandwidth": {"kernel": "stream", "threads": [2], "affinity": ["close"]},
    },
}
# What the copy reports: the plan stage's lists and, per cell, its id, its
# request's JSON, its record keys, its argv and its request digest.
PROBE = """
import json, sys
sys.path.insert(0, sys.argv[1] + "/workflow/scripts")
from pathlib import Path
from membench.analyse import stats
from membench.measure import harness, identity
from membench.plan import checks, config_limits, grammar, rounds, variants
from membench.plan.request import Knobs, Request
config, listings = json.loads(Path(sys.argv[2]).read_text()), json.loads(Path(sys.argv[3]).read_text())
table = variants.load_variants(sys.argv[1] + "/kernels/families/variants.yaml")
_, cells = checks.load(config, Path(sys.argv[1]) / "workflow/schemas/config.schema.yaml", table)
resolved = {"threads": 1, "size": 1 << 24, "policy": "default", "affinity": "none"}
out = {"axes": grammar.AXES, "ordered": grammar.ORDERED_AXES, "axis_keys": config_limits.AXIS_KEYS,
       "cell_keys": stats.CELL_KEYS, "knobs": {k: f.default for k, f in Knobs.__dataclass_fields__.items()
                                                if k == "chase_stride"},
       "read_back": identity.REQUEST_KNOBS, "cells": [],
       "counted": config_limits.cell_count(config["experiments"]["strides"], table)}
for cell in cells:
    asked = rounds.cell_request(cell, "box", 0, table)
    req = Request.of_dict(asked)
    out["cells"].append({"id": cell.id, "request": asked, "recorded": req.as_recorded(), "digest": rounds.digest(asked),
                         "argv": harness.harness_argv("bin", req, resolved, listings[cell.kernel])})
print(json.dumps(out))
"""


def add_chase_stride(workdir: Path) -> None:
    plan = workdir / "workflow" / "scripts" / "membench" / "plan"
    edit_once(plan / "knobs.py", '    Knob("sweep_from",', KNOB_ROW)
    edit_once(plan / "families.py", CHASE_FAMILY.replace('"chase_stride", ', ""), CHASE_FAMILY)
    edit_once(workdir / "workflow" / "schemas" / "config.schema.yaml", "      sweep_from:", CONFIG_KEY)
    edit_once(workdir / "workflow" / "schemas" / "record.schema.yaml", "  chase_group_requested:", RECORD_KEY)


@pytest.fixture(scope="module")
def copy(tmp_path_factory, option_listings):
    workdir = changed_copy(tmp_path_factory.mktemp("new_knob"), add_chase_stride, FOUR_FILES)
    (workdir / "probe.json").write_text(json.dumps(CONFIG))
    (workdir / "listings.json").write_text(json.dumps(option_listings))
    out = subprocess.run([sys.executable, "-c", PROBE, str(workdir), str(workdir / "probe.json"),
                          str(workdir / "listings.json")], capture_output=True, text=True, timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def here(option_listings):
    """The same config's cells in this checkout, without the knob."""
    table = variants.load_variants(REPO / "kernels" / "families" / "variants.yaml")
    config = {**CONFIG, "experiments": {"bandwidth": CONFIG["experiments"]["bandwidth"],
                                        "strides": {"kernel": "chase"}}}  # fmt: skip
    _, cells = checks.load(config, REPO / "workflow" / "schemas" / "config.schema.yaml", table)
    resolved = {"threads": 1, "size": 1 << 24, "policy": "default", "affinity": "none"}
    return {cell.id: {"digest": rounds.digest(rounds.cell_request(cell, "box", 0, table)),
                      "argv": harness.harness_argv("bin", Request.of_dict(rounds.cell_request(cell, "box", 0, table)),
                                                   resolved, option_listings[cell.kernel])}
            for cell in cells}  # fmt: skip


def test_it_is_an_axis_of_the_config(copy):
    assert copy["axes"][-1] == copy["axis_keys"][-1] == "chase_stride"
    assert copy["ordered"][-2:] == ["chase_stride", "pair"]
    assert copy["counted"] == 3  # before the exclusion
    assert copy["knobs"] == {"chase_stride": 64}


def test_its_cells_have_ids_of_their_own_and_earlier_ids_stay(copy, here):
    chase = [c["id"] for c in copy["cells"] if "/chase-" in c["id"]]
    assert chase == ["strides/chase-default/t1_none_default_variant_parallel_sauto_g256KiB",
                     "strides/chase-default/t1_none_default_variant_parallel_sauto_g256KiB_st128"]  # fmt: skip
    assert set(here) == {c["id"] for c in copy["cells"]} - {chase[1]}


def test_its_request_asks_the_harness_for_it(copy, here):
    cells = {c["id"]: c for c in copy["cells"]}
    strided = cells["strides/chase-default/t1_none_default_variant_parallel_sauto_g256KiB_st128"]
    assert strided["request"]["chase_stride"] == 128
    assert strided["argv"][strided["argv"].index("--stride") + 1] == "128"
    stream = cells["bandwidth/stream-default/t2_close_default_variant_parallel_sauto"]
    assert "chase_stride" not in stream["request"]  # other families' requests stay as they were
    assert (stream["digest"], stream["argv"]) == (here[stream["id"]]["digest"], here[stream["id"]]["argv"])
    # the chase's default cell asks for the harness's default stride, now by name
    default = cells["strides/chase-default/t1_none_default_variant_parallel_sauto_g256KiB"]
    at = default["argv"].index("--stride")
    assert default["argv"][at + 1] == "64"
    assert default["argv"][:at] + default["argv"][at + 2:] == here[default["id"]]["argv"]

def test_its_records_state_it_and_are_read_back_by_it(copy):
    cells = {c["id"]: c for c in copy["cells"]}
    assert cells["strides/chase-default/t1_none_default_variant_parallel_sauto_g256KiB_st128"]["recorded"][
        "chase_stride_requested"] == 128  # fmt: skip
    assert cells["bandwidth/stream-default/t2_close_default_variant_parallel_sauto"]["recorded"][
        "chase_stride_requested"] is None  # fmt: skip
    assert copy["read_back"]["chase_stride"] == "chase_stride_requested"
    assert copy["cell_keys"][-1] == "chase_stride_requested"
