"""A bundle rebuilds its report alone (issue 44): the inputs of a bundle
(config, records, topology, environment), unpacked into a fresh folder, and
the README's figures-only run there give the HTML, the figures and every
CSV (and findings.json) byte for byte as bundled.

The run bundled is tests/fixtures/dev16_ladder (real read-only ladder runs,
kept in the repository); the workflow is a private copy whose commit the
report names, run on the fresh folder with `--snakefile` so the rebuild
names the same commit."""

from __future__ import annotations

import subprocess
import zipfile
from pathlib import Path

from conftest import REPO, copy_workflow
from membench.store import bundle, bundle_check

LADDER = REPO / "tests" / "fixtures" / "dev16_ladder"
FINDINGS_SCHEMA = REPO / "workflow" / "schemas" / "findings.schema.yaml"


def figures_only(snakefile: Path, workdir: Path, venv_bin: Path, config: Path) -> subprocess.CompletedProcess:
    argv = [str(venv_bin / "snakemake"), "--snakefile", str(snakefile), "--cores", "1", "--configfile", str(config),
            "--config", "figures_only=True"]  # fmt: skip
    return subprocess.run(argv, cwd=workdir, capture_output=True, text=True, timeout=300)


def bundled_built_files(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as archive:
        return {name: archive.read(name) for name in archive.namelist() if bundle.is_built(name)}


def test_a_bundle_alone_rebuilds_its_report_tables_and_figures_byte_for_byte(tmp_path, venv_bin):
    workflow = copy_workflow(tmp_path / "membench")
    system = workflow / "results" / "dev16"
    system.mkdir(parents=True)
    for name in ("runs", "topology.json", "environment.json"):
        subprocess.run(["cp", "-a", str(LADDER / name), str(system / name)], check=True)
    first = figures_only(workflow / "Snakefile", workflow, venv_bin, LADDER / "config.yaml")
    assert first.returncode == 0, first.stderr[-3000:]
    made = bundle.write_bundle(workflow / "results", LADDER / "config.yaml", tmp_path / "run.crate.zip", REPO)
    built = bundled_built_files(made)
    kinds = {Path(name).suffix for name in built}
    assert {".html", ".svg", ".csv", ".json"} <= kinds and "results/dev16/measurements.csv" in built, sorted(built)

    fresh = bundle_check.open_bundle(made, tmp_path / "fresh", FINDINGS_SCHEMA, inputs_only=True)
    assert not any((fresh / name).exists() for name in built), "the fresh folder holds only the bundle's inputs"
    again = figures_only(workflow / "Snakefile", fresh, venv_bin, fresh / "config.yaml")
    assert again.returncode == 0, again.stderr[-3000:]
    rebuilt = {p.relative_to(fresh).as_posix(): p.read_bytes() for p in (fresh / "results").rglob("*") if p.is_file()}
    missing = sorted(set(built) - set(rebuilt))
    differ = sorted(name for name in built if name in rebuilt and rebuilt[name] != built[name])
    assert missing == [] and differ == [], f"not rebuilt: {missing}; built differently: {differ}"
    rebuilt_outputs = {n for n in rebuilt if n.endswith((".csv", ".svg", ".html")) or n.startswith("results/summary/")}
    assert rebuilt_outputs - set(built) == set(), "a built file the bundle does not hold"
