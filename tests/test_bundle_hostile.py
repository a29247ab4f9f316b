"""A bundle is someone else's file (issue 54): each hostile bundle is
refused in one line with exit 2, with no request made, nothing written
outside the folder asked for and peak memory within MEMORY_BOUND.

Each case is a valid bundle with one fault planted; where the fault is in
a member, the crate's sha256 and size are listed again, so that only the
planted fault is wrong (`planted`)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path

import pytest

from membench.store import bundle, bundle_check

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))
import synthetic_runs  # noqa: E402

RUN_BUNDLE = REPO / "workflow" / "scripts" / "run_bundle.py"
NO_FINDINGS_SCHEMA = REPO / "tests" / "no-such-findings.schema.json"
RECORD = "results/box/runs/aff/stream-default/t1_none_default_variant_parallel_sauto/r0.jsonl"
TOPOLOGY, FINDINGS = "results/box/topology.json", "results/summary/findings.json"
# Peak resident memory of one `run_bundle.py check|open` on any planted
# bundle (it starts near 45 MiB; docs/bundle.md, "Bounds").
MEMORY_BOUND = 256 << 20
FINDINGS_SCHEMA = REPO / "workflow" / "schemas" / "findings.schema.yaml"
FINDINGS_MET = {"schema": "membench-findings", "version": 1, "systems": [], "findings": [],
                "records": {"cells": 3, "ok": 6, "skipped": 0, "failed": 0, "disturbed": 0, "quiet": True, "verdict": "quiet"}}  # fmt: skip
MiB = 1 << 20


@pytest.fixture(scope="module")
def valid(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("valid")
    synthetic_runs.write_affinity_study(work, "aff", [1], repeats=2, machine="2x4x2", system="box")
    (work / "results" / "summary").mkdir()
    (work / "results" / "summary" / "findings.json").write_text(json.dumps(FINDINGS_MET))
    return bundle.write_bundle(work / "results", work / "in.yaml", work / "out" / "run.crate.zip", REPO)


def planted(source: Path, out: Path, members: dict | None = None, metadata=None, relist: bool = True,
            packing: int = zipfile.ZIP_DEFLATED) -> Path:  # fmt: skip
    """A copy of the bundle with members replaced (name -> bytes), added or
    dropped (None); each changed listed file listed again with its sha256
    and size unless relist is False; metadata: the whole
    ro-crate-metadata.json as bytes, when given; packing: how every member
    is packed (ZIP_STORED: no packing bound applies)."""
    members = members or {}
    with zipfile.ZipFile(source) as archive:
        contents = {n: archive.read(n) for n in archive.namelist()}
    document = json.loads(contents["ro-crate-metadata.json"])
    for name, data in members.items():
        if data is None:
            contents.pop(name, None)
            continue
        contents[name] = data
        for entity in document["@graph"] if relist else []:
            if entity["@id"] == bundle.crate_id(name):
                entity["sha256"], entity["contentSize"] = bundle.sha256_of(data), str(len(data))
    contents["ro-crate-metadata.json"] = metadata if metadata is not None else json.dumps(document).encode()
    with zipfile.ZipFile(out, "w", compression=packing) as copy:
        for name, data in contents.items():
            copy.writestr(name, data)
    return out


def with_entry(source: Path, out: Path, info: zipfile.ZipInfo, data: bytes = b"") -> Path:
    """A copy of the bundle with one more raw zip entry."""
    out.write_bytes(source.read_bytes())
    with zipfile.ZipFile(out, "a") as archive:
        archive.writestr(info, data)
    return out


def patched_header(path: Path, name: str, offset: int, value: bytes) -> Path:
    """The central directory entry of `name` changed at `offset` (2: the
    flag bits, 4: the method), as a zip tool that wrote it would."""
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo(name)
    entry = _central_entry(data, name)
    data[entry + 6 + offset:entry + 6 + offset + len(value)] = value
    local = info.header_offset
    data[local + 4 + offset:local + 4 + offset + len(value)] = value
    path.write_bytes(bytes(data))
    return path


def _central_entry(data: bytearray, name: str) -> int:
    at = 0
    while (at := data.find(b"PK\x01\x02", at + 1)) != -1:
        length = int.from_bytes(data[at + 28:at + 30], "little")
        if data[at + 46:at + 46 + length] == name.encode():
            return at
    raise AssertionError(f"{name}: no central directory entry")


# Runs argv[1:] in a child of its own and writes the child's peak resident
# memory (KiB) to $PEAK_FILE: the child is forked from this small process,
# not from pytest, whose pages a child forked from it would count as its own.
LAUNCHER = """import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
open(os.environ["PEAK_FILE"], "w").write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def measured(args: list[str], cwd: Path, timeout: float = 30) -> tuple[int, str, int, float]:
    """(exit code, output, peak resident bytes, seconds) of one command;
    TMPDIR is cwd/tmp, so that a file written anywhere temporary shows."""
    (cwd / "tmp").mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as aside, tempfile.TemporaryFile() as out:
        env = {**os.environ, "TMPDIR": str(cwd / "tmp"), "PEAK_FILE": f"{aside}/peak"}
        started = time.monotonic()
        process = subprocess.Popen([sys.executable, "-c", LAUNCHER, *args], stdout=out, stderr=subprocess.STDOUT,
                                   cwd=cwd, env=env, start_new_session=True)  # fmt: skip
        try:
            code = process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            process.wait()
            raise AssertionError(f"{args}: still running after {timeout} s") from None
        seconds = time.monotonic() - started
        out.seek(0)
        return code, out.read().decode(errors="replace"), int(Path(f"{aside}/peak").read_text()) * 1024, seconds


def files_under(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def refused_by_the_command(path: Path, work: Path, verb: str = "check", timeout: float = 30, code: int = 2) -> str:
    """Runs `run_bundle.py check` (or open into work/dest) on the bundle;
    asserts one line, exit 2 (or code), memory within the bound, nothing
    written (open: nothing at all, dest not left); returns the line."""
    before = files_under(work)
    args = [sys.executable, str(RUN_BUNDLE), verb, str(path)] + (["--dest", str(work / "dest")] if verb == "open" else [])
    exit_code, output, peak, _ = measured(args, work, timeout)
    assert exit_code == code and output.count("\n") == 1, output
    assert output.startswith(f"{path}: refused: " if code else f"{path}: valid"), output
    assert peak < MEMORY_BOUND, f"{peak >> 20} MiB"
    assert files_under(work) == before | {"tmp"}, files_under(work) - before
    return output.strip()


def refused(path: Path) -> str:
    with pytest.raises(bundle_check.BundleRefused) as caught:
        bundle_check.check_bundle(path, NO_FINDINGS_SCHEMA)
    line = str(caught.value)
    assert "\n" not in line and line.startswith(f"{path}: refused: "), line
    return line


def test_the_planted_bundle_is_valid_and_a_changed_member_relisted_still_is(valid, tmp_path):
    bundle_check.check_bundle(valid, FINDINGS_SCHEMA)
    assert refused_by_the_command(valid, tmp_path, code=0) == f"{valid}: valid"
    with zipfile.ZipFile(valid) as archive:
        record = archive.read(RECORD)
    bundle_check.check_bundle(planted(valid, tmp_path / "same.zip", {RECORD: record + b"\n"}), NO_FINDINGS_SCHEMA)


class Silent:
    """A loopback server that accepts connections and never answers; it
    notes each one and anything sent."""

    def __init__(self):
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port, self.accepted, self.received = self.server.getsockname()[1], [], []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                connection, _ = self.server.accept()
            except OSError:
                return
            self.accepted.append(connection)
            connection.settimeout(0.2)
            try:
                self.received.append(connection.recv(4096))
            except OSError:
                pass


@pytest.mark.parametrize("kind", ["url", "file url", "fifo"])
def test_metadata_that_is_a_string_is_refused_in_seconds_with_no_request_and_no_file_opened(valid, tmp_path, kind):
    server = Silent()
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    source = {"url": f"http://127.0.0.1:{server.port}/ro-crate-metadata.json",
              "file url": f"file://{fifo}", "fifo": str(fifo)}[kind]  # fmt: skip
    path = planted(valid, tmp_path / "string.zip", metadata=json.dumps(source).encode())
    started = time.monotonic()
    line = refused_by_the_command(path, tmp_path, timeout=20)
    assert time.monotonic() - started < 10
    assert "ro-crate-metadata.json: a JSON str, not an RO-Crate" in line, line
    time.sleep(0.1)
    assert server.accepted == [] and server.received == []
    server.server.close()


def inflating(source: Path, out: Path, name: str, size: int, listed: bool = True) -> Path:
    """The bundle with `name` a member of `size` zero bytes, deflated
    (written a chunk at a time: the test holds no more than a chunk)."""
    with zipfile.ZipFile(source) as archive, zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as copy:
        for info in archive.infolist():
            if info.filename != name:
                copy.writestr(info.filename, archive.read(info.filename))
        info = zipfile.ZipInfo(name)
        info.compress_type = zipfile.ZIP_DEFLATED
        with copy.open(info, "w", force_zip64=True) as member:
            for _ in range(size // MiB):
                member.write(bytes(MiB))
    return out


def test_a_member_inflating_to_200_mb_from_a_fraction_of_one_is_refused_before_it_is_read(valid, tmp_path):
    path = inflating(valid, tmp_path / "bomb.zip", RECORD, 200 * MiB)
    assert path.stat().st_size < MiB
    line = refused_by_the_command(path, tmp_path, "open")
    assert f"{RECORD}: inflates 1" in line and "times its packed size (at most 100)" in line, line


def test_fifty_mb_of_newlines_in_records_are_refused_within_the_memory_bound(valid, tmp_path):
    newlines = planted(valid, tmp_path / "newlines.zip", {RECORD: b"\n" * (50 * MiB)})
    line = refused_by_the_command(newlines, tmp_path, "open")
    assert f"{RECORD}: inflates" in line, line


def test_records_stored_unpacked_are_read_line_by_line_within_the_memory_bound(valid, tmp_path):
    """Stored (not deflated), 24 MiB of blank lines pass the packing bound:
    the records are read a line at a time, to the bad one at the end."""
    blank = b"\n" * (24 * MiB) + b'{"schema": 3}\n'
    line = refused_by_the_command(planted(valid, tmp_path / "stored.zip", {RECORD: blank}, packing=zipfile.ZIP_STORED), tmp_path)
    assert f"{RECORD}:{24 * MiB + 1}: " in line, line
    long_line = planted(valid, tmp_path / "long.zip", {RECORD: b"7" * (2 * MiB)}, packing=zipfile.ZIP_STORED)
    assert f"{RECORD}:1: a line of more than {MiB} bytes" in refused(long_line)


@pytest.mark.parametrize("case, document, expected", [
    ("deep", b"[" * 100_000 + b"]" * 100_000, "nested more than 64 deep"),
    ("shallow but deeper than the bound", b'{"@graph": ' + b"[" * 70 + b"]" * 70 + b"}", "nested more than 64 deep"),
    ("digits", b'{"@graph": [], "n": ' + b"7" * 5000 + b"}", "an integer of 5000 digits"),
    ("huge float", b'{"@graph": [], "n": 1e999}', "a number too large to hold"),
    ("NaN", b'{"@graph": [], "n": NaN}', "NaN is not a JSON number"),
    ("not UTF-8", b'{"@graph": [], "n": "\xff"}', "bytes that are not UTF-8"),
    ("not JSON", b"{", "not JSON"),
    ("list", b"[]", "a JSON list, not an RO-Crate"),
    ("no graph", b'{"@context": "x"}', "an object without an @graph list"),
    ("no context", b'{"@graph": []}', "an object without an @graph list and an @context"),
    ("entry", b'{"@context": "x", "@graph": [1]}', "an @graph entry that is not an object with an @id"),
    ("malformed graph", b'{"@context": "x", "@graph": [{"@id": "./", "@type": 7}]}', "ro-crate-py cannot load it"),
])  # fmt: skip
def test_metadata_that_is_no_bounded_json_object_is_refused_in_one_line(valid, tmp_path, case, document, expected):
    path = planted(valid, tmp_path / "m.zip", metadata=document)
    line = refused_by_the_command(path, tmp_path) if case == "deep" else refused(path)
    assert f"ro-crate-metadata.json: {expected}" in line or expected in line, line


@pytest.mark.parametrize("values, item, expected", [
    (bundle_check.MAX_JSON_VALUES + 1, b"0", f"values, more than the {bundle_check.MAX_JSON_VALUES}"),
    (bundle_check.MAX_JSON_CONTAINERS + 1, b"{}", f"lists, more than the {bundle_check.MAX_JSON_CONTAINERS}"),
    (bundle_check.MAX_JSON_CONTAINERS - 10, b"{}", "an object without an @graph list and an @context"),
    (bundle_check.MAX_JSON_VALUES - 10, b'"' + b"a" * 38 + b'"', "an object without an @graph list and an @context"),
])  # fmt: skip
def test_metadata_at_its_bounds_is_parsed_within_the_memory_bound_and_past_them_not_at_all(valid, tmp_path, values, item, expected):
    """The most a metadata file may make Python hold: its bound of objects,
    or its bound of values, each a string, to fill MAX_JSON."""
    document = b'{"@graph": [], "planted": [' + b",".join([item] * values) + b"]}"
    assert len(document) <= bundle_check.MAX_JSON
    path = planted(valid, tmp_path / "values.zip", metadata=document, packing=zipfile.ZIP_STORED)
    assert expected in refused_by_the_command(path, tmp_path)


@pytest.mark.parametrize("extra", [bundle_check.MAX_GRAPH - 200, bundle_check.MAX_GRAPH + 1])
def test_a_graph_at_its_bound_loads_within_the_memory_bound_and_past_it_not_at_all(valid, tmp_path, extra):
    document = json.loads(zipfile.ZipFile(valid).read("ro-crate-metadata.json"))
    document["@graph"] += [{"@id": f"#{i}", "@type": "Thing"} for i in range(extra)]
    path = planted(valid, tmp_path / "graph.zip", metadata=json.dumps(document).encode())
    if extra > bundle_check.MAX_GRAPH:
        assert f"entities, more than the {bundle_check.MAX_GRAPH}" in refused_by_the_command(path, tmp_path)
    else:  # loaded by ro-crate-py, and valid
        assert refused_by_the_command(path, tmp_path, code=0) == f"{path}: valid"


@pytest.mark.parametrize("member, data, expected", [
    (FINDINGS, b"not json", f"{FINDINGS}: not JSON"),
    (FINDINGS, b'{"records": {"last_end": 1e999}}', f"{FINDINGS}: 1e999: a number too large to hold"),
    (TOPOLOGY, b"[1, 2]", f"{TOPOLOGY}: a JSON list, not an object"),
    (TOPOLOGY, b'{"cpus": [NaN]}', "NaN is not a JSON number"),
    (RECORD, b'{"gbps": NaN}\n', f"{RECORD}:1: key gbps: NaN is not a JSON number"),
    (RECORD, b'{"gbps": "\xff"}\n', f"{RECORD}:1: bytes that are not UTF-8"),
    (RECORD, b"[]\n", f"{RECORD}:1: a JSON list, not a record"),
    (RECORD, b'{"schema": 3', f"{RECORD}:1: the file ends inside a record"),
])  # fmt: skip
def test_a_member_read_strictly_is_refused_in_one_line_naming_it(valid, tmp_path, member, data, expected):
    assert expected in refused(planted(valid, tmp_path / "member.zip", {member: data}))


def test_a_corrupt_member_is_refused_in_one_line(valid, tmp_path):
    path = planted(valid, tmp_path / "corrupt.zip")
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo(RECORD)
    data = bytearray(path.read_bytes())
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    data[start:start + 40] = bytes(40)
    path.write_bytes(bytes(data))
    assert "a member cannot be read" in refused_by_the_command(path, tmp_path, "open")


@pytest.mark.parametrize("offset, value, expected", [
    (2, (1).to_bytes(2, "little"), f"{RECORD}: encrypted"),
    (4, (99).to_bytes(2, "little"), f"{RECORD}: packed with method 99"),
    (4, (14).to_bytes(2, "little"), f"{RECORD}: packed with method 14"),
])  # fmt: skip
def test_an_encrypted_member_or_an_unknown_method_is_refused_before_it_is_read(valid, tmp_path, offset, value, expected):
    path = patched_header(planted(valid, tmp_path / "header.zip"), RECORD, offset, value)
    assert expected in refused_by_the_command(path, tmp_path)


def _entry(name: str, mode: int) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.external_attr = mode << 16
    return info


@pytest.mark.parametrize("info, expected", [
    (_entry("results/link", 0o120777), "results/link: a symbolic link, not a file or a folder"),
    (_entry("results/fifo", 0o010644), "results/fifo: a special file"),
    (_entry("../up/", 0o040755), "../up/: a path outside the bundle"),
    (_entry("/abs/", 0o040755), "/abs/: a path outside the bundle"),
    (_entry("results/./x", 0o100644), "results/./x: not a plain name"),
    (_entry("results/new\nline", 0o100644), "'results/new\\nline': not a plain name"),
    (_entry("config.yaml/", 0o040755), "config.yaml: both a file and a folder"),
    (_entry("config.yaml/x", 0o100644), "config.yaml/x: under a name that is also a file"),
    (_entry("config.yaml", 0o100644), "config.yaml: in the archive twice"),
])  # fmt: skip
@pytest.mark.filterwarnings("ignore:Duplicate name")
def test_a_member_that_is_no_plain_file_or_folder_inside_the_bundle_is_refused(valid, tmp_path, info, expected):
    path = with_entry(valid, tmp_path / "entry.zip", info, b"x" if not info.filename.endswith("/") else b"")
    assert expected in refused(path)


def test_a_folder_member_inside_the_bundle_is_held_and_the_preview_never_unpacked(valid, tmp_path):
    path = with_entry(valid, tmp_path / "folders.zip", _entry("results/", 0o040755))
    with zipfile.ZipFile(path, "a") as archive:
        archive.writestr("ro-crate-preview.html", "<script>planted</script>")
    dest = bundle_check.open_bundle(path, tmp_path / "dest", NO_FINDINGS_SCHEMA)
    assert (dest / RECORD).is_file() and not (dest / "ro-crate-preview.html").exists()


def test_a_bundle_that_is_no_regular_file_or_a_dest_that_is_a_file_is_refused(valid, tmp_path):
    fifo = tmp_path / "bundle.crate.zip"
    os.mkfifo(fifo)
    assert refused_by_the_command(fifo, tmp_path, timeout=10).endswith("refused: not a regular file")
    occupied = tmp_path / "a-file"
    occupied.write_text("mine")
    with pytest.raises(bundle_check.BundleRefused, match="a-file: not a folder"):
        bundle_check.open_bundle(valid, occupied, NO_FINDINGS_SCHEMA)
    assert occupied.read_text() == "mine"


@pytest.mark.parametrize("bound, value, expected", [
    ("MAX_MEMBER", 1000, "inflates to"), ("MAX_TOTAL", 5000, "members inflate to"),
    ("MAX_MEMBERS", 3, "members, more than the 3"), ("MAX_JSON", 1000, "ro-crate-metadata.json: "),
    ("MAX_ARCHIVE", 1000, "bytes, more than the 1000 a bundle may be"),
])  # fmt: skip
def test_each_size_bound_refuses_a_bundle_past_it(valid, monkeypatch, bound, value, expected):
    monkeypatch.setattr(bundle_check, bound, value)
    assert expected in refused(valid)


def test_a_listed_file_that_changes_while_it_is_unpacked_leaves_nothing(valid, tmp_path, monkeypatch):
    checked = bundle_check.checked

    def then_changed(*args):
        result = checked(*args)
        monkeypatch.setattr(bundle_check, "chunks", lambda archive, name: iter([b"changed"]))
        return result

    monkeypatch.setattr(bundle_check, "checked", then_changed)
    with pytest.raises(bundle_check.BundleRefused, match="changed while it was unpacked"):
        bundle_check.open_bundle(valid, tmp_path / "dest", NO_FINDINGS_SCHEMA)
    assert not (tmp_path / "dest").exists()
