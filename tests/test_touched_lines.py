"""One rule for the lines a chase touches (issue 53): the analysis's
levels and idle latencies, `make compare`'s sweep levels and the auto
size's reach all take it from membench.plan.latency_sweep, with the
spacing as a number (NaN or None where a record states none)."""

import ast
import math
from pathlib import Path

import pandas as pd

from membench.plan import latency_sweep

PACKAGE = Path(__file__).resolve().parents[1] / "workflow" / "scripts" / "membench"


def test_one_line_per_pointer_and_every_line_where_the_spacing_is_unknown():
    assert latency_sweep.touched_bytes(2**30, 256, 64) == 2**28
    assert latency_sweep.touched_bytes(2**30, 64, 64) == latency_sweep.touched_bytes(2**30, 32, 64) == 2**30
    assert latency_sweep.touched_bytes(2**30, None, 64) == latency_sweep.touched_bytes(2**30, math.nan, 64) == 2**30
    assert latency_sweep.touched_bytes(2**30, "4096", 128) == 2**25  # a column read back as text
    sets = pd.Series([2**20, 3 * 2**19])
    assert latency_sweep.touched_bytes(sets, 1024, 64).tolist() == [2**16, 3 * 2**15]
    assert latency_sweep.reach_bytes(2**25, 256, 64) == 16 * 2**25 * 4


def test_the_rule_is_written_once():
    """No other module defines its own touched-lines function."""
    defined = [f"{path.relative_to(PACKAGE)}:{node.name}" for path in PACKAGE.rglob("*.py")
               for node in ast.walk(ast.parse(path.read_text()))
               if isinstance(node, ast.FunctionDef) and "touched" in node.name]  # fmt: skip
    assert defined == ["plan/latency_sweep.py:touched_bytes"]
