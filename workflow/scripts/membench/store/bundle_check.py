"""Reads a run bundle back (membench.store.bundle wrote it), offline. A
bundle is someone else's file: it is checked before anything in it is
used, within stated bounds, and nothing in it can make membench open a URL
or a path outside it (docs/bundle.md, "What a bundle may hold").

In order, each failure refused in one line `<bundle>: refused: <what>`:
  1. the archive is a regular file within MAX_ARCHIVE, and a zip;
  2. its directory alone (no member read yet): at most MAX_MEMBERS members,
     each a plain file or folder under a name inside the bundle, named
     once, stored or deflated, not encrypted, inflating to at most
     MAX_MEMBER (MAX_TOTAL in all) at most MAX_RATIO times its packed size;
  3. ro-crate-metadata.json, parsed here with the bounded strict reader
     (strict_json): a JSON object with an @graph list; only then is it
     handed to ro-crate-py, as that dict (never a string it might fetch or
     open), which must load it; it lists every file under one spelling and
     meets the MUSTs of the profiles it names (crate_profile);
  4. every listed file present, hashed in chunks: its sha256 and size as
     listed; no file unlisted;
  5. records (.jsonl) read line by line with the reader a results folder
     gets (UTF-8, no NaN or Infinity, the record schema); findings.json,
     topology.json and environment.json JSON objects (strict_json), and
     findings.json meets its schema.
open_bundle then writes the listed files (ro-crate-preview.html is not
one) into a new folder, hashing each again as it goes; a failure there
removes what it wrote."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import zipfile
import zlib
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

import jsonschema
import yaml
from rocrate.rocrate import ROCrate

from membench.core import layout
from membench.store import crate_profile, record_versions, stored
from membench.store.bundle import crate_id, is_built, member_name

METADATA = "ro-crate-metadata.json"
PREVIEW = "ro-crate-preview.html"
REQUIRED_PROFILES = crate_profile.CLAIMED
# Written by ro-crate-py itself, and not data of the run: never listed, and
# the preview is never read nor unpacked.
UNLISTED = {METADATA, PREVIEW}
# Parsed whole (strict_json) and required to be JSON objects.
OBJECT_FILES = (layout.findings_path("").as_posix(), f"/{layout.TOPOLOGY}", f"/{layout.ENVIRONMENT}")

MiB = 1 << 20
# The bounds (docs/bundle.md, "Bounds"), sized from real bundles: a default
# run's is 105 members, 2 MiB inflated, its largest member 0.45 MiB, its
# metadata 68 KiB, its best packing 12x, its longest record line 6.6 KiB;
# a 27,000-repetition study's is about 27,000 members and 18 MiB of metadata.
MAX_ARCHIVE = 1024 * MiB  # the zip file itself
MAX_MEMBERS = 60_000
MAX_GRAPH = MAX_MEMBERS + 1000  # entities the metadata lists: a file each, and what describes the run
MAX_MEMBER = 256 * MiB  # one member, inflated
MAX_TOTAL = 1024 * MiB  # all members, inflated
MAX_RATIO = 100  # inflated / packed, for a member inflating past RATIO_FROM
RATIO_FROM = MiB
MAX_JSON = 32 * MiB  # a JSON file parsed whole: the metadata, findings.json, topology.json, environment.json
MAX_JSON_VALUES = 800_000  # values in such a file (counted before it is parsed)
MAX_JSON_CONTAINERS = 200_000  # objects and lists in it (likewise)
MAX_DEPTH = 64  # nesting in such a file
MAX_DIGITS = 40  # digits of an integer in such a file
MAX_LINE = MiB  # one record line
CHUNK = MiB
METHODS = {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED}
# What reading a damaged member raises: a bad CRC, a cut or corrupt stream.
READ_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError, RuntimeError, ValueError)


class BundleRefused(Exception):
    """A bundle that cannot be used; str() is the one line to print."""


MAX_SAID = 400  # characters of what a refusal quotes (an error message may quote a whole file)


def refuse(bundle: Path, what: str) -> BundleRefused:
    said = " ".join(str(what)[:MAX_SAID * 2].split())
    return BundleRefused(f"{bundle}: refused: {said[:MAX_SAID]}{' ...' if len(said) > MAX_SAID else ''}")


class Unusable(ValueError):
    """What strict_json found wrong; the caller names the file."""


def safe_member(name: str) -> bool:
    """A name that stays inside the bundle: relative, no `..`, `.` or empty
    part, no control character."""
    parts = name.removesuffix("/").split("/")
    return bool(name) and not name.startswith("/") and all(p not in ("", ".", "..") for p in parts) \
        and not any(ord(c) < 32 or c == "\x7f" for c in name)  # fmt: skip


def strict_json(data: bytes):
    """A JSON document within bounds: at most MAX_JSON bytes of UTF-8,
    MAX_JSON_VALUES values and MAX_JSON_CONTAINERS objects and lists (so
    that what Python holds of it stays within about 200 MiB), nesting at most MAX_DEPTH deep, integers of at
    most MAX_DIGITS digits, finite numbers only (no NaN or Infinity)."""
    if len(data) > MAX_JSON:
        raise Unusable(f"{len(data)} bytes, more than the {MAX_JSON} a JSON file may hold")
    values = data.count(b",") + data.count(b":") + data.count(b"[") + 1  # an upper bound: each value follows one
    if values > MAX_JSON_VALUES:
        raise Unusable(f"up to {values} values, more than the {MAX_JSON_VALUES} a JSON file may hold")
    containers = data.count(b"{") + data.count(b"[")  # likewise
    if containers > MAX_JSON_CONTAINERS:
        raise Unusable(f"up to {containers} objects and lists, more than the {MAX_JSON_CONTAINERS} a JSON file may hold")
    try:
        document = json.loads(data.decode("utf-8"), parse_constant=_not_finite, parse_int=_bounded_int,
                              parse_float=_finite_float)  # fmt: skip
    except UnicodeDecodeError as error:
        raise Unusable(f"bytes that are not UTF-8 (at byte {error.start})") from None
    except RecursionError:
        raise Unusable(f"nested more than {MAX_DEPTH} deep") from None
    except json.JSONDecodeError as error:
        raise Unusable(f"not JSON ({error.msg} at line {error.lineno}, column {error.colno})") from None
    except ValueError as error:  # a bound of the hooks below
        raise Unusable(str(error)) from None
    if _depth(document) > MAX_DEPTH:
        raise Unusable(f"nested more than {MAX_DEPTH} deep")
    return document


def json_member(archive: zipfile.ZipFile, name: str):
    """A member parsed by strict_json, its size checked before it is read."""
    size = archive.getinfo(name).file_size
    if size > MAX_JSON:
        raise Unusable(f"{name}: {size} bytes, more than the {MAX_JSON} a JSON file may hold")
    try:
        return strict_json(archive.read(name))
    except Unusable as error:
        raise Unusable(f"{name}: {error}") from None


def _not_finite(name: str):
    raise ValueError(f"{name} is not a JSON number (a value that is not finite)")


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_DIGITS:
        raise ValueError(f"an integer of {len(text.lstrip('-'))} digits (at most {MAX_DIGITS})")
    return int(text)


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"{text[:20]}: a number too large to hold")
    return value


def _depth(document) -> int:
    deepest, stack = 0, [(document, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, (dict, list)):
            deepest = max(deepest, depth)
            if depth <= MAX_DEPTH:
                stack += [(v, depth + 1) for v in (value.values() if isinstance(value, dict) else value)]
    return deepest


@contextmanager
def opened(bundle: Path):
    """The archive, once it is a regular file within MAX_ARCHIVE and a zip
    (a FIFO or a device is never opened)."""
    try:
        found = os.stat(bundle)
    except OSError as error:
        raise refuse(bundle, f"cannot be read ({error.strerror or error})") from None
    if not stat.S_ISREG(found.st_mode):
        raise refuse(bundle, "not a regular file")
    if found.st_size > MAX_ARCHIVE:
        raise refuse(bundle, f"{found.st_size} bytes, more than the {MAX_ARCHIVE} a bundle may be")
    try:
        archive = zipfile.ZipFile(bundle)
    except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError, EOFError):
        raise refuse(bundle, "not a zip archive") from None
    with archive:
        yield archive


def directory_problem(archive: zipfile.ZipFile) -> str | None:
    """What the zip's directory alone shows wrong (no member is read)."""
    infos = archive.infolist()
    if len(infos) > MAX_MEMBERS:
        return f"{len(infos)} members, more than the {MAX_MEMBERS} a bundle may hold"
    names, total = set(), 0
    for info in infos:
        name, kind = info.filename, stat.S_IFMT(info.external_attr >> 16)
        if not safe_member(name):
            shown = name if name.isprintable() else repr(name)
            outside = "/.." in f"/{name}" or name.startswith("/")
            return f"{shown}: {'a path outside the bundle' if outside else 'not a plain name of a file in the bundle'}"
        if name in names:
            return f"{name}: in the archive twice"
        names.add(name)
        if kind not in (0, stat.S_IFREG, stat.S_IFDIR) or (kind == stat.S_IFDIR and not info.is_dir()) \
                or (kind == stat.S_IFREG and info.is_dir()):  # fmt: skip
            return f"{name}: a {'symbolic link' if kind == stat.S_IFLNK else 'special file'}, not a file or a folder"
        if info.flag_bits & 0x1:
            return f"{name}: encrypted"
        if info.compress_type not in METHODS:
            return f"{name}: packed with method {info.compress_type} (only stored and deflated are read)"
        if info.file_size > MAX_MEMBER:
            return f"{name}: inflates to {info.file_size} bytes, more than the {MAX_MEMBER} a member may"
        if info.file_size > RATIO_FROM and info.file_size > MAX_RATIO * max(info.compress_size, 1):
            return f"{name}: inflates {info.file_size // max(info.compress_size, 1)} times its packed size (at most {MAX_RATIO})"
        total += info.file_size
    if total > MAX_TOTAL:
        return f"members inflate to {total} bytes in all, more than the {MAX_TOTAL} a bundle may"
    files = {n for n in names if not n.endswith("/")}
    both = sorted(files & {n.removesuffix("/") for n in names if n.endswith("/")})
    under = next((n for n in sorted(names) for p in PurePosixPath(n).parents if p.as_posix() in files), None)
    return f"{both[0]}: both a file and a folder" if both else f"{under}: under a name that is also a file" if under else None


def chunks(archive: zipfile.ZipFile, name: str):
    """A member's bytes, CHUNK at a time, never past the size its directory
    entry states (MAX_MEMBER at most)."""
    with archive.open(name) as member:
        while data := member.read(CHUNK):
            yield data


def digest(archive: zipfile.ZipFile, name: str) -> tuple[str, int]:
    """(sha256, bytes) of a member, read in chunks."""
    sha, size = hashlib.sha256(), 0
    for data in chunks(archive, name):
        sha.update(data)
        size += len(data)
    return sha.hexdigest(), size


def member_lines(archive: zipfile.ZipFile, name: str):
    """(line number, bytes, whether a newline ended it) of each line of a
    member that is not empty; a line of more than MAX_LINE bytes is
    Unusable."""
    number, tail = 0, b""
    for data in chunks(archive, name):
        parts = (tail + data).split(b"\n")
        tail = parts.pop()
        if len(tail) > MAX_LINE:
            raise Unusable(f"{name}:{number + len(parts) + 1}: a line of more than {MAX_LINE} bytes")
        yield from [(number + i, part, True) for i, part in enumerate(parts, start=1) if part]
        number += len(parts)
    if tail:
        yield number + 1, tail, False


def record_problem(archive: zipfile.ZipFile, name: str, checker: record_versions.Checker) -> str | None:
    """The first thing wrong in a repetition file, read as a results
    folder's are (membench.store.stored.read_run_file); an empty file
    holds no record to refuse (the results folder it came from says so)."""
    for number, raw, ended in member_lines(archive, name):
        if not raw.strip():
            continue
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            return f"{name}:{number}: bytes that are not UTF-8 (at column {error.start + 1}): the file is damaged"
        try:
            record = stored._DECODER.decode(line)
        except json.JSONDecodeError as error:
            cut = "the file ends inside a record" if not ended else f"not JSON ({error.msg} at column {error.colno})"
            return f"{name}:{number}: {cut}"
        except (ValueError, RecursionError) as error:
            keys = stored._non_finite_keys(line) if isinstance(error, ValueError) else []
            return f"{name}:{number}: {'key ' + ', '.join(keys) + ': ' if keys else ''}{str(error) or 'nested too deep'}"
        if type(record) is not dict:
            return f"{name}:{number}: a JSON {type(record).__name__}, not a record (a JSON object)"
        wrong = checker.problems(record)
        if wrong:
            return f"{name}:{number}: {wrong[0]}"
    return None


def object_problem(archive: zipfile.ZipFile, name: str, findings_schema: Path) -> str | None:
    """findings.json, topology.json or environment.json: a JSON object
    (strict_json); findings.json also meets its schema."""
    document = json_member(archive, name)
    if type(document) is not dict:
        return f"{name}: a JSON {type(document).__name__}, not an object"
    if not name.endswith("summary/findings.json") or not findings_schema.is_file():
        return None  # no findings schema in this checkout: nothing to hold it against
    schema = yaml.safe_load(findings_schema.read_text())
    errors = sorted(jsonschema.validators.validator_for(schema)(schema).iter_errors(document), key=str)
    return f"{name}: {errors[0].message}" if errors else None


def load_crate(archive: zipfile.ZipFile) -> ROCrate:
    """The crate from its metadata, parsed here and handed to ro-crate-py
    as a checked dict; Unusable when it is no RO-Crate."""
    if METADATA not in archive.namelist():
        raise Unusable(f"{METADATA}: missing (not an RO-Crate)")
    document = json_member(archive, METADATA)
    if type(document) is not dict or type(document.get("@graph")) is not list or "@context" not in document:
        found = f"a JSON {type(document).__name__}" if type(document) is not dict else "an object without an @graph list and an @context"
        raise Unusable(f"{METADATA}: {found}, not an RO-Crate (a JSON object with an @context and an @graph list)")
    if len(document["@graph"]) > MAX_GRAPH:
        raise Unusable(f"{METADATA}: {len(document['@graph'])} entities, more than the {MAX_GRAPH} a bundle may list")
    if not all(type(e) is dict and type(e.get("@id")) is str for e in document["@graph"]):
        raise Unusable(f"{METADATA}: an @graph entry that is not an object with an @id")
    if problem := crate_profile.context_problem(document):
        raise Unusable(f"{METADATA}: {problem}")
    try:
        return ROCrate(document)
    except Exception as error:  # whatever ro-crate-py makes of a malformed graph
        raise Unusable(f"{METADATA}: ro-crate-py cannot load it ({type(error).__name__}: {error})") from None


def listed_files(crate: ROCrate) -> dict[str, dict]:
    """Each listed file's properties by its archive name (its @id decoded)."""
    return {member_name(e.id): e.properties() for e in _file_entities(crate)}


def _file_entities(crate: ROCrate) -> list:
    return [e for e in crate.get_entities() if "File" in e.type and not e.id.startswith("#")]


def listing_problem(crate: ROCrate) -> str | None:
    """A listed file whose @id is not the one bundle.crate_id gives its
    name (two spellings of one file), or whose name leaves the bundle; then
    a MUST of the profiles named (crate_profile.profile_problem)."""
    for entity in _file_entities(crate):
        name = member_name(entity.id)
        if not safe_member(name) or name.endswith("/"):
            return f"{name}: listed in the crate with a path outside the bundle"
        if entity.id != crate_id(name):
            return f"{entity.id}: listed in the crate as {entity.id}, not as {crate_id(name)}"
    return crate_profile.profile_problem(crate)


def _id_of(reference) -> str:
    """ro-crate-py gives a reference as an entity, a dict or a plain id."""
    return getattr(reference, "id", None) or (reference.get("@id") if isinstance(reference, dict) else str(reference))


def content_problem(archive: zipfile.ZipFile, listed: dict[str, dict], findings_schema: Path) -> str | None:
    """Every listed file there with its sha256 and size, nothing unlisted,
    and the records and JSON objects readable (the module's docstring)."""
    names = {n for n in archive.namelist() if not n.endswith("/")}
    checker = record_versions.Checker()
    for name, properties in sorted(listed.items()):
        if name not in names:
            return f"{name}: listed in the crate but missing"
        sha, size = digest(archive, name)
        if properties.get("sha256") != sha:
            return f"{name}: sha256 differs from the crate's ({properties.get('sha256')})"
        if str(properties.get("contentSize")) != str(size):
            return f"{name}: {size} bytes, the crate says {properties.get('contentSize')}"
        if name.endswith(".jsonl"):
            problem = record_problem(archive, name, checker)
        elif name.endswith(OBJECT_FILES):
            problem = object_problem(archive, name, findings_schema)
        else:
            problem = None
        if problem:
            return problem
    unlisted = sorted(names - set(listed) - UNLISTED)
    return f"{unlisted[0]}: in the archive but not listed in the crate" if unlisted else None


def checked(bundle: Path, archive: zipfile.ZipFile, findings_schema: Path) -> tuple[ROCrate, dict[str, dict]]:
    """(the crate, its listed files) of an opened archive, or BundleRefused
    naming the first thing that failed."""
    problem = directory_problem(archive)
    if problem:
        raise refuse(bundle, problem)
    try:
        crate = load_crate(archive)
        problem = listing_problem(crate)
        listed = listed_files(crate) if not problem else {}
        problem = problem or content_problem(archive, listed, findings_schema)
    except Unusable as error:
        raise refuse(bundle, str(error)) from None
    except (TypeError, AttributeError, KeyError) as error:  # a graph ro-crate-py loaded but cannot describe
        raise refuse(bundle, f"{METADATA}: malformed ({type(error).__name__}: {error})") from None
    except READ_ERRORS as error:
        raise refuse(bundle, f"a member cannot be read ({type(error).__name__}: {error})") from None
    if problem:
        raise refuse(bundle, problem)
    return crate, listed


def check_bundle(bundle: Path, findings_schema: Path) -> ROCrate:
    """The loaded crate, or BundleRefused naming the first thing that failed."""
    with opened(bundle) as archive:
        return checked(bundle, archive, findings_schema)[0]


def open_bundle(bundle: Path, dest: Path, findings_schema: Path, inputs_only: bool = False) -> Path:
    """Checks the bundle, then unpacks it into dest (which must be empty or
    absent): dest/config.yaml and dest/results/... Returns dest.
    inputs_only: the config, records, topology and environment only, so
    that figures-only in dest rebuilds the report, tables and figures."""
    with opened(bundle) as archive:
        _, listed = checked(bundle, archive, findings_schema)
        if dest.is_symlink() or (dest.exists() and not dest.is_dir()):
            raise refuse(bundle, f"{dest}: not a folder; unpack into a new folder")
        if dest.exists() and any(dest.iterdir()):
            raise refuse(bundle, f"{dest}: not empty; unpack into a new folder")
        made = not dest.exists()
        try:
            dest.mkdir(parents=True, exist_ok=True)
            for name in [METADATA] + sorted(n for n in listed if not (inputs_only and is_built(n))):
                _unpack(bundle, archive, name, listed.get(name), dest)
        except BaseException as error:
            _remove_contents(dest, made)
            if isinstance(error, (BundleRefused, KeyboardInterrupt)):
                raise
            raise refuse(bundle, f"{dest}: cannot be written ({type(error).__name__}: {error})") from None
    return dest


def _unpack(bundle: Path, archive: zipfile.ZipFile, name: str, properties: dict | None, dest: Path) -> None:
    """One member to dest/name (a new file), hashed as it is written."""
    target = dest.joinpath(*PurePosixPath(name).parts)
    target.parent.mkdir(parents=True, exist_ok=True)
    sha, size = hashlib.sha256(), 0
    with open(target, "xb") as out:
        for data in chunks(archive, name):
            sha.update(data)
            size += len(data)
            out.write(data)
    if properties is not None and (sha.hexdigest(), str(size)) != (properties.get("sha256"), str(properties.get("contentSize"))):
        raise refuse(bundle, f"{name}: changed while it was unpacked")


def _remove_contents(dest: Path, made: bool) -> None:
    if made:
        shutil.rmtree(dest, ignore_errors=True)
        return
    for child in dest.iterdir() if dest.is_dir() else []:
        shutil.rmtree(child, ignore_errors=True) if child.is_dir() and not child.is_symlink() else child.unlink()
