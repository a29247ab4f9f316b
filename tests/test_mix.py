"""Read:write mixes (issue 19): the mix family (kernels/families/mix.c), the loaded
family with a mix as its load, the config values, and the report's
injection bandwidth and loaded Little's-law tables (synthetic data).

Every (mix, variant) also runs, validates, fails under --test-corrupt and
has its code checked in test_variants.py and test_disassembly.py (mix is one
of their bandwidth families); here: what is particular to the mixes."""

import json
import os
import subprocess

import pandas as pd
import pytest

from membench.plan import checks as config_checks
from membench.analyse.injection import MIXES
from membench.findings.mix_tables import injection_table, loaded_little_table
from membench.findings.tables import tables_for

from test_variants import TABLE

MIB = 1 << 20
TWO_CPUS = len(os.sched_getaffinity(0)) >= 2
# (reads, writes) per op, from the name
STREAMS = {"r1w0": (1, 0), "r3w1": (3, 1), "r2w1": (2, 1), "r1w1": (1, 1), "r2w1nt": (2, 1)}


@pytest.fixture(scope="module")
def bins(variant_builds):
    variant_builds.build([("mix", "default"), ("loaded", "default")])
    return {family: variant_builds.binary(family) for family in ("mix", "loaded")}


def run(binary, *args):
    proc = subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=120)
    return proc.returncode, [json.loads(line) for line in proc.stdout.splitlines()], proc.stderr


# ------------------------------------------------------------ kernel mix

def test_the_five_mixes_are_the_family_ops():
    assert TABLE["families"]["mix"]["ops"] == list(MIXES) == list(STREAMS)
    assert set(TABLE["families"]["loaded"]["ops"]) >= set(MIXES)


def test_each_mix_validates_with_its_bytes(bins):
    n = (1 << 20) // 8
    rc, recs, err = run(bins["mix"], "--size", str(1 << 20), "--ntimes", "3", "--threads", "1")
    assert rc == 0, err
    assert [r["op"] for r in recs] == list(STREAMS)
    for r in recs:
        reads, writes = STREAMS[r["op"]]
        nt = r["op"] == "r2w1nt"
        assert r["status"] == "ok" and r["valid"] is True and r["gbps"] > 0, r["reason"]
        assert r["bytes_per_iter"] == 8 * n * (reads + writes)
        assert r["bytes_per_iter_wa"] == 8 * n * (reads + writes + (0 if nt else writes))
        assert r["nontemporal"] is nt and r["arrays"] == 7


@pytest.mark.parametrize("op", list(STREAMS))
def test_one_op_alone_validates(bins, op):
    """The outputs of ops that did not run must be untouched: running one
    op alone checks that no kernel writes another's array."""
    rc, recs, err = run(bins["mix"], "--op", op, "--size", str(256 * 1024 + 40), "--ntimes", "2",
                        "--threads", "2" if TWO_CPUS else "1")
    assert rc == 0 and recs[0]["valid"] is True, err


def test_a_corrupted_result_exits_non_zero(bins):
    rc, recs, err = run(bins["mix"], "--op", "r3w1,r1w0", "--size", str(1 << 20), "--ntimes", "2",
                        "--test-corrupt")
    assert rc == 1, err
    assert [r["status"] for r in recs] == ["failed", "failed"]
    assert all(r["valid"] is False and "array a" in r["reason"] for r in recs), recs[0]["reason"]


# ------------------------------------------------- loaded with a mix load

@pytest.mark.skipif(not TWO_CPUS, reason="loaded needs two CPUs")
def test_loaded_takes_each_mix_as_its_load(bins):
    ops = ",".join(STREAMS)
    rc, recs, err = run(bins["loaded"], "--threads", "2", "--op", ops, "--size", str(8 * MIB),
                        "--ntimes", "3", "--chunk-ms", "2", "--delay", "10")
    assert rc == 0, err
    assert [r["op"] for r in recs] == list(STREAMS)
    for r in recs:
        reads, writes = STREAMS[r["op"]]
        wa = 0 if r["op"] == "r2w1nt" else writes
        assert r["status"] == "ok" and r["valid"] is True, r["reason"]
        assert r["ns_per_load"] > 0 and r["gbps"] > 0 and r["delay"] == 10
        assert r["delay_ns"] > 0  # ten pauses as measured on the loader's CPU (issue 38)
        assert r["loader_arrays"] == reads + writes and r["nontemporal"] is (r["op"] == "r2w1nt")
        assert r["gbps_wa"] == pytest.approx(r["gbps"] * (reads + writes + wa) / (reads + writes))


@pytest.mark.skipif(not TWO_CPUS, reason="loaded needs two CPUs")
def test_loaded_mix_corruption_is_caught(bins):
    rc, recs, err = run(bins["loaded"], "--threads", "2", "--op", "r1w0,r3w1,r2w1nt", "--size",
                        str(4 * MIB), "--ntimes", "2", "--chunk-ms", "2", "--test-corrupt")
    assert rc == 1, err
    assert all(r["status"] == "failed" and "load thread 1" in r["reason"] for r in recs)
    assert "array 3 of r3w1" in recs[1]["reason"] and "array 2 of r2w1nt" in recs[2]["reason"]


# ----------------------------------------------------------------- config

def test_config_takes_the_mixes(repo):
    config = {"experiments": {
        "inj": {"kernel": "mix", "variants": ["default", "nt-avx512"], "threads": [1, 2]},
        "lat": {"kernel": "loaded", "threads": [2], "load_op": list(STREAMS), "load_delay": [0, 50]},
    }}
    validated, cells = config_checks.load(config, repo / "workflow/schemas/config.schema.yaml", TABLE)
    assert len([c for c in cells if c.kernel == "mix"]) == 4
    loaded = [c for c in cells if c.kernel == "loaded"]
    assert sorted({c.load_op for c in loaded}) == sorted(STREAMS) and len(loaded) == 10
    assert len({c.id for c in loaded}) == 10  # the load op is part of the cell's name


def test_config_rejects_a_bad_mix_naming_the_allowed(repo):
    config = {"experiments": {
        "inj": {"kernel": "mix", "variants": ["avx3"]},
        "lat": {"kernel": "loaded", "threads": [2], "load_op": ["r4w1"]},
    }}
    with pytest.raises(config_checks.ConfigError) as err:
        config_checks.load(config, repo / "workflow/schemas/config.schema.yaml", TABLE)
    text = str(err.value)
    assert "avx3" in text and "nt-avx512" in text
    assert "r4w1" in text and all(op in text for op in STREAMS)


def test_shipped_mix_configs_are_valid(repo):
    import yaml

    for name in ("rw_mix.yaml", "config.yaml"):
        config = yaml.safe_load((repo / "config" / name).read_text())
        _, cells = config_checks.load(config, repo / "workflow/schemas/config.schema.yaml", TABLE)
        assert any(c.kernel == "mix" for c in cells), name


# ------------------------------------------------------- report tables

def summary(gbps: dict, threads=(1,), systems=("sys",), spread=0.5):
    """Per-cell summary rows of a mix experiment: op -> median GB/s."""
    rows = []
    for system in systems:
        for t in threads:
            for op, g in gbps.items():
                reads, writes = STREAMS[op]
                wa = g * (reads + 2 * writes) / (reads + writes) if op != "r2w1nt" else g
                rows.append(dict(
                    system=system, experiment="inj", cell=f"inj/t{t}", kernel="mix", variant="default", op=op,
                    threads=t, threads_requested=t, affinity="close", affinity_requested="close", policy_requested="local", policy="local",
                    pages="4k", init="parallel", size_requested="auto", n_ok=5, n_skipped=0, n_failed=0,
                    gbps_mean=g * t, gbps_median=g * t, gbps_min=g * t - spread, gbps_max=g * t + spread,
                    gbps_wa_median=wa * t, placement_mismatches=0,
                ))  # fmt: skip
    return pd.DataFrame(rows)


def test_a_write_mix_above_all_reads_is_flagged_and_listed():
    cells = summary({"r1w0": 10.0, "r3w1": 11.5, "r2w1": 9.0, "r1w1": 8.0, "r2w1nt": 10.2}, threads=(1, 4))
    table = injection_table(cells)
    assert table["columns"][3:] == [f"{op} {name}" for op, name in MIXES.items()]
    assert len(table["rows"]) == 2
    one = dict(zip(table["columns"], table["rows"][0]))
    assert one["r3w1 3:1"].startswith("⚑ 11.5") and one["r2w1nt 2:1 NT (stream-triad like)"].startswith("⚑ 10.2")
    assert "⚑" not in one["r2w1 2:1"] and "⚑" not in one["r1w0 all reads"]
    assert "traffic" in one["r1w1 1:1"] and "traffic" not in one["r2w1nt 2:1 NT (stream-triad like)"]
    # listed, with the gain, and whether it is beyond the spread of the runs
    assert len(table["flags"]) == 4
    r3w1_1 = next(f for f in table["flags"] if "1 thread:" in f and "r3w1" in f)
    assert "+15.0%" in r3w1_1 and "beyond the spread" in r3w1_1
    r2w1nt_1 = next(f for f in table["flags"] if "1 thread:" in f and "r2w1nt" in f)
    assert "within the spread" in r2w1nt_1
    # the experiment's tables carry it
    assert table in tables_for("mix", cells, pd.DataFrame())


def test_no_flag_when_all_reads_is_fastest():
    table = injection_table(summary({"r1w0": 12.0, "r3w1": 11.5, "r2w1": 9.0, "r1w1": 8.0, "r2w1nt": 10.2}))
    assert table["flags"] == [] and not any("⚑" in v for row in table["rows"] for v in row)
    assert injection_table(summary({"r1w0": 12.0}).assign(op="sum")) is None


def test_injection_table_is_bounded_at_scale():
    """8 systems x 4 thread counts: one row each, five mix columns."""
    cells = summary(dict.fromkeys(STREAMS, 10.0), threads=(1, 64, 128, 256), systems=[f"s{i}" for i in range(8)])
    table = injection_table(cells)
    assert len(table["rows"]) == 32 and all(len(r) == 8 for r in table["rows"])


def test_loaded_little_law_at_each_point():
    rows = [
        dict(system="sys", experiment="lat", cell=f"lat/{op}/{d}", kernel="loaded", variant="default", op=op, threads=3,
             affinity="close", affinity_requested="close", policy_requested="default", pages="4k", size_requested=2**29, chase_group_requested=262144,
             load_delay_requested=d, n_ok=2, gbps_mean=g, gbps_median=g, gbps_wa_median=wa, gbps_read_median=reads,
             ns_median=ns)
        # r1w1: 8 B read + 8 B write-allocate read of 24 B of traffic; r2w1nt: 16 of 24 B read, no write-allocate
        for op, d, g, wa, reads, ns in (("r1w1", 0, 10.0, 15.0, 10.0, 128.0), ("r1w1", 50, 4.0, 6.0, 4.0, 96.0),
                                        ("r2w1nt", 0, 12.0, 12.0, 8.0, 150.0))
    ]  # fmt: skip
    table = loaded_little_table(pd.DataFrame(rows), {"sys": 64})
    by = {(r[0], r[3]): dict(zip(table["columns"], r)) for r in table["rows"]}
    point = by[("r1w1", "0")]
    # Little's law by read traffic (issue 38): the write-backs wait no latency
    assert point["read traffic GB/s"] == "10.00" and point["bytes in flight"] == "1280"
    assert point["lines in flight"] == "20.0" and point["lines / load thread"] == "10.0"
    assert by[("r2w1nt", "0")]["lines in flight"] == f"{8.0 * 150.0 / 64:.1f}"
    assert by[("r1w1", "50")]["delay (measured)"] == "50"  # records before delay_ns: the count alone
    measured = loaded_little_table(pd.DataFrame(rows).assign(delay_ns_median=[0.0, 710.0, 0.0]), {"sys": 64})
    assert sorted(dict(zip(measured["columns"], r))["delay (measured)"] for r in measured["rows"]) == ["0", "0", "50 (710 ns)"]
    assert len(table["rows"]) == 3


def test_loaded_figure_draws_a_curve_per_mix_with_lines_in_flight():
    from membench.figures import latency

    rows = [
        dict(system="sys", experiment="lat", cell=f"lat/{op}/{d}", kernel="loaded", variant="default", op=op, threads=3,
             threads_requested=3, affinity="close", affinity_requested="close", policy_requested="default", pages="4k", size_requested=2**29,
             load_delay_requested=d, n_ok=2, gbps_mean=g, gbps_std=0.1, gbps_wa_mean=g * 1.5, ns_mean=ns, ns_std=1.0)
        for op in ("r1w1", "r2w1nt") for d, g, ns in ((0, 10.0, 128.0), (50, 4.0, 96.0))
    ]  # fmt: skip
    with_lines = latency.loaded_svg(pd.DataFrame(rows), "lat-loaded", {"sys": 64})
    without = latency.loaded_svg(pd.DataFrame(rows), "lat-loaded")
    assert with_lines.lstrip().startswith("<") and with_lines != without
