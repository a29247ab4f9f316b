"""The hardware prefetchers' state, read (never written) for environment.json.

Intel documents the prefetcher switches of its cores in MSR 0x1A4
(MISC_FEATURE_CONTROL): bit 0 L2 hardware (streamer) prefetcher, bit 1 L2
adjacent-cache-line prefetcher, bit 2 DCU (L1 next-line) prefetcher, bit 3
DCU IP (L1 stride) prefetcher; a set bit disables it. The register is read
through /dev/cpu/<n>/msr only when the msr module is already loaded and the
file is readable: membench never loads a module and never writes an MSR
(Intel MLC rewrites this register while it runs; membench records it). In
every other case the state is "unknown: <why>".
"""

from __future__ import annotations

import os
import re
from pathlib import Path

INTEL_MSR = 0x1A4
INTEL_BITS = {0: "L2 streamer", 1: "L2 adjacent line", 2: "L1 next line (DCU)", 3: "L1 IP stride (DCU IP)"}


def describe_intel(value: int) -> str:
    """MSR 0x1A4's low bits in words."""
    off = [name for bit, name in INTEL_BITS.items() if value >> bit & 1]
    state = "all four enabled" if not off else f"disabled: {', '.join(off)}"
    return f"{state} (MSR 0x1a4 = {value:#x})"


def read_msr(path: Path, register: int) -> int:
    with open(path, "rb", buffering=0) as fh:
        data = os.pread(fh.fileno(), 8, register)
    if len(data) != 8:
        raise OSError(f"short read of {len(data)} bytes")
    return int.from_bytes(data, "little")


def prefetcher_state(root: Path = Path("/"), cpu: int = 0) -> str:
    """What the prefetchers of one CPU are set to, or "unknown: <why>"."""
    cpuinfo = (root / "proc/cpuinfo").read_text(errors="replace") if (root / "proc/cpuinfo").exists() else ""
    vendor = re.search(r"^vendor_id\s*:\s*(\S+)", cpuinfo, re.M)
    vendor = vendor.group(1) if vendor else "unknown"
    if vendor != "GenuineIntel":
        return f"unknown: no documented prefetcher MSR read for CPU vendor {vendor}"
    device = root / f"dev/cpu/{cpu}/msr"
    if not (root / "sys/module/msr").exists() and not device.exists():
        return "unknown: the msr module is not loaded (membench does not load it; `modprobe msr` as root to record this)"
    if not os.access(device, os.R_OK):
        return f"unknown: {device} is not readable by this user (root or CAP_SYS_RAWIO needed)"
    try:
        value = read_msr(device, INTEL_MSR)
    except OSError as exc:
        return f"unknown: reading MSR 0x1a4 from {device} failed ({exc})"
    return f"CPU {cpu}: {describe_intel(value)}"
