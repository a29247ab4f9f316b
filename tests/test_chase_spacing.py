"""The random chase's pointer spacing (issue 20): one pointer per --spacing
bytes (default 256, multichase's default stride), in the chase and loaded
families and as the config axis chase_spacing, part of the cell's request."""

import pytest
from test_chase import FAST, MIB, run
from test_chase import bins  # noqa: F401  (the module's built binaries)

from membench.plan import grammar
from membench.measure import harness
from membench.plan import rounds
from membench.plan import variants
from test_matrix import load
from test_matrix import schema_path, table  # noqa: F401

ALLOWED = "64, 128, 256, 512, 1024, 2048, 4096"


@pytest.mark.parametrize("family", ["chase", "loaded"])
@pytest.mark.parametrize("value", ["96", "32", "8192", "0"])
def test_bad_spacing_names_the_value_and_the_allowed_ones(bins, family, value):  # noqa: F811
    rc, recs, err = run(bins[family], "--threads", "1" if family == "chase" else "2", "--size",
                        str(MIB), "--spacing", value, *FAST)
    assert rc == 2 and recs == []
    assert f"invalid value '{value}' for --spacing; allowed: " in err, err
    assert ALLOWED in err or "128, 256, 512, 1024, 2048, 4096" in err, err  # a 128-byte line starts at 128


@pytest.mark.parametrize("spacing", [64, 256, 4096])
def test_one_pointer_per_spacing_bytes_verified(bins, spacing):  # noqa: F811
    size = 256 * 1024 + 3 * 4096  # a partial last group
    rc, recs, err = run(bins["chase"], "--op", "random", "--size", str(size), "--sweep-from",
                        str(size), "--spacing", str(spacing), *FAST)
    assert rc == 0, err
    (r,) = recs
    assert r["status"] == "ok" and r["valid"] is True
    assert r["pointer_spacing_bytes"] == spacing and r["working_set_bytes"] == size
    assert r["cycle_length"] == size // spacing and r["line_bytes"] in (64, 128)
    assert r["walk_loads"] % r["cycle_length"] == 0


def test_a_broken_spaced_cycle_fails(bins):  # noqa: F811
    rc, recs, err = run(bins["chase"], "--op", "random", "--size", "65536", "--spacing", "512",
                        "--test-corrupt", *FAST)
    assert rc == 1 and recs and all(r["status"] == "failed" and "cycle is broken" in r["reason"] for r in recs)


def test_group_must_be_whole_slots(bins):  # noqa: F811
    rc, recs, err = run(bins["chase"], "--size", "65536", "--spacing", "4096", "--group", "2048", *FAST)
    assert rc == 2 and "invalid value '2048' for --group" in err and "pointer spacing (4096" in err


def test_chase_spacing_is_an_axis_of_the_request(schema_path, table, option_listings):  # noqa: F811
    config = {"experiments": {"lat": {"kernel": "chase", "chase_spacing": [64, 256]},
                              "bw": {"kernel": "stream", "chase_spacing": [64]}}}
    _, cells = load(config, schema_path, table)
    lat = [c for c in cells if c.experiment == "lat"]
    assert [c.chase_spacing for c in lat] == [64, 256]
    assert lat[0].id.endswith("_sp64") and not lat[1].id.endswith("_sp256")  # the default keeps its id
    req = [rounds.cell_request(c, "box", 0, table) for c in lat]
    assert [q["chase_spacing"] for q in req] == [64, 256]
    assert rounds.digest(req[0]) != rounds.digest(req[1])
    stream = next(c for c in cells if c.kernel == "stream")
    assert "chase_spacing" not in rounds.cell_request(stream, "box", 0, table)  # digests kept
    knobs = {"threads": 1, "size": 4096, "policy": "default", "affinity": "none"}
    argv = harness.harness_argv("/bin/h", harness.Request.of_dict(req[0]), knobs, option_listings["chase"])
    assert argv[argv.index("--spacing") + 1] == "64"


@pytest.mark.parametrize("bad", [96, 8192, "256"])
def test_bad_chase_spacing_in_config(schema_path, table, bad):  # noqa: F811
    config = {"experiments": {"lat": {"kernel": "chase", "chase_spacing": [256, bad]}, "x": {"kernel": "nope"}}}
    with pytest.raises(grammar.ConfigError) as error:
        load(config, schema_path, table)
    message = str(error.value)
    assert "experiments.lat.chase_spacing[1]" in message and "4096" in message, message
    assert "experiments.x.kernel" in message
