"""The rows of issue 17 through Snakemake on a real (tiny) study: moving
the checkout, touching files, --forceall, a comment in a kernel or in the
probe script, a re-probe, a deleted topology.json and a renamed experiment
measure nothing and leave every stored run file byte- and mtime-identical;
a real change to one kernel re-measures exactly that kernel's cells and an
edited ntimes exactly that experiment's, the old files moved aside; a
second config's round manifests survive the first's runs."""

import re
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import yaml

from conftest import copy_workflow, seed_binaries

CONFIG = {
    "system": "testbox",
    "repeats": 2,
    "ntimes": 3,
    "experiments": {
        "k": {"kernel": "stream", "size": ["1MiB"], "threads": [1, 2]},
        "x": {"kernel": "xor", "size": ["1MiB"]},
    },
}
MEASURE = ["--cores", "2", "--configfile", "tiny.yaml", "--until", "measure_round"]


def runs(workdir: Path, folder: str = "runs") -> dict[str, tuple[bytes, int]]:
    return {
        str(p.relative_to(workdir / "results" / "testbox" / folder)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted((workdir / "results" / "testbox" / folder).rglob("r*.jsonl"))
    }


def snakemake(venv_bin, workdir: Path, *args) -> tuple[int, int, str]:
    """(measured, kept) summed over the round lines, and the output."""
    done = subprocess.run([str(venv_bin / "snakemake"), *args], cwd=workdir, capture_output=True, text=True, timeout=600)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-3000:]
    counts = [tuple(map(int, m)) for m in re.findall(r"round \d+ done: (\d+) measured, (\d+) kept", out)]
    return sum(c[0] for c in counts), sum(c[1] for c in counts), out


def test_only_real_changes_measure_again_and_nothing_stored_is_overwritten(tmp_path, venv_bin, variant_builds):
    first = seed_binaries(copy_workflow(tmp_path / "first"), CONFIG, variant_builds)  # rebuilt below
    (first / "tiny.yaml").write_text(yaml.safe_dump(CONFIG))
    assert snakemake(venv_bin, first, *MEASURE)[:2] == (6, 0)
    stored = runs(first)
    assert len(stored) == 6

    # the checkout moved (copied with its results elsewhere)
    moved = tmp_path / "elsewhere" / "moved"
    moved.parent.mkdir()
    subprocess.run(["cp", "-a", str(first), str(moved)], check=True)
    measured, kept, out = snakemake(venv_bin, moved, *MEASURE)
    assert (measured, kept) == (0, 0) and "build_kernel" not in out, out[-3000:]
    assert runs(moved) == stored

    # touched sources, a comment in the probe script, --forceall
    for source in (moved / "kernels").rglob("*.c"):
        source.touch()
    with open(moved / "workflow" / "scripts" / "probe_system.py", "a") as fh:
        fh.write("# a comment\n")
    assert snakemake(venv_bin, moved, *MEASURE)[:2] == (0, 6)
    assert snakemake(venv_bin, moved, *MEASURE, "--forceall")[:2] == (0, 6)
    assert runs(moved) == stored

    # a comment in a kernel: its binaries are rebuilt, byte-identical
    with open(moved / "kernels" / "families" / "stream.c", "a") as fh:
        fh.write("/* a comment */\n")
    measured, kept, out = snakemake(venv_bin, moved, *MEASURE)
    assert (measured, kept) == (0, 6) and "build_kernel" in out
    assert runs(moved) == stored

    # a real change to one kernel: exactly its cells, the old files aside
    with open(moved / "kernels" / "families" / "xor.c", "a") as fh:
        fh.write('const char mb_xor_build_note[] __attribute__((used)) = "changed";\n')
    assert snakemake(venv_bin, moved, *MEASURE)[:2] == (2, 4)
    now = runs(moved)
    assert {f: now[f] for f in stored if f.startswith("k/")} == {f: v for f, v in stored.items() if f.startswith("k/")}
    # a try the disturbed rule set aside (superseded/disturbed/, a busy machine) is no change of the request
    aside = {f: v for f, v in runs(moved, "superseded").items() if not f.startswith("disturbed/")}
    assert sorted(f.split("/", 1)[1] for f in aside) == sorted(f for f in stored if f.startswith("x/"))
    assert all(f.startswith("binary-") for f in aside) and all(aside[f] == stored[f.split("/", 1)[1]] for f in aside)

    # an edited ntimes: that experiment's cells, the old files aside
    edited = {**CONFIG, "experiments": {**CONFIG["experiments"], "k": {**CONFIG["experiments"]["k"], "ntimes": 4}}}
    (moved / "tiny.yaml").write_text(yaml.safe_dump(edited))
    assert snakemake(venv_bin, moved, *MEASURE)[:2] == (4, 2)
    assert len([f for f in runs(moved, "superseded") if f.startswith("request-")]) == 4
    stored = runs(moved)

    # another config in the same results folder: its own manifests
    manifests = sorted((moved / "results" / "testbox" / "rounds").iterdir())
    other = {**CONFIG, "experiments": {"z": {"kernel": "daxpy", "size": ["1MiB"]}}}
    (moved / "other.yaml").write_text(yaml.safe_dump(other))
    assert snakemake(venv_bin, moved, "--cores", "2", "--configfile", "other.yaml", "--until", "measure_round")[:2] == (2, 0)
    assert all(m.exists() for m in manifests)

    # a renamed experiment and a deleted topology.json, through the whole pipeline
    renamed = {**edited, "experiments": {"k": edited["experiments"]["k"], "renamed": CONFIG["experiments"]["x"]}}
    (moved / "tiny.yaml").write_text(yaml.safe_dump(renamed))
    (moved / "results" / "testbox" / "topology.json").unlink()
    measured, kept, out = snakemake(venv_bin, moved, "--cores", "2", "--configfile", "tiny.yaml")
    assert (measured, kept) == (0, 6) and "probe_system" in out
    assert (moved / "results" / "testbox" / "topology.json").exists()
    after = runs(moved)
    assert {f: after[f] for f in stored} == stored
    table = pd.read_csv(moved / "results" / "testbox" / "measurements.csv")
    assert set(table["experiment"]) == {"k", "renamed"}
    assert set(table.loc[table["experiment"] == "renamed", "experiment_measured_as"]) == {"x"}
    report = (moved / "results" / "report.html").read_text()
    assert "<th>superseded</th>" in report
    shutil.rmtree(first)
