"""Config validation expands the grammar once and applies the schema's
defaults once (issue 53): membench.plan.checks applies the defaults to the
experiments that pass the schema and the checks, expands each of those
once, and hands both to the checks that need them (the cell count, the
empty exclusions, the folder names) and to the cells `load` returns."""

from collections import Counter
from pathlib import Path

import pytest

from membench.plan import checks, grammar, variants
from membench.plan.config_limits import read_config

REPO = Path(__file__).resolve().parents[1]
SCHEMA_PATH = REPO / "workflow" / "schemas" / "config.schema.yaml"
TABLE = variants.load_variants(REPO / "kernels" / "families" / "variants.yaml")


@pytest.fixture
def counted(monkeypatch) -> dict:
    """Counts, while the test runs: each experiment's expansions (by name),
    whole-config expansions, and the times the defaults are applied."""
    counts = {"experiments": Counter(), "expand": 0, "defaults": 0}
    cells_of, expand, defaults = grammar.experiment_cells, grammar.expand, checks._apply_defaults

    def counting_cells(name, experiment, variants_table):
        counts["experiments"][name] += 1
        return cells_of(name, experiment, variants_table)

    def counting_expand(config, variants_table):
        counts["expand"] += 1
        return expand(config, variants_table)

    def counting_defaults(config, schema):
        counts["defaults"] += 1
        return defaults(config, schema)

    for module in (grammar, checks):
        monkeypatch.setattr(module, "experiment_cells", counting_cells)
        monkeypatch.setattr(module, "expand", counting_expand, raising=False)
    monkeypatch.setattr(checks, "_apply_defaults", counting_defaults)
    return counts


def test_the_default_config_is_expanded_once_and_given_its_defaults_once(counted):
    raw = read_config(REPO / "config" / "config.yaml")
    config, cells = checks.load(raw, SCHEMA_PATH, TABLE)
    assert counted["experiments"] == Counter(dict.fromkeys(raw["experiments"], 1))
    assert counted["expand"] == 0 and counted["defaults"] == 1
    # the cells are those the grammar makes of the validated config
    assert [c.id for c in cells] == [c.id for c in grammar.expand(config, TABLE)]


def test_a_refused_config_expands_each_valid_experiment_once(counted):
    """The empty exclusion and a cell folder's length are both read from
    the one expansion; a broken experiment is never expanded."""
    config = {"experiments": {
        "empty": {"kernel": "stream", "threads": [1], "exclude": [{"threads": 1}]},
        "kept": {"kernel": "stream", "threads": [1, 2]},
        "broken": {"kernel": "stream", "threads": ["many"]},
    }}  # fmt: skip
    with pytest.raises(grammar.ConfigError) as caught:
        checks.load(config, SCHEMA_PATH, TABLE)
    assert any(p.startswith("experiments.empty.exclude:") for p in caught.value.problems)
    assert counted["experiments"] == Counter({"empty": 1, "kept": 1})
    assert counted["defaults"] == 1
