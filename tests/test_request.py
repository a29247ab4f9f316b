"""One request type from config cell to harness argv (issue 28).

Stored runs are kept by their request digest, so the request's JSON, and its
digest, stay what they were before the request type; the harness argv stays
what it was too. Both are pinned in fixtures/request/pinned.json, computed
with the code before the change, for cells of every family."""

import json
from pathlib import Path

import pytest

from membench.measure import harness, options
from membench.plan import checks, families, grammar, request, rounds, variants
from membench.plan.request import Knobs, Request

REPO = Path(__file__).resolve().parents[1]
PINNED = json.loads((REPO / "tests" / "fixtures" / "request" / "pinned.json").read_text())
TABLE = variants.load_variants(REPO / "kernels" / "families" / "variants.yaml")
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"


@pytest.fixture(scope="module")
def cells():
    return checks.load(PINNED["config"], SCHEMA, TABLE)[1]


def test_every_family_is_pinned(cells):
    assert {c.kernel for c in cells} == set(variants.families(TABLE))


def test_request_digests_are_the_stored_ones(cells):
    digests = {f"{c.id}@{k}": rounds.digest(rounds.cell_request(c, "box", k, TABLE)) for c in cells for k in (0, 3)}
    assert digests == PINNED["digests"]


def resolved_for(cell):
    """The host's answer the pinned argv were computed with."""
    return {"threads": 4 if cell.kernel == "loaded" else (2 if cell.kernel == "c2c" else 1), "size": 1 << 24,
            "policy": "bind:1" if cell.policy == "remote" else cell.policy,
            "affinity": "cpus:0,1" if cell.kernel == "c2c" else cell.affinity}  # fmt: skip


def test_harness_argv_from_the_option_tables_is_the_old_argv(cells, option_listings):
    for cell in cells:
        req = Request.of_dict(rounds.cell_request(cell, "box", 1, TABLE))
        argv = harness.harness_argv(f"bin/{cell.kernel}-{cell.variant}", req, resolved_for(cell), option_listings[cell.kernel])
        assert argv == PINNED["argv"][cell.id], cell.id


def test_the_option_tables_are_read_from_the_binary(stream_binary, option_listings):
    doc = options.listing(str(stream_binary))
    assert doc["family"] == "stream" and options.listing(str(stream_binary)) is doc  # read once
    with pytest.raises(options.OptionsError, match="no-such-binary"):
        options.listing("/no-such-binary")


def test_each_family_option_a_request_feeds_is_one_its_family_lists(option_listings):
    """The trait table's knobs (membench.plan.families) against the C option
    tables: a request field is passed to a family exactly where its binary
    takes it, and the defaults Python writes are the harness's."""
    fed = set(options.FAMILY_FIELDS.values())
    for family, doc in option_listings.items():
        listed = {options.FAMILY_FIELDS[o["name"]] for o in doc["family_options"] if o["name"] in options.FAMILY_FIELDS}
        assert set(families.family(family).knobs) & fed == listed, family
        for name, default in options.defaults(doc).items():
            if name in options.FAMILY_FIELDS:
                assert Knobs.__dataclass_fields__[options.FAMILY_FIELDS[name]].default == default, (family, name)
        traits = families.family(family)
        assert (traits.min_threads, traits.max_threads) == (doc["min_threads"], doc["max_threads"]), family


def test_the_chase_spacing_default_is_written_once():
    assert request.DEFAULT_CHASE_SPACING == Knobs.chase_spacing == 256
    assert grammar.DEFAULT_CHASE_SPACING is request.DEFAULT_CHASE_SPACING
