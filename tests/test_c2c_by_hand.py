"""The c2c binary run by hand (issue 55 item 3): the command a reader
types, `bin/<system>/c2c-default --threads 2 --affinity cpus:0,1 --op
two_line`, runs without --size; its line pool is then the size the
pipeline passes for the shipped config's c2c cells (config/config.yaml),
which --help and --list-options print as --size's default; the example
--help shows and the one docs/c2c-quantities.md shows both run."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest
import yaml

from membench.plan import grammar

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "c2c-quantities.md"
ALLOWED = sorted(os.sched_getaffinity(0))
HAND = ["--threads", "2", "--affinity", "cpus:0,1", "--op", "two_line"]

pytestmark = pytest.mark.skipif(len(ALLOWED) < 2, reason="needs 2 CPUs")


@pytest.fixture(scope="module")
def binary(variant_builds):
    return variant_builds.binary("c2c")


def on_this_machine(argv: list[str]) -> list[str]:
    """The command's CPUs 0 and 1 as the first two this process may use
    (the same command where 0 and 1 are allowed)."""
    a, b = ALLOWED[:2]
    return [f"cpus:{a},{b}" if arg == "cpus:0,1" else arg for arg in argv]


def run(binary, argv: list[str]) -> tuple[int, list[dict], str]:
    proc = subprocess.run([str(binary), *on_this_machine(argv)], capture_output=True, text=True, timeout=120)
    return proc.returncode, [json.loads(line) for line in proc.stdout.splitlines()], proc.stderr


def pipeline_c2c_sizes() -> set[int]:
    """The sizes the shipped config's c2c cells pass, in bytes."""
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    return {grammar.parse_size(size) for spec in config["experiments"].values() if spec["kernel"] == "c2c"
            for size in spec["size"]}  # fmt: skip


def assert_one_handoff(rc: int, records: list[dict], err: str, op: str = "two_line") -> None:
    assert rc == 0, err
    assert [r["op"] for r in records] == [op], records
    (record,) = records
    assert record["status"] == "ok" and record["valid"] is True and record["handoff_ns"] > 0, record
    assert record["size_bytes"] in pipeline_c2c_sizes()


def test_the_hand_command_runs_without_size(binary):
    assert_one_handoff(*run(binary, HAND))


def test_the_default_pool_is_the_pipelines_c2c_size(binary):
    listing = json.loads(subprocess.run([str(binary), "--list-options"], capture_output=True, text=True,
                                        check=True).stdout)  # fmt: skip
    size = next(o for o in listing["harness_options"] if o["name"] == "size")
    assert pipeline_c2c_sizes() == {int(size["default"])}
    rc, records, err = run(binary, [*HAND, "--size", size["default"]])
    assert_one_handoff(rc, records, err)


def test_help_shows_a_command_line_that_runs(binary):
    text = subprocess.run([str(binary), "--help"], capture_output=True, text=True, check=True).stdout
    (line,) = [line for line in text.splitlines() if line.startswith("example: ")]
    argv = shlex.split(line.removeprefix("example: "))
    assert argv[0] == binary.name and "--size" not in argv  # the binary by its name, as usage: names it
    assert_one_handoff(*run(binary, argv[1:]))
    assert re.search(r"--size BYTES .*\(default 8388608\)", " ".join(text.split())), text


def test_the_documented_command_line_runs(binary):
    lines = [line.strip() for line in DOC.read_text().splitlines() if line.strip().startswith("bin/<system>/c2c-default")]
    assert lines, "docs/c2c-quantities.md shows no command line"
    for line in lines:
        argv = shlex.split(line.split("#")[0])
        assert_one_handoff(*run(binary, argv[1:]), op=argv[argv.index("--op") + 1] if "--op" in argv else "two_line")
