"""`size: auto` is resolved in one place (membench.measure.auto_size), by
the rule its family's `auto_size` trait names, never by the family's name;
the harness takes bytes only and has no rule of its own (issue 43)."""

import dataclasses
import re
import subprocess
from pathlib import Path

import pytest

from membench.measure import auto_size, harness
from membench.plan import families
from membench.plan.request import Request

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "workflow" / "scripts" / "membench"
MiB = 2**20
TOPOLOGY = {
    "llc_bytes": 32 * MiB, "llc_total_bytes": 64 * MiB, "line_bytes": 64,
    "caches": [{"level": 2, "type": "Unified", "size_bytes": 2 * MiB, "shared_cpus": [0]}],
    "cpus": [{"cpu": c, "node": 0} for c in range(4)],
    "nodes": [{"node": 0, "cpus": [0, 1, 2, 3], "memory_bytes": 2**36, "distances": [10]}],
}  # fmt: skip
# The sizes auto gave before the rules met in one place: the chase its
# sweep's reach (one pointer per 256 B, half the memory available), c2c its
# pool, every other family STREAM's arrays.
REACH_BYTES = auto_size.reach_size(TOPOLOGY, 256, 2**41)
EXPECTED = {"chase": REACH_BYTES, "c2c": 4 * 2 * MiB}
ARRAYS_BYTES = 4 * 64 * MiB


@pytest.mark.parametrize("kernel", list(families.FAMILIES))
def test_every_family_resolves_auto_by_its_trait(kernel, monkeypatch):
    monkeypatch.setattr(auto_size.memory, "host_memory", lambda: type("Host", (), {"available": 2**41})())
    request = Request(system="s", kernel=kernel, variant="default", ops=(), threads=2, affinity="close",
                      policy="default", pages="4k", init="parallel", size="auto", ntimes=3, repeat=0,
                      pair="same_l2:0")  # fmt: skip
    expected = EXPECTED.get(kernel, ARRAYS_BYTES)
    assert auto_size.resolve(request, TOPOLOGY) == expected
    # what the round hands the harness is that size
    resolved, _ = (harness.c2c_resolve if families.family(kernel).pairs else harness.resolve)(request, TOPOLOGY, [0, 1, 2, 3])
    assert resolved["size"] == expected
    assert auto_size.resolve(dataclasses.replace(request, size=3 * MiB), TOPOLOGY) == 3 * MiB


def test_no_other_module_resolves_auto():
    """No module but auto_size.py tells a size of "auto" from bytes (as the
    chase's rule once did, behind `kernel == "chase"`); the C harness has
    no `auto` of its own."""
    own = PACKAGE / "measure" / "auto_size.py"
    compares = re.compile(r"""size\b.*[!=]=\s*["']auto["']|["']auto["']\s*[!=]=.*size\b""")
    found = [f"{p.relative_to(REPO)}:{n}" for p in PACKAGE.rglob("*.py") if p != own
             for n, line in enumerate(p.read_text().splitlines(), 1) if compares.search(line)]  # fmt: skip
    assert found == []
    for c_file in ("cli.c", "options.c"):
        assert '"auto"' not in (REPO / "kernels" / "harness" / c_file).read_text(), c_file


def test_the_harness_wants_bytes(stream_binary):
    """No --size: a usage error that names it, not a size of its own."""
    out = subprocess.run([str(stream_binary), "--op", "copy", "--ntimes", "2"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "--size" in out.stderr and "required" in out.stderr
    out = subprocess.run([str(stream_binary), "--op", "copy", "--size", "auto"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "'auto'" in out.stderr
