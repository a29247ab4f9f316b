"""A run as one checkable archive: an RO-Crate made with ro-crate-py that
meets the Process, Workflow and Provenance Run Crate profiles (0.6) and
Workflow RO-Crate (1.1) (docs/bundle.md).

It holds the config, every stored record, each system's topology.json,
environment.json and round manifests (and plans), findings.json, the report
and the figures where they exist; every file carries its sha256, size and
media type, which bundle_check reads back. What is not copied is described:
the code version, the harness and each binary with its sha256, the
compiler, the Python packages and each system's machine digest. The run is
one CreateAction of the workflow, each round one of the harness
(membench.store.crate_rounds)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import tempfile
import zipfile
from collections.abc import Callable
from importlib import metadata
from pathlib import Path, PurePosixPath
from urllib.parse import quote, unquote

from rocrate.rocrate import ROCrate

from membench.core import layout
from membench.measure.identity import machine_digest
from membench.store import crate_rounds

# The profiles the crate names (root dataset conformsTo) and meets, at the
# versions that go with the RO-Crate 1.3 and Workflow RO-Crate 1.1 that
# ro-crate-py 0.16 writes; membench.store.crate_profile checks their MUSTs.
PROFILES = {
    "process": "https://w3id.org/ro/wfrun/process/0.6",
    "workflow": "https://w3id.org/ro/wfrun/workflow/0.6",
    "provenance": "https://w3id.org/ro/wfrun/provenance/0.6",
    "workflow_ro_crate": "https://w3id.org/workflowhub/workflow-ro-crate/1.1",
}
PROFILE_NAMES = {"process": "Process Run Crate", "workflow": "Workflow Run Crate",
                 "provenance": "Provenance Run Crate", "workflow_ro_crate": "Workflow RO-Crate"}  # fmt: skip
# Defines `environment` (an action's environment variables), which RO-Crate's own context lacks.
WORKFLOW_RUN_CONTEXT = "https://w3id.org/ro/terms/workflow-run/context"
# The Snakefile's media type: none is registered for Snakemake.
WORKFLOW_FORMAT = "text/x-snakemake"
LICENCE_FILES = ("LICENSE", "LICENSE.md", "LICENSE.txt", "COPYING")
# What a figures-only run builds from the records: the report, the summary
# tables (findings.json among them), each system's measurements.csv and the
# figures. A bundle holds them so that a rebuild from its inputs alone can be
# held against them byte for byte.
BUILT_PATTERNS = ["summary/*.json", "summary/*.csv", "report.html", "figures/*.svg"]
# Each bundled file's media type (encodingFormat), by its ending. JSON Lines
# has no registered type; application/jsonl is the one its own site proposes.
FORMATS = {".jsonl": "application/jsonl", ".json": "application/json", ".csv": "text/csv",
           ".yaml": "application/yaml", ".html": "text/html", ".svg": "image/svg+xml"}  # fmt: skip
SYSTEM_FILES = [layout.TOPOLOGY, layout.ENVIRONMENT]
SYSTEM_BUILT = [layout.MEASUREMENTS]


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def crate_id(member: str) -> str:
    """The @id the crate lists a bundle member under. ro-crate-py
    percent-encodes a dest_path this way (so a cell's `=` is listed as %3D)
    and stores the file under the plain name; member_name undoes it."""
    return quote(member, safe="/")


def member_name(identifier: str) -> str:
    """The archive name of a listed file: its @id decoded, the one way back
    from crate_id."""
    return unquote(identifier)


def run_files(results: Path) -> list[Path]:
    """What the crate copies from a results folder, in a stable order."""
    found = []
    for system in layout.systems_with_runs(results):
        folder = layout.system_dir(results, system)
        found += [folder / name for name in SYSTEM_FILES + SYSTEM_BUILT if (folder / name).is_file()]
        found += crate_rounds.round_files(results, system)
        found += layout.run_files(results, system, "*.jsonl")
    for pattern in BUILT_PATTERNS:
        found += sorted(p for p in results.glob(pattern) if p.is_file())
    return found


def is_built(name: str) -> bool:
    """A bundle member a figures-only run rebuilds (not one of its inputs)."""
    relative = PurePosixPath(name).relative_to("results") if name.startswith("results/") else None
    if relative is None:
        return False
    return any(relative.match(p) for p in BUILT_PATTERNS) or (len(relative.parts) == 2 and relative.name in SYSTEM_BUILT)


def code_version(repo: Path) -> str:
    described = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=repo, capture_output=True, text=True)
    return described.stdout.strip() if described.returncode == 0 else "unknown (not a git checkout)"


def compiler_version() -> str:
    try:
        out = subprocess.run(["cc", "--version"], capture_output=True, text=True)
    except OSError:
        return "unknown"
    return out.stdout.splitlines()[0] if out.returncode == 0 and out.stdout else "unknown"


def pinned_packages(repo: Path) -> dict[str, str]:
    """The installed version of each package requirements.txt pins."""
    versions = {}
    for line in (repo / "requirements.txt").read_text().splitlines():
        name = line.split("==")[0].strip()
        if name and not name.startswith("#"):
            try:
                versions[name] = metadata.version(name)
            except metadata.PackageNotFoundError:
                versions[name] = "not installed"
    return versions


def add_checked_file(crate: ROCrate, source: Path, dest: str, properties: dict | None = None):
    data = source.read_bytes()
    props = {"sha256": sha256_of(data), "contentSize": str(len(data))} | (properties or {})
    if Path(dest).suffix in FORMATS:
        props["encodingFormat"] = FORMATS[Path(dest).suffix]
    entity = crate.add_file(source, dest_path=dest, properties=props)
    if entity.id != crate_id(dest):
        # another ro-crate-py escaping: the check would look for a name the archive lacks
        raise RuntimeError(f"{dest}: ro-crate-py listed it as {entity.id}, not {crate_id(dest)}")
    return entity


def build_crate(results: Path, config: Path, repo: Path, binaries: Path | None = None) -> ROCrate:
    crate = ROCrate()
    describe_root(crate, results, repo)
    workflow, harness, tools = describe_workflow(crate, repo, binaries)
    config_file = add_checked_file(crate, config, "config.yaml", {"name": "the run's config"})
    files = {"results/" + p.relative_to(results).as_posix(): p for p in run_files(results)}
    entities = {name: add_checked_file(crate, path, name) for name, path in files.items()}
    facts = {name: crate_rounds.facts_of(path) for name, path in files.items() if name.endswith(".jsonl")}
    machines = {}
    for topology in layout.topology_files(results):
        digest = machine_digest(json.loads(topology.read_text()))
        machines[topology.parent.name] = crate.add_jsonld({"@id": f"#machine-{topology.parent.name}", "@type": "PropertyValue",
                                                           "name": f"machine digest of {topology.parent.name}", "value": digest})  # fmt: skip
    agent = crate.add_jsonld({"@id": "#operator", "@type": "Person", "name": operator_name(repo)})
    action = crate.add_action(workflow, identifier="#run", object=[config_file] + list(machines.values()),
                              result=list(entities.values()),
                              properties={"@type": "CreateAction", "name": f"membench run {results.name}"})  # fmt: skip
    starts, ends = [f.start for f in facts.values() if f.start is not None], [f.end for f in facts.values() if f.end is not None]
    if starts and ends:
        action["startTime"], action["endTime"] = _iso(min(starts)), _iso(max(ends))
    action["agent"] = agent
    run = crate_rounds.Run(results, entities, facts, harness, tools, machines, config_file, agent)
    rounds = [crate_rounds.add_round_action(crate, path, name, run) for name, path in files.items()
              if crate_rounds.is_round_manifest(name)]  # fmt: skip
    crate.root_dataset["mentions"] = [action] + rounds
    return crate


def describe_root(crate: ROCrate, results: Path, repo: Path) -> None:
    """The root's name, description, profiles (each a CreativeWork of the
    crate) and licence; the workflow-run context, which defines the
    actions' `environment`."""
    crate.root_dataset["name"] = f"membench run: {results.name}"
    systems = layout.systems_with_runs(results)
    crate.root_dataset["description"] = (
        f"Memory bandwidth and latency measured by membench on {', '.join(systems) or 'no system'}: the config, "
        "every stored record, each system's topology and environment, each measuring round's manifest, and what "
        "the report was built from them."
    )
    crate.root_dataset["conformsTo"] = [{"@id": url} for url in PROFILES.values()]
    for key, url in PROFILES.items():
        if crate.get(url) is None:  # ro-crate-py adds Workflow RO-Crate's itself
            crate.add_jsonld({"@id": url, "@type": "CreativeWork", "name": PROFILE_NAMES[key],
                              "version": url.rsplit("/", 1)[-1]})  # fmt: skip
    crate.root_dataset["license"] = crate.add_jsonld(licence(repo))
    if WORKFLOW_RUN_CONTEXT not in crate.metadata.extra_contexts:
        crate.metadata.extra_contexts.append(WORKFLOW_RUN_CONTEXT)


def describe_workflow(crate: ROCrate, repo: Path, binaries: Path | None):
    """The Snakefile as the main workflow: its code version (isPartOf), the
    compiler and Python packages it needs (softwareRequirements) and its
    tools, the harness and the binaries (hasPart). -> (workflow, harness, binaries)."""
    workflow = crate.add_workflow(repo / "Snakefile", dest_path="Snakefile", main=True, lang="snakemake")
    snakefile = (repo / "Snakefile").read_bytes()
    workflow["sha256"], workflow["contentSize"] = sha256_of(snakefile), str(len(snakefile))
    workflow["encodingFormat"] = WORKFLOW_FORMAT
    version = code_version(repo)
    workflow["isPartOf"] = crate.add_jsonld({"@id": "#membench", "@type": "SoftwareSourceCode", "name": "membench",
                                             "version": version})  # fmt: skip
    needs = [crate.add_jsonld({"@id": "#compiler", "@type": "SoftwareApplication", "name": compiler_version()})]
    for name, installed in pinned_packages(repo).items():
        needs.append(crate.add_jsonld({"@id": f"#python-{name}", "@type": "SoftwareApplication", "name": name,
                                       "softwareVersion": installed}))  # fmt: skip
    workflow["softwareRequirements"] = needs
    harness, tools = crate_rounds.add_tools(crate, workflow, repo, binaries, version)
    return workflow, harness, tools


def licence(repo: Path) -> dict:
    """The checkout's licence (the first line of its LICENSE file), or an
    entity that says none is stated."""
    for name in LICENCE_FILES:
        if (repo / name).is_file():
            lines = (line.strip() for line in (repo / name).read_text(errors="replace").splitlines())
            return {"@id": "#license", "@type": "CreativeWork", "name": next((s for s in lines if s), name)[:200],
                    "description": f"the licence of the membench checkout the run was made with ({name})"}  # fmt: skip
    return {"@id": "#license", "@type": "CreativeWork", "name": "no licence stated",
            "description": "membench states no licence for its code or for a run's data; the run's owner names "
                           "one before publishing the bundle"}  # fmt: skip


LAST_MOMENT, _moment, _iso = crate_rounds.LAST_MOMENT, crate_rounds.moment, crate_rounds.iso


def operator_name(repo: Path) -> str:
    """Who ran it, as the checkout's git user.name says (the name its
    commits already publish); nothing else is looked up."""
    named = subprocess.run(["git", "config", "user.name"], cwd=repo, capture_output=True, text=True)
    return named.stdout.strip() if named.returncode == 0 and named.stdout.strip() else "not stated (no git user.name)"


def write_bundle(results: Path, config: Path, out: Path, repo: Path, binaries: Path | None = None,
                 check: Callable[[Path], object] | None = None) -> Path:  # fmt: skip
    """Writes the archive `out` (results/<name>.crate.zip style); returns
    it. It is written under a temporary name beside out and renamed to out
    only once check(that file) has returned: a check that raises leaves no
    file behind, and out as it was."""
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(f".{out.name}.{os.getpid()}.partial")
    try:
        with tempfile.TemporaryDirectory(prefix="membench-bundle-") as folder:
            build_crate(results, config, repo, binaries).write(folder)
            zip_folder(Path(folder), partial)
        if check is not None:
            check(partial)
        partial.replace(out)
    finally:
        partial.unlink(missing_ok=True)
    return out


def zip_folder(folder: Path, out: Path) -> None:
    """The written crate as one zip, each file under its name. Not
    ro-crate-py's write_zip: 0.16 stores an empty file there under its
    percent-encoded @id instead (File._stream_from_file), a name the
    archive's readers then miss; writing to a folder decodes every @id."""
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            archive.write(path, path.relative_to(folder).as_posix())
