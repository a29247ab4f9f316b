"""The tools of a run and each measuring round as the tool run it was, for
the bundle's crate (docs/bundle.md, "Profiles").

A round (results/<system>/rounds/r<k>-<study>.json, a planned one
a<k>-<key>.json with its plan plan<k>-<key>.json) is one run of the
harness (workflow/scripts/measure_round.py), which starts a kernel binary
per repetition. In the crate it is a CreateAction: the harness as its
instrument; the config, the round's study (the plan file, or the study's
digest), the system's topology, its machine digest and the binaries it ran
as its object; its repetition files and its manifest as its result; the
first record's start and the last one's end; the operator as agent; and
the settings that placed its threads, as the records state them, under
`environment`. The workflow lists the harness and the binaries under
hasPart. Nothing here imports ro-crate-py's reader or touches the network:
it reads the results folder that is being bundled."""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import quote

from membench.core import layout
from membench.store import record_versions
from membench.measure.harness import BINDING_ENV

ROUND = re.compile(r"^(?P<kind>[ra])(?P<k>[0-9]+)-(?P<key>[0-9A-Za-z]+)\.json$")
PLAN = re.compile(r"^plan(?P<k>[0-9]+)-(?P<key>[0-9A-Za-z]+)\.json$")
HARNESS_SCRIPT = Path("workflow") / "scripts" / "measure_round.py"
# What the records say of a repetition's placement: (the PropertyValue's
# name, the record's key). The harness clears every BINDING_ENV variable
# and binds each thread itself, so the OMP_* values it saw are "unset" on a
# run membench started; the affinity is the placement membench chose.
SETTINGS = (("OMP_PROC_BIND", "omp_proc_bind"), ("OMP_PLACES", "omp_places"), ("affinity", "affinity"))
UNSET = "unset"
# The latest moment a record's time may name (year 9999): a later one (1e300)
# is no time a run had, and datetime cannot write it.
LAST_MOMENT = 253402300799


def round_files(results: Path, system: str) -> list[Path]:
    """A system's round manifests and plans, sorted (none without rounds/)."""
    folder = layout.rounds_dir(results, system)
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.is_file() and (ROUND.match(p.name) or PLAN.match(p.name)))


def is_round_manifest(name: str) -> bool:
    """A bundle member that is a round's manifest: results/<system>/rounds/r<k>-*.json or a<k>-*.json."""
    parts = name.split("/")
    return len(parts) == 4 and parts[0] == "results" and parts[2] == layout.ROUNDS and bool(ROUND.match(parts[3]))


def moment(value) -> bool:
    return type(value) in (int, float) and math.isfinite(value) and 0 <= value <= LAST_MOMENT


def iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="seconds")


@dataclass
class Facts:
    """What one repetition file's records say: its first start, last end,
    and each placement setting's values (SETTINGS)."""

    start: float | None = None
    end: float | None = None
    settings: dict[str, set[str]] = field(default_factory=dict)


def _this_version(record):
    """The record as this version states it (an older one migrated: a
    version-3 record's affinity is the one asked, not the one handed)."""
    try:
        return record_versions.migrate(record) if isinstance(record, dict) else {}
    except record_versions.SchemaVersionError:
        return record


def facts_of(path: Path) -> Facts:
    facts = Facts(settings={name: set() for name, _ in SETTINGS})
    for line in path.read_text().splitlines():
        record = _this_version(json.loads(line)) if line.strip() else {}
        if moment(record.get("t_start")):
            facts.start = min(record["t_start"], facts.start if facts.start is not None else math.inf)
        if moment(record.get("t_end")):
            facts.end = max(record["t_end"], facts.end if facts.end is not None else -math.inf)
        for name, key in SETTINGS:
            value = record.get(key)
            facts.settings[name].add(UNSET if value is None else str(value))
    return facts


@dataclass
class Run:
    """What every round action of a crate shares."""

    results: Path
    files: dict  # bundle member name -> its File entity
    facts: dict  # member name of a repetition file -> Facts
    harness: object
    binaries: dict  # (system or "", binary name) -> its entity
    machines: dict  # system -> its machine digest entity
    config: object
    agent: object


def add_tools(crate, workflow, repo: Path, binaries: Path | None, version: str) -> tuple[object, dict]:
    """The harness and every binary under bin/ (bin/<name> and
    bin/<system>/<name>) as SoftwareApplications the workflow lists under
    hasPart; each system's harness library (bin/<system>/harness/) as the
    binaries' softwareRequirements. -> (harness, {(system, name): binary})."""
    script = repo / HARNESS_SCRIPT
    harness = crate.add_jsonld({
        "@id": "#harness", "@type": "SoftwareApplication", "name": "membench harness (measure_round.py)",
        "description": f"{HARNESS_SCRIPT.as_posix()}: measures one round, one kernel binary run per repetition, "
                       "each binding its own threads (the harness library, kernels/harness/)",
        "softwareVersion": version,
        **({"sha256": hashlib.sha256(script.read_bytes()).hexdigest()} if script.is_file() else {}),
    })  # fmt: skip
    found = {}
    folders = [("", binaries)] + [(p.name, p) for p in sorted(binaries.iterdir()) if p.is_dir()] if binaries and binaries.is_dir() else []
    for system, folder in folders:
        library = folder / "harness" / "libmbharness.a"
        requirement = _binary(crate, f"#harness-library/{quote(system)}", library, "harness library") if system and library.is_file() else None
        for path in sorted(p for p in folder.iterdir() if p.is_file()):
            entity = _binary(crate, f"#binary-{quote(system) + '/' if system else ''}{quote(path.name)}", path, path.name)
            if requirement is not None:
                entity["softwareRequirements"] = requirement
            found[(system, path.name)] = entity
    workflow["hasPart"] = [harness] + list(found.values())
    return harness, found


def _binary(crate, identifier: str, path: Path, name: str):
    return crate.add_jsonld({"@id": identifier, "@type": "SoftwareApplication", "name": name,
                             "sha256": hashlib.sha256(path.read_bytes()).hexdigest()})  # fmt: skip


def member_of(path, system: str) -> str | None:
    """A manifest's run path (results/<system>/runs/..., absolute where the
    round was given an absolute folder) as the bundle member it is."""
    text = str(path)
    at = text.rfind(f"{system}/{layout.RUNS}/")
    return None if at < 0 or (at > 0 and text[at - 1] != "/") else "results/" + text[at:]


def add_round_action(crate, manifest: Path, name: str, run: Run):
    """The round whose manifest is the bundle member `name`, as a CreateAction."""
    match = ROUND.match(manifest.name)
    system, kind, k, key = manifest.parent.parent.name, match["kind"], match["k"], match["key"]
    document = _manifest(manifest)
    members = [member_of(p, system) for p in document.get("runs", []) if isinstance(p, str)]
    repetitions = list(dict.fromkeys(m for m in members if m in run.files))
    identifier = f"#round-{quote(system)}-{quote(manifest.stem)}"
    objects = [run.config, _study(crate, run, system, kind, k, key, identifier)]
    objects += [e for e in (run.files.get(f"results/{system}/{layout.TOPOLOGY}"), run.machines.get(system)) if e is not None]
    objects += _binaries_of(run, system, repetitions)
    planned = "planned " if kind == "a" else ""
    action = crate.add_action(run.harness, identifier=identifier, object=objects,
                              result=[run.files[m] for m in repetitions] + [run.files[name]],
                              properties={"@type": "CreateAction", "name": f"{system} {planned}round {k}",
                                          "description": f"measure_round.py --system {system} --round {k}: "
                                                         f"{len(repetitions)} repetition file{'' if len(repetitions) == 1 else 's'}"})  # fmt: skip
    facts = [run.facts[m] for m in repetitions if m in run.facts]
    starts, ends = [f.start for f in facts if f.start is not None], [f.end for f in facts if f.end is not None]
    if starts and ends:
        action["startTime"], action["endTime"] = iso(min(starts)), iso(max(ends))
    action["agent"] = run.agent
    action["environment"] = _environment(crate, identifier, facts)
    return action


def _manifest(path: Path) -> dict:
    try:
        document = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError):
        return {}
    return document if isinstance(document, dict) else {}


def _study(crate, run: Run, system: str, kind: str, k: str, key: str, identifier: str):
    """A planned round's plan file where the bundle holds it; else the
    study's digest (the study itself is made from the config)."""
    plan = run.files.get(f"results/{system}/{layout.ROUNDS}/plan{k}-{key}.json")
    if kind == "a" and plan is not None:
        return plan
    return crate.add_jsonld({
        "@id": f"{identifier}-study", "@type": "PropertyValue", "name": "round study", "value": key,
        "description": f"the requests of {system} round {k}, made from config.yaml; their digest names the manifest"
                       if kind == "r" else f"the plan of {system} round {k} (plan{k}-{key}.json), not in the bundle",
    })  # fmt: skip


def _binaries_of(run: Run, system: str, repetitions: list[str]) -> list:
    used = {parts["kernel_variant"] for m in repetitions if (parts := layout.run_parts(m))}
    found = (run.binaries.get((system, name)) or run.binaries.get(("", name)) for name in sorted(used))
    return list(dict.fromkeys(e for e in found if e is not None))


def _environment(crate, identifier: str, facts: list[Facts]) -> list:
    values = []
    for name, key in SETTINGS:
        seen = sorted(set().union(*(f.settings.get(name, set()) for f in facts))) or [UNSET]
        how = (f"the records' {key}: the harness clears {', '.join(BINDING_ENV)} and binds each thread itself"
               if name.startswith("OMP") else f"membench's thread placement, the records' {key}")  # fmt: skip
        values.append(crate.add_jsonld({"@id": f"{identifier}-{name}", "@type": "PropertyValue", "name": name,
                                        "value": ", ".join(seen), "description": how}))  # fmt: skip
    return values
