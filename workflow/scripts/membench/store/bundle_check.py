"""Reads a run bundle back (membench.store.bundle wrote it), offline: the
crate must load with ro-crate-py (whose package ships the RO-Crate context),
name the Workflow Run and Provenance Run Crate profiles, and list every file
it holds with the sha256 and size found. Stored records and findings.json
must meet their schemas. A bundle that fails is refused in one line that
names what failed; nothing is written until every check has passed, and
then only inside the folder asked for."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path, PurePosixPath

import jsonschema
import yaml
from rocrate.rocrate import ROCrate

from membench.core import record_schema
from membench.store.bundle import PROFILES, crate_id, is_built, member_name, sha256_of

METADATA = "ro-crate-metadata.json"
REQUIRED_PROFILES = [PROFILES["workflow"], PROFILES["provenance"]]
# Written by ro-crate-py itself, and not data of the run.
UNLISTED = {METADATA, "ro-crate-preview.html"}


class BundleRefused(Exception):
    """A bundle that cannot be used; str() is the one line to print."""


def refuse(bundle: Path, what: str) -> BundleRefused:
    return BundleRefused(f"{bundle}: refused: {what}")


def safe_member(name: str) -> bool:
    path = PurePosixPath(name)
    return not path.is_absolute() and ".." not in path.parts


def listed_files(crate: ROCrate) -> dict[str, dict]:
    """Each listed file's properties by its archive name (its @id decoded)."""
    return {member_name(e.id): e.properties() for e in _file_entities(crate)}


def _file_entities(crate: ROCrate) -> list:
    return [e for e in crate.get_entities() if "File" in e.type and not e.id.startswith("#")]


def listing_problem(crate: ROCrate) -> str | None:
    """A listed file whose @id is not the one bundle.crate_id gives its name
    (two spellings of one file), or whose name leaves the bundle."""
    for entity in _file_entities(crate):
        name = member_name(entity.id)
        if entity.id != crate_id(name):
            return f"{entity.id}: listed in the crate as {entity.id}, not as {crate_id(name)}"
        if not safe_member(name):
            return f"{name}: listed in the crate with a path outside the bundle"
    return None


def record_problem(name: str, data: bytes) -> str | None:
    for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            problems = record_schema.problems(json.loads(line))
        except json.JSONDecodeError as error:
            return f"{name}:{number}: not JSON ({error.msg})"
        if problems:
            return f"{name}:{number}: {problems[0]}"
    return None


def findings_problem(name: str, data: bytes, schema_path: Path) -> str | None:
    if not schema_path.is_file():
        return None  # no findings schema in this checkout: nothing to hold it against
    schema = yaml.safe_load(schema_path.read_text())
    errors = sorted(jsonschema.validators.validator_for(schema)(schema).iter_errors(json.loads(data)), key=str)
    return f"{name}: {errors[0].message}" if errors else None


def check_bundle(bundle: Path, findings_schema: Path) -> ROCrate:
    """The loaded crate, or BundleRefused naming the first thing that failed."""
    if not zipfile.is_zipfile(bundle):
        raise refuse(bundle, "not a zip archive")
    with zipfile.ZipFile(bundle) as archive:
        names = {n for n in archive.namelist() if not n.endswith("/")}
        bad = sorted(n for n in names if not safe_member(n))
        if bad:
            raise refuse(bundle, f"{bad[0]}: a path outside the bundle")
        if METADATA not in names:
            raise refuse(bundle, f"{METADATA}: missing (not an RO-Crate)")
        try:
            crate = ROCrate(json.loads(archive.read(METADATA)))
        except (ValueError, KeyError, TypeError) as error:
            raise refuse(bundle, f"{METADATA}: ro-crate-py cannot load it ({error})") from None
        named = {_id_of(p) for p in _as_list(crate.root_dataset.get("conformsTo"))}
        for profile in REQUIRED_PROFILES:
            if profile not in named:
                raise refuse(bundle, f"{METADATA}: does not name the profile {profile}")
        problem = listing_problem(crate)
        if problem:
            raise refuse(bundle, problem)
        listed = listed_files(crate)
        for name, properties in sorted(listed.items()):
            if name not in names:
                raise refuse(bundle, f"{name}: listed in the crate but missing")
            data = archive.read(name)
            if properties.get("sha256") != sha256_of(data):
                raise refuse(bundle, f"{name}: sha256 differs from the crate's ({properties.get('sha256')})")
            if str(properties.get("contentSize")) != str(len(data)):
                raise refuse(bundle, f"{name}: {len(data)} bytes, the crate says {properties.get('contentSize')}")
            problem = (
                record_problem(name, data)
                if name.endswith(".jsonl")
                else findings_problem(name, data, findings_schema) if name.endswith("summary/findings.json") else None
            )
            if problem:
                raise refuse(bundle, problem)
        unlisted = sorted(names - set(listed) - UNLISTED)
        if unlisted:
            raise refuse(bundle, f"{unlisted[0]}: in the archive but not listed in the crate")
    return crate


def _id_of(reference) -> str:
    """ro-crate-py gives a reference as an entity, a dict or a plain id."""
    return getattr(reference, "id", None) or (reference.get("@id") if isinstance(reference, dict) else str(reference))


def _as_list(value) -> list:
    return value if isinstance(value, list) else [] if value is None else [value]


def open_bundle(bundle: Path, dest: Path, findings_schema: Path, inputs_only: bool = False) -> Path:
    """Checks the bundle, then unpacks it into dest (which must be empty or
    absent): dest/config.yaml and dest/results/... Returns dest.
    inputs_only: the config, records, topology and environment only, so
    that figures-only in dest rebuilds the report, tables and figures."""
    check_bundle(bundle, findings_schema)
    if dest.exists() and any(dest.iterdir()):
        raise refuse(bundle, f"{dest}: not empty; unpack into a new folder")
    dest.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(bundle) as archive:
        members = [n for n in archive.namelist() if not (inputs_only and is_built(n))]
        archive.extractall(dest, members)
    return dest
