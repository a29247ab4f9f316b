"""A config that passes validation can run (issue 40, cases 4, 5, 6): the
schema's bounds are the harness's own (read from --list-options and its
parser), patterns match whole values, a key written twice is refused, and
neither YAML aliases nor an axis product can make planning run away."""

import subprocess
import time
from pathlib import Path

import pytest
import yaml

from conftest import copy_workflow
from membench.plan import checks, grammar, variants

REPO = Path(__file__).resolve().parents[1]
SCHEMA_PATH = REPO / "workflow" / "schemas" / "config.schema.yaml"
SCHEMA = yaml.safe_load(SCHEMA_PATH.read_text())
TABLE = variants.load_variants(REPO / "kernels" / "families" / "variants.yaml")
EXPERIMENT = SCHEMA["$defs"]["experiment"]["properties"]


def problems(config: dict) -> list[str]:
    try:
        checks.load(config, SCHEMA_PATH, TABLE)
    except grammar.ConfigError as error:
        return error.problems
    return []


def stream(**axes) -> dict:
    return {"experiments": {"s": {"kernel": "stream", **axes}}}


def integer_branch(node: dict) -> dict:
    """The integer part of a schema node (an anyOf of integer and words)."""
    for branch in [node, *node.get("anyOf", [])]:
        if branch.get("type") == "integer":
            return branch
    raise AssertionError(node)


# schema node -> (family, harness option) whose range it must stay inside
HARNESS_OPTION = {
    ("top", "ntimes"): ("stream", "ntimes"),
    ("experiment", "ntimes"): ("stream", "ntimes"),
    ("item", "threads"): ("stream", "threads"),
    ("item", "size"): ("stream", "size"),
    ("item", "prefetch_distance"): ("stream", "prefetch-distance"),
    ("item", "load_delay"): ("loaded", "delay"),
    ("item", "chase_group"): ("chase", "group"),
    ("experiment", "sweep_from"): ("chase", "sweep-from"),
    ("experiment", "points_per_octave"): ("chase", "points-per-octave"),
    ("experiment", "c2c_samples"): ("c2c", "samples"),
    ("experiment", "c2c_roundtrips"): ("c2c", "roundtrips"),
}


@pytest.mark.parametrize("where,key", list(HARNESS_OPTION))
def test_every_bound_is_inside_the_harness_range(where, key, option_listings):
    family, name = HARNESS_OPTION[(where, key)]
    listing = option_listings[family]
    option = next(o for o in listing["harness_options"] + listing["family_options"] if o["name"] == name)
    node = {"top": SCHEMA["properties"], "experiment": EXPERIMENT, "item": EXPERIMENT}[where][key]
    node = integer_branch(node["items"] if where == "item" else node)
    assert "maximum" in node, f"{key}: no maximum (the harness's is {option['max']})"
    assert node["maximum"] <= option["max"] and node.get("minimum", 0) >= (option["min"] or 0), (node, option)


def test_the_cpu_id_bound_is_the_harness_parsers(stream_binary):
    from membench.plan.config_limits import MAX_CPU

    def accepts(affinity):
        return subprocess.run([str(stream_binary), "--affinity", affinity, "--help"], capture_output=True).returncode

    assert accepts(f"cpus:0-{MAX_CPU}") == 0 and accepts(f"cpus:0-{MAX_CPU + 1}") == 2
    assert problems(stream(affinity=[f"cpus:0-{MAX_CPU}"])) == []
    said = problems(stream(affinity=[f"cpus:0-{MAX_CPU + 1}"]))
    assert said and all(f"allowed: CPU ids 0 to {MAX_CPU}" in p for p in said)


@pytest.mark.parametrize("size", ["0B", "1B", "4095B", "2PiB", "2000000GiB"])
def test_sizes_with_a_unit_keep_the_bounds_of_integer_sizes(size):
    said = problems(stream(size=[size]))
    assert said and all("experiments.s.size[0]" in p for p in said), said


def test_ntimes_past_the_harness_cap_is_refused(option_listings):
    cap = next(o for o in option_listings["stream"]["harness_options"] if o["name"] == "ntimes")["max"]
    assert problems({**stream(), "ntimes": cap}) == []
    assert problems({**stream(), "ntimes": cap * 10}) == [f"ntimes: {cap * 10} is not allowed; allowed: <= {cap}"]


def test_a_cpu_range_of_twenty_digits_is_one_line_quickly():
    start = time.monotonic()
    said = problems(stream(affinity=["cpus:0-99999999999999999999"]))
    assert said and time.monotonic() - start < 5
    assert all("\n" not in p and "experiments.s.affinity[0]" in p for p in said)


@pytest.mark.parametrize(
    "config",
    [
        stream(size=["auto\n"]),
        stream(affinity=["close\n"]),
        stream(policy=["local\n"]),
        stream(chase_group=["full\n"]),
        {"system": "t\n", **stream()},
        {"experiments": {"s\n": {"kernel": "stream"}}},
    ],
    ids=["size", "affinity", "policy", "chase_group", "system", "experiment name"],
)
def test_a_value_ending_in_a_newline_is_refused(config):
    assert problems(config), config


def test_yaml_aliases_that_expand_past_the_bound_are_one_short_line():
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 7)]
    raw = yaml.safe_load("\n".join(lines) + "\nexperiments: {s: {kernel: stream}}\n")  # 9^7 values
    start = time.monotonic()
    said = problems(raw)
    assert time.monotonic() - start < 5
    assert len(said) == 1 and len(said[0]) < 300 and "aliases" in said[0], [p[:300] for p in said]


def test_an_unknown_key_is_said_with_its_value_cut_short():
    said = problems({**stream(), "bogus": [list(range(1000))] * 50})
    assert len(said) == 1 and "unknown key 'bogus'" in said[0] and len(said[0]) < 500


def test_cells_past_the_bound_are_refused_before_any_is_made(monkeypatch):
    def never(*args, **kwargs):
        raise AssertionError("the cells were expanded before the count was checked")

    monkeypatch.setattr(checks, "experiment_cells", never)
    monkeypatch.setattr(grammar, "experiment_cells", never)
    ten = {
        "threads": list(range(1, 11)), "size": [f"{i}MiB" for i in range(1, 11)],
        "prefetch_distance": list(range(10)), "load_delay": list(range(10)),
        "affinity": [f"cpus:{i}" for i in range(10)], "policy": [f"bind:{i}" for i in range(10)],
        "variants": ["default"] * 10, "init": ["parallel", "serial"] * 5,
    }  # fmt: skip
    start = time.monotonic()
    said = problems(stream(**ten))
    assert time.monotonic() - start < 5
    assert len(said) == 1 and "100,000,000 cells" in said[0], said


def test_an_experiment_written_twice_is_refused_by_the_workflow(tmp_path, venv_bin):
    workdir = copy_workflow(tmp_path / "membench")
    (workdir / "twice.yaml").write_text(
        "system: t\nexperiments:\n"
        "  s: {kernel: stream, threads: [1], size: [2MiB]}\n"
        "  s: {kernel: stream, threads: [2], size: [4MiB]}\n"
    )
    out = subprocess.run(
        [str(venv_bin / "snakemake"), "-n", "--cores", "1", "--configfile", "twice.yaml"],
        cwd=workdir, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    text = out.stdout + out.stderr
    assert out.returncode != 0 and "twice.yaml:4: the key 's' is written twice (first at line 3)" in text, text[-3000:]
