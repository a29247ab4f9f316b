"""The report's words for what is one architecture's own (docs/arm.md): an
x86 variant's skipped records on an Arm machine say that it does not apply
there and name the Arm counterpart, instead of reading as a hole; notes
that name x86 instructions (non-temporal stores, loaded's pause) say the
Arm equivalent when the report holds an Arm system, and only it when every
system is Arm.
The architecture is topology.json's `arch` (x86_64 where a topology from
before it was recorded lacks it).
"""

from __future__ import annotations

import re

X86, ARM = "x86_64", "aarch64"

# A CPU feature a variant needs, by the architecture that has it: its name
# in words, and the counterpart on the other architecture.
FEATURES = {
    "avx512f": (X86, "AVX-512", "the NEON (asimd) and SVE-256 (sve256) variants"),
    "avx2": (X86, "AVX2", "the NEON (asimd) and SVE-256 (sve256) variants"),
    "avx": (X86, "AVX", "the NEON (asimd) variants"),
    "sve256": (ARM, "SVE at 256 bits", "the AVX2 and AVX-512 variants"),
    "sve": (ARM, "SVE", "the AVX2 and AVX-512 variants"),
    "asimd": (ARM, "NEON (Advanced SIMD)", "the SSE2 and AVX2 variants"),
}
NEEDS = re.compile(r"requires CPU feature '([a-z0-9_]+)'")

# The notes' x86 words, and what they say where Arm is there: each phrase
# with its words for an Arm-only report, then for one of both.
NT_STORES = "non-temporal stores"
PHRASES = {
    NT_STORES: ("streaming stores (Arm's stnp / stnt1d)", "non-temporal stores (x86 movnt; Arm stnp / stnt1d, a hint)"),
    # family loaded's injection delay: x86 spins with pause, Arm with isb (loaded_load.c)
    "the pause count asked": ("the isb count asked", "the pause (x86) or isb (Arm) count asked"),
    "(a pause costs 10 to 140 cycles by CPU model)": (
        "(an isb's cost differs by core)", "(a pause costs 10 to 140 cycles by CPU model, an isb differs by core)"),
}


def system_arch(system: dict) -> str:
    return (system.get("topology") or {}).get("arch") or X86


def report_archs(systems: dict[str, dict]) -> frozenset:
    return frozenset(system_arch(s) for s in systems.values()) or frozenset({X86})


def not_applicable(reason: str, arch: str) -> str | None:
    """A skipped reason naming another architecture's feature, in words
    that say it does not apply here; None for every other reason."""
    found = NEEDS.search(reason or "")
    if not found or found.group(1) not in FEATURES:
        return None
    home, name, counterpart = FEATURES[found.group(1)]
    if home == arch:
        return None  # this architecture's own feature, which this CPU lacks: a real skip
    return (f"does not apply on {arch}: {name} ({found.group(1)}) is {home}'s; the {arch} counterparts are "
            f"{counterpart} (docs/arm.md)")  # fmt: skip


def problems_in_words(problems: list[dict], systems: dict[str, dict]) -> list[dict]:
    """The skipped and failed cells, each foreign-architecture skip said as such."""
    out = []
    for row in problems:
        words = not_applicable(str(row.get("reason") or ""), system_arch(systems.get(row.get("system"), {})))
        out.append({**row, "reason": words} if words and row.get("status") == "skipped" else row)
    return out


def _words(phrase: str, archs: frozenset) -> str:
    if archs == frozenset({X86}):
        return phrase
    arm_only, both = PHRASES[phrase]
    return arm_only if archs == frozenset({ARM}) else both


def streaming_stores(archs: frozenset) -> str:
    return _words(NT_STORES, archs)


def in_words(text: str, archs: frozenset) -> str:
    """A note with its x86 words said for the architectures of the report."""
    for phrase in PHRASES:
        text = text.replace(phrase, _words(phrase, archs))
    return text
