"""The harness's options as its binary declares them: `--list-options`
prints the harness's option table and its family's (kernels/harness/
options.c; each family's mb_<family>_options) as JSON, read once per binary.
A request becomes argv through that table: the flags, and which of them the
family takes, are the binary's; Python knows only which request field feeds
which option."""

from __future__ import annotations

import functools
import json
import os
import subprocess

from membench.plan import knobs

# The request fields that feed a family option (kernels/families/*.c), by
# option name (the knob table's); an option the binary's family does not
# list is not passed.
FAMILY_FIELDS = knobs.family_fields()
LIST_TIMEOUT_S = 30


class OptionsError(RuntimeError):
    """A binary that does not list its options (not a membench harness, or
    one that is broken): its cells fail with this message."""


def listing(binary: str) -> dict:
    """The binary's option tables (--list-options), read once per binary
    file (a rebuilt binary is read again)."""
    try:
        stat = os.stat(binary)
    except OSError as error:
        raise OptionsError(f"{binary}: {error.strerror}") from None
    return _read(str(binary), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=256)
def _read(binary: str, mtime_ns: int, size: int) -> dict:
    try:
        proc = subprocess.run([binary, "--list-options"], capture_output=True, text=True, timeout=LIST_TIMEOUT_S)
        doc = json.loads(proc.stdout) if proc.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired, json.JSONDecodeError) as error:
        raise OptionsError(f"{binary} --list-options: {error}") from None
    if not isinstance(doc, dict) or "harness_options" not in doc:
        raise OptionsError(f"{binary} --list-options exited with code {proc.returncode} and no option table "
                           f"({(proc.stderr or proc.stdout).strip()[:200]!r})")  # fmt: skip
    return doc


def defaults(doc: dict) -> dict:
    """{option name: default} of the family's options."""
    return {o["name"]: o["default"] for o in doc["family_options"]}


def argv(doc: dict, values: dict) -> list[str]:
    """Flag and value of every option in `values` (by option name) that the
    table lists, in the table's order; a None value is left to the binary."""
    out = []
    for option in (*doc["harness_options"], *doc["family_options"]):
        value = values.get(option["name"])
        if value is not None:
            out += [option["flag"], str(value)]
    return out
