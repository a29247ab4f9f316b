"""Config validation (every problem at once) and expansion into cells."""

import json
from pathlib import Path

import pytest
import yaml

from membench.plan import checks
from membench.plan import grammar as matrix
from membench.plan import variants


@pytest.fixture(scope="module")
def table(repo):
    return variants.load_variants(repo / "kernels" / "families" / "variants.yaml")


@pytest.fixture(scope="module")
def schema_path(repo):
    return repo / "workflow" / "schemas" / "config.schema.yaml"


def load(config, schema_path, table):
    return checks.load(config, schema_path, table)


def test_default_config_is_valid(repo, schema_path, table):
    config = yaml.safe_load((repo / "config" / "config.yaml").read_text())
    validated, cells = load(config, schema_path, table)
    assert cells, "the default config must measure something"
    assert {c.experiment for c in cells} == set(validated["experiments"])


def test_expansion_is_the_cross_product_minus_exclusions(schema_path, table):
    config = {
        "repeats": 3,
        "experiments": {
            "scaling": {
                "kernel": "stream",
                "threads": [1, 2, "all"],
                "affinity": ["none", "compact", "scatter"],
                "size": ["64MiB", 1048576],
                "exclude": [{"threads": 1, "affinity": "scatter"}],
            }
        },
    }
    validated, cells = load(config, schema_path, table)
    assert len(cells) == 3 * 3 * 2 - 2  # threads=1 x spread x both sizes excluded
    assert {c.affinity for c in cells} == {"none", "close", "spread"}  # aliases resolved
    assert {c.size for c in cells} == {64 * 2**20, 2**20}
    assert all(c.repeats == 3 and c.ntimes == validated["ntimes"] for c in cells)
    assert not any(c.threads == 1 and c.affinity == "spread" for c in cells)
    assert len({c.id for c in cells}) == len(cells)


def test_defaults_fill_every_axis(schema_path, table):
    validated, cells = load({"experiments": {"e": {"kernel": "stream"}}}, schema_path, table)
    (cell,) = cells
    assert (cell.variant, cell.threads, cell.affinity, cell.policy) == ("default", 1, "none", "default")
    assert (cell.pages, cell.init, cell.size, cell.prefetch_distance) == ("variant", "parallel", "auto", "variant")
    assert validated["system"] == "auto" and cell.repeats == validated["repeats"]


def test_aliases_and_duplicates_collapse(schema_path, table):
    config = {"experiments": {"e": {"kernel": "stream", "affinity": ["close", "compact"]}}}
    _, cells = load(config, schema_path, table)
    assert [c.affinity for c in cells] == ["close"]


def test_variants_all_expands_to_the_table(schema_path, table):
    config = {"experiments": {"e": {"kernel": "stream", "variants": ["all"]}}}
    _, cells = load(config, schema_path, table)
    assert [c.variant for c in cells] == variants.variant_names(table, "stream")


def test_experiment_overrides_repeats_and_ntimes(schema_path, table):
    config = {"repeats": 5, "experiments": {"e": {"kernel": "stream", "repeats": 2, "ntimes": 4}}}
    _, (cell,) = load(config, schema_path, table)
    assert (cell.repeats, cell.ntimes) == (2, 4)


def test_cell_ids_are_path_safe():
    cell = matrix.Cell(experiment="e", kernel="stream", variant="default", threads=2, affinity="cpus:0-3,8",
                       policy="interleave:0,1", pages="4k", init="serial", size="auto", repeats=1, ntimes=2)
    assert ":" not in cell.id and "," not in cell.id
    assert cell.id == "e/stream-default/t2_cpus=0-3+8_interleave=0+1_4k_serial_sauto"


@pytest.mark.parametrize(
    ("text", "size"),
    [("64MiB", 64 * 2**20), ("1GiB", 2**30), ("500MB", 500 * 10**6), ("1.5KiB", 1536), (4096, 4096), ("auto", "auto")],
)
def test_parse_size(text, size):
    assert matrix.parse_size(text) == size


BAD = {
    "system": "has space",
    "repeats": 0,
    "colour": "blue",
    "experiments": {
        "Bad_Name": {"kernel": "stream"},
        "typo": {"kernel": "stream", "threds": [1]},
        "values": {
            "kernel": "strem",
            "threads": [0, "many"],
            "affinity": ["compakt"],
            "policy": ["bind:x"],
            "pages": ["2m"],
            "init": ["lazy"],
            "size": ["12 parsecs"],
            "ntimes": 1,
        },
        "names": {"kernel": "stream", "variants": ["nope"], "exclude": [{"thread": 1}], "affinity": []},
    },
}

# (path fragment, offending value, a word of what is allowed) per problem.
EXPECTED = [
    ("(top level)", "'colour'", "allowed keys: budget, disturbed_retries, experiments"),
    ("system", "'has space'", "auto, or letters"),
    ("repeats", "0", ">= 1"),
    ("experiments", "'Bad_Name'", "lower-case letters"),
    ("experiments.typo", "'threds'", "allowed keys: affinity"),
    ("experiments.values.kernel", "'strem'", "allowed: stream"),
    ("experiments.values.threads[0]", "0", 'an integer >= 1, "all", "cores", "node" or "node-smt"'),
    ("experiments.values.threads[1]", "'many'", 'an integer >= 1, "all", "cores", "node" or "node-smt"'),
    ("experiments.values.affinity[0]", "'compakt'", "none, close, compact, spread, scatter"),
    ("experiments.values.policy[0]", "'bind:x'", "bind:N[,M]"),
    ("experiments.values.pages[0]", "'2m'", "variant, 4k, thp, hugetlb-2m, hugetlb-1g"),
    ("experiments.values.init[0]", "'lazy'", "parallel, serial"),
    ("experiments.values.size[0]", "'12 parsecs'", "KiB"),
    ("experiments.values.ntimes", "1", ">= 2"),
    ("experiments.names.variants[0]", "'nope'", "allowed: all, default"),
    ("experiments.names.exclude[0]", "'thread'", "allowed axes: variant, threads"),
    ("experiments.names.affinity", "[]", "at least 1"),
]


def test_every_problem_is_reported_at_once(schema_path, table):
    with pytest.raises(matrix.ConfigError) as caught:
        load(BAD, schema_path, table)
    problems = caught.value.problems
    for where, value, allowed in EXPECTED:
        matching = [p for p in problems if p.startswith(where + ":") and value in p and allowed in p]
        assert matching, f"no problem reported for {where} {value} ({allowed}) in:\n" + "\n".join(problems)
    assert len(problems) == len(EXPECTED), "\n".join(problems)
    assert f"{len(EXPECTED)} problems" in str(caught.value)


def test_a_non_mapping_config_is_an_error(schema_path, table):
    with pytest.raises(matrix.ConfigError, match="expected a mapping"):
        load(["not", "a", "mapping"], schema_path, table)


def test_shuffle_key_is_deterministic_spread_and_without_ties():
    first = [matrix.shuffle_key(f"e/k/c{i}", r, 1) for i in range(20) for r in range(3)]
    assert first == [matrix.shuffle_key(f"e/k/c{i}", r, 1) for i in range(20) for r in range(3)]
    assert first != sorted(first)
    assert first != [matrix.shuffle_key(f"e/k/c{i}", r, 2) for i in range(20) for r in range(3)]
    # a round of a paper-sized study: every cell its own place, no ties
    # falling back to config order
    keys = [matrix.shuffle_key(f"e/k/c{i}", 7, 1) for i in range(20000)]
    assert len(set(keys)) == len(keys)


def test_chase_runs_one_thread_only(schema_path, table):
    config = {"experiments": {"lat": {"kernel": "chase", "threads": [1, 2]}}}
    with pytest.raises(matrix.ConfigError, match=r"experiments.lat.threads: \[1, 2\] is not allowed for chase"):
        load(config, schema_path, table)


def test_loaded_cells_carry_their_load_axes(schema_path, table):
    config = {
        "experiments": {
            "lat": {"kernel": "chase", "size": ["1GiB"], "sweep_from": "16KiB", "points_per_octave": 4},
            "load": {"kernel": "loaded", "threads": ["all"], "load_op": ["triad", "read"], "load_delay": [0, 100]},
        }
    }
    _, cells = load(config, schema_path, table)
    chase = [c for c in cells if c.kernel == "chase"]
    assert [(c.size, c.sweep_from, c.points_per_octave) for c in chase] == [(2**30, 16 * 1024, 4)]
    loaded = [c for c in cells if c.kernel == "loaded"]
    assert len(loaded) == 4 and len({c.id for c in loaded}) == 4
    assert any(c.id.endswith("_read_d100_g256KiB") for c in loaded)


def test_chase_group_is_an_axis(schema_path, table):
    """Bytes, sizes, page counts and full; the default is multichase's 256 KiB;
    the group is part of the cell id and can be excluded."""
    config = {
        "experiments": {
            "lat": {"kernel": "chase", "chase_group": [262144, "64KiB", "16 pages", "1page", "full"],
                    "exclude": [{"chase_group": "64 pages"}]},
            "plain": {"kernel": "chase"},
            "load": {"kernel": "loaded", "threads": [2], "chase_group": ["full"]},
        }
    }  # fmt: skip
    _, cells = load(config, schema_path, table)
    lat = [c for c in cells if c.experiment == "lat"]
    assert [c.chase_group for c in lat] == [65536, 4096, "full"]  # 16 pages = 64 KiB, listed once
    assert [c.id.rsplit("_", 1)[1] for c in lat] == ["g64KiB", "g4KiB", "gfull"]
    assert [c.chase_group for c in cells if c.experiment == "plain"] == [matrix.DEFAULT_CHASE_GROUP]
    assert [c.chase_group for c in cells if c.experiment == "load"] == ["full"]


@pytest.mark.parametrize(
    ("group", "why"),
    [
        (1000, "1000 is not allowed; allowed: full, or whole 4 KiB pages"),
        ("6000B", "'6000B' is not allowed; it is 6000 bytes; allowed: full"),
        ("2KiB", "'2KiB' is not allowed; it is 2048 bytes"),
        ("0 pages", "'0 pages' is not allowed; it is 0 bytes"),
        ("all", "'all' is not allowed; allowed: full, or whole 4 KiB pages"),
        (True, "True is not allowed"),
    ],
)
def test_bad_chase_groups_are_reported_with_what_is_allowed(schema_path, table, group, why):
    config = {"experiments": {"lat": {"kernel": "chase", "chase_group": ["full", group]}, "x": {"kernel": "nope"}}}
    with pytest.raises(matrix.ConfigError) as error:
        load(config, schema_path, table)
    message = str(error.value)
    assert f"experiments.lat.chase_group[1]: {why}" in message, message
    assert "experiments.x.kernel" in message  # reported together with the other problems


def test_group_and_size_text():
    assert [matrix.group_text(g) for g in (262144, "262144", 262144.0, "full", 12288, 1536 * 1024)] == [
        "256 KiB", "256 KiB", "256 KiB", "full", "12 KiB", "1.5 MiB"
    ]  # fmt: skip
    assert matrix.parse_group("64 pages") == matrix.parse_group("256KiB") == 262144
    assert matrix.size_text(2**30) == "1 GiB" and matrix.size_text(741455872) == "707.1 MiB"


@pytest.mark.parametrize("name", sorted(p.name for p in (Path(__file__).parents[1] / "config").glob("*.yaml")))
def test_every_shipped_config_is_valid(name, repo, schema_path, table):
    config = yaml.safe_load((repo / "config" / name).read_text())
    _, cells = load(config, schema_path, table)
    assert cells


# Every key of the grammar set once, to put a value of the wrong type at each.
FULL = {
    "system": "box", "systems": {"a": {"partition": "p", "constraint": "c", "account": "x"}}, "repeats": 1,
    "ntimes": 2, "figures_only": False, "shuffle_seed": 1,
    "experiments": {
        "e": {
            "kernel": "chase", "variants": ["default"], "threads": [1], "affinity": ["cpus:0-1"], "policy": ["default"],
            "pages": ["4k"], "init": ["parallel"], "size": ["1MiB"], "prefetch_distance": [64],
            "load_op": ["triad"], "load_delay": [0], "sweep_from": "4KiB", "points_per_octave": 1, "repeats": 1,
            "ntimes": 2, "exclude": [{"size": "2MiB", "variant": "default", "affinity": "none"}],
        }
    },
}  # fmt: skip
WRONG_TYPES = [["x"], {"a": 1}, "x", 3, None, True, 1.5, [[1]], [None]]


def _key_paths(node, path=()):
    if path:
        yield path
    children = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, child in children:
        yield from _key_paths(child, (*path, key))


def _where(path) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")


@pytest.mark.parametrize("path", list(_key_paths(FULL)), ids=_where)
def test_a_value_of_the_wrong_type_anywhere_is_a_listed_problem(path, schema_path, table):
    schema = checks.load_schema(schema_path)
    """Never a traceback: the problem names the key, the value and what is
    allowed, whatever type the YAML gave."""
    load(FULL, schema_path, table)  # the unmodified config is valid
    original = FULL
    for key in path:
        original = original[key]
    for wrong in (w for w in WRONG_TYPES if type(w) is not type(original)):
        config = json.loads(json.dumps(FULL))
        parent = config
        for key in path[:-1]:
            parent = parent[key]
        parent[path[-1]] = wrong
        with pytest.raises(matrix.ConfigError) as caught:
            checks.validate(config, schema, table)
        where = _where(path)
        inner = wrong.values() if isinstance(wrong, dict) else wrong if isinstance(wrong, list) else ()
        shown = [repr(wrong), *map(repr, inner)]  # a problem may name the value or one of its items
        named = [
            p
            for p in caught.value.problems
            if (p.split(":")[0].startswith(where) or where.startswith(p.split(":")[0]))
            and any(v in p for v in shown)
            and ("allowed" in p or "required" in p)
        ]
        assert named, f"{where} = {wrong!r}:\n{caught.value}"


def test_semantic_mistakes_are_reported_together(schema_path, table):
    config = {
        "experiments": {
            "pinned": {"kernel": "stream", "affinity": ["cpus:0-1,5-3", "cpus:0-3"]},
            "sweep": {"kernel": "chase", "size": ["256KiB", "1MiB"], "sweep_from": "512KiB"},
            "gone": {"kernel": "stream", "threads": [1, 2], "exclude": [{"threads": 1}, {"threads": 2}]},
            "typo": {"kernel": "readonly", "exclude": [{"affinity": "compakt"}, {"variant": "v099"}, {"size": [1]}]},
            "fine": {"kernel": "stream", "threads": [1, 2], "exclude": [{"threads": 1}]},
        }
    }
    with pytest.raises(matrix.ConfigError) as caught:
        load(config, schema_path, table)
    problems = caught.value.problems
    expected = [
        ("experiments.pinned.affinity[0]: 'cpus:0-1,5-3'", "backwards"),
        ("experiments.sweep.sweep_from: '512KiB' (524288 bytes) exceeds size '256KiB'", "allowed"),
        ("experiments.gone.exclude: [{'threads': 1}, {'threads': 2}] removes every cell", "allowed"),
        ("experiments.typo.exclude[0].affinity: 'compakt'", "allowed: one value of the affinity axis: none"),
        ("experiments.typo.exclude[1].variant: 'v099'", "v012-avx512"),
        ("experiments.typo.exclude[2].size: [1]", "allowed: one value of the size axis"),
    ]
    for start, word in expected:
        assert any(p.startswith(start) and word in p for p in problems), f"{start}:\n" + "\n".join(problems)
    assert len(problems) == len(expected), "\n".join(problems)


def test_a_range_written_forwards_and_a_sweep_up_to_the_size_are_fine(schema_path, table):
    config = {
        "experiments": {
            "pinned": {"kernel": "stream", "affinity": ["cpus:1-1,2-3"]},
            "sweep": {"kernel": "chase", "size": ["512KiB"], "sweep_from": "512KiB"},
        }
    }
    _, cells = load(config, schema_path, table)
    assert len(cells) == 2
