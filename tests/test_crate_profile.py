"""The bundle meets the profiles it names (issue 52): Process, Workflow and
Provenance Run Crate 0.6 and Workflow RO-Crate 1.1. A small real run (the
STREAM binary built as the build rule builds it, the machine probed, two
fixed rounds and one planned round measured by membench.measure.rounds,
their manifests written as the measure jobs write them) is bundled as
`make bundle` bundles it; each round is a CreateAction of the harness with
its inputs, results, times, agent and placement environment; ro-crate-py
loads the opened bundle offline; a bundle that breaks one MUST (one round's
action removed among them) is refused in one line, exit code 2."""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from rocrate.rocrate import ROCrate

from membench.measure import rounds as measure_rounds
from membench.plan import checks, rounds, variants
from membench.probe.topology import write_probe
from membench.store import bundle, bundle_check, crate_profile
from test_bundle import rewritten

REPO = Path(__file__).resolve().parents[1]
RUN_BUNDLE = REPO / "workflow" / "scripts" / "run_bundle.py"
NO_FINDINGS_SCHEMA = REPO / "tests" / "no-such-findings.schema.json"
CONFIG = {"system": "box", "repeats": 3, "budget": "60s", "min_repeats": 2, "experiments": {
    "triad": {"kernel": "stream", "size": ["1MiB"], "ntimes": 3, "threads": [1], "affinity": ["close", "spread"]}}}  # fmt: skip
BINARY = "#binary-box/stream-default"


def measure(work: Path, binary: Path, archive: Path) -> list[str]:
    """Rounds 0 and 1 (fixed) and a planned round 2 of one cell, as the
    measure jobs run them in `work`; -> the manifests, as bundle members."""
    table = variants.load_variants(REPO / "kernels" / "families" / "variants.yaml")
    config, cells = checks.load(CONFIG, REPO / "workflow" / "schemas" / "config.schema.yaml", table)
    (work / "config.yaml").write_text(json.dumps(CONFIG))
    (work / "bin" / "box" / "harness").mkdir(parents=True)
    shutil.copy2(binary, work / "bin" / "box" / "stream-default")
    shutil.copy2(archive, work / "bin" / "box" / "harness" / archive.name)
    (work / "results" / "box" / "rounds").mkdir(parents=True)
    write_probe("/", "results/box/topology.json", "results/box/environment.json")
    topology = json.loads(Path("results/box/topology.json").read_text())
    inputs, key = rounds.RoundInputs(config, cells, table), rounds.budget_key(config, cells, table, "box")
    plan = {**inputs.adaptive_study("box", 2, {cells[0].id}), "why": "one finding undecided", "budget_s": 60.0}
    Path(f"results/box/rounds/plan2-{key}.json").write_text(json.dumps(plan, indent=1))
    studies = [(f"r{k}-{inputs.study_digest('box', k)}", json.loads(inputs.study("box", k)), k) for k in (0, 1)]
    manifests = []
    for name, study, k in studies + [(f"a2-{key}", plan, 2)]:
        with open("log", "a") as log:
            made = measure_rounds.measure_round(rounds.plan_of_study(study, "box", k, topology), log=log,
                                                topology="results/box/topology.json", bin_dir="bin/box",
                                                runs_dir="results/box/runs")  # fmt: skip
        measure_rounds.write_manifest(f"results/box/rounds/{name}.json", made)
        manifests.append(f"results/box/rounds/{name}.json")
    return manifests


@pytest.fixture(scope="module")
def made(tmp_path_factory, variant_builds) -> tuple[Path, Path, list[str]]:
    """(work, its results/run.crate.zip written as `make bundle` writes it, the round manifests)."""
    work = tmp_path_factory.mktemp("profiled")
    with contextlib.chdir(work):
        manifests = measure(work, variant_builds.binary("stream"), variant_builds.harness())
    out = subprocess.run([sys.executable, str(RUN_BUNDLE), "write", "--results", "results", "--config", "config.yaml",
                          "--out", "results/run.crate.zip", "--binaries", "bin"], cwd=work, capture_output=True, text=True)  # fmt: skip
    assert out.returncode == 0 and out.stdout == "Bundle: results/run.crate.zip (checked)\n", out
    return work, work / "results" / "run.crate.zip", manifests


def metadata(path: Path) -> dict:
    with bundle_check.opened(path) as archive:
        return json.loads(archive.read(bundle_check.METADATA))


def test_each_round_is_an_action_of_a_tool_the_workflow_lists(made):
    work, path, manifests = made
    document = metadata(path)
    graph = {e["@id"]: e for e in document["@graph"]}
    root = graph["./"]
    assert {r["@id"] for r in root["conformsTo"]} == set(crate_profile.CLAIMED)
    assert all(graph[url]["@type"] == "CreativeWork" or "CreativeWork" in graph[url]["@type"] for url in crate_profile.CLAIMED)
    assert bundle.WORKFLOW_RUN_CONTEXT in document["@context"] and graph[root["license"]["@id"]]["name"]
    workflow = graph[root["mainEntity"]["@id"]]
    assert {"#harness", BINARY} <= {p["@id"] for p in workflow["hasPart"]}
    assert graph[BINARY]["sha256"] == bundle.sha256_of((work / "bin" / "box" / "stream-default").read_bytes())
    mentioned = {m["@id"] for m in root["mentions"]}
    for name in manifests:
        (action,) = [a for a in graph.values() if a.get("@type") == "CreateAction" and {"@id": name} in a["result"]
                     and a["@id"] != "#run"]  # fmt: skip
        assert action["@id"] in mentioned and action["instrument"] == {"@id": "#harness"}
        runs = {bundle.crate_id(run) for run in json.loads((work / name).read_text())["runs"]}
        assert {r["@id"] for r in action["result"]} == runs | {name}
        objects = {o["@id"] for o in action["object"]}
        assert {"config.yaml", "results/box/topology.json", "#machine-box", BINARY} <= objects
        assert (name.rsplit("/", 1)[1].replace("a2-", "plan2-") in {o.rsplit("/", 1)[-1] for o in objects}) == ("/a2-" in name)
        assert action["startTime"] <= action["endTime"] and graph[action["agent"]["@id"]]["@type"] == "Person"
        settings = {graph[e["@id"]]["name"]: graph[e["@id"]]["value"] for e in action["environment"]}
        assert settings["OMP_PROC_BIND"] == settings["OMP_PLACES"] == "unset"  # the harness clears them
        records = [json.loads(line) for run in runs for line in (work / run).read_text().splitlines()]
        assert settings["affinity"] == ", ".join(sorted({r["affinity"] for r in records}))
    files = [e for e in graph.values() if "File" in crate_profile.types(e) and e["@id"] != bundle_check.METADATA]
    assert files and all(e["encodingFormat"] and e["contentSize"] and len(e["sha256"]) == 64 for e in files)


def test_ro_crate_py_loads_the_opened_bundle_offline(made, tmp_path, monkeypatch):
    _, path, manifests = made
    dest = bundle_check.open_bundle(path, tmp_path / "opened", NO_FINDINGS_SCHEMA)

    def no_network(*args):
        raise AssertionError("a connection was attempted")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    crate = ROCrate(dest)
    files = [e.id for e in crate.get_entities() if "File" in e.type and not e.id.startswith("#")]
    assert [i for i in files if not (dest / bundle.member_name(i)).is_file()] == []
    assert set(manifests) <= set(files)
    actions = [e for e in crate.get_entities() if e.type == "CreateAction"]
    assert len(actions) == 1 + len(manifests) and crate.mainEntity.id == "Snakefile"
    assert crate_profile.profile_problem(crate) is None


def test_a_bundle_with_one_rounds_action_removed_is_refused_in_one_line(made, tmp_path):
    _, path, manifests = made
    gone = manifests[1]
    graph = {e["@id"]: e for e in metadata(path)["@graph"]}
    action = next(i for i, a in graph.items() if a.get("@type") == "CreateAction" and {"@id": gone} in a["result"] and i != "#run")

    def removed(document):
        document["@graph"] = [e for e in document["@graph"] if e["@id"] != action]
        root = next(e for e in document["@graph"] if e["@id"] == "./")
        root["mentions"] = [m for m in root["mentions"] if m["@id"] != action]

    damaged = changed(path, tmp_path / "removed.zip", removed)
    out = subprocess.run([sys.executable, str(RUN_BUNDLE), "check", str(damaged)], capture_output=True, text=True)
    assert out.returncode == 2 and out.stderr == "", out
    assert out.stdout == f"{damaged}: refused: {gone}: a round's manifest that no tool's CreateAction has as result (one action a round)\n"


def changed(source: Path, out: Path, change) -> Path:
    """The bundle with change(metadata document) applied to its metadata."""

    def edit(name, data):
        if name != bundle_check.METADATA:
            return data
        document = json.loads(data)
        change(document)
        return json.dumps(document).encode()

    return rewritten(source, out, edit)


def entity(document: dict, identifier: str) -> dict:
    return next(e for e in document["@graph"] if e["@id"] == identifier)


def a_round(document: dict) -> dict:
    return next(e for e in document["@graph"] if e["@id"].startswith("#round-") and e["@type"] == "CreateAction")


BROKEN = {
    "profile": (lambda d: entity(d, "./").update(conformsTo=entity(d, "./")["conformsTo"][1:]),
                f"does not name the profile {bundle.PROFILES['process']}"),
    "no instrument": (lambda d: a_round(d).pop("instrument"), "an action with no instrument"),
    "tool not listed": (lambda d: entity(d, "Snakefile").update(hasPart=[{"@id": BINARY}]),
                        "its tool #harness is not in the main workflow's hasPart (Provenance Run Crate)"),
    "workflow not run": (lambda d: entity(d, "#run").update(instrument={"@id": "#harness"}),
                         "no action has the main workflow Snakefile as instrument"),
    "object missing": (lambda d: a_round(d).update(object=[{"@id": "#nothing"}]), "its object #nothing is no entity of the crate"),
    "agent": (lambda d: entity(d, "#run").update(agent={"@id": "#machine-box"}), "its agent #machine-box is no Person or Organization"),
    "licence": (lambda d: entity(d, "./").pop("license"), "the root names no licence of the crate"),
    "not mentioned": (lambda d: entity(d, "./").update(mentions=[{"@id": "#run"}]), "an action the root does not list under mentions"),
    "context": (lambda d: d.update({"@context": d["@context"][0]}), "its @context lacks https://w3id.org/ro/terms/workflow-run/context"),
    "format": (lambda d: entity(d, "config.yaml").pop("encodingFormat"), "config.yaml: a listed file with no encodingFormat"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_bundle_that_breaks_a_must_is_refused_in_one_line(made, tmp_path, case):
    _, path, _ = made
    change, expected = BROKEN[case]
    damaged = changed(path, tmp_path / f"{case}.zip", change)
    with pytest.raises(bundle_check.BundleRefused) as refused:
        bundle_check.check_bundle(damaged, NO_FINDINGS_SCHEMA)
    line = str(refused.value)
    assert line.startswith(f"{damaged}: refused: ") and expected in line and "\n" not in line, line


def test_a_round_action_names_the_affinity_handed_to_the_harness_in_every_record_version(tmp_path):
    """A version-3 record stated the affinity asked as `affinity` and the
    one handed to the harness as `affinity_resolved`; the action says the
    handed one, as it does for a version-4 record's `affinity`."""
    from membench.store import crate_rounds

    old = {"schema": 3, "kernel": "stream", "affinity": "node:0", "affinity_resolved": "cpus:0,1", "t_start": 1.0, "t_end": 2.0}
    new = {**old, "schema": 4, "affinity": "cpus:2,3", "affinity_requested": "node:1"}
    del new["affinity_resolved"]
    path = tmp_path / "r0.jsonl"
    path.write_text(json.dumps(old) + "\n" + json.dumps(new) + "\n")
    assert crate_rounds.facts_of(path).settings["affinity"] == {"cpus:0,1", "cpus:2,3"}
