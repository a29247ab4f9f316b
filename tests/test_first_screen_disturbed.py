"""The first screen of a small study on a busy machine (issue 55 item 2):
stream at every thread, `size: [8MiB, auto]`, 3 repeats, whose 8 MiB cell
ran in cache, undisturbed, and whose three auto-size runs were all measured
and all marked disturbed. The auto cell was measured: its headline row says
every run was disturbed, with the bound those runs give (bandwidth at
least the fastest run, flagged), never "no bandwidth cell measured past
the caches"; the effective concurrency says why it has no number in the
same words, not that no bandwidth cell ran."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "workflow" / "scripts"))
sys.path.insert(0, str(REPO / "tools"))
sys.path.insert(0, str(REPO / "tests"))

from membench.report import terminal  # noqa: E402
from test_findings import derive_from  # noqa: E402
from test_first_screen_values import THREADS, bandwidth_run  # noqa: E402

LLC = 32 * 2**20  # the last-level cache the team can use
# (cell, size requested, bytes per array, [(triad GB/s, disturbed), ...])
PLANTED = [
    ("s8MiB", "8MiB", 8 * 2**20, [(610.0, False), (604.0, False), (598.0, False)]),
    ("sauto", "auto", 4 * LLC, [(91.0, True), (97.5, True), (88.0, True)]),
]
CONFIG = {"experiments": {"busy": {"kernel": "stream", "threads": ["all"], "size": ["8MiB", "auto"]}}}
NOT_MEASURED = "no bandwidth cell measured past the caches"


def planted() -> pd.DataFrame:
    rows = [bandwidth_run("busy", "stream", cell, repeat, "triad", THREADS, gbps, disturbed, size_requested=size,
                          size_bytes=per_array, arrays=3, llc_usable_bytes=LLC)
            for cell, size, per_array, runs in PLANTED for repeat, (gbps, disturbed) in enumerate(runs)]  # fmt: skip
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def screen() -> tuple[list[dict], dict]:
    findings = derive_from(CONFIG, planted())["findings"]
    return findings["systems"][0]["headline"], findings


def test_the_measured_auto_cell_leads_with_its_bound(screen):
    rows, _ = screen
    (row,) = [r for r in rows if r["group"] == "highest bandwidth"]
    fastest = max(gbps for gbps, _ in PLANTED[1][3])
    assert row["what"] == "stream" and row["cells"] == ["busy/sauto"], row
    assert row["bound"] == "at least" and row["value"] == pytest.approx(fastest) and row["n"] == 0
    assert row["flag"] == "⚑ all 3 runs disturbed" and f"at least {fastest:.1f} GB/s" in row["how"]
    assert row["status"] == "lower bound: every run disturbed"
    assert not any(NOT_MEASURED in f"{r['how']} {r['status']}" for r in rows)


def test_the_effective_concurrency_says_every_run_was_disturbed(screen):
    rows, _ = screen
    (row,) = [r for r in rows if r["group"] == "effective concurrency"]
    fastest = max(gbps for gbps, _ in PLANTED[1][3])
    assert row["value"] is None
    assert (f"not known: every run of the bandwidth cells past the caches was disturbed (stream at least {fastest:.1f} "
            "GB/s, flagged above)") == row["how"]  # fmt: skip


def test_the_terminal_says_the_bound_and_the_flag(screen):
    _, findings = screen
    text = "\n".join(terminal.summary_lines(findings))
    assert "stream triad ≥ 97.5 GB/s (⚑ all 3 runs disturbed)" in text and NOT_MEASURED not in text
    assert "no bandwidth cell with a matching idle latency" not in text


def test_an_all_disturbed_latency_is_bounded_only_by_random_points_past_the_caches():
    """A busy default run (BUDGET=60s, 97 of 114 repetitions disturbed)
    read "idle latency ≤ 3.1 ns": the bound took a prefetched stride
    record. Only op random at 8 x the LLC in touched lines bounds it."""
    import pandas as pd

    from membench.findings import first_screen

    llc = 16 * 2**20

    def record(op, ws, ns):
        return {"system": "vm", "kernel": "chase", "op": op, "pages": "4k", "working_set_bytes": ws, "ns_per_load": ns,
                "pointer_spacing_bytes": 256, "line_bytes": 64, "llc_usable_bytes": llc}  # fmt: skip

    short = pd.DataFrame([record("stride", 512 * 2**20, 3.1), record("random", 512 * 2**20, 60.0)])  # 128 MiB of lines: 8 x
    assert first_screen._latency_bound("vm", short, "4k")["ns"] == 60.0
    in_cache = pd.DataFrame([record("stride", 64 * 2**20, 3.1), record("random", 64 * 2**20, 30.0)])  # 16 MiB of lines
    assert first_screen._latency_bound("vm", in_cache, "4k") is None
