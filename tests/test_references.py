"""The reference atlas (references/): every file validates against
workflow/schemas/references.schema.yaml, names only systems it declares, and
every paper number is printed on the seed line it names, so a wrong
transcription fails."""

from __future__ import annotations

import re
from pathlib import Path

import jsonschema
import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "workflow" / "schemas" / "references.schema.yaml"
PAPERS = REPO / "references" / "papers"
MACHINES = REPO / "references" / "machines"
SEEDS = REPO.parent / "shared" / "seeds"
PAPER_NAMES = ["colfax", "aws", "sun", "ornl", "mccalpin"]

# A number as a seed prints it: digits, an optional decimal part.
NUMBER_TOKEN = re.compile(r"\d+(?:\.\d+)?")


def validator() -> jsonschema.Draft7Validator:
    schema = yaml.safe_load(SCHEMA.read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


def reference_files() -> list[Path]:
    return sorted(PAPERS.glob("*.yaml")) + sorted(MACHINES.glob("*.yaml"))


def schema_errors(document: dict) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator().iter_errors(document)]


def undeclared_systems(document: dict) -> list[str]:
    declared = {s["id"] for s in document["systems"]}
    return sorted({n["system"] for n in document["numbers"]} - declared)


def misprinted_numbers(document: dict, seed_lines: list[str]) -> list[str]:
    """Numbers whose named line does not print them: each is said with the
    line it names and what that line holds."""
    wrong = []
    for number in document["numbers"]:
        where = number["line"]
        if where > len(seed_lines):
            wrong.append(f"{number['value']} at line {where}: the seed has {len(seed_lines)} lines")
            continue
        text = seed_lines[where - 1]
        printed = number.get("printed")
        if printed is not None:
            # a typo kept as printed: the line holds it and only its decimal point differs
            same_digits = printed.replace(".", "") == f"{number['value']}".replace(".", "").rstrip("0")
            found = printed in text and same_digits
        else:
            found = any(float(token) == float(number["value"]) for token in NUMBER_TOKEN.findall(text))
        if not found:
            wrong.append(f"{number['value']} at line {where}: {text.strip()[:120]!r}")
    return wrong


def test_the_schema_is_valid_json_schema():
    validator()


def test_every_paper_has_its_file():
    assert sorted(p.stem for p in PAPERS.glob("*.yaml")) == sorted(PAPER_NAMES)


@pytest.mark.parametrize("path", reference_files(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_reference_file_validates(path):
    document = yaml.safe_load(path.read_text())
    assert schema_errors(document) == []
    assert undeclared_systems(document) == []
    key = "paper" if path.parent == PAPERS else "reference"
    assert document[key] == path.stem


@pytest.mark.skipif(not SEEDS.is_dir(), reason="no ../shared/seeds")
@pytest.mark.parametrize("paper", PAPER_NAMES)
def test_every_paper_number_is_on_its_seed_line(paper):
    document = yaml.safe_load((PAPERS / f"{paper}.yaml").read_text())
    seed_lines = (SEEDS / document["seed"]).read_text().splitlines()
    assert misprinted_numbers(document, seed_lines) == []


def test_a_wrong_transcription_is_caught():
    """Planted: a value not on its line, a line past the end, a typo whose
    digits differ from the value."""
    seed_lines = ["Version001 3.401 GB/s 3.167 GB/s", "3.98* - 18.470", "14587 - 15.584"]
    base = {"system": "s", "quantity": "bandwidth", "unit": "GB/s"}
    document = {
        "numbers": [
            {**base, "value": 3.401, "line": 1},
            {**base, "value": 3.41, "line": 1},
            {**base, "value": 3.98, "line": 2},
            {**base, "value": 18.47, "line": 2},
            {**base, "value": 1.847, "line": 2},
            {**base, "value": 3.401, "line": 9},
            {**base, "value": 14.587, "line": 3, "printed": "14587"},
            {**base, "value": 14.578, "line": 3, "printed": "14587"},
        ]
    }
    wrong = misprinted_numbers(document, seed_lines)
    assert [w.split(" at ")[0] for w in wrong] == ["3.41", "1.847", "3.401", "14.578"]


def test_the_schema_refuses_what_a_reader_cannot_use():
    """Planted: a paper number without its line, a unit not in the list, a
    machine number without source address, date or conditions."""
    paper = yaml.safe_load((PAPERS / "mccalpin.yaml").read_text())
    assert schema_errors(paper) == []
    no_line = {**paper, "numbers": [{k: v for k, v in paper["numbers"][0].items() if k != "line"}]}
    assert schema_errors(no_line)
    bad_unit = {**paper, "numbers": [{**paper["numbers"][0], "unit": "GiB/s"}]}
    assert schema_errors(bad_unit)
    machine = {
        "reference": "m",
        "title": "t",
        "publisher": "p",
        "address": "https://example.org/m",
        "date": "2024-05",
        "systems": paper["systems"][:1],
        "numbers": [
            {
                "system": paper["systems"][0]["id"],
                "quantity": "bandwidth",
                "unit": "GB/s",
                "value": 1.0,
                "kernel": "stream",
                "statistic": "single",
                "address": "https://example.org/m",
                "date": "2024-05",
                "conditions": {"scope": "one socket", "benchmark": "STREAM triad"},
            }
        ],
    }
    assert schema_errors(machine) == []
    for missing in ("address", "date", "conditions"):
        stripped = {k: v for k, v in machine["numbers"][0].items() if k != missing}
        assert schema_errors({**machine, "numbers": [stripped]}), missing


def test_the_atlas_holds_at_least_eight_published_machines():
    machines = set()
    for path in sorted(MACHINES.glob("*.yaml")):
        document = yaml.safe_load(path.read_text())
        machines |= {system["id"] for system in document["systems"]}
        assert all(n["address"].startswith("https://") for n in document["numbers"]), path.name
    assert len(machines) >= 8, sorted(machines)


def test_each_paper_is_attributed_to_who_published_it():
    """Issue 50, checked against public copies: the "sun" page is RWTH
    Aachen's IT Center measuring Sun machines, not a Sun publication; the
    "aws" post is a third-party blog about EC2, not Amazon's; ORNL's slides
    are of 2009."""
    papers = {name: yaml.safe_load((PAPERS / f"{name}.yaml").read_text()) for name in PAPER_NAMES}
    sun = papers["sun"]
    assert "RWTH Aachen" in sun["authors"] and "not a Sun Microsystems publication" in sun["note"]
    assert "third-party blog" in papers["aws"]["note"] and not (papers["aws"]["authors"] or "").lower().startswith(("amazon", "aws"))
    assert papers["ornl"]["year"] == 2009
    if SEEDS.is_dir():  # the footer the note cites is where it says
        lines = (SEEDS / sun["seed"]).read_text().splitlines()
        assert "Keine Stichwörter" in lines[132]
