"""A run as one checkable archive: a Workflow Run RO-Crate (Provenance Run
Crate profile) made with ro-crate-py (docs/bundle.md).

It holds the config, every stored record, each system's topology.json and
environment.json, findings.json, the report and the figures where they
exist; every file carries its sha256 and size, which bundle_check reads
back. What is not copied is described: the code version, each binary's
sha256, the compiler, the Python packages and each system's machine digest."""

from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
import tempfile
import zipfile
from collections.abc import Callable
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path, PurePosixPath
from urllib.parse import quote, unquote

from rocrate.rocrate import ROCrate

from membench.core import layout
from membench.measure.identity import machine_digest

# The profiles the crate names (root dataset conformsTo); bundle_check requires
# the Workflow Run and Provenance Run ones.
PROFILES = {
    "process": "https://w3id.org/ro/wfrun/process/0.5",
    "workflow": "https://w3id.org/ro/wfrun/workflow/0.5",
    "provenance": "https://w3id.org/ro/wfrun/provenance/0.5",
    "workflow_ro_crate": "https://w3id.org/workflowhub/workflow-ro-crate/1.0",
}
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
    crate.root_dataset["name"] = f"membench run: {results.name}"
    systems = layout.systems_with_runs(results)
    crate.root_dataset["description"] = (
        f"Memory bandwidth and latency measured by membench on {', '.join(systems) or 'no system'}: the config, "
        "every stored record, each system's topology and environment, and what the report was built from them."
    )
    crate.root_dataset["conformsTo"] = [{"@id": url} for url in PROFILES.values()]
    for url in PROFILES.values():
        crate.add_jsonld({"@id": url, "@type": "CreativeWork", "name": url.rsplit("/", 2)[-2]})
    workflow = crate.add_workflow(repo / "Snakefile", dest_path="Snakefile", main=True, lang="snakemake")
    snakefile = (repo / "Snakefile").read_bytes()
    workflow["sha256"], workflow["contentSize"] = sha256_of(snakefile), str(len(snakefile))
    config_file = add_checked_file(crate, config, "config.yaml", {"name": "the run's config"})
    outputs = [
        add_checked_file(crate, path, "results/" + path.relative_to(results).as_posix()) for path in run_files(results)
    ]
    software = [
        crate.add_jsonld({"@id": "#membench", "@type": "SoftwareSourceCode", "name": "membench",
                          "version": code_version(repo)}),
        crate.add_jsonld({"@id": "#compiler", "@type": "SoftwareApplication", "name": compiler_version()}),
    ]  # fmt: skip
    for name, version in pinned_packages(repo).items():
        software.append(crate.add_jsonld({"@id": f"#python-{name}", "@type": "SoftwareApplication",
                                          "name": name, "softwareVersion": version}))  # fmt: skip
    for binary in sorted(binaries.iterdir()) if binaries and binaries.is_dir() else []:
        if binary.is_file():
            software.append(crate.add_jsonld({"@id": f"#binary-{binary.name}", "@type": "SoftwareApplication",
                                              "name": binary.name, "sha256": sha256_of(binary.read_bytes())}))  # fmt: skip
    machines = []
    for topology in layout.topology_files(results):
        digest = machine_digest(json.loads(topology.read_text()))
        machines.append(crate.add_jsonld({"@id": f"#machine-{topology.parent.name}", "@type": "PropertyValue",
                                          "name": f"machine digest of {topology.parent.name}", "value": digest}))  # fmt: skip
    action = crate.add_action(workflow, identifier="#run", object=[config_file], result=outputs,
                              properties={"@type": "CreateAction", "name": f"membench run {results.name}"})  # fmt: skip
    action["additionalType"] = {"@id": "#software"}
    start, end = run_span(run_files(results))
    if start is not None:
        action["startTime"], action["endTime"] = start, end
    action["agent"] = crate.add_jsonld({"@id": "#operator", "@type": "Person", "name": operator_name(repo)})
    crate.add_jsonld({"@id": "#software", "@type": "Collection", "name": "software and machines of the run",
                      "hasPart": [{"@id": e.id} for e in software + machines]})  # fmt: skip
    return crate


def run_span(files: list[Path]) -> tuple[str | None, str | None]:
    """The first record's start and the last one's end (ISO 8601, UTC)
    over the repetition files; (None, None) when no record has times."""
    starts, ends = [], []
    for path in (p for p in files if p.suffix == ".jsonl"):
        for line in path.read_text().splitlines():
            record = json.loads(line) if line.strip() else {}
            starts += [record["t_start"]] if _moment(record.get("t_start")) else []
            ends += [record["t_end"]] if _moment(record.get("t_end")) else []
    if not starts or not ends:
        return None, None
    return _iso(min(starts)), _iso(max(ends))


# The latest moment a record's time may name (year 9999): a later one (1e300)
# is no time a run had, and datetime cannot write it.
LAST_MOMENT = 253402300799


def _moment(value) -> bool:
    return type(value) in (int, float) and math.isfinite(value) and 0 <= value <= LAST_MOMENT


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="seconds")


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
