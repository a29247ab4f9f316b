"""make bundle on a study with cache-to-cache cells (issue 52): their ids
hold `=` (psmt=0_...), which the crate lists percent-encoded; the bundle
is written as the Makefile writes it, checked, opened, loaded by
ro-crate-py with every listed file present, and read back by make compare.

The c2c records are made by the real measuring code (measure_cell) on a
one-package machine without SMT, where the smt and other_package pairs are
skipped before any harness starts; the STREAM side is the synthetic study
the other bundle tests use (tools/synthetic_runs.py)."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml
from rocrate.rocrate import ROCrate

from membench.measure import harness, identity
from membench.plan import checks, rounds, variants
from membench.plan.request import Request
from membench.store import bundle, bundle_check

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))
import synthetic_runs  # noqa: E402
from test_bundle import rewritten  # noqa: E402

RUN_BUNDLE = REPO / "workflow" / "scripts" / "run_bundle.py"
NO_FINDINGS_SCHEMA = REPO / "tests" / "no-such-findings.schema.json"
HANDOFF = {"kernel": "c2c", "pairs_per_class": 1, "pair_classes": ["smt", "other_package"], "size": ["8MiB"]}
ONE_PACKAGE = synthetic_runs.Machine(packages=1, cores=4, smt=1, node_gbps=40.0, link_gbps=15.0)


def write_c2c_runs(system_dir: Path, config: dict) -> list[str]:
    """Every repetition of the config's c2c cells, measured as a round
    measures them, on ONE_PACKAGE; returns the repetition files' paths
    relative to the results folder."""
    table = variants.load_variants(REPO / "kernels" / "families" / "variants.yaml")
    _, cells = checks.load(config, REPO / "workflow" / "schemas" / "config.schema.yaml", table)
    topology = ONE_PACKAGE.topology()
    system_dir.mkdir(parents=True)
    (system_dir / "topology.json").write_text(json.dumps(topology, indent=1))
    (system_dir / "environment.json").write_text(json.dumps(synthetic_runs.environment(system_dir.name), indent=1))
    written = []
    for cell in (c for c in cells if c.kernel == "c2c"):
        for repeat in range(cell.repeats):
            request = Request.of_cell(cell, system_dir.name, repeat, table)
            keys = {"request_digest": rounds.digest(request.as_dict()), "binary_sha256": "0" * 64,
                    "machine_digest": identity.machine_digest(topology), "measure_try": 1}  # fmt: skip
            path = system_dir / "runs" / cell.id / f"r{repeat}.jsonl"
            harness.measure_cell("bin/c2c-default", str(system_dir / "topology.json"), str(path), str(system_dir / "log"),
                                 request=request, experiment=cell.experiment, cell_id=cell.id, extra=keys)  # fmt: skip
            written.append(path.relative_to(system_dir.parent).as_posix())
    (system_dir / "log").unlink()
    return written


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> tuple[Path, list[str]]:
    """work/: config.yaml, results/box (STREAM), results/solo (c2c); and
    the c2c repetition files, as bundle members (results/...)."""
    work = tmp_path_factory.mktemp("c2c")
    synthetic_runs.write_affinity_study(work, "aff", [4], repeats=2, machine="2x4x2", system="box")
    config = yaml.safe_load((work / "in.yaml").read_text())
    config["experiments"]["handoff"] = HANDOFF
    (work / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    records = write_c2c_runs(work / "results" / "solo", config)
    return work, ["results/" + name for name in records]


@pytest.fixture(scope="module")
def made(study) -> Path:
    """results/run.crate.zip, written as `make bundle` writes it."""
    work, _ = study
    out = subprocess.run([sys.executable, str(RUN_BUNDLE), "write", "--results", "results", "--config", "config.yaml",
                          "--out", "results/run.crate.zip"], cwd=work, capture_output=True, text=True)  # fmt: skip
    assert out.returncode == 0 and out.stdout == "Bundle: results/run.crate.zip (checked)\n", out
    return work / "results" / "run.crate.zip"


def test_the_study_has_c2c_cells_named_with_an_escaped_character(study):
    _, records = study
    assert len(records) == 4 and all("=" in name for name in records)
    assert all(bundle.crate_id(name) != name and "%3D" in bundle.crate_id(name) for name in records)


def test_the_bundle_opens_with_every_c2c_record_under_its_own_name(study, made, tmp_path):
    work, records = study
    checked = subprocess.run([sys.executable, str(RUN_BUNDLE), "check", str(made)], capture_output=True, text=True)
    assert checked.returncode == 0 and checked.stdout == f"{made}: valid\n", checked
    dest = bundle_check.open_bundle(made, tmp_path / "unpacked", NO_FINDINGS_SCHEMA)
    for name in records:
        assert (dest / name).read_bytes() == (work / name).read_bytes(), name
    # ro-crate-py reads the archive itself: every file it lists is in the bundle
    loaded = ROCrate(made)
    files = [e.id for e in loaded.get_entities() if "File" in e.type and not e.id.startswith("#")]
    assert {bundle.crate_id(name) for name in records} <= set(files)
    assert [i for i in files if not (dest / bundle.member_name(i)).is_file()] == []


def test_make_compare_reads_the_c2c_bundle_back(made, tmp_path):
    """`make compare BASE=results/run.crate.zip NEW=ref:NAME` unpacks it first."""
    out = subprocess.run(["make", "-s", "-C", str(REPO), "compare", f"BASE={made}", "NEW=ref:azure_hbv4",
                          f"OUT={tmp_path / 'cmp'}", f"BIN={Path(sys.executable).parent}", "STAMP=Makefile"],
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    assert out.returncode == 0, (out.stdout[-2000:], out.stderr[-2000:])
    assert "Published machine azure_hbv4" in out.stderr
    assert (tmp_path / "cmp" / "base-bundle" / "results" / "solo" / "runs" / "handoff").is_dir()


def test_a_c2c_file_listed_under_a_second_spelling_is_refused_in_one_line(study, made, tmp_path):
    """One way to escape: the @id written unencoded names the same file, and is refused."""
    _, records = study
    plain = records[0]

    def unencoded(name, data):
        return data.replace(bundle.crate_id(plain).encode(), plain.encode()) if name == bundle_check.METADATA else data

    damaged = rewritten(made, tmp_path / "plain.zip", unencoded)
    with pytest.raises(bundle_check.BundleRefused) as refused:
        bundle_check.check_bundle(damaged, NO_FINDINGS_SCHEMA)
    line = str(refused.value)
    assert line == f"{damaged}: refused: {plain}: listed in the crate as {plain}, not as {bundle.crate_id(plain)}"
