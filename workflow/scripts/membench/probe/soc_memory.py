"""The theoretical peak of an Arm server SoC from a table of what its maker
states (references/soc_memory.yaml: channels x MT/s x bytes, or the stated
GB/s per socket, each row with its source addresses), and which of the
probe's two sources environment.json keeps.

On aarch64: SMBIOS (membench.probe.dmidecode) where it gives a peak and the
SoC's memory is DIMMs SMBIOS can describe; the SoC's table row where SMBIOS
gives none, or where the row says SMBIOS does not describe that memory
(Grace's LPDDR5X on the package); else unknown, with both reasons. A row is
taken only when the machine names its SoC (soc_id or the DMI vendor) as
well as its core: a core shared by several SoCs never picks one. On x86
the dmidecode result is kept as it is.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import yaml

from membench.core import paths
from membench.probe.arm_cpu import midr_core, part_names, read_arm_cpu

TABLE = paths.REPO / "references" / "soc_memory.yaml"
TABLE_NAME = "references/soc_memory.yaml"


@lru_cache(maxsize=4)
def load_table(path: Path = TABLE) -> tuple[dict, ...]:
    return tuple(yaml.safe_load(path.read_text())["socs"])


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip() or None
    except OSError:
        return None


def arm_core(root: Path) -> tuple[int, int] | None:
    """(implementer, part) from /proc/cpuinfo, else sysfs's midr_el1; None
    off Arm."""
    arm = read_arm_cpu(_read(root / "proc/cpuinfo") or "")
    if arm:
        return int(arm["implementer"], 16), int(arm["part"], 16)
    return midr_core(root)


def soc_evidence(root: Path) -> dict:
    """What names the SoC here: SMCCC's soc_id and the DMI system vendor
    (None where absent)."""
    return {
        "soc_id": _read(root / "sys/devices/soc0/soc_id"),
        "dmi_sys_vendor": _read(root / "sys/class/dmi/id/sys_vendor"),
    }


def _named_by(row: dict, evidence: dict) -> str | None:
    """How the machine names this row's SoC, or None."""
    when = row["when"]
    if "soc_id" in when and (evidence.get("soc_id") or "").startswith(when["soc_id"]):
        return f"soc_id {evidence['soc_id']}"
    if "dmi_sys_vendor" in when and evidence.get("dmi_sys_vendor") == when["dmi_sys_vendor"]:
        return f"DMI vendor {evidence['dmi_sys_vendor']!r}"
    return None


def identify(core: tuple[int, int], evidence: dict, table=None) -> tuple[dict | None, str]:
    """(the row, how it was matched), or (None, why no row)."""
    table = load_table() if table is None else table
    core_name = part_names().get(core, "unknown core")
    label = f"{core_name} (0x{core[0]:02x}/0x{core[1]:03x})"
    rows = [r for r in table if (int(r["core"]["implementer"], 16), int(r["core"]["part"], 16)) == core]
    if not rows:
        return None, f"{TABLE_NAME} has no SoC with the core {label}"
    for row in rows:
        how = _named_by(row, evidence)
        if how:
            return row, f"{label}, {how}"
    said = ", ".join(f"{k} {v!r}" for k, v in evidence.items() if v) or "neither soc_id nor a DMI vendor"
    return None, (f"the core {label} is in {' and '.join(r['soc'] for r in rows)}, and this machine names none of them "
                  f"({said}); state systems.<name>.peak in the config")  # fmt: skip


def peak_from_row(row: dict, matched: str, packages: int) -> dict:
    """A table row as environment.json's memory_peak: the facts, the
    per-socket peak over the machine's packages, the sources."""
    sockets = max(1, packages)
    if "socket_gbps" in row:
        per_socket = float(row["socket_gbps"])
        layout = {"stated": row["stated"]}
    else:
        per_socket = row["channels"] * row["mts"] * row["bytes_per_transfer"] / 1000  # MT/s x B = MB/s
        layout = {"channels": row["channels"] * sockets, "channels_per_socket": [row["channels"]] * sockets,
                  "mts": [row["mts"]], "bytes_per_transfer": [row["bytes_per_transfer"]]}  # fmt: skip
    return {
        "known": True,
        "source": f"per-SoC table ({TABLE_NAME})",
        "soc": row["soc"],
        "matched": matched,
        "memory": row["memory"],
        "socket_gbps": [round(per_socket, 3)] * sockets,
        "total_gbps": round(per_socket * sockets, 3),
        **layout,
        "sources": list(row["sources"]),
        "caveats": list(row.get("caveats", [])),
    }


def choose_peak(root: Path, packages: int, smbios: dict, table=None) -> dict:
    """environment.json's memory_peak: `smbios` (dmidecode's result, known
    or not) off Arm; on Arm SMBIOS or the SoC's row, as the module says."""
    core = arm_core(root)
    if core is None:
        return smbios
    row, how = identify(core, soc_evidence(root), table)
    if row is not None and not row.get("smbios", True):
        found = peak_from_row(row, how, packages)
        return {**found, "smbios_not_used": f"SMBIOS does not describe {row['memory']} as channels of DIMMs"}
    if smbios.get("known"):
        return smbios
    if row is not None:
        return {**peak_from_row(row, how, packages), "smbios_reason": smbios.get("reason")}
    return {"known": False, "reason": f"{smbios.get('reason')}; {how}"}

