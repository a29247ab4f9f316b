"""The kernel table's functions are declared in families.h, every one a
row uses and none that no row uses (issue 53): a family is its rows, and
their declarations follow them, checked here rather than written twice
by hand without a check. kernel_table.c itself declares nothing."""

import re
from pathlib import Path

KERNELS = Path(__file__).resolve().parents[1] / "kernels" / "families"
# The row fields that name a function or an option table.
ROW_FIELDS = ("fn", "init", "validate", "corrupt", "run", "options", "model")
# What a declaration of a row's field looks like in families.h: a kernel
# (mb_arrays_t *), a model (double *, double), a run loop (mb_run_ctx_t *),
# an option table, or a bandwidth family's three hooks.
ROW_DECLARATION = re.compile(
    r"MB_WEAK (?:void (mb_\w+)\((?:mb_arrays_t \*\w+|double \*\w+, double \w+)\);"
    r"|int (mb_\w+)\(mb_run_ctx_t \*\w+\);"
    r"|extern const mb_famopt_t (mb_\w+)\[\];)"
)
HOOKS = re.compile(r"^MB_FAMILY_HOOKS\((\w+)\);", re.M)


def row_names(table_c: str) -> set[str]:
    """The functions and option tables the kernel table's rows name."""
    fields = "|".join(ROW_FIELDS)
    return set(re.findall(rf"\.(?:{fields})\s*=\s*(mb_\w+)", table_c))


def declared_names(families_h: str) -> set[str]:
    """The functions and option tables of the row fields' kinds that
    families.h declares (a family's hooks through MB_FAMILY_HOOKS)."""
    names = {name for match in ROW_DECLARATION.findall(families_h) for name in match if name}
    hooks = {f"mb_{family}_{hook}" for family in HOOKS.findall(families_h) for hook in ("init", "validate", "corrupt")}
    return names | hooks


def mismatch(kernels: Path) -> tuple[set[str], set[str]]:
    """(used but not declared, declared but used by no row) in a kernels/families folder."""
    used = row_names((kernels / "kernel_table.c").read_text())
    declared = declared_names((kernels / "families.h").read_text())
    return used - declared, declared - used


def test_every_row_function_is_declared_in_families_h_and_no_other():
    undeclared, unused = mismatch(KERNELS)
    assert not undeclared, f"named by a kernel table row, not declared in families.h: {sorted(undeclared)}"
    assert not unused, f"declared in families.h, named by no kernel table row: {sorted(unused)}"


def test_the_kernel_table_declares_nothing_itself():
    assert "MB_WEAK" not in (KERNELS / "kernel_table.c").read_text()


def test_the_check_sees_every_family():
    used = row_names((KERNELS / "kernel_table.c").read_text())
    families = set(re.findall(r'\.name = "(\w+)"', (KERNELS / "kernel_table.c").read_text()))
    assert len(families) >= 7 and all(any(n.startswith(f"mb_{f}_") for n in used) for f in families)
