"""Record keys through the knob table and families by their traits (issue
53): code names the key that states a knob as asked by membench.plan.knobs
(asked, column, columns), never by a literal "<knob>_requested", and asks
membench.plan.families by trait (metric, pairs, idle_latency, one), never
by comparing a kernel with a family's name. Read from the source itself,
with no exceptions besides the tables (the record versions' steps ask them
too: a step writes the keys the next version has). The
published references name membench's families as data
(references/quantities.yaml), which their reader and writer ask."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from membench.plan import families, knobs

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "workflow" / "scripts"
ASKED = "_requested"
# Where a record key may be spelled: the table alone (the record versions'
# steps ask it too, membench.store.record_versions).
ALLOWED = {SCRIPTS / "membench" / "plan" / "knobs.py"}
# Where a family may be named in a question: its tables.
FAMILY_ALLOWED = {SCRIPTS / "membench" / "plan" / "families.py", *ALLOWED}
# A quoted string in a Snakemake file that ends as an asked key does.
SNAKEMAKE_KEY = re.compile(r"""["'][A-Za-z0-9_]*_requested["']""")


def asked_literals(source: str) -> list[tuple[int, str]]:
    """(line, text) of every string (an f-string's fixed parts too) that
    ends as an asked record key, and every attribute read so named (a
    table row's `row.policy_requested`)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.endswith(ASKED):
            found.append((node.lineno, repr(node.value)))
        elif isinstance(node, ast.Attribute) and node.attr.endswith(ASKED):
            found.append((node.lineno, "." + node.attr))
    return sorted(found)


def _names(node, names: set[str]) -> list[str]:
    """The family names a node is, or holds as a tuple, list or set."""
    elements = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
    return [e.value for e in elements if isinstance(e, ast.Constant) and e.value in names]


def family_questions(source: str, names: set[str]) -> list[tuple[int, str]]:
    """(line, name) of every family name a question is asked by: compared
    (`kernel == "loaded"`, `kernel in ("chase", "loaded")`), passed to a
    call (`metric_of("stream")`, `kernel="chase"`) or used as a key
    (`table["readonly"]`). A name used as a word (a figure's, a column
    header's) asks nothing."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            asked = [n for part in (node.left, *node.comparators) for n in _names(part, names)]
        elif isinstance(node, ast.Call):
            asked = [n for arg in (*node.args, *(k.value for k in node.keywords)) for n in _names(arg, names)]
        elif isinstance(node, ast.Subscript):
            asked = _names(node.slice, names)
        else:
            continue
        found += [(node.lineno, name) for name in asked]
    return sorted(found)


def python_sources() -> list[Path]:
    return sorted(p for p in SCRIPTS.rglob("*.py") if "__pycache__" not in p.parts)


def test_the_scan_finds_asked_keys_however_written():
    planted = 'a = row["policy_requested"]\nb = f"{name}_requested"\nc = row.size_requested\nd = "requested"\n'
    assert [line for line, _ in asked_literals(planted)] == [1, 2, 3]


def test_no_asked_record_key_is_spelled_outside_the_table():
    spelled = [
        f"{path.relative_to(REPO)}:{line}: {text}"
        for path in python_sources()
        if path not in ALLOWED
        for line, text in asked_literals(path.read_text())
    ]
    assert spelled == [], "record keys spelled outside membench.plan.knobs (use knobs.asked/column):\n" + "\n".join(spelled)


def test_the_scan_finds_questions_asked_by_family_name():
    planted = ('if kernel == "loaded": pass\nok = t[t["kernel"].isin(("chase", "mix"))]\nc = metric_of(kernel="stream")\n'
               'd = table["readonly"]\nFIGURES = {"loaded": draw}\nwords = ["mix", "GB/s"]\n')
    assert family_questions(planted, set(families.FAMILIES)) == [
        (1, "loaded"), (2, "chase"), (2, "mix"), (3, "stream"), (4, "readonly")
    ]


def test_no_question_is_asked_by_a_family_name():
    names = set(families.FAMILIES)
    asked = [
        f"{path.relative_to(REPO)}:{line}: {name!r}"
        for path in python_sources()
        if path not in FAMILY_ALLOWED
        for line, name in family_questions(path.read_text(), names)
    ]
    assert asked == [], "ask membench.plan.families by trait, not by a family's name:\n" + "\n".join(asked)


def test_no_snakemake_file_spells_an_asked_record_key():
    files = [REPO / "workflow" / "Snakefile", *sorted((REPO / "workflow" / "rules").glob("*.smk"))]
    spelled = [f"{path.relative_to(REPO)}: {m.group(0)}" for path in files for m in SNAKEMAKE_KEY.finditer(path.read_text())]
    assert spelled == []


def test_the_keys_on_disk_stay_as_stored():
    """Naming the keys through the table changes none of them: stored
    records and the record schema stay valid."""
    stated = {k.name: knobs.asked(k.name) for k in knobs.TABLE if k.record}
    assert stated == {
        "kernel": "kernel", "variant": "variant", "threads": "threads_requested", "affinity": "affinity_requested",
        "policy": "policy_requested", "pages": "pages_requested", "init": "init", "size": "size_requested",
        "prefetch_distance": "prefetch_distance_requested", "load_delay": "load_delay_requested",
        "chase_group": "chase_group_requested", "ntimes": "ntimes", "chase_spacing": "chase_spacing_requested",
        "sweep_from": "sweep_from", "points_per_octave": "points_per_octave", "features": "features",
        "pair": "pair_requested",
    }  # fmt: skip
    assert knobs.columns("pages", "policy") == ["pages", "policy_requested"]
    assert [knobs.knob_word(k) for k in ("policy_requested", "pages", "threads", "op")] == ["policy", "pages", "threads", "op"]
