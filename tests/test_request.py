"""One request type from config cell to harness argv (issue 28).

Stored runs are kept by their request digest, so the request's JSON, and its
digest, stay what they were before the request type; the harness argv stays
what it was too. Both are pinned in fixtures/request/pinned.json, computed
with the code before the change, for cells of every family."""

import json
from pathlib import Path

import pytest

from membench.plan import checks, rounds, variants

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
