"""The hierarchy table's levels come from the sweep's plateaus, named by
the sysfs cache sizes; what is not found is said to be not found."""

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from membench.analyse import hierarchy

KiB, MiB = 2**10, 2**20
TOPOLOGY = {
    "caches": [
        {"level": 1, "type": "Data", "size_bytes": 48 * KiB},
        {"level": 1, "type": "Instruction", "size_bytes": 32 * KiB},
        {"level": 2, "type": "Unified", "size_bytes": 2 * MiB},
        {"level": 3, "type": "Unified", "size_bytes": 32 * MiB},
    ]
}


def curve(points: dict[int, float], pages="4k", system="box") -> pd.DataFrame:
    return pd.DataFrame(
        {
            "system": system, "kernel": "chase", "op": "random", "n_ok": 3, "policy_requested": "default", "affinity": "close", "affinity_requested": "close", "cell": f"sweep/{pages}",
            "pages": pages, "chase_group_requested": 256 * KiB,
            "working_set_bytes": list(points), "ns_median": list(points.values()),
        }
    )  # fmt: skip


def four_levels(noise: float = 0.0) -> dict[int, float]:
    sweep = {}
    for k in range(12, 31):  # 4 KiB .. 1 GiB, one point per octave
        ws = 2**k
        ns = 1.2 if ws <= 32 * KiB else 4.5 if ws <= 1 * MiB else 9.0 if ws <= 2 * MiB else 21 if ws <= 16 * MiB else 60 if ws <= 32 * MiB else 105
        sweep[ws] = ns * (1 + noise * (-1) ** k)
    return sweep


def test_plateaus_are_flat_runs_of_two_or_more_points():
    found = hierarchy.plateaus(list(four_levels()), list(four_levels().values()))
    assert [(p.first_bytes, p.last_bytes, round(p.ns, 1)) for p in found] == [
        (4 * KiB, 32 * KiB, 1.2), (64 * KiB, 1 * MiB, 4.5), (4 * MiB, 16 * MiB, 21.0), (64 * MiB, 1024 * MiB, 105.0),
    ]  # fmt: skip
    assert found[0].next_bytes == 64 * KiB and found[-1].next_bytes is None


def test_levels_named_by_sysfs_sizes_with_derivation_and_cycles():
    (table,) = hierarchy.hierarchy(curve(four_levels(noise=0.03)), {"box": TOPOLOGY}, {"box": {"ghz": 2.0, "source": "measured"}})
    rows = {row["level"]: row["per_pages"]["4k"] for row in table["rows"]}
    assert list(rows) == ["L1", "L2", "L3", "memory"]
    assert rows["L1"]["ns"] == pytest.approx(1.2, rel=0.05) and rows["L1"]["cycles"] == pytest.approx(2.4, rel=0.05)
    assert rows["memory"]["ns"] == pytest.approx(105, rel=0.05)
    assert "plateau 64 KiB–1 MiB" in rows["L2"]["derivation"] and "sysfs 2 MiB" in rows["L2"]["derivation"]


def test_a_level_without_plateau_is_not_found_and_memory_still_rising_is_not_found():
    sweep = {ws: ns for ws, ns in four_levels().items() if ws <= 2 * MiB}
    sweep.update({2**k * MiB: 12 * 1.5**k for k in range(2, 9)})  # +50 % every octave from 4 MiB to 256 MiB
    (table,) = hierarchy.hierarchy(curve(sweep), {"box": TOPOLOGY})
    rows = {row["level"]: row["per_pages"]["4k"] for row in table["rows"]}
    assert rows["L3"]["ns"] is None and rows["L3"]["derivation"].startswith("no plateau found")
    assert rows["memory"]["ns"] is None and "not found" in rows["memory"]["derivation"]
    assert rows["L1"]["cycles"] is None  # no clock: no cycles invented
    assert "not measured" in table["clock"]["source"]


def test_a_second_plateau_within_a_level_is_unassigned_not_merged():
    sweep = four_levels()
    sweep.update({4 * MiB: 15.0, 8 * MiB: 15.5, 16 * MiB: 30.0, 32 * MiB: 31.0})  # two steps inside L3
    (table,) = hierarchy.hierarchy(curve(sweep), {"box": TOPOLOGY})
    levels = [row["level"] for row in table["rows"]]
    assert "unassigned 1" in levels


def test_page_sizes_side_by_side():
    both = pd.concat([curve(four_levels()), curve({ws: ns * 0.9 for ws, ns in four_levels().items()}, pages="thp")])
    (table,) = hierarchy.hierarchy(both, {"box": TOPOLOGY})
    assert table["pages"] == ["4k", "thp"]
    assert all(set(row["per_pages"]) == {"4k", "thp"} for row in table["rows"])


def test_noise_and_one_stray_point_do_not_split_a_level():
    sweep = four_levels(noise=0.08)
    sweep[8 * KiB] = 1.2 * 1.6  # one noisy repetition inside L1
    found = hierarchy.plateaus(list(sweep), list(sweep.values()))
    assert [(p.first_bytes, p.last_bytes) for p in found][:2] == [(4 * KiB, 32 * KiB), (64 * KiB, 1 * MiB)]


def test_node_matrix_gives_local_and_remote_memory_rows():
    sweep = curve(four_levels())
    pairs = pd.DataFrame(
        {
            "system": "box", "kernel": "chase", "op": "random", "n_ok": 3, "pages": "4k", "chase_group_requested": 256 * KiB,
            "cell": ["m/00", "m/01", "m/10", "m/11"], "affinity": ["node:0", "node:0", "node:1", "node:1"],
            "affinity_requested": ["node:0", "node:0", "node:1", "node:1"],
            "policy_requested": ["bind:0", "bind:1", "bind:0", "bind:1"], "working_set_bytes": 1024 * MiB,
            "ns_median": [100.0, 180.0, 170.0, 110.0],
        }
    )  # fmt: skip
    (table,) = hierarchy.hierarchy(pd.concat([sweep, pairs]), {"box": TOPOLOGY})
    rows = {row["level"]: row for row in table["rows"]}
    assert rows["local memory"]["per_pages"]["4k"]["ns"] == pytest.approx(105)
    assert rows["remote memory"]["per_pages"]["4k"]["ns"] == pytest.approx(175)
    assert "2 remote pairs" in rows["remote memory"]["derivations"][0]
    assert [r["level"] for r in table["rows"]][-3:] == ["memory", "local memory", "remote memory"]


def test_rows_without_page_size_are_shown_once_for_every_page_size():
    both = pd.concat([curve(four_levels()), curve(four_levels(), pages="thp")])
    extra = {"box": {"modified line, other core, same L3": {"ns": 40.0, "derivation": "c2c two_line, 3 pairs"}}}
    (table,) = hierarchy.hierarchy(both, {"box": TOPOLOGY}, extra_rows=extra)
    row = next(r for r in table["rows"] if r["level"].startswith("modified"))
    assert set(row["per_pages"]) == {"4k", "thp"} and row["derivations"] == ["c2c two_line, 3 pairs"]


def test_levels_are_named_by_the_lines_a_sparse_chase_touches():
    """One pointer per 256 B: a 128 KiB span touches 32 KiB of lines, so it
    is still L1 (48 KiB), and the derivation says both."""
    sweep = {ws: (1.2 if ws <= 128 * KiB else 4.5 if ws <= 4 * MiB else 21 if ws <= 64 * MiB else 105)
             for ws in (2**k for k in range(12, 31))}  # fmt: skip
    cells = curve(sweep).assign(chase_spacing_requested=256)
    (table,) = hierarchy.hierarchy(cells, {"box": {**TOPOLOGY, "line_bytes": 64}})
    rows = {row["level"]: row["per_pages"]["4k"] for row in table["rows"]}
    assert rows["L1"]["ns"] == pytest.approx(1.2) and rows["L2"]["ns"] == pytest.approx(4.5)
    assert "plateau 1 KiB–32 KiB of lines (one pointer per 256 B" in rows["L1"]["derivation"]
    assert rows["memory"]["ns"] == pytest.approx(105)


# ------------------------------------------- real recorded sweeps (issue 30)

SWEEPS = Path(__file__).resolve().parent / "fixtures" / "chase_sweeps"
HERE = {  # this project's 2-vCPU KVM guest, per sysfs
    "caches": [
        {"level": 1, "type": "Data", "size_bytes": 48 * KiB},
        {"level": 2, "type": "Unified", "size_bytes": 1 * MiB},
        {"level": 3, "type": "Unified", "size_bytes": 32 * MiB},
    ],
    "line_bytes": 64,
}
DEV16 = json.loads((Path(__file__).resolve().parent / "fixtures" / "dev16" / "topology.json").read_text())


def recorded(name: str, spacing=None, system="box", upto: int | None = None) -> pd.DataFrame:
    sweep = pd.read_csv(SWEEPS / name, comment="#")
    if upto:
        sweep = sweep[sweep["working_set_bytes"] <= upto]
    cells = curve(dict(zip(sweep["working_set_bytes"], sweep["ns_per_load"])), pages="thp" if "thp" in name else "4k", system=system)
    return cells.assign(chase_spacing_requested=spacing) if spacing else cells


def rows_of(cells, topology, system="box"):
    (table,) = hierarchy.hierarchy(cells, {system: topology})
    return {row["level"]: row for row in table["rows"]}


def one(rows, level, pages="4k"):
    return rows[level]["per_pages"][pages]


def test_here_the_hashed_layout_fills_half_the_l1_and_memory_is_the_final_plateau():
    rows = rows_of(recorded("here_after_4k.csv", spacing=256), HERE)
    l1 = hierarchy.plateaus(*zip(*[(ws // 4, ns) for ws, ns in pd.read_csv(SWEEPS / "here_after_4k.csv", comment="#").values]))[0]
    assert l1.last_bytes >= 48 * KiB / 2  # done-when: the L1 plateau reaches half the sysfs L1
    assert one(rows, "L1")["ns"] == pytest.approx(0.9, rel=0.1)
    assert one(rows, "L2")["ns"] == pytest.approx(3.2, rel=0.1) and one(rows, "L3")["ns"] == pytest.approx(11.5, rel=0.15)
    memory = one(rows, "memory")
    assert memory["ns"] == pytest.approx(138, rel=0.05)
    # the plateau begins below the sysfs L3: both figures, said as a disagreement; the latency is taken at 8 x
    # the last cache plateau the curve shows (8 MiB -> 64 MiB of lines), so it is not flagged as holding hits
    assert "sysfs and the curve disagree: memory from 16 MiB of lines" in memory["derivation"]
    assert "sysfs LLC of 32 MiB" in memory["derivation"] and "at or past 8 × the last cache plateau, which ends at 8 MiB" in memory["derivation"]
    assert memory["flag"] is None
    assert not any(name.startswith("unassigned") for name in rows)


def test_here_the_mixer_layout_ended_the_l1_plateau_early():
    sweep = pd.read_csv(SWEEPS / "here_before_4k.csv", comment="#")
    l1 = hierarchy.plateaus(sweep["working_set_bytes"] // 4, sweep["ns_per_load"])[0]
    assert l1.last_bytes == 16 * KiB < 48 * KiB / 2  # 16 KiB of lines (sysfs 48 KiB), risen by 22.6 KiB


@pytest.mark.parametrize("pages", ["4k", "thp"])
def test_dev16_memory_row_past_its_300_mib_l3(pages):
    rows = rows_of(recorded(f"dev16_{pages}.csv", system="dev16"), DEV16, "dev16")
    memory = one(rows, "memory", pages)
    assert memory["ns"] == pytest.approx({"4k": 87, "thp": 98}[pages], rel=0.05)
    assert "sysfs LLC of 300 MiB" in memory["derivation"]  # the caches end far earlier: both figures
    # 1 GiB is not past 8 x 300 MiB, but far past 8 x the last cache plateau the curve shows: not flagged
    assert memory["flag"] is None and "sysfs and the curve disagree" in memory["derivation"]
    assert not any(name.startswith("unassigned") for name in rows)


def test_a_sweep_that_stops_before_the_llc_says_memory_could_not_be_reached():
    # to 16 MiB of lines: the L3 plateau has not ended (a plateau past every
    # sysfs level would be memory: issue 41, tests/test_latency_sweep.py)
    rows = rows_of(recorded("dev16_4k.csv", system="dev16", upto=16 * MiB), DEV16, "dev16")
    memory = one(rows, "memory")
    assert memory["ns"] is None and memory["derivation"].startswith("could not be reached")
    assert "not past the last-level cache (sysfs 300 MiB)" in memory["derivation"] and memory["reached"] is False


def test_memory_past_eight_llc_is_not_flagged():
    sweep = four_levels()
    sweep.update({2**k: 105.0 for k in range(31, 34)})  # to 8 GiB: past 8 x 32 MiB
    memory = one(rows_of(curve(sweep), TOPOLOGY), "memory")
    assert memory["ns"] == pytest.approx(105) and memory["flag"] is None and "⚑" not in memory["derivation"]


def test_the_default_sweep_reaches_sixteen_llc_in_touched_lines():
    """size: auto for a chase: the stop rule's reach, 16 x the chasing CPU's
    LLC instance in lines (a level sysfs hides up to 2 x, then memory held
    over two doublings), at least 1 GiB, bounded by half the memory
    available (dev16: 300 MiB L3, one pointer per 256 B -> 19200 MiB)."""
    from membench.measure import auto_size, harness

    assert auto_size.reach_size(DEV16, 256) == 19200 * MiB
    assert auto_size.reach_size(DEV16, 64) == 4800 * MiB
    assert auto_size.reach_size(DEV16, 256, available=8 * 2**30) == 4 * 2**30  # bounded by memory
    assert auto_size.reach_size({"llc_bytes": 32 * MiB, "line_bytes": 64}, 256) == 2048 * MiB
    assert auto_size.reach_size({"llc_bytes": 4 * MiB, "line_bytes": 64}, 256) == 1024 * MiB  # the floor
    request = harness.Request(system="dev16", kernel="chase", variant="default", ops=("random",), threads=1, affinity="close",
                              policy="default", pages="4k", init="parallel", size="auto", ntimes=3, repeat=0)  # fmt: skip
    resolved, why = harness.resolve(request, DEV16, list(range(16)))
    assert why is None and resolved["size"] <= 19200 * MiB and resolved["size"] % 256 == 0


def test_policy_local_and_remote_sweeps_give_the_memory_rows():
    """config/aws_numa.yaml's `policy: [local, remote]` chase cells fill
    local and remote memory, not only node x node matrices."""
    local = curve(four_levels()).assign(policy_requested="local")
    remote = curve({ws: ns * (1.6 if ws > 32 * MiB else 1) for ws, ns in four_levels().items()}).assign(policy_requested="remote")
    rows = rows_of(pd.concat([local, remote]), TOPOLOGY)
    assert one(rows, "local memory")["ns"] == pytest.approx(105) and one(rows, "remote memory")["ns"] == pytest.approx(168)
    assert one(rows, "remote memory")["derivation"].startswith("policy remote: final plateau 64 MiB–1 GiB")


def planted_capacity_curve(upto: int = 256 * MiB) -> dict[int, float]:
    """Each level's hit share from its capacity (a random chase over W bytes
    finds min(1, C / W) of its lines in a cache of C): L1 1 ns, L2 4 ns,
    L3 40 ns, memory 100 ns; half-octave points to `upto`."""
    levels = [(48 * KiB, 1.0), (2 * MiB, 4.0), (32 * MiB, 40.0)]
    sweep = {}
    for half in range(24, 2 * upto.bit_length() - 1):
        ws = int(2 ** (half / 2)) // 64 * 64
        held, ns = 0.0, 0.0
        for capacity, level_ns in levels:
            share = min(1.0, capacity / ws)
            ns += (share - held) * level_ns
            held = share
        sweep[ws] = ns + (1 - held) * 100.0
    return sweep


def test_the_memory_row_and_the_idle_latency_are_one_number_past_eight_llc():
    """Issue 38: a plateau opening at the first point within 25 % takes in
    points at 2-4 x the LLC where lines still hit (84.5 ns against a truth
    of 100); the memory row and the idle latency are both the median of the
    points at or past 8 x the LLC."""
    from membench.analyse import concurrency

    sweep = planted_capacity_curve()
    cells = curve(sweep).assign(ns_min=lambda c: c["ns_median"] * 0.99, ns_max=lambda c: c["ns_median"] * 1.01)
    memory = one(rows_of(cells, TOPOLOGY), "memory")
    at_eight = sweep[256 * MiB]
    assert memory["ns"] == pytest.approx(at_eight) and memory["ns"] > 92  # the plateau's median read 84.5
    assert "at or past 8 × the LLC (sysfs 32 MiB)" in memory["derivation"] and "at most 1/8 of the loads" in memory["derivation"]
    # the bound said (hits no faster than the L1 plateau, at most 1/8 of the loads) holds the truth: 100 ns is within it
    bound = float(re.search(r"so at most ([0-9.]+) ns low", memory["derivation"])[1])
    assert 0 < 100 - memory["ns"] <= bound
    (idle,) = concurrency.idle_latencies(cells, {"box": 32 * MiB}, {"box": 64}).to_dict("records")
    assert idle["ns"] == pytest.approx(memory["ns"]) and idle["flag"] is None
    assert "latency over 1 point 256 MiB of lines, at or past 8 × the LLC" in concurrency.idle_source(idle)
    longer = curve(planted_capacity_curve(1024 * MiB))
    memory = one(rows_of(longer, TOPOLOGY), "memory")
    (idle,) = concurrency.idle_latencies(longer.assign(ns_min=1.0, ns_max=200.0), {"box": 32 * MiB}).to_dict("records")
    # five points, 256 MiB to 1 GiB, of the same 3 runs: n counts runs, not points (issue 50)
    assert memory["ns"] == pytest.approx(idle["ns"]) and idle["runs"] == 3 and idle["points"] == 5
