"""A run held against a published machine (`make compare BASE=ref:NAME`)
and a bundle made a published machine (`make reference`), issue 44.

The run is a synthetic two-socket STREAM study (tools/synthetic_runs.py)
with a findings.json planted beside it for the quantities the first screen
gives (idle latency, loaded latency, highest bandwidth); the expected
values are read from its records here, not from the code under test."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from membench.compare import reference, reference_entry
from membench.store import bundle, bundle_check

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))
import synthetic_runs  # noqa: E402
from test_references import schema_errors, undeclared_systems  # noqa: E402

NO_FINDINGS_SCHEMA = REPO / "tests" / "no-such-findings.schema.json"
COMPARE = REPO / "workflow" / "scripts" / "compare_results.py"
SOURCE = "https://example.org/planted-machine"
PLANTED = {
    "reference": "planted", "title": "t", "publisher": "p", "address": SOURCE, "date": "2024-05",
    "systems": [{"id": "planted_box", "description": "a planted machine", "sockets": 2, "cores": 64, "memory": None,
                 "peak_gbps": None}],
    "numbers": [
        {"quantity": "bandwidth", "unit": "GB/s", "value": 50.0, "kernel": "stream", "op": "triad", "statistic": "max",
         "conditions": {"scope": "whole node, 64 threads", "benchmark": "STREAM triad", "compiler": "icx -O3"}},
        {"quantity": "bandwidth", "unit": "MB/s", "value": 40000.0, "kernel": "stream", "op": "copy", "statistic": "best",
         "conditions": {"scope": "whole node", "benchmark": "STREAM copy"}},
        {"quantity": "latency", "unit": "ns", "value": 100.0, "kernel": "chase", "level": "local_memory",
         "statistic": "mean", "conditions": {"scope": "one core", "benchmark": "pointer chase"}},
        {"quantity": "bandwidth", "unit": "GB/s", "value": 160.0, "kernel": "mix", "statistic": "max",
         "conditions": {"scope": "one socket", "benchmark": "Mess, 100% reads", "read_share": 1.0}},
        {"quantity": "latency", "unit": "cycles", "value": 300.0, "kernel": "chase", "level": "local_memory",
         "statistic": "mean", "conditions": {"scope": "one core", "benchmark": "pointer chase"}},
    ],
}  # fmt: skip
for _number in PLANTED["numbers"]:
    _number.update(system="planted_box", address=SOURCE, date="2024-05")


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """results/ of a synthetic STREAM study, with a planted findings.json."""
    work = tmp_path_factory.mktemp("run")
    synthetic_runs.write_affinity_study(work, "aff", [1, 4], repeats=3, machine="2x4x2", system="box")
    (work / "results" / "summary").mkdir()
    headline = [{"group": "idle latency", "what": "local", "how": "4k pages", "value": 90.0, "unit": "ns", "n": 3,
                 "interval": [88.0, 93.0], "cells": [], "link": "#x"},
                {"group": "highest bandwidth", "what": "stream", "how": "triad, 4 threads; STREAM count 60 GB/s",
                 "value": 80.0, "unit": "GB/s", "n": 3, "interval": [79.0, 81.0], "cells": [], "link": "#y"}]  # fmt: skip
    loaded = {"system": "box", "kernel": "loaded", "value": 150.0, "unit": "ns", "n": 2, "interval": [149.0, 151.0],
              "text": "at 30 GB/s of load: 150 ns"}  # fmt: skip
    findings = {"systems": [{"system": "box", "headline": headline}], "findings": [loaded]}
    (work / "results" / "summary" / "findings.json").write_text(json.dumps(findings))
    return work / "results"


@pytest.fixture
def atlas(tmp_path) -> Path:
    folder = tmp_path / "atlas"
    folder.mkdir()
    (folder / "planted.yaml").write_text(yaml.safe_dump(PLANTED))
    return folder


def best_stream_median(results: Path, op: str) -> float:
    """Independently of the code under test: the highest per-cell median of
    the STREAM count over the stream records of one op."""
    by_cell: dict[str, list[float]] = {}
    for path in (results / "box" / "runs").rglob("r*.jsonl"):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            if record["kernel"] == "stream" and record["op"] == op and record["status"] == "ok":
                by_cell.setdefault(str(path.parent), []).append(record["gbps"])
    return max(statistics.median(values) for values in by_cell.values())


def test_the_planted_atlas_meets_the_schema(atlas):
    assert schema_errors(PLANTED) == [] and undeclared_systems(PLANTED) == []


def test_a_run_against_a_published_machine_gives_ratios_and_conditions_not_verdicts(run, atlas, tmp_path):
    loaded_atlas = reference.load_atlas(atlas)
    result = reference.compare_with_reference("ref:planted_box", str(run), tmp_path / "out", loaded_atlas)
    rows = {row["quantity"]: row for row in result["systems"][0]["rows"]}
    stand_in = "highest bandwidth (against all reads)"  # no all-reads mix in this run: said so
    assert sorted(rows) == [stand_in, "idle latency", "stream copy", "stream triad"]
    assert rows[stand_in]["ratio"] == pytest.approx(0.5) and "not an all-reads mix" in rows[stand_in]["run_conditions"]
    assert rows["stream triad"]["ratio"] == pytest.approx(best_stream_median(run, "triad") / 50.0)
    assert rows["stream copy"]["ratio"] == pytest.approx(best_stream_median(run, "copy") / 40.0)  # MB/s read as 10^6 B/s
    assert rows["idle latency"]["ratio"] == pytest.approx(0.9)
    assert result["systems"][0]["not_held"] == ["chase latency 300.0 cycles (mean): membench has no counterpart quantity"]
    text = (tmp_path / "out" / "reference.txt").read_text()
    assert "no significance verdict is possible" in text and "worse" not in text and "better" not in text
    assert f"source: {SOURCE} (2024-05" in text and "compiler icx -O3" in text
    # the published machine on the NEW side: the ratio turns over
    turned = reference.compare_with_reference(str(run), "ref:planted_box", tmp_path / "out2", loaded_atlas)
    assert turned["systems"][0]["rows"][0]["ratio"] == pytest.approx(1 / rows["stream triad"]["ratio"])


def test_an_unknown_name_is_refused_in_one_line_naming_the_known_ones(run, tmp_path):
    out = subprocess.run([sys.executable, str(COMPARE), "ref:no_such_box", str(run), "--out", str(tmp_path / "o")],
                         capture_output=True, text=True)  # fmt: skip
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and out.stdout == "", out
    known = reference.known_names(reference.load_atlas())
    assert len(known) >= 8 and f"known: {', '.join(known)}" in out.stderr
    assert not (tmp_path / "o").exists()


def test_make_compare_takes_a_bundle_beside_a_published_machine(tmp_path):
    """`make compare BASE=run.crate.zip NEW=ref:NAME`: the bundle is checked
    (the planted findings.json is no full one, so a run without it here)
    and unpacked under OUT, then held against the real atlas."""
    synthetic_runs.write_affinity_study(tmp_path, "aff", [4], repeats=2, machine="2x4x2", system="box")
    made = bundle.write_bundle(tmp_path / "results", tmp_path / "in.yaml", tmp_path / "run.crate.zip", REPO)
    out = subprocess.run(["make", "-s", "-C", str(REPO), "compare", f"BASE={made}", "NEW=ref:azure_hbv4",
                          f"OUT={tmp_path / 'cmp'}", f"BIN={Path(sys.executable).parent}", "STAMP=Makefile"],
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    assert "Published machine azure_hbv4" in out.stderr and "stream triad: ratio NEW/BASE" in out.stderr
    assert (tmp_path / "cmp" / "base-bundle" / "results" / "box" / "runs").is_dir()


def test_a_bundle_becomes_a_reference_that_reads_back_as_its_own_run(run, atlas, tmp_path):
    made = bundle.write_bundle(run, run.parent / "in.yaml", tmp_path / "run.crate.zip", REPO)
    document = reference_entry.entry_from_bundle(made, "my_box", SOURCE, NO_FINDINGS_SCHEMA, atlas)
    assert schema_errors(document) == [] and undeclared_systems(document) == []
    system = document["systems"][0]
    assert (system["id"], system["sockets"], system["cores"], system["threads"]) == ("my_box", 2, 8, 16)
    values = {(n["kernel"], n.get("op") or n.get("level")): n["value"] for n in document["numbers"]}
    assert values[("stream", "triad")] == round(best_stream_median(run, "triad"), 1)
    assert values[("chase", "local_memory")] == 90.0 and values[("loaded", None)] == 150.0
    assert "mix" not in {n["kernel"] for n in document["numbers"]}, "a stand-in is no all-reads number"
    assert all(n["conditions"]["os"] == "Linux synthetic" for n in document["numbers"])
    path = reference_entry.write_entry(document, atlas)
    assert path == atlas / "my_box.yaml" and schema_errors(yaml.safe_load(path.read_text())) == []
    back = reference.compare_with_reference("ref:my_box", str(run), tmp_path / "o", reference.load_atlas(atlas))
    ratios = [row["ratio"] for row in back["systems"][0]["rows"]]
    assert len(ratios) == len(document["numbers"]) and all(r == pytest.approx(1, abs=0.01) for r in ratios)


def refused(made: Path, name: str, atlas: Path, address: str = SOURCE) -> str:
    with pytest.raises(bundle_check.BundleRefused) as caught:
        reference_entry.entry_from_bundle(made, name, address, NO_FINDINGS_SCHEMA, atlas)
    line = str(caught.value)
    assert "\n" not in line
    return line


def test_a_damaged_bundle_or_a_taken_name_is_refused_and_nothing_written(run, atlas, tmp_path):
    made = bundle.write_bundle(run, run.parent / "in.yaml", tmp_path / "run.crate.zip", REPO)
    damaged = tmp_path / "damaged.crate.zip"
    with zipfile.ZipFile(made) as archive, zipfile.ZipFile(damaged, "w") as copy:
        for name in archive.namelist():
            data = archive.read(name)
            copy.writestr(name, data.replace(b'"gbps": ', b'"gbps": 1', 1) if name.endswith("r0.jsonl") else data)
    before = sorted(atlas.iterdir())
    assert "sha256 differs" in refused(damaged, "new_box", atlas) and ".jsonl" in refused(damaged, "new_box", atlas)
    assert "planted.yaml: already exists" in refused(made, "planted", atlas)
    assert "already a machine of the atlas (ref:planted_box)" in refused(made, "planted_box", atlas)
    assert "ADDRESS=" in refused(made, "new_box", atlas, address="results/run.crate.zip")
    assert "NAME='Bad-Name'" in refused(made, "Bad-Name", atlas)
    assert sorted(atlas.iterdir()) == before


def test_make_reference_writes_nothing_into_the_atlas_for_a_damaged_bundle(tmp_path):
    """The make target (into the checkout's own atlas): a damaged bundle
    stops with exit 2 before a file is made."""
    damaged = tmp_path / "not-a.crate.zip"
    damaged.write_text("not a zip")
    before = sorted((REPO / "references" / "machines").iterdir())
    out = subprocess.run(["make", "-s", "-C", str(REPO), "reference", f"BUNDLE={damaged}", "NAME=never_written",
                          f"ADDRESS={SOURCE}", f"BIN={Path(sys.executable).parent}", "STAMP=Makefile"],
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert out.returncode != 0 and f"{damaged}: refused: not a zip archive" in out.stdout, out
    assert sorted((REPO / "references" / "machines").iterdir()) == before
    usage = subprocess.run(["make", "-s", "-C", str(REPO), "reference", f"BUNDLE={damaged}",
                            f"BIN={Path(sys.executable).parent}", "STAMP=Makefile"], capture_output=True, text=True)  # fmt: skip
    assert usage.returncode != 0 and "usage: make reference" in usage.stdout


def test_an_idle_latency_every_run_of_which_was_disturbed_is_no_median_to_publish(tmp_path):
    """A busy default run's first screen reads "idle latency ≤ 1.5 ns (⚑ all
    2 runs disturbed)": make reference published it as a median (n=0); a
    small run's chase that stayed in the caches published 3.4 ns as memory."""
    from membench.compare import reference

    summary = tmp_path / "results" / "summary"
    summary.mkdir(parents=True)
    bound = {"group": "idle latency", "what": "local", "how": "4k pages", "value": 1.5, "unit": "ns", "n": 0,
             "interval": None, "bound": "at most"}  # fmt: skip
    measured = {**bound, "value": 98.0, "n": 3, "interval": [97.0, 99.0], "bound": None}
    in_cache = {**measured, "value": 3.4, "how": "4k pages ⚑ 2 MiB of lines, short of 8 × the LLC (128 MiB)"}
    for rows, expected, why in (([bound], None, "disturbed"), ([measured], 98.0, None), ([in_cache], None, "never reached")):
        (summary / "findings.json").write_text(json.dumps({"systems": [{"system": "vm", "headline": rows}], "findings": []}))
        found = reference.run_quantities(tmp_path / "results", "vm")["idle latency"]
        assert found["value"] == expected and (why is None) == ("unusable" not in found)
        assert why is None or why in found["unusable"]
