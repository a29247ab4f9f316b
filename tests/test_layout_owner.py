"""One owner of the results layout (issue 43): membench.core.layout builds
and parses every results path; no other module of the package or rule
script spells a layout name where it builds or reads a path (a message to
the user may still show the layout)."""

import ast
from pathlib import Path

from membench.core import layout

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "workflow" / "scripts"
FOLDERS = {layout.RUNS, layout.ROUNDS, layout.SUPERSEDED}
FILES = {layout.TOPOLOGY, layout.ENVIRONMENT, layout.MEASUREMENTS}


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


# The calls that take a path's part.
PATH_CALLS = {"Path", "PurePosixPath", "joinpath", "glob", "rglob", "index"}


def _a_path_part(text: str) -> bool:
    """A layout file name, or a path or glob ending in a layout name (a
    message, which has spaces, is not a path)."""
    return text in FILES or (" " not in text and any(text.endswith(f"/{name}") for name in FOLDERS | FILES))


def spelled(source: str) -> list[tuple[int, str]]:
    """(line, text) of each place the source builds or reads a results path
    with a layout name of its own: `x / "runs"`, "topology.json",
    "*/runs", `"runs" in parts`, `parts.index("runs")`."""
    tree = ast.parse(source)
    docs, found = _docstrings(tree), []
    for node in ast.walk(tree):
        named = []
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            named = [node.left, node.right]
        elif isinstance(node, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops):
            named = [node.left]  # "runs" in parts
        elif isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) in PATH_CALLS:
            named = list(node.args)
        for part in named:
            if isinstance(part, ast.Constant) and part.value in FOLDERS | FILES:
                found.append((part.lineno, part.value))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            if _a_path_part(node.value):
                found.append((node.lineno, node.value))
    return sorted(set(found))


def test_the_rule_finds_what_it_looks_for():
    assert spelled('p = results / system / "runs"\n') == [(1, "runs")]
    assert spelled('p = root.glob("*/topology.json")\n') == [(1, "*/topology.json")]
    assert spelled('at = parts.index("runs")\nok = "superseded" in parts\n') == [(1, "runs"), (2, "superseded")]
    assert spelled('t = table["runs"]\nmessage = f"no results/{s}/runs/ under {d}"\nax.set_ylabel("runs")\n') == []
    assert spelled('done = state == "superseded"\nhint = "(see results/<system>/topology.json"\n') == []


def test_no_module_but_the_layout_spells_a_results_path():
    spelling = {}
    for path in sorted(SCRIPTS.rglob("*.py")):
        where = str(path.relative_to(REPO))
        if path == REPO / "workflow/scripts/membench/core/layout.py":
            continue
        found = spelled(path.read_text())
        if found:
            spelling[where] = found
    assert spelling == {}, "ask membench.core.layout for these paths"


def test_a_run_path_parses_back():
    class Cell:
        id = "peak/stream-default/t1_none"

    path = layout.run_path(str(layout.runs_dir("/x/runs/results", "box")), Cell, 3)
    assert layout.run_parts(path) == {"system": "box", "cell": Cell.id, "experiment": "peak",
                                      "kernel_variant": "stream-default", "repeat": 3}  # fmt: skip
    assert layout.run_parts("/x/results/box/runs/peak/stream-default/r3.jsonl") is None
    assert layout.run_parts("/x/results/box/runs/peak/stream-default/t1/notes.txt") is None
