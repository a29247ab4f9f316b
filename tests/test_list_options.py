"""--list-options (issue 28): every harness binary prints its option tables,
the harness's and its family's (name, flag, type, default, range, help), as
one JSON object on stdout, so that Python can read the flags and defaults
from C instead of restating them.  Checked against what the parser accepts:
every listed flag is one the binary knows, every default and range bound is
accepted, and one past a bound is a usage error (exit 2)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "workflow" / "scripts"))

from membench.plan import variants  # noqa: E402

KERNELS = REPO / "kernels"
TABLE = variants.load_variants(KERNELS / "families" / "variants.yaml")
KEYS = {"name", "flag", "type", "metavar", "default", "min", "max", "help"}


@pytest.fixture(scope="module")
def chase_binary(variant_builds):
    return variant_builds.binary("chase")


def listing(binary):
    proc = subprocess.run([str(binary), "--list-options"], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    return json.loads(proc.stdout)


def accepts(binary, *args):
    """Exit code of the parser on args (--help after them: nothing runs)."""
    return subprocess.run([str(binary), *args, "--help"], capture_output=True, text=True, timeout=30).returncode


def unknown_option_message(binary):
    proc = subprocess.run([str(binary), "--no-such-option"], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2
    return proc.stderr


@pytest.mark.parametrize("which", ["stream", "chase"])
def test_list_options_matches_the_parser(which, stream_binary, chase_binary):
    binary = stream_binary if which == "stream" else chase_binary
    doc = listing(binary)
    assert doc["family"] == which and doc["usage_exit"] == 2 and doc["ops"]
    known = unknown_option_message(binary)
    for opt in doc["harness_options"] + doc["family_options"]:
        assert KEYS <= set(opt), opt
        assert opt["flag"] == "--" + opt["name"] and opt["flag"] in known
    harness = {o["name"]: o for o in doc["harness_options"]}
    assert {"op", "threads", "affinity", "policy", "pages", "init", "size", "ntimes", "repeat",
            "system", "variant", "prefetch-distance", "test-corrupt", "list", "list-options",
            "help"} == set(harness)
    for o in harness.values():
        assert (o["metavar"] is None) == (o["type"] == "flag")
        if o["type"] == "flag" or o["name"] == "threads":
            continue  # flags act; --threads is bounded by the family too
        if o["default"] is not None:
            assert accepts(binary, o["flag"], o["default"]) == 0, o
        if o["type"] == "int" and o["min"] is not None:
            assert accepts(binary, o["flag"], str(o["min"])) == 0, o
            assert accepts(binary, o["flag"], str(o["max"])) == 0, o
            assert accepts(binary, o["flag"], str(o["min"] - 1)) == 2, o
            assert accepts(binary, o["flag"], str(o["max"] + 1)) == 2, o
        for word in (o["choices"] or "").split(","):
            if word and word.upper() != word and not word.endswith(("LIST", ":N")):
                assert accepts(binary, o["flag"], word) == 0, (o, word)
    assert accepts(binary, "--pages", "2m") == 2 and accepts(binary, "--init", "lazy") == 2
    for o in doc["family_options"]:
        assert o["type"] == "int"
        for value in (o["default"], o["min"], o["max"]):
            assert accepts(binary, o["flag"], str(value)) == 0, o
        assert accepts(binary, o["flag"], str(o["min"] - 1)) == 2, o
        assert accepts(binary, o["flag"], str(o["max"] + 1)) == 2, o
        if o["word"]:
            assert accepts(binary, o["flag"], o["word"]) == 0, o


def test_chase_options_carry_the_spacing_default(chase_binary):
    """The chase's spacing default (256, multichase's stride) is read from C."""
    doc = listing(chase_binary)
    family = {o["name"]: o for o in doc["family_options"]}
    assert family["spacing"]["default"] == 256 and family["group"]["word"] == "full"
    assert doc["min_threads"] == doc["max_threads"] == 1 and doc["pin"] is True
    assert set(doc["ops"]) == {"random", "stride"}


def test_bandwidth_family_has_no_family_options(stream_binary):
    doc = listing(stream_binary)
    assert doc["family_options"] == [] and set(doc["ops"]) == {"copy", "scale", "add", "triad"}
    pf = {o["name"]: o for o in doc["harness_options"]}["prefetch-distance"]
    assert pf["default"] == "2048" and pf["max"] == 1 << 30
