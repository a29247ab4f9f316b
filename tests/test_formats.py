"""One formatter (membench.core.text, issue 43): no other module of the
workflow writes the dash of a missing value, formats a percentage (a `%`
format spec, or a number followed by "%") or a byte count (a value divided
by 2**10, 2**20 or 2**30 in an f-string) itself; each asks core/text.py."""

import ast
from pathlib import Path

import pytest

from membench.core import text

SCRIPTS = Path(__file__).resolve().parents[1] / "workflow" / "scripts"
OWNER = SCRIPTS / "membench" / "core" / "text.py"
# Still to convert, each with what it writes (none left).
NOT_YET: set[str] = set()
BINARY_UNITS = {2**10, 2**20, 2**30, 2**40}


def _is_binary_unit(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return node.value in BINARY_UNITS
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
        return isinstance(node.left, ast.Constant) and node.left.value == 2 and isinstance(node.right, ast.Constant) \
            and 2 ** node.right.value in BINARY_UNITS  # fmt: skip
    return False


def _is_dash(value) -> bool:
    """The dash standing for a value: alone, or before a note ("– (all 3
    runs disturbed)"); a range's "–" between two numbers is no value."""
    return isinstance(value, str) and value.startswith(text.DASH) and value[1:2] in ("", " ")


def _times_100(node: ast.AST) -> bool:
    return any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mult) and 100 in
               [getattr(n.left, "value", None), getattr(n.right, "value", None)] for n in ast.walk(node))  # fmt: skip


def formatting(source: str) -> list[tuple[int, str]]:
    """(line, what) of every dash, percentage and byte count the source
    formats by hand."""
    found = []
    tree = ast.parse(source)
    in_fstrings = {id(part) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for part in node.values}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and id(node) not in in_fstrings and _is_dash(node.value):
            found.append((node.lineno, "the dash"))
        if isinstance(node, ast.JoinedStr):
            first = node.values[0] if node.values else None
            if isinstance(first, ast.Constant) and _is_dash(first.value) and (len(node.values) == 1 or first.value != text.DASH):
                found.append((node.lineno, "the dash"))
            for before, after in zip(node.values, node.values[1:]):
                if isinstance(before, ast.FormattedValue) and isinstance(after, ast.Constant) \
                        and str(after.value).lstrip(" ").startswith("%") and (before.format_spec or _times_100(before.value)):
                    found.append((node.lineno, "a number written as a percent"))  # fmt: skip
        if isinstance(node, ast.FormattedValue):
            spec = node.format_spec
            if spec is not None and any(isinstance(p, ast.Constant) and str(p.value).endswith("%") for p in spec.values):
                found.append((node.lineno, "a percent format"))
            if isinstance(node.value, ast.BinOp) and isinstance(node.value.op, ast.Div) and _is_binary_unit(node.value.right):
                found.append((node.lineno, "a byte count"))
    return found


def test_no_module_but_core_text_formats_a_dash_a_percent_or_bytes():
    found = [f"{path.relative_to(SCRIPTS)}:{line}: {what}" for path in sorted(SCRIPTS.rglob("*.py"))
             if path != OWNER and str(path.relative_to(SCRIPTS)) not in NOT_YET
             for line, what in formatting(path.read_text())]  # fmt: skip
    assert found == []


@pytest.mark.parametrize("source", [
    'x = "–"', 'x = f"– (all {n} runs)"', 'x = f"{share:.0%}"', 'x = f"{share:+.1%} more"',
    'x = f"{100 * share:.1f} % of it"', 'x = f"{share:.1f} %"', 'x = f"{size / 2**30:.0f} GiB"', 'x = f"{size / 1024:.0f} KiB"',
    'x = f"– (all {n} runs disturbed)"', 'x = a or "–"',
])  # fmt: skip
def test_the_check_sees_each_kind(source):
    assert formatting(source)


def test_the_check_lets_ranges_and_words_be():
    source = 'x = f"{lo:.1f} – {hi:.1f}"; y = "min–max"; z = f"{n} runs ({percent(s)})"; w = f"{lo}–{hi}"; v = f"{op} % of peak"'
    assert formatting(source) == []


def test_the_formatter_writes_each_form():
    assert text.percent(0.634) == "63 %" and text.percent(0.05, 1, signed=True, spaced=False) == "+5.0%"
    assert text.percent(None) == text.number(float("nan")) == text.size_text(None) == text.DASH
    assert text.size_text(1536) == "1.5 KiB" and text.size_text(2**30 * 62.7, digits=0) == "63 GiB"
    assert text.gib_text(2**30 * 62.7) == "63 GiB" and text.significant(1234.5) == "1.23e+03"
