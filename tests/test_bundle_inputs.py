"""What reads a bundle or an atlas entry beside the checker (issues 54 and
55): make bundle, make reference and make compare take their variables
as written and refuse a crash in one line with exit 2 (never 1, "a row got
worse"); make reference writes only positive finite values under a NAME
matched whole and an https ADDRESS; the first screen's published-machines
line says a reference it cannot hold; a refused bundle leaves no file."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from membench.compare import reference, reference_entry
from membench.findings import atlas, first_screen
from membench.store import bundle, bundle_check

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))
import synthetic_runs  # noqa: E402
from test_references import schema_errors  # noqa: E402

NO_FINDINGS_SCHEMA = REPO / "tests" / "no-such-findings.schema.json"
SOURCE = "https://example.org/run.crate.zip"
MAKE = ["make", "-s", "-C", str(REPO), f"BIN={Path(sys.executable).parent}", "STAMP=Makefile"]


def study(work: Path, idle: float | None = 90.0, last_end: float = 1.7e9) -> Path:
    """A synthetic STREAM study in work, with a findings.json (its idle
    latency idle ns) unless idle is None."""
    work.mkdir(parents=True, exist_ok=True)
    synthetic_runs.write_affinity_study(work, "aff", [1], repeats=2, machine="2x4x2", system="box")
    if idle is not None:
        (work / "results" / "summary").mkdir()
        write_findings(work / "results", idle, last_end)
    return work


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    return study(tmp_path_factory.mktemp("run"))


def write_findings(results: Path, idle: float, last_end: float = 1.7e9) -> None:
    headline = [{"group": "idle latency", "what": "local", "how": "4k pages", "value": idle, "unit": "ns", "n": 3,
                 "interval": [idle, idle], "cells": [], "link": "#x"}]  # fmt: skip
    findings = {"records": {"last_end": last_end}, "systems": [{"system": "box", "headline": headline}], "findings": []}
    (results / "summary" / "findings.json").write_text(json.dumps(findings))


def made(run: Path, out: Path) -> Path:
    return bundle.write_bundle(run / "results", run / "in.yaml", out, REPO)


def relisted(source: Path, out: Path, name: str, data: bytes) -> Path:
    """The bundle with one member replaced and listed again (sha256, size)."""
    with zipfile.ZipFile(source) as archive:
        contents = {n: archive.read(n) for n in archive.namelist()}
    document = json.loads(contents["ro-crate-metadata.json"])
    for entity in document["@graph"]:
        if entity["@id"] == bundle.crate_id(name):
            entity["sha256"], entity["contentSize"] = bundle.sha256_of(data), str(len(data))
    contents[name], contents["ro-crate-metadata.json"] = data, json.dumps(document).encode()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as copy:
        for member, body in contents.items():
            copy.writestr(member, body)
    return out


def one_line_refusal(out: subprocess.CompletedProcess, *expected: str) -> str:
    text = out.stdout + out.stderr
    assert out.returncode == 2 and "Traceback" not in text, text
    assert all(e in text for e in expected), text
    return text


def test_make_bundle_renames_only_a_checked_bundle_and_leaves_none_it_refused(run, tmp_path):
    """Issue 55, 1: a bundle the check refuses is not left looking like one."""
    broken = study(tmp_path / "broken", idle=None)
    record = next((broken / "results").rglob("r0.jsonl"))
    record.write_text(record.read_text().replace('"status": "ok"', '"status": "fine"', 1))
    out = tmp_path / "out" / "run.crate.zip"
    done = subprocess.run(MAKE + ["bundle", f"RESULTS={broken}", f"CONFIG={broken / 'in.yaml'}", f"BUNDLE={out}"],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode != 0 and f"{record.name}" in done.stdout and "refused" in done.stdout, done
    assert list((tmp_path / "out").iterdir()) == []
    good, source = tmp_path / "good.crate.zip", study(tmp_path / "source", idle=None)
    assert subprocess.run(MAKE + ["bundle", f"RESULTS={source}", f"CONFIG={source / 'in.yaml'}", f"BUNDLE={good}"],
                          capture_output=True, text=True, timeout=120).returncode == 0  # fmt: skip
    bundle_check.check_bundle(good, NO_FINDINGS_SCHEMA)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken", "good.crate.zip", "out", "source"]


def test_make_bundle_and_make_reference_take_their_variables_as_written(run, tmp_path):
    planted = tmp_path / "PLANTED"
    out = subprocess.run(MAKE + ["bundle", f"RESULTS={run}", f"CONFIG={run / 'in.yaml'}$(shell touch {planted})",
                                 f"BUNDLE={tmp_path}/b.crate.zip;touch {planted}"], capture_output=True, text=True)  # fmt: skip
    assert out.returncode != 0 and not planted.exists(), out
    assert not (tmp_path / "b.crate.zip").exists()
    name = subprocess.run(MAKE + ["reference", f"BUNDLE={tmp_path}/none.zip", f"NAME=n$(shell touch {planted})",
                                  f"ADDRESS={SOURCE}"], capture_output=True, text=True)  # fmt: skip
    one_line_refusal(name, "NAME='n$(shell touch")
    address = subprocess.run(MAKE + ["reference", f"BUNDLE={tmp_path}/none.zip", "NAME=never_written",
                                     "ADDRESS=https://example.org/a$b c"], capture_output=True, text=True)  # fmt: skip
    one_line_refusal(address, "ADDRESS='https://example.org/a$b c'")
    assert not planted.exists() and not (REPO / "references" / "machines" / "never_written.yaml").exists()


@pytest.mark.parametrize("name", ["a" * 65, "a" * 300, "box\n", "Box", "1box", "box-1", ""])
def test_a_name_is_a_slug_matched_whole_with_a_length_bound(run, tmp_path, name):
    with pytest.raises(bundle_check.BundleRefused, match="NAME=") as caught:
        reference_entry.entry_from_bundle(tmp_path / "none.zip", name, SOURCE, NO_FINDINGS_SCHEMA, tmp_path)
    assert "\n" not in str(caught.value) and len(str(caught.value)) < 300
    assert reference_entry.name_problem("a" * 64) is None


@pytest.mark.parametrize("address", ["http://example.org/x", "https://", "https:///x", "https://a b/x", "https://a/b\n",
                                     "https://a/\tb", "ftp://a/b", "example.org/x", "https://" + "a" * 2000])  # fmt: skip
def test_an_address_is_an_https_url_with_a_host_and_no_whitespace(address):
    assert "ADDRESS=" in reference_entry.address_problem(address)
    assert reference_entry.address_problem("https://example.org/runs/x.crate.zip?v=1") is None


def test_the_schema_refuses_a_value_that_is_not_positive_and_a_name_with_a_newline():
    document = yaml.safe_load((REPO / "references" / "machines" / "mess_results.yaml").read_text())
    assert schema_errors(document) == []
    for value in (0, -1.0, 1e300):
        broken = {**document, "numbers": [{**document["numbers"][0], "value": value}]}
        assert schema_errors(broken), value
    assert schema_errors({**document, "reference": "mess_results\n"})
    assert schema_errors({**document, "reference": "a" * 65})


def refused_entry(bundle_path: Path, atlas_dir: Path, *expected: str) -> str:
    with pytest.raises(bundle_check.BundleRefused) as caught:
        reference_entry.entry_from_bundle(bundle_path, "new_box", SOURCE, NO_FINDINGS_SCHEMA, atlas_dir)
    line = str(caught.value)
    assert "\n" not in line and all(e in line for e in expected), line
    return line


def test_make_reference_refuses_a_value_that_is_not_positive_and_a_topology_that_is_a_list(run, tmp_path):
    atlas_dir = tmp_path / "atlas"
    atlas_dir.mkdir()
    zero = study(tmp_path / "zero", idle=0.0)
    refused_entry(made(zero, tmp_path / "zero.crate.zip"), atlas_dir, "chase latency is 0.0 ns, not a positive finite number")
    listed = relisted(made(run, tmp_path / "run.crate.zip"), tmp_path / "list.zip", "results/box/topology.json", b"[1, 2]")
    refused_entry(listed, atlas_dir, "results/box/topology.json: a JSON list, not an object")
    assert list(atlas_dir.iterdir()) == []


def test_a_timestamp_of_1e300_dates_the_entry_by_the_crate_not_a_crash(run, tmp_path):
    late = study(tmp_path / "late", last_end=1e300)
    document = reference_entry.entry_from_bundle(made(late, tmp_path / "late.crate.zip"), "late_box", SOURCE,
                                                 NO_FINDINGS_SCHEMA, tmp_path)  # fmt: skip
    assert schema_errors(document) == [] and document["date"][:2] in ("19", "20")


PLANTED_ATLAS = {
    "reference": "planted", "title": "t", "publisher": "p", "address": SOURCE, "date": "2024-05",
    "systems": [{"id": "planted_box", "description": "a planted machine", "sockets": 1, "cores": 4, "memory": None,
                 "peak_gbps": None, "cpu_model": "Planted CPU"}],
    "numbers": [{"system": "planted_box", "quantity": q, "unit": u, "value": v, "kernel": k, "op": op, "level": lv,
                 "statistic": "max", "address": SOURCE, "date": "2024-05", "conditions": {"scope": "s", "benchmark": "b"}}
                for q, u, k, op, lv, v in [("bandwidth", "GB/s", "stream", "triad", None, 0.0),
                                           ("latency", "ns", "chase", None, "local_memory", -5.0),
                                           ("bandwidth", "GB/s", "mix", None, None, math.nan)]],
}  # fmt: skip


def test_an_atlas_value_of_zero_negative_or_nan_is_said_on_its_line_not_a_crash(run, tmp_path):
    read = {"what": "all reads", "value": 50.0, "threads": 4, "runs": 3}
    topology = {"cpu_model": "Planted CPU", "cpus": [0, 1, 2, 3]}
    beside = atlas.references_beside(topology, {}, read, {"value": 90.0, "runs": 3}, [PLANTED_ATLAS])
    assert beside and all(c["ratio"] is None and "not comparable" in c["basis"] for c in beside)
    rows = first_screen.reference_rows(beside)
    assert len(rows) == 1 and "not a positive number" in json.dumps(rows)
    zero_run = {**read, "value": 0.0}
    assert all(c["ratio"] is None for c in atlas.references_beside(topology, {}, zero_run, None, [PLANTED_ATLAS]))
    result = reference.compare_with_reference("ref:planted_box", str(run / "results"), tmp_path / "o", [PLANTED_ATLAS])
    held = result["systems"][0]
    assert held["rows"] == [] and all("not a positive finite number" in t for t in held["not_held"][:2]), held


def compare(base: str, new: str, out: str) -> subprocess.CompletedProcess:
    return subprocess.run(MAKE + ["compare", f"BASE={base}", f"NEW={new}", f"OUT={out}"],
                          capture_output=True, text=True, timeout=300)  # fmt: skip


def test_make_compare_refuses_an_empty_out_or_one_that_is_a_file_before_unpacking(run, tmp_path):
    made_bundle = made(run, tmp_path / "run.crate.zip")
    one_line_refusal(compare(str(made_bundle), "ref:azure_hbv4", ""), "OUT is empty")
    occupied = tmp_path / "occupied"
    occupied.write_text("mine")
    one_line_refusal(compare(str(made_bundle), "ref:azure_hbv4", str(occupied)), "not a folder")
    assert occupied.read_text() == "mine" and not Path("/base-bundle").exists()


def test_make_compare_against_a_published_machine_exits_2_not_1_on_a_crash(run, tmp_path):
    """A bundle whose topology.json is a list (listed again, so only that is
    wrong) is refused by the check; a results folder holding one is refused
    by the comparison: neither reads as a row got worse."""
    listed = relisted(made(run, tmp_path / "run.crate.zip"), tmp_path / "list.crate.zip", "results/box/topology.json", b"[]")
    one_line_refusal(compare(str(listed), "ref:azure_hbv4", str(tmp_path / "a")), "topology.json: a JSON list, not an object")
    folder = study(tmp_path / "folder", idle=None)
    (folder / "results" / "box" / "topology.json").write_text("[]")
    one_line_refusal(compare("ref:azure_hbv4", str(folder / "results"), str(tmp_path / "b")), "a JSON list, not an object")
