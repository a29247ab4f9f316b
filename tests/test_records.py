"""The record contract and atomic writes."""

import os

import pytest

from membench import SCHEMA_VERSION
from membench.core import atomic_files

OK = {
    "schema": SCHEMA_VERSION, "system": "s", "kernel": "stream", "variant": "default", "op": "triad", "threads": 2,
    "affinity": "close", "policy": "default", "pages": "4k", "init": "parallel", "size_bytes": 4096,
    "array_elements": 512, "arrays": 3, "ntimes": 3, "repeat": 0, "status": "ok", "reason": None,
    "gbps": 10.0, "gbps_mean": 9.0, "gbps_wa": 13.0, "bytes_per_iter": 12288, "bytes_per_iter_wa": 16384,
    "nontemporal": False, "prefetch_distance": None, "cpu_feature": None, "seconds": [0.1, 0.1],
    "valid": True, "max_rel_error": 0.0, "cpus": [0, 1], "cpus_start": [0, 1], "cpu_nodes": [0, 0],
    "migrated": False, "cpus_bound": [0, 1], "page_nodes": {"0": 1.0}, "pages_sampled": 3,
    "hugepage_fraction": 0.0, "t_start": 1.0, "t_end": 2.0, "timer_resolution_ns": 1,
    "timer_granularity_ns": 30, "min_ticks": 1000.0, "host": "h", "pid": 7, "compiler": "gcc",
    "cflags": "-O3", "harness_version": "1", "omp_proc_bind": None, "omp_places": None,
    # not recorded (null), as a version-2 record migrates to
    "disturb_timed_s": None, "disturb_nivcsw": None, "disturb_wait_s": None, "disturb_steal_s": None,
    "disturb_steal_cpus": None, "disturb_others_running": None, "disturb_core_ghz": None,
}  # fmt: skip


def test_a_complete_ok_record_keeps_the_contract():
    assert atomic_files.contract_problems(OK) == []


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"gbps": None}, "gbps=None"),
        ({"gbps": -1.0}, "gbps=-1.0"),
        ({"valid": False}, "must have validated"),
        ({"threads": "2"}, "threads='2'"),
        ({"valid": 1}, "valid=1"),
        ({"cpus": [0, -1]}, "cpus[1]=-1"),
        ({"hugepage_fraction": 1.5}, "hugepage_fraction=1.5"),
        ({"status": "maybe", "reason": "x"}, "status='maybe'"),
        ({"status": "failed", "reason": None}, "must say why"),
        ({"schema": 99}, f"version 99 is newer than this membench's {SCHEMA_VERSION}"),
    ],
)
def test_broken_records_are_named(change, fragment):
    record = {**OK, **change}
    problems = atomic_files.contract_problems(record)
    assert any(fragment in p for p in problems), problems


def test_missing_keys_are_listed():
    record = dict(OK)
    del record["cpus"], record["policy"]
    assert {"'cpus' is missing", "'policy' is missing"} <= set(atomic_files.contract_problems(record))


def test_skipped_records_need_no_measurements():
    required = ("schema", "system", "kernel", "variant", "op", "threads", "affinity", "policy", "pages", "init",
                "size_bytes", "repeat", "t_start", "t_end")  # fmt: skip
    skipped = {k: OK[k] for k in required} | {"status": "skipped", "reason": "no node 1"}
    assert atomic_files.contract_problems(skipped) == []


def test_atomic_write_leaves_whole_files_only(tmp_path, monkeypatch):
    target = tmp_path / "deep" / "r0.jsonl"
    atomic_files.write_jsonl_atomic(target, [OK, OK])
    assert len(atomic_files.read_jsonl(target)) == 2

    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        atomic_files.write_jsonl_atomic(target, [OK])
    assert len(atomic_files.read_jsonl(target)) == 2  # the old file is intact
    assert sorted(p.name for p in target.parent.iterdir()) == ["r0.jsonl"]  # no temp file left


@pytest.mark.parametrize("umask", [0o022, 0o027, 0o002, 0o077])
def test_atomic_write_honours_the_umask(tmp_path, umask):
    """The result gets the mode a plain open() gives under the same umask
    (0644 under 022), not the temporary file's 0600."""
    previous = os.umask(umask)
    try:
        atomic_files.write_text_atomic(tmp_path / "report.html", "<html></html>")
        atomic_files.write_jsonl_atomic(tmp_path / "runs" / "r0.jsonl", [OK])
        (tmp_path / "plain.txt").write_text("plain")
        assert atomic_files.current_umask() == umask
    finally:
        os.umask(previous)
    expected = 0o666 & ~umask
    assert (tmp_path / "plain.txt").stat().st_mode & 0o777 == expected
    for written in ("report.html", "runs/r0.jsonl"):
        assert (tmp_path / written).stat().st_mode & 0o777 == expected, written
