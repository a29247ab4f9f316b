"""Cell ids through every format they travel in (issue 52): a file name in
a bundle, a relative URL (the crate's @id), a CSV field and a shell word.

A c2c cell's id holds `=` (plan.grammar.path_safe writes a pair's `:` so),
which ro-crate-py percent-encodes in the crate's @id: the bundle writer
(store.bundle.crate_id) and its reader (store.bundle.member_name) escape and
unescape it one way. Every cell of every shipped config goes through the
real writers and readers here, not through a copy of their rule."""

from __future__ import annotations

import shlex
import sys
import zipfile
import json
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import pandas as pd
import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "workflow" / "scripts"))

from membench.plan import checks, variants  # noqa: E402
from membench.store import bundle, bundle_check, collect  # noqa: E402

CONFIGS = sorted((REPO / "config").glob("*.yaml"))
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
NO_FINDINGS_SCHEMA = REPO / "tests" / "no-such-findings.schema.json"
# What RFC 3986 lets stand unescaped in a path; anything else must be %XX.
URL_PATH_CHARACTERS = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~/%")


@pytest.fixture(scope="module")
def cell_ids() -> dict[str, list[str]]:
    """Every cell id of every shipped config, by the config's stem."""
    table = variants.load_variants(REPO / "kernels" / "families" / "variants.yaml")
    found = {}
    for path in CONFIGS:
        _, cells = checks.load(yaml.safe_load(path.read_text()), SCHEMA, table)
        found[path.stem] = [cell.id for cell in cells]
    return found


def every_id(cell_ids: dict[str, list[str]]) -> list[str]:
    return sorted({cell for ids in cell_ids.values() for cell in ids})


def test_the_shipped_configs_hold_ids_that_need_escaping(cell_ids):
    """Without a `=` in some id, the tests below would not test the escape."""
    assert CONFIGS and all(cell_ids.values())
    needs_escaping = [cell for cell in every_id(cell_ids) if bundle.crate_id(cell) != cell]
    assert any("c2c" in cell for cell in needs_escaping), needs_escaping


def test_every_cell_id_is_a_bundle_member_listed_opened_and_named_as_written(cell_ids, tmp_path):
    results = tmp_path / "results"
    members = []
    for config, ids in cell_ids.items():
        for cell in ids:
            record = results / config / "runs" / cell / "r0.jsonl"
            record.parent.mkdir(parents=True, exist_ok=True)
            record.write_text("")  # no records: nothing for the schema check to hold
            members.append(record.relative_to(tmp_path).as_posix())
    made = bundle.write_bundle(results, CONFIGS[0], tmp_path / "cells.crate.zip", REPO)

    crate = bundle_check.check_bundle(made, NO_FINDINGS_SCHEMA)
    assert set(members) <= set(bundle_check.listed_files(crate))
    with zipfile.ZipFile(made) as archive:
        assert set(members) <= set(archive.namelist())  # stored under the plain name
        listed_ids = {e["@id"] for e in json.loads(archive.read(bundle_check.METADATA))["@graph"]}
    assert {bundle.crate_id(m) for m in members} <= listed_ids
    unpacked = bundle_check.open_bundle(made, tmp_path / "unpacked", NO_FINDINGS_SCHEMA)
    missing = [m for m in members if not (unpacked / m).is_file()]
    assert missing == []


def test_every_cell_id_is_a_url_path_that_resolves_back_to_it(cell_ids):
    """As a JSON-LD reader resolves a crate's relative @id against the crate's address."""
    base = "https://example.org/bundles/run.crate/"
    for cell in every_id(cell_ids):
        identifier = bundle.crate_id(f"results/vm/runs/{cell}/r0.jsonl")
        assert set(identifier) <= URL_PATH_CHARACTERS, identifier
        assert bundle.member_name(identifier) == f"results/vm/runs/{cell}/r0.jsonl"
        resolved = urlsplit(urljoin(base, identifier)).path
        assert unquote(resolved) == f"/bundles/run.crate/results/vm/runs/{cell}/r0.jsonl"


def test_every_cell_id_and_its_crate_id_survive_a_csv_field(cell_ids, tmp_path):
    """Written as collect writes measurements.csv, read by its reader."""
    names = every_id(cell_ids)
    fields = names + [bundle.crate_id(cell) for cell in names]
    table = pd.DataFrame({"cell": fields, "gbps": range(len(fields))})
    path = tmp_path / "measurements.csv"
    path.write_text(table.to_csv(index=False))
    assert collect.read_measurements([str(path)], columns=["cell"])["cell"].tolist() == fields


def test_every_cell_id_and_its_crate_id_are_shell_words_as_they_stand(cell_ids):
    for cell in every_id(cell_ids):
        for word in (cell, bundle.crate_id(cell), f"results/vm/runs/{cell}/r0.jsonl"):
            assert shlex.quote(word) == word, f"{word}: needs quoting in a shell"
            assert shlex.split(f"ls {word}") == ["ls", word]
