"""The knob table (membench.plan.knobs, issue 43): one row per knob, held
against the harness's option tables (--list-options of every built family),
the config schema and the record schema; the read-back tables and series
axes derived from it read stored records as before."""

import ast
from dataclasses import MISSING
from pathlib import Path

import pytest
import yaml

from membench.analyse import stats
from membench.compare import match
from membench.measure import identity, options
from membench.plan import families, grammar, knobs, request
from membench.plan.request import Knobs, Request
from membench.store import stored

REPO = Path(__file__).resolve().parents[1]
CONFIG_SCHEMA = yaml.safe_load((REPO / "workflow" / "schemas" / "config.schema.yaml").read_text())
RECORD_SCHEMA = yaml.safe_load((REPO / "workflow" / "schemas" / "record.schema.yaml").read_text())
PACKAGE = REPO / "workflow" / "scripts" / "membench"

# Knobs whose harness default differs from the config's on purpose: the
# pipeline always passes them (variant: the one the binary is built as;
# threads: OpenMP's default; pages: the variant's declared pages; prefetch
# distance: the variant's built-in one; size: the harness has none, it
# takes bytes, `size: auto` resolved by membench.measure.auto_size).
HARNESS_DECIDES = {"variant", "threads", "pages", "prefetch_distance", "size"}
# Family options the config does not set (the harness's own constants).
NOT_CONFIGURED = {"stride", "seed", "chunk-ms", "delay-every", "clean-lines"}
# Harness options that are no knob: what the round passes besides the knobs.
NOT_KNOBS = {"op", "repeat", "system", "test-corrupt", "list", "list-options", "help"}


def test_every_option_a_binary_lists_is_a_knob_or_named_here(option_listings):
    options_of_knobs = {k.option for k in knobs.TABLE if k.option}
    for family, doc in option_listings.items():
        harness = {o["name"] for o in doc["harness_options"]}
        assert harness - NOT_KNOBS == set(knobs.HARNESS_OPTIONS), family
        own = {o["name"] for o in doc["family_options"]}
        assert own - NOT_CONFIGURED <= options_of_knobs, (family, own - NOT_CONFIGURED - options_of_knobs)


def test_a_family_option_is_listed_by_exactly_the_families_the_knob_applies_to(option_listings):
    for knob in knobs.TABLE:
        if not knob.option or knob.option in knobs.HARNESS_OPTIONS:
            continue
        listing = sorted(f for f, doc in option_listings.items() if knob.option in {o["name"] for o in doc["family_options"]})
        assert listing == sorted(knob.families()), knob.name


def test_the_harness_defaults_are_the_tables(option_listings):
    """A default the C option tables also write agrees with the table's
    (the harness prints numbers of its harness table as text: "10")."""
    differ = set()
    for family, doc in option_listings.items():
        listed = {o["name"]: o["default"] for o in (*doc["harness_options"], *doc["family_options"])}
        for knob in knobs.TABLE:
            if knob.option in listed and knob.applies(family) and str(listed[knob.option]) != str(knob.default):
                differ.add(knob.name)
    assert differ == HARNESS_DECIDES


def _schema_entry(key: str) -> dict | None:
    experiment = CONFIG_SCHEMA["$defs"]["experiment"]["properties"]
    top = CONFIG_SCHEMA["properties"]
    if key in experiment and "default" in experiment[key]:
        return experiment[key]
    return top.get(key) or experiment.get(key)


def _as_config_reads_it(name: str, value):
    if name == "sweep_from":
        return grammar.parse_size(value)
    if name == "chase_group":
        return grammar.parse_group(value)
    return value


def test_the_config_schema_defaults_are_the_tables():
    for knob in knobs.TABLE:
        if not knob.configured:
            continue
        entry = _schema_entry(knob.config_key)
        assert entry is not None, f"{knob.config_key}: not in the config schema"
        if knob.default is None:
            assert "default" not in entry, knob.name
            continue
        default = entry["default"]
        if knob.axis:
            assert [_as_config_reads_it(knob.name, v) for v in default] == [knob.default], knob.name
        else:
            assert _as_config_reads_it(knob.name, default) == (list(knob.default) if isinstance(knob.default, tuple)
                                                              else knob.default), knob.name  # fmt: skip
            assert knob.axis == (entry.get("type") == "array" and knob.name != "pair_classes"), knob.name
        if "x-kernels" in entry:
            assert sorted(entry["x-kernels"]) == sorted(knob.families()), knob.name


def test_every_experiment_key_of_the_config_schema_is_a_knob():
    keys = set(CONFIG_SCHEMA["$defs"]["experiment"]["properties"])
    assert keys - {k.config_key for k in knobs.TABLE} == {"exclude"}


def test_the_record_schema_declares_every_record_key_and_column():
    declared = RECORD_SCHEMA["properties"]
    for knob in knobs.TABLE:
        for key in {knob.record, knob.column} - {None}:
            assert key in declared, f"{knob.name}: record key {key} not in the record schema"
        if knob.in_record == knobs.OWN:  # other families' records hold null
            assert {"type": "null"} in declared[knob.record].get("anyOf", []), knob.name


def test_the_request_fields_are_the_tables():
    fields = set(Request.__dataclass_fields__)
    assert {k.request for k in knobs.TABLE if k.request} <= fields
    for name, spec in Knobs.__dataclass_fields__.items():
        assert spec.default in (knobs.default(name), MISSING), name
    assert request.WHERE_THEY_APPLY == knobs.request_only_where_they_apply()


def test_a_cell_and_its_request_share_their_knobs_from_one_class():
    """Cell and Request restate none of each other's fields: what both
    carry under one name is Knobs (pages alone means two things: as the
    config names it, and as the harness is asked)."""
    cell, req, shared = (set(c.__dataclass_fields__) for c in (grammar.Cell, Request, Knobs))
    assert cell & req == shared | {"pages"}
    assert shared == {k.name for k in knobs.TABLE if k.request == k.name} & cell


def test_the_read_back_tables_are_those_stored_runs_were_read_with():
    """Derived from the table, they still name what they named before it
    (stored records are read with them): a changed row shows here. The
    affinity as asked moved to its own key in record version 4 (older
    records are migrated: membench.store.record_versions)."""
    assert identity.REQUEST_KNOBS == {
        "kernel": "kernel", "variant": "variant", "threads": "threads_requested", "affinity": "affinity_requested",
        "policy": "policy_requested", "pages_requested": "pages_requested", "init": "init", "size": "size_requested",
        "ntimes": "ntimes", "prefetch_distance": "prefetch_distance_requested", "load_delay": "load_delay_requested",
        "sweep_from": "sweep_from", "points_per_octave": "points_per_octave", "chase_group": "chase_group_requested",
        "chase_spacing": "chase_spacing_requested", "features": "features", "pair": "pair_requested",
    }  # fmt: skip
    assert set(stored.KNOBS) == {
        ("threads_requested", "threads"), ("affinity_requested", "affinity"), ("policy_requested", "policy"),
        ("pages_requested", "pages"), ("init", "init"), ("size_requested", "size"), ("ntimes", "ntimes"),
        ("prefetch_distance_requested", "prefetch_distance"), ("chase_group_requested", "chase_group"),
        ("load_delay_requested", "load_delay"),
    }  # fmt: skip
    assert match.KNOBS == [
        "kernel", "variant", "op", "threads_requested", "affinity_requested", "policy_requested", "pages", "init",
        "size_requested", "prefetch_distance_requested", "load_delay_requested", "chase_group_requested", "ntimes",
        "working_set_bytes", "sweep_level",
    ]  # fmt: skip
    assert match.NOT_KNOBS == ("pages_requested",)
    assert [k.record for k in knobs.written_by_the_round()] == [
        "threads_requested", "affinity_requested", "policy_requested", "pages_requested", "size_requested",
        "prefetch_distance_requested", "load_delay_requested", "chase_group_requested", "chase_spacing_requested",
        "features",
    ]  # fmt: skip
    assert stats.SERIES_AXES == ["system", "variant", "affinity_requested", "policy_requested", "pages", "init", "size_requested"]
    assert options.FAMILY_FIELDS == {
        "sweep-from": "sweep_from", "points-per-octave": "points_per_octave", "delay": "load_delay",
        "group": "chase_group", "spacing": "chase_spacing", "samples": "c2c_samples", "roundtrips": "c2c_roundtrips",
    }  # fmt: skip


@pytest.mark.parametrize("kernel", ["chase", "stream", "c2c"])
def test_a_record_is_checked_on_the_knobs_its_family_states(kernel):
    checked = {name for _, name in stored._knobs(grammar.Cell(
        experiment="e", kernel=kernel, variant="default", threads=1, affinity="none", policy="default", pages="4k",
        init="parallel", size="auto", repeats=1, ntimes=10))}  # fmt: skip
    assert ("chase_group" in checked) == (kernel == "chase")


def _table_call(node) -> list[str] | str | None:
    """The value of `knobs.columns("pages", ...)` and the like (a call of
    the table with literal arguments), None for anything else."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and getattr(node.func.value, "id", "") == "knobs"):  # fmt: skip
        return None
    args = [ast.literal_eval(a) for a in node.args]
    return getattr(knobs, node.func.attr)(*args, **{k.arg: ast.literal_eval(k.value) for k in node.keywords})


def _columns_of(arg) -> list[str] | None:
    """The columns of a list written out or named through the table
    (literals, `*knobs.columns(...)`, `knobs.series_columns(...)`)."""
    if (named := _table_call(arg)) is not None:
        return named
    if not isinstance(arg, ast.List):
        return None
    columns = []
    for element in arg.elts:
        value = _table_call(element.value if isinstance(element, ast.Starred) else element)
        if isinstance(element, ast.Constant):
            columns.append(element.value)
        elif isinstance(value, str):
            columns.append(value)
        elif isinstance(element, ast.Starred) and isinstance(value, list):
            columns.extend(value)
        else:
            return None
    return columns


def _series_lists() -> list[tuple[str, int, list[str]]]:
    """Every list of columns the package hands add_series, written out or
    named through the table (issue 53)."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "add_series":
                for arg in node.args[1:]:
                    if (columns := _columns_of(arg)) is not None:
                        found.append((str(path.relative_to(REPO)), node.lineno, columns))
    return found


def test_every_series_axis_list_names_knob_columns():
    """The series lists the figures and tables restate name the table's
    columns (a misspelt or unrecorded column would make no series)."""
    columns = {key for k in knobs.TABLE for key in (k.record, k.column) if key} | {"system", "op", *stats.OBTAINED_KEYS}
    lists = _series_lists()
    assert len(lists) >= 5
    for where, line, axes in lists:
        assert set(axes) <= columns, f"{where}:{line}: {sorted(set(axes) - columns)} not a knob's column"


def test_a_knob_is_shown_in_its_unit():
    assert knobs.knob("chase_spacing").text(256) == "256 B"
    assert knobs.knob("chase_group").text(knobs.DEFAULT_CHASE_GROUP) == "256 KiB"
    assert knobs.knob("chase_group").text("full") == "full"
    assert knobs.knob("size").text("auto") == "auto" and knobs.knob("size").text(2**30) == "1 GiB"
    assert knobs.knob("ntimes").text(10) == "10"


def test_the_families_a_knob_applies_to_are_the_family_tables():
    assert knobs.knob("chase_spacing").families() == ["chase", "loaded"]
    assert knobs.knob("ntimes").families() == list(families.FAMILIES)


def test_the_random_chase_options_are_one_set_of_rows_in_both_families(option_listings):
    """chase and loaded take the random chase's options from one macro
    (MB_CHASE_RANDOM_OPTIONS): the same rows, help included, in both."""
    shared = ("group", "seed", "chunk-ms", "spacing")
    rows = {family: [o for o in option_listings[family]["family_options"] if o["name"] in shared]
            for family in ("chase", "loaded")}  # fmt: skip
    assert [o["name"] for o in rows["chase"]] == list(shared)
    assert rows["chase"] == rows["loaded"]


def test_a_family_is_declared_once_and_the_schemas_follow():
    """plan/families.py and variants.yaml name the families; the config
    schema's kernel enum is filled in from the family table when loaded,
    and the record schema applies to each family exactly the block of its
    metric, a family it does not name (a new bandwidth one) included."""
    from membench.core import record_schema
    from membench.plan import checks, variants

    names = sorted(families.FAMILIES)
    assert names == sorted(variants.families(variants.load_variants(REPO / "kernels" / "families" / "variants.yaml")))
    assert "enum" not in CONFIG_SCHEMA["$defs"]["experiment"]["properties"]["kernel"], "named in plan/families.py only"
    loaded = checks.load_schema(REPO / "workflow" / "schemas" / "config.schema.yaml")
    assert sorted(loaded["$defs"]["experiment"]["properties"]["kernel"]["enum"]) == names
    block_of_metric = {families.BANDWIDTH: "family_bandwidth", families.LATENCY: "family_chase",
                       families.LOADED: "family_loaded", families.HANDOFF: "family_c2c"}  # fmt: skip
    chosen = {name: record_schema.family_blocks(name) for name in [*names, "a_new_bandwidth_family"]}
    assert chosen == {**{name: [block_of_metric[families.family(name).metric]] for name in names},
                      "a_new_bandwidth_family": ["family_bandwidth"]}  # fmt: skip


@pytest.mark.parametrize("kernel", ["stream", "chase"])
def test_a_request_states_itself_in_its_records_as_the_round_wrote_it(kernel):
    req = Request(system="s", kernel=kernel, variant="default", ops=("triad",), threads="all", affinity="close",
                  policy="remote", pages="thp", pages_requested="variant", init="serial", size="auto", ntimes=5,
                  repeat=0, load_delay=7, features={"simd": "avx2"})  # fmt: skip
    chase = kernel == "chase"
    assert req.as_recorded() == {
        "threads_requested": "all", "affinity_requested": "close", "policy_requested": "remote", "pages_requested": "variant",
        "size_requested": "auto", "prefetch_distance_requested": "variant", "load_delay_requested": 7,
        "chase_group_requested": knobs.DEFAULT_CHASE_GROUP if chase else None,
        "chase_spacing_requested": knobs.DEFAULT_CHASE_SPACING if chase else None, "features": {"simd": "avx2"},
    }  # fmt: skip


def test_make_plan_names_a_changed_knob_in_its_unit():
    from membench.store.to_measure import what_changed

    record = {"chase_group_requested": 64 * 2**10, "ntimes": 5, "size_requested": "auto"}
    asked = {"chase_group": knobs.DEFAULT_CHASE_GROUP, "ntimes": 6, "size": 2**30}
    assert what_changed(record, asked) == ("size: stored auto, asked 1 GiB; chase_group: stored 64 KiB, asked 256 KiB; "
                                           "ntimes: stored 5, asked 6")  # fmt: skip


def _written_defaults(source: str, defaults: dict) -> list[tuple[int, str]]:
    """(line, name) of each default the source writes for a knob by one of
    its names: a parameter's default, a (dataclass) field's, or the
    fallback of .get / .setdefault ("ntimes", 10) — as a literal equal to
    the table's (or a one-element list of it)."""

    def same(node, default):
        node = node.elts[0] if isinstance(node, ast.List) and len(node.elts) == 1 else node
        return isinstance(node, ast.Constant) and type(node.value) is type(default) and node.value == default

    found = []
    for node in ast.walk(ast.parse(source)):
        pairs = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            positional = args.posonlyargs + args.args
            pairs += zip([a.arg for a in positional[len(positional) - len(args.defaults):]], args.defaults)
            pairs += [(a.arg, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            pairs.append((node.target.id, node.value))
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", "") in ("get", "setdefault")
              and len(node.args) == 2 and isinstance(node.args[0], ast.Constant)):  # fmt: skip
            pairs.append((node.args[0].value, node.args[1]))
        found += [(value.lineno, name) for name, value in pairs if name in defaults and same(value, defaults[name])]
    return found


def test_no_default_of_the_table_is_written_again_in_python():
    """A knob's default lives in the table (C's are held to it through
    --list-options above)."""
    defaults = {}
    for knob in knobs.TABLE:
        if knob.default is not None and not isinstance(knob.default, tuple):
            names = {knob.name, knob.request, knob.config_key, knob.record, (knob.option or "").replace("-", "_")}
            defaults.update({name: knob.default for name in names if name})
    assert _written_defaults('def f(ntimes=10): return c.get("chase_spacing", [256])\n', defaults) == [
        (1, "ntimes"), (1, "chase_spacing")]  # fmt: skip
    found = {}
    for path in sorted((REPO / "workflow" / "scripts").rglob("*.py")):
        if path != PACKAGE / "plan" / "knobs.py" and (written := _written_defaults(path.read_text(), defaults)):
            found[str(path.relative_to(REPO))] = written
    assert found == {}
