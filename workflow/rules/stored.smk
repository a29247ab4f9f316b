# A figures-only plan: the stored runs are its inputs (membench.store.figures_only).
# Included by common.smk in a figures-only run only, so that a measuring
# plan never loads store/ (tests/test_architecture.py). Functions only, no rules.
from membench.store import figures_only

STORED = figures_only.Stored("results", CELLS, SYSTEMS)


def stored_fingerprint(wildcards):
    """The stored run files collect reads, by name, size and time: files
    copied in with `cp -a` (older times) or restored are collected again."""
    return STORED.fingerprint(wildcards.system)


def stored_not_shown(wildcards):
    """Per system, what is stored but not shown, and which earlier cells
    are shown migrated (the report says both)."""
    return STORED.not_shown()
