"""Cell ids stay what they were, and two cells never share one (issue 53).

Stored results are kept by them, so deriving the id from the knob table
(membench.plan.knobs) must name every cell as the hand-written id did. The ids of every shipped
config, and of a config that varies every axis away from its default, were
written to tests/fixtures/cell_ids/ids.json before the id was derived;
`python tests/test_cell_ids_kept.py` writes them again (only when a
change of the ids is meant, which strands stored results)."""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "workflow" / "scripts"))

from membench.plan import checks, families, grammar, knobs, variants  # noqa: E402

FIXTURE = REPO / "tests" / "fixtures" / "cell_ids" / "ids.json"
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
# Every axis knob off its default, in every family it applies to.
EVERY_AXIS = {
    "system": "box",
    "experiments": {
        "bandwidth": {"kernel": "stream", "variants": ["default", "nt-avx2"], "threads": [1, 4, "all"],
                      "affinity": ["none", "compact", "scatter", "cpus:0-3,8"],
                      "policy": ["default", "bind:0,1", "interleave:all"], "pages": ["variant", "thp"],
                      "init": ["parallel", "serial-arrays"], "size": ["auto", "64MiB", 1048576],
                      "prefetch_distance": ["variant", 0, 512]},
        "ladder": {"kernel": "readonly", "variants": ["v001", "v015"], "threads": [1], "affinity": ["close"],
                   "pages": ["variant", "4k"], "prefetch_distance": ["variant", 1024]},
        "mixed": {"kernel": "mix", "size": ["2GiB"], "policy": ["remote"]},
        "latency": {"kernel": "chase", "chase_group": ["full", "64KiB", "16 pages", 262144],
                    "chase_spacing": [64, 256, 4096], "pages": ["4k", "hugetlb-2m"], "sweep_from": "1MiB"},
        "loaded": {"kernel": "loaded", "threads": [2, 8], "load_op": ["triad", "r2w1nt"], "load_delay": [0, 100],
                   "chase_group": ["full", "128KiB"], "chase_spacing": [128, 256]},
        "c2c_sampled": {"kernel": "c2c", "pairs_per_class": 2, "pair_classes": ["smt", "other_package"],
                        "policy": ["default", "local"], "size": ["auto", "1MiB"]},
        "c2c_all": {"kernel": "c2c", "pairs": "all"},
        "excluded": {"kernel": "stream", "threads": [1, "all"], "affinity": ["close", "spread"],
                     "exclude": [{"threads": 1, "affinity": "scatter"}]},
    },
}  # fmt: skip


def every_cell_id() -> dict[str, list[str]]:
    """{config: its cell ids in expansion order} for every config/*.yaml
    and EVERY_AXIS."""
    table = variants.load_variants(REPO / "kernels" / "families" / "variants.yaml")
    configs = {path.stem: yaml.safe_load(path.read_text()) for path in sorted((REPO / "config").glob("*.yaml"))}
    configs["every_axis"] = EVERY_AXIS
    return {name: [cell.id for cell in checks.load(config, SCHEMA, table)[1]] for name, config in configs.items()}


def test_every_cell_id_is_the_one_stored_results_are_kept_by():
    assert every_cell_id() == json.loads(FIXTURE.read_text())


def test_an_expansion_merges_no_two_cells():
    """expand keeps one cell per id: two cells an experiment makes share an
    id only when they are the same cell (64KiB and 16 pages are one chase
    group), none is dropped in silence."""
    table = variants.load_variants(REPO / "kernels" / "families" / "variants.yaml")
    config, _ = checks.load(EVERY_AXIS, SCHEMA, table)
    for name, experiment in config["experiments"].items():
        by_id: dict[str, set] = {}
        for cell in grammar.experiment_cells(name, experiment, table):
            by_id.setdefault(cell.id, set()).add(cell)
        assert [i for i, cells in by_id.items() if len(cells) > 1] == [], name


def _another(value):
    """A value of an axis knob other than its default."""
    if isinstance(value, int) and not isinstance(value, bool):
        return 2 * value if value else 1
    return f"{value}x"


def test_two_cells_that_differ_in_any_axis_knob_never_share_an_id():
    """Every family, every axis knob of the table (a new one too) at its
    default or off it, in every combination: as many ids as cells. A family
    whose CPU pairs set its cells is not asked for the knobs the pair sets
    (its config may not write them)."""
    for kernel, traits in families.FAMILIES.items():
        free = [k for k in knobs.axes() if not (traits.pairs and k.by_pair)]
        base = {"experiment": "e", "kernel": kernel, "pages": "variant", "repeats": 1, "threads": 2}
        ids = set()
        for combo in itertools.product(*([k.default, _another(k.default)] for k in free)):
            ids.add(grammar.Cell(**{**base, **{k.name: v for k, v in zip(free, combo)}}).id)
        assert len(ids) == 2 ** len(free), kernel


if __name__ == "__main__":
    FIXTURE.write_text(json.dumps(every_cell_id(), indent=1) + "\n")
