"""Arm CPUs as /proc/cpuinfo and sysfs describe them: no "model name" and no
"flags" there, but the MIDR fields (CPU implementer, CPU part) and
"Features". The part names come from kernels/harness/arm_parts.h, the table
the harness decodes its records with, so the probe and the records agree.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
from pathlib import Path

ARM_PARTS_H = Path(__file__).resolve().parents[4] / "kernels" / "harness" / "arm_parts.h"


@lru_cache(maxsize=1)
def part_names() -> dict[tuple[int, int], str]:
    """(implementer, part) -> name, from the harness's table."""
    rows = re.findall(r'^MB_ARM_PART\((0x[0-9a-fA-F]+),\s*(0x[0-9a-fA-F]+),\s*"([^"]+)"\)',
                      ARM_PARTS_H.read_text(), re.M)  # fmt: skip
    return {(int(impl, 16), int(part, 16)): name for impl, part, name in rows}


def _field(cpuinfo: str, key: str) -> str | None:
    match = re.search(rf"^{re.escape(key)}\s*:\s*(.+)$", cpuinfo, re.M)
    return match.group(1).strip() if match else None


def read_arm_cpu(cpuinfo: str) -> dict | None:
    """The first CPU's implementer, part, name and Features; None when the
    text is not an Arm cpuinfo. The name is "unknown" for a part the table
    lacks (the numbers are still there)."""
    implementer, part = _field(cpuinfo, "CPU implementer"), _field(cpuinfo, "CPU part")
    if implementer is None or part is None:
        return None
    impl_n, part_n = int(implementer, 0), int(part, 0)
    features = (_field(cpuinfo, "Features") or "").split()
    return {
        "implementer": f"0x{impl_n:02x}",
        "part": f"0x{part_n:03x}",
        "name": part_names().get((impl_n, part_n), "unknown"),
        "features": features,
    }


def midr_core(root: Path) -> tuple[int, int] | None:
    """(implementer, part) of cpu0 from sysfs's MIDR_EL1 copy
    (sys/devices/system/cpu/cpu0/regs/identification/midr_el1: implementer
    in bits 31-24, part in 15-4), for a cpuinfo that lacks the MIDR fields;
    None where the file is not there."""
    try:
        midr = int((root / "sys/devices/system/cpu/cpu0/regs/identification/midr_el1").read_text().strip(), 16)
    except (OSError, ValueError):
        return None
    return (midr >> 24) & 0xFF, (midr >> 4) & 0xFFF


def sve_vector_bits(root: Path, features: list[str]) -> int | str:
    """SVE's vector length in bits: 0 without SVE; the kernel's default
    length (bytes in /proc/sys/abi/sve_default_vector_length) where SVE is
    there; "unknown" where SVE is there and the file is not."""
    if "sve" not in features:
        return 0
    try:
        return int((root / "proc/sys/abi/sve_default_vector_length").read_text().split()[0]) * 8
    except (OSError, ValueError, IndexError):
        return "unknown"


def page_sizes(root: Path) -> dict:
    """The base page and the transparent huge page in bytes. The THP is one
    page table's worth of base pages (base x base / 8), so the base page
    follows from the PMD size sysfs states: 2 MiB -> 4 KiB, 512 MiB -> 64 KiB.
    "unknown" where the tree does not say."""
    try:
        pmd = int((root / "sys/kernel/mm/transparent_hugepage/hpage_pmd_size").read_text().strip())
    except (OSError, ValueError):
        return {"base_page_bytes": "unknown", "thp_bytes": "unknown"}
    base = math.isqrt(8 * pmd)
    return {"base_page_bytes": base if base * base == 8 * pmd else "unknown", "thp_bytes": pmd}
