"""make bundle: a run as a Workflow Run RO-Crate that is checked offline
(loads with ro-crate-py, names its profiles, every file present with its
checksum, records meet their schema), and a damaged bundle refused in one
line naming the file, with nothing written."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from rocrate.rocrate import ROCrate

from membench.store import bundle, bundle_check

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))
import synthetic_runs  # noqa: E402

NO_FINDINGS_SCHEMA = REPO / "tests" / "no-such-findings.schema.json"
RECORD = "results/two-socket/runs/aff/stream-default/t1_spread_default_variant_parallel_sauto/r0.jsonl"


@pytest.fixture(scope="module")
def run_bundle(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("run")
    synthetic_runs.write_affinity_study(work, "aff", [1], repeats=2, machine="2x4x2")
    (work / "results" / "report.html").write_text("<html>report</html>\n")
    (work / "results" / "figures").mkdir()
    (work / "results" / "figures" / "aff-bandwidth.svg").write_text("<svg/>\n")
    binaries = work / "bin"
    binaries.mkdir()
    (binaries / "stream-default").write_bytes(b"\x7fELF planted")
    return bundle.write_bundle(work / "results", work / "in.yaml", work / "out" / "run.crate.zip", REPO, binaries)


def rewritten(source: Path, out: Path, change) -> Path:
    """A copy of the bundle with change(name, data) -> data or None (dropped)."""
    with zipfile.ZipFile(source) as archive, zipfile.ZipFile(out, "w") as copy:
        for name in archive.namelist():
            data = change(name, archive.read(name))
            if data is not None:
                copy.writestr(name, data)
    return out


def metadata_of(path: Path) -> dict:
    with zipfile.ZipFile(path) as archive:
        return json.loads(archive.read("ro-crate-metadata.json"))


def test_the_bundle_passes_the_offline_checks(run_bundle):
    crate = bundle_check.check_bundle(run_bundle, NO_FINDINGS_SCHEMA)
    listed = bundle_check.listed_files(crate)
    assert {"config.yaml", "Snakefile", RECORD, "results/report.html", "results/figures/aff-bandwidth.svg",
            "results/two-socket/topology.json", "results/two-socket/environment.json"} <= set(listed)  # fmt: skip
    assert all(len(p["sha256"]) == 64 for p in listed.values())
    # ro-crate-py loads the archive itself, offline, and sees the profiles
    loaded = ROCrate(run_bundle)
    profiles = {bundle_check._id_of(p) for p in loaded.root_dataset["conformsTo"]}
    assert set(bundle_check.REQUIRED_PROFILES) <= profiles
    graph = {e["@id"]: e for e in metadata_of(run_bundle)["@graph"]}
    assert graph["#binary-stream-default"]["sha256"] == bundle.sha256_of(b"\x7fELF planted")
    assert graph["#machine-two-socket"]["value"] and graph["#membench"]["version"]
    assert graph["#run"]["@type"] == "CreateAction" and {"@id": RECORD} in graph["#run"]["result"]


def damaged_cases(source: Path, tmp: Path) -> dict[str, tuple[Path, str]]:
    def changed_record(name, data):
        return data.replace(b'"gbps": ', b'"gbps": 1', 1) if name == RECORD else data

    def wrong_checksum(name, data):
        if name != "ro-crate-metadata.json":
            return data
        document = json.loads(data)
        for entity in document["@graph"]:
            if entity["@id"] == "results/report.html":
                entity["sha256"] = "0" * 64
        return json.dumps(document).encode()

    def schema_broken(name, data):
        """A record that breaks the schema, its checksum made to match."""
        if name == RECORD:
            return data.replace(b'"status": "ok"', b'"status": "fine"', 1)
        if name == "ro-crate-metadata.json":
            with zipfile.ZipFile(source) as archive:
                broken = archive.read(RECORD).replace(b'"status": "ok"', b'"status": "fine"', 1)
            document = json.loads(data)
            for entity in document["@graph"]:
                if entity["@id"] == RECORD:
                    entity["sha256"], entity["contentSize"] = bundle.sha256_of(broken), str(len(broken))
            return json.dumps(document).encode()
        return data

    return {
        "changed record": (rewritten(source, tmp / "a.zip", changed_record), f"{RECORD}: sha256 differs"),
        "missing file": (rewritten(source, tmp / "b.zip", lambda n, d: None if n == "config.yaml" else d),
                         "config.yaml: listed in the crate but missing"),
        "wrong checksum": (rewritten(source, tmp / "c.zip", wrong_checksum), "results/report.html: sha256 differs"),
        "unlisted file": (rewritten(source, tmp / "d.zip", lambda n, d: d) , None),
        "schema": (rewritten(source, tmp / "e.zip", schema_broken), f"{RECORD}:1: "),
    }  # fmt: skip


def test_a_damaged_bundle_is_refused_in_one_line_naming_the_file(run_bundle, tmp_path):
    cases = damaged_cases(run_bundle, tmp_path)
    with zipfile.ZipFile(cases["unlisted file"][0], "a") as archive:
        archive.writestr("results/extra.txt", "planted")
    cases["unlisted file"] = (cases["unlisted file"][0], "results/extra.txt: in the archive but not listed")
    for case, (path, expected) in cases.items():
        with pytest.raises(bundle_check.BundleRefused) as refused:
            bundle_check.check_bundle(path, NO_FINDINGS_SCHEMA)
        line = str(refused.value)
        assert expected in line and "\n" not in line and line.startswith(str(path)), (case, line)


def test_a_refused_bundle_writes_nothing_and_the_command_exits_2(run_bundle, tmp_path):
    damaged = damaged_cases(run_bundle, tmp_path)["changed record"][0]
    dest = tmp_path / "unpacked"
    out = subprocess.run([sys.executable, str(REPO / "workflow/scripts/run_bundle.py"), "open", str(damaged),
                          "--dest", str(dest)], capture_output=True, text=True, cwd=tmp_path)  # fmt: skip
    assert out.returncode == 2 and out.stdout.count("\n") == 1 and RECORD in out.stdout, out
    assert not dest.exists() and sorted(p.name for p in tmp_path.iterdir()) == [
        "a.zip",
        "b.zip",
        "c.zip",
        "d.zip",
        "e.zip",
    ]


def test_a_good_bundle_unpacks_to_the_files_it_was_made_from(run_bundle, tmp_path):
    dest = bundle_check.open_bundle(run_bundle, tmp_path / "unpacked", NO_FINDINGS_SCHEMA)
    source = run_bundle.parents[1]
    assert (dest / RECORD).read_bytes() == (source / RECORD).read_bytes()
    assert (dest / "config.yaml").read_bytes() == (source / "in.yaml").read_bytes()
    with pytest.raises(bundle_check.BundleRefused, match="not empty"):
        bundle_check.open_bundle(run_bundle, dest, NO_FINDINGS_SCHEMA)


@pytest.mark.parametrize("member", ["../x", "/x", "results/../../x"])
def test_a_member_outside_the_bundle_is_refused_in_one_line_and_nothing_unpacked(run_bundle, tmp_path, member):
    path = rewritten(run_bundle, tmp_path / "escape.zip", lambda n, d: d)
    with zipfile.ZipFile(path, "a") as archive:
        archive.writestr(member, "planted")
    with pytest.raises(bundle_check.BundleRefused) as refused:
        bundle_check.open_bundle(path, tmp_path / "in" / "unpacked", NO_FINDINGS_SCHEMA)
    assert str(refused.value) == f"{path}: refused: {member}: a path outside the bundle"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["escape.zip"]


def test_a_listed_file_outside_the_bundle_is_refused_in_one_line(run_bundle, tmp_path):
    def listed_outside(name, data):
        if name != "ro-crate-metadata.json":
            return data
        document = json.loads(data)
        document["@graph"].append({"@id": "../x", "@type": "File", "sha256": "0" * 64, "contentSize": "0"})
        root = next(e for e in document["@graph"] if e["@id"] == "./")
        root["hasPart"].append({"@id": "../x"})
        return json.dumps(document).encode()

    path = rewritten(run_bundle, tmp_path / "listed.zip", listed_outside)
    with pytest.raises(bundle_check.BundleRefused) as refused:
        bundle_check.check_bundle(path, NO_FINDINGS_SCHEMA)
    assert str(refused.value) == f"{path}: refused: ../x: listed in the crate with a path outside the bundle"


def test_the_run_says_what_it_is_who_ran_it_when_and_each_file_its_format(run_bundle):
    graph = {e["@id"]: e for e in metadata_of(run_bundle)["@graph"]}
    assert "two-socket" in graph["./"]["description"]
    assert graph[RECORD]["encodingFormat"] == "application/jsonl"
    assert graph["results/report.html"]["encodingFormat"] == "text/html"
    assert graph["results/figures/aff-bandwidth.svg"]["encodingFormat"] == "image/svg+xml"
    run = graph["#run"]
    assert graph[run["agent"]["@id"]]["@type"] == "Person"
    times = [json.loads(line) for line in (run_bundle.parents[1] / RECORD).read_text().splitlines()]
    assert run["startTime"] <= run["endTime"] and run["startTime"] <= bundle._iso(min(r["t_start"] for r in times))
