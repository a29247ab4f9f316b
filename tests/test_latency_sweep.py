"""The chase sweep stops when the answer is in (issue 41): the rule of
kernels/families/chase_sweep.c on planted sweeps, through a small driver
compiled here, against its mirror membench.plan.latency_sweep, and the
memory row (membench.analyse.hierarchy) of the sweep as the rule stops it
against the row of the whole sweep.

Planted: a machine whose sysfs says L1 48 KiB, L2 2 MiB, L3 32 MiB; its real
caches end at a quarter of that L3 (a level sysfs invents: the sweep must
stop well before 8 x the sysfs LLC) or at twice it (a level sysfs hides:
the sweep must not take the L3 for memory).
"""

import re
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from helpers_run import compiled
from membench.analyse import hierarchy
from membench.plan import latency_sweep

REPO = Path(__file__).resolve().parents[1]
FAMILIES = REPO / "kernels" / "families"
SWEEPS = Path(__file__).parent / "fixtures" / "chase_sweeps"
KiB, MiB, GiB = 2**10, 2**20, 2**30
SPACING, LINE = 256, 64  # the default chase: one pointer (line) per 256 B
SYSFS = {"caches": [{"level": 1, "type": "Data", "size_bytes": 48 * KiB}, {"level": 2, "type": "Unified", "size_bytes": 2 * MiB},
                    {"level": 3, "type": "Unified", "size_bytes": 32 * MiB}], "line_bytes": LINE, "llc_bytes": 32 * MiB}  # fmt: skip
LLC = 32 * MiB

DRIVER = r"""
#include <stdio.h>
#include "chase_sweep.h"
/* stdin: levels llc_lines n, then n pairs (lines ns); stdout: how many
 * points the sweep measures before the rule says the answer is in (n: never) */
int main(void)
{
    int levels, n, first;
    double llc, lines[4096], ns[4096];
    if (scanf("%d %lf %d", &levels, &llc, &n) != 3)
        return 2;
    for (int i = 0; i < n; i++)
        if (scanf("%lf %lf", &lines[i], &ns[i]) != 2)
            return 2;
    for (int k = 1; k <= n; k++)
        if (mb_sweep_answer_in(lines, ns, k, levels, llc, &first)) {
            printf("%d\n", k);
            return 0;
        }
    printf("%d\n", n);
    return 0;
}
"""


@pytest.fixture(scope="module")
def c_stop(tmp_path_factory):
    exe = compiled(tmp_path_factory.mktemp("sweep"), DRIVER, FAMILIES, FAMILIES / "chase_sweep.c")

    def run(lines, ns, levels=3, llc=LLC):
        text = f"{levels} {llc} {len(ns)}\n" + "\n".join(f"{a} {b}" for a, b in zip(lines, ns))
        return int(subprocess.run([str(exe)], input=text, capture_output=True, text=True, check=True).stdout)

    return run


def planted(caches_end: int, noise: float = 0.005, seed: int = 41) -> tuple[np.ndarray, np.ndarray]:
    """Touched-line bytes 1 KiB ... 16 x the LLC (the size auto reach), one
    point per doubling, and ns per load: L1 1.7, L2 5.5, an L3 of 30 ns that
    ends at `caches_end`, then memory at 100 ns, the first point past the
    cache a third of the way up (the hits a random chase still gets), with
    `noise` (relative, uniform) on every point."""
    lines = 2.0 ** np.arange(10, int(np.log2(latency_sweep.LLC_REACH * LLC)) + 1)
    ns = np.where(lines <= 32 * KiB, 1.7, np.where(lines <= 2 * MiB, 5.5, np.where(lines <= caches_end, 30.0, 100.0)))
    ns[np.argmax(lines > caches_end)] = 75.0
    rng = np.random.default_rng(seed)
    return lines, ns * (1 + rng.uniform(-noise, noise, len(ns)))


def memory_row(lines, ns) -> float | None:
    cells = pd.DataFrame({"system": "box", "kernel": "chase", "op": "random", "n_ok": 3, "pages": "4k", "policy_requested": "default",
                          "chase_spacing_requested": SPACING, "working_set_bytes": np.asarray(lines) * SPACING // LINE,
                          "ns_median": ns})  # fmt: skip
    rows = {row["level"]: row for row in hierarchy.hierarchy(cells, {"box": SYSFS})[0]["rows"]}
    return rows["memory"]["per_pages"]["4k"]


@pytest.mark.parametrize("noise_seed", [1, 2, 3])
def test_caches_ending_at_a_quarter_of_the_sysfs_llc_stop_the_sweep_early(c_stop, noise_seed):
    lines, ns = planted(caches_end=LLC // 4, seed=noise_seed)
    n = c_stop(lines, ns)
    assert n == latency_sweep.stop_after(lines, ns, 3, LLC)  # the mirror says the same
    # stopped on memory held over two doublings, before the sysfs LLC's 8 x
    assert lines[n - 1] < latency_sweep.LLC_REACH * LLC and lines[n - 1] <= 8 * LLC // 4 * 2
    assert lines[n - 1] * SPACING // LINE <= max(GiB, latency_sweep.reach_bytes(LLC, SPACING, LINE))
    whole, stopped = memory_row(lines, ns), memory_row(lines[:n], ns[:n])
    assert stopped["ns"] == pytest.approx(whole["ns"], rel=0.03) and stopped["ns"] == pytest.approx(100, rel=0.03)
    assert stopped["flag"] is None and "held within 2%" in stopped["derivation"]


@pytest.mark.parametrize("noise_seed", [1, 2, 3])
def test_caches_ending_at_twice_the_sysfs_llc_are_not_taken_for_memory(c_stop, noise_seed):
    lines, ns = planted(caches_end=2 * LLC, seed=noise_seed)
    n = c_stop(lines, ns)
    assert n == latency_sweep.stop_after(lines, ns, 3, LLC)
    assert lines[n - 1] >= 4 * 2 * 2 * LLC  # past the hidden level, memory held over two doublings
    assert lines[n - 1] * SPACING // LINE <= max(GiB, latency_sweep.reach_bytes(LLC, SPACING, LINE))
    whole, stopped = memory_row(lines, ns), memory_row(lines[:n], ns[:n])
    assert stopped["ns"] == pytest.approx(whole["ns"], rel=0.03) and stopped["ns"] == pytest.approx(100, rel=0.03)


def test_a_curve_that_never_holds_runs_to_its_reach(c_stop):
    lines, ns = planted(caches_end=LLC // 4)
    ns = ns * np.where(lines > LLC // 4, 1.06 ** np.arange(len(ns)), 1.0)  # memory keeps rising 6 % a doubling
    assert c_stop(lines, ns) == len(ns) == latency_sweep.stop_after(lines, ns, 3, LLC)


@pytest.mark.parametrize("pages", ["4k", "thp"])
def test_dev16_memory_row_as_the_rule_stops_its_sweep(c_stop, pages):
    """../shared/data/dev16's recorded sweeps (a pointer in every line,
    sysfs L3 300 MiB): the memory row of the sweep as the rule would have
    stopped it is within 3 % of the row of the whole sweep."""
    sweep = pd.read_csv(SWEEPS / f"dev16_{pages}.csv", comment="#")
    lines, ns = sweep["working_set_bytes"].to_numpy(float), sweep["ns_per_load"].to_numpy(float)
    n = c_stop(lines, ns, 3, 300 * MiB)
    assert n == latency_sweep.stop_after(lines, ns, 3, 300 * MiB)
    topology = {**SYSFS, "caches": [*SYSFS["caches"][:2], {"level": 3, "type": "Unified", "size_bytes": 300 * MiB}]}

    def row(k):
        cells = pd.DataFrame({"system": "dev16", "kernel": "chase", "op": "random", "n_ok": 2, "pages": pages,
                              "policy_requested": "default", "chase_spacing_requested": LINE,
                              "working_set_bytes": lines[:k].astype(int), "ns_median": ns[:k]})  # fmt: skip
        rows = {r["level"]: r for r in hierarchy.hierarchy(cells, {"dev16": topology})[0]["rows"]}
        return rows["memory"]["per_pages"][pages]["ns"]

    assert row(n) == pytest.approx(row(len(ns)), rel=0.03)


def test_a_sweep_point_with_no_number_leaves_the_memory_row_standing():
    """A working set whose every run was disturbed has no ns (NaN): the
    curve goes on without it, so sweeps that end at different sizes (the
    budget on a busy machine) still give the memory row."""
    lines, ns = planted(caches_end=LLC // 4)
    holed = ns.copy()
    holed[-2:] = np.nan  # every run disturbed at the two largest (8 x, 16 x the LLC)
    holed[-4] = np.nan
    whole = memory_row(lines, ns)
    assert whole["ns"] == pytest.approx(100, rel=0.03)
    assert memory_row(lines, holed)["ns"] == pytest.approx(whole["ns"], rel=0.03)


def test_the_mirror_states_the_c_rule_constants():
    """membench.plan.latency_sweep reads the rule back for the analysis and
    the estimate: its constants are the C header's and chase_walk.h's."""
    header = (FAMILIES / "chase_sweep.h").read_text() + (FAMILIES / "chase_walk.h").read_text()
    defined = dict(re.findall(r"#define (MB_\w+) ([0-9.]+)", header))
    mirror = {"MB_SWEEP_FLAT": latency_sweep.FLAT, "MB_SWEEP_HELD": latency_sweep.HELD,
              "MB_SWEEP_SPAN_OCTAVES": latency_sweep.SPAN_OCTAVES, "MB_SWEEP_REPETITION_S": latency_sweep.REPETITION_S,
              "MB_CHASE_EXTEND_S": latency_sweep.POINT_S}  # fmt: skip
    assert {name: float(defined[name]) for name in mirror} == {name: float(value) for name, value in mirror.items()}
