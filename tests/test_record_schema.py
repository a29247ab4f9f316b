"""The record schema and the C writer cannot drift apart: the real harness
of every family (built as the build rule builds it) measures a small round
through membench.plan.rounds, as the pipeline does, with ok, skipped and failed
outcomes and every kind of variant; each stored record must meet
workflow/schemas/record.schema.yaml, declare no key the schema lacks, and
pass collect's checks. Also: the fast Checker agrees with full validation."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import jsonschema
import pytest

from membench import SCHEMA_VERSION
from membench.plan import checks as config_checks
from membench.core import record_schema
from membench.plan import rounds
from membench.measure import rounds as measure_rounds
from membench.store import stored
from membench.plan import variants
from membench.core.atomic_files import read_jsonl
from membench.probe.topology import write_probe

REPO = Path(__file__).resolve().parents[1]
SMALL = {"size": ["1MiB"], "ntimes": 3, "threads": [1], "affinity": ["close"]}
# One experiment per kind of variant and outcome; cells the host cannot run
# are skipped (by membench before the harness, or by the harness itself).
CONFIG = {
    "system": "drift",
    "repeats": 1,
    "experiments": {
        "stream_kinds": {"kernel": "stream", "variants": ["default", "ntpf", "nt-avx512"], **SMALL},
        "stream_too_many": {"kernel": "stream", **SMALL, "threads": [512]},
        "stream_no_node": {"kernel": "stream", **SMALL, "policy": ["bind:63"]},
        "stream_no_pages": {"kernel": "stream", **SMALL, "pages": ["hugetlb-1g"]},
        "readonly_kinds": {"kernel": "readonly", "variants": ["v001", "v015-avx512"], **SMALL},
        "xor_one": {"kernel": "xor", **SMALL},
        "daxpy_one": {"kernel": "daxpy", **SMALL},
        "mix_kinds": {"kernel": "mix", "variants": ["default", "nt-avx512"], **SMALL},
        "chase_sweep": {"kernel": "chase", **SMALL, "size": ["64KiB"], "sweep_from": "32KiB", "points_per_octave": 1,
                        "chase_group": ["full", "16KiB"]},
        "loaded_pair": {"kernel": "loaded", **SMALL, "threads": [2], "load_op": ["triad", "read", "r2w1nt"]},
        "c2c_classes": {"kernel": "c2c", "ntimes": 3,
                        "pairs_per_class": 1, "c2c_samples": 5, "c2c_roundtrips": 200},
    },
}  # fmt: skip


@pytest.fixture(scope="module")
def drift_round(tmp_path_factory, variant_builds):
    """One round of CONFIG measured three times by the real harnesses: as
    is, with --test-corrupt (failed validation) and with a harness killed
    by a signal (placeholder failed records). -> (cells, table, {outcome: run files})"""
    work = tmp_path_factory.mktemp("drift")
    table = variants.load_variants(REPO / "kernels" / "families" / "variants.yaml")
    _, cells = config_checks.load(CONFIG, REPO / "workflow" / "schemas" / "config.schema.yaml", table)
    binaries = work / "bin"
    binaries.mkdir()
    # the session's builds (the build rule's command), each compiled once per run
    for (kernel, variant), (path, returncode, stderr) in variant_builds.build({(c.kernel, c.variant) for c in cells}).items():
        assert returncode == 0, f"{kernel}-{variant}: {stderr}"
        shutil.copy2(path, binaries / f"{kernel}-{variant}")
    topology = work / "topology.json"
    write_probe("/", str(topology), str(work / "environment.json"))

    def corrupt(argv, *, stdout, stderr, env):
        return subprocess.call([*argv, "--test-corrupt"], stdout=stdout, stderr=stderr, env=env)

    def killed(argv, *, stdout, stderr, env):
        return -9

    files = {}
    # every c2c cell: which pair classes this host has (and so which cells
    # reach the harness rather than a skip) depends on its topology
    one_per_family = list({cell.kernel: cell for cell in cells if cell.kernel != "c2c"}.values())
    one_per_family += [cell for cell in cells if cell.kernel == "c2c"]
    for outcome, runner, measured in (("as-is", None, cells), ("corrupt", corrupt, one_per_family),
                                      ("killed", killed, one_per_family)):  # fmt: skip
        plan = rounds.plan_round(measured, "drift", 0, 1, table)
        runs = work / outcome / "results" / "drift" / "runs"
        with open(work / f"{outcome}.log", "w") as log:
            manifest = measure_rounds.measure_round(plan, topology=str(topology), bin_dir=str(binaries), runs_dir=str(runs),
                                            log=log, run_harness_process=runner)  # fmt: skip
        files[outcome] = manifest["runs"]
    return cells, table, files


def test_every_stored_record_meets_the_schema(drift_round):
    cells, table, files = drift_round
    seen = set()
    for outcome, paths in files.items():
        for path in paths:
            for number, record in enumerate(read_jsonl(Path(path)), start=1):
                assert record["schema"] == SCHEMA_VERSION
                assert record_schema.problems(record) == [], f"{path}:{number}"
                seen.add((record["kernel"], record["status"]))
    families = set(variants.families(table))
    for family in families:
        assert (family, "ok") in seen and (family, "failed") in seen, family
    assert {status for _, status in seen} == {"ok", "skipped", "failed"}
    # collect's checks (schema, path, request) take them all
    for paths in files.values():
        assert len(list(stored.read_runs(paths, stored.Expected(cells, table)))) >= len(paths)


def test_the_harness_writes_no_key_the_schema_lacks(drift_round):
    _, _, files = drift_round
    declared = set(record_schema.schema()["properties"])
    written = {key for paths in files.values() for path in paths for r in read_jsonl(Path(path)) for key in r}
    assert written - declared == set(), "keys the harness writes without a schema entry"


def test_every_family_has_its_block():
    """One block per family, a defined one (which one: tests/test_knobs.py)."""
    table = variants.load_variants(REPO / "kernels" / "families" / "variants.yaml")
    schema = record_schema.schema()
    for family in variants.families(table):
        (block,) = record_schema.family_blocks(family)
        assert block in schema["definitions"], family


def test_schema_conditions_test_only_the_shape_keys():
    """The fast Checker relies on it (membench.core.record_schema)."""

    def conditions(node):
        if isinstance(node, dict):
            if "if" in node:
                yield node["if"]
            for value in node.values():
                yield from conditions(value)
        elif isinstance(node, list):
            for value in node:
                yield from conditions(value)

    schema = record_schema.schema()
    jsonschema.Draft7Validator.check_schema(schema)
    for condition in conditions(schema):
        tested = set(condition.get("properties", {})) | set(condition.get("required", []))
        assert tested <= set(record_schema.SHAPE_KEYS), condition
        assert set(condition) <= {"properties", "required"}, condition


def test_the_fast_checker_agrees_with_full_validation(drift_round):
    """Records one key off a valid record: the Checker (after a valid record
    of the same shape) and jsonschema say the same."""
    _, _, files = drift_round
    records = [r for path in files["as-is"] for r in read_jsonl(Path(path)) if r["status"] == "ok"]
    base = next(r for r in records if r["kernel"] == "stream")
    edits = [("gbps", "12"), ("gbps", -1.0), ("gbps", 0.0), ("cpus", [True]), ("cpus", [0.0]), ("cpus", [-1]),
             ("page_nodes", {"0": True}), ("page_nodes", {"0": 1.5}), ("hugepage_fraction", 2), ("valid", False),
             ("reason", "x"), ("seconds", []), ("threads", True), ("pid", 0), ("gbps", 5.0), ("cpus", [0])]  # fmt: skip
    for key, value in edits:
        edited = {**base, key: value}
        checker = record_schema.Checker()
        assert checker.valid(base)
        full = record_schema._validators(True)[1].is_valid(edited)
        assert checker.valid(edited) == full, (key, value)
