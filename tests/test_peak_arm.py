"""The theoretical peak on Arm (membench.probe.soc_memory): SMBIOS where it
gives one and describes the memory, else the SoC's row of
references/soc_memory.yaml, matched by the MIDR core AND what the machine
says it is (soc_id, the DMI vendor); a core several SoCs share never picks
one. Run on the Arm topology fixtures of tests/test_arm_topology.py with
the SoC's name files written beside them."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

from membench.analyse import peak
from membench.probe import arm_cpu, soc_memory, topology

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "topology"
sys.path.insert(0, str(FIXTURES))

import sysfs_tree  # noqa: E402

GRACE_ID, AMPERE_ID, AWS = "jep106:036b:0241", "jep106:0a16:0001", "Amazon EC2"
SMBIOS_UNKNOWN = {"known": False, "reason": "dmidecode -t memory: SMBIOS lists no populated DIMM"}
SMBIOS_KNOWN = {"known": True, "socket_gbps": [102.4], "total_gbps": 102.4, "channels": 4, "channels_per_socket": [4],
                "mts": [3200], "bytes_per_transfer": [8], "dimms": 4, "dimm_types": ["DDR4"],
                "source": "dmidecode -t memory", "caveats": []}  # fmt: skip

# Per-socket peaks written by hand from the makers' numbers (channels x MT/s x 8 B,
# or Grace's stated 1 TB/s per two-CPU Superchip): a typo in the table fails here.
BY_HAND = {"AWS Graviton2": 8 * 3200 * 8 / 1000, "AWS Graviton3": 8 * 4800 * 8 / 1000,
           "AWS Graviton4": 12 * 5600 * 8 / 1000, "NVIDIA Grace": 1000 / 2, "Ampere Altra / Altra Max": 8 * 3200 * 8 / 1000}  # fmt: skip


def tree(tmp_path, fixture: str, soc_id: str | None = None, vendor: str | None = None) -> Path:
    root = sysfs_tree.write_fixture(fixture, tmp_path / fixture)
    if soc_id:
        sysfs_tree._write(root, "sys/devices/soc0/soc_id", soc_id)
    if vendor:
        sysfs_tree._write(root, "sys/class/dmi/id/sys_vendor", vendor)
    return root


def probed(root: Path) -> dict:
    """environment.json's memory_peak, through the probe's own entry point."""
    topology.write_probe(str(root), str(root / "t.json"), str(root / "e.json"))
    return json.loads((root / "e.json").read_text())["memory_peak"]


def test_every_row_is_sourced_and_adds_up():
    rows = soc_memory.load_table()
    assert sorted(r["soc"] for r in rows) == sorted(BY_HAND)
    parts = arm_cpu.part_names()
    for row in rows:
        assert (int(row["core"]["implementer"], 16), int(row["core"]["part"], 16)) in parts, row["soc"]
        assert len(row["sources"]) >= 2 and all(s.startswith("https://") for s in row["sources"]), row["soc"]
        assert set(row["when"]) <= {"soc_id", "dmi_sys_vendor"} and row["when"], row["soc"]
        found = soc_memory.peak_from_row(row, "test", 1)
        assert found["socket_gbps"] == [pytest.approx(BY_HAND[row["soc"]])], row["soc"]
        assert ("socket_gbps" in row) == ("stated" in row) != ("channels" in row), row["soc"]


@pytest.mark.parametrize(
    "fixture, soc_id, vendor, soc, sockets",
    [
        ("arm-graviton3-c7g16x", None, AWS, "AWS Graviton3", 1),
        ("arm-grace-superchip", GRACE_ID, None, "NVIDIA Grace", 2),
        ("arm-grace-superchip", None, AWS, "AWS Graviton4", 2),  # the same core, named by AWS
        ("arm-altra-q80", AMPERE_ID, None, "Ampere Altra / Altra Max", 1),
        ("arm-altra-q80", None, AWS, "AWS Graviton2", 1),
    ],
)
def test_a_named_soc_gives_its_row_where_smbios_gives_none(tmp_path, fixture, soc_id, vendor, soc, sockets):
    found = probed(tree(tmp_path, fixture, soc_id, vendor))
    assert found["known"] and found["soc"] == soc and found["source"] == "per-SoC table (references/soc_memory.yaml)"
    assert found["total_gbps"] == pytest.approx(sockets * BY_HAND[soc]) and len(found["socket_gbps"]) == sockets
    if soc == "NVIDIA Grace":  # LPDDR5X on the package: the table even where SMBIOS answers
        assert "LPDDR5X" in found["smbios_not_used"] and "smbios_reason" not in found
    else:
        assert "captured tree" in found["smbios_reason"]
    assert found["sources"] and found["caveats"]


@pytest.mark.parametrize(
    "fixture, soc_id, why",
    [
        # Neoverse V2 is Graviton4's, Grace's (and Axion's): the core alone picks none
        ("arm-grace-superchip", None, "is in AWS Graviton4 and NVIDIA Grace, and this machine names none of them"),
        ("arm-altra-q80", "jep106:0999:0001", "names none of them (soc_id 'jep106:0999:0001')"),
        ("arm-kunpeng920-2p4n", None, "has no SoC with the core Kunpeng 920 (TaiShan v110) (0x48/0xd01)"),
    ],
)
def test_an_unnamed_soc_is_unknown_with_both_reasons(tmp_path, fixture, soc_id, why):
    found = probed(tree(tmp_path, fixture, soc_id))
    assert not found["known"] and why in found["reason"] and "captured tree" in found["reason"], found["reason"]


def test_smbios_wins_where_it_describes_the_memory_but_not_on_grace(tmp_path):
    altra = tree(tmp_path, "arm-altra-q80", AMPERE_ID)
    assert soc_memory.choose_peak(altra, 1, SMBIOS_KNOWN) == SMBIOS_KNOWN
    grace = tree(tmp_path, "arm-grace-superchip", GRACE_ID)
    found = soc_memory.choose_peak(grace, 2, SMBIOS_KNOWN)
    assert found["soc"] == "NVIDIA Grace" and "LPDDR5X" in found["smbios_not_used"]


def test_x86_keeps_what_dmidecode_said(tmp_path):
    root = sysfs_tree.write_fixture("two-socket-spr", tmp_path / "x86")
    sysfs_tree._write(root, "sys/class/dmi/id/sys_vendor", AWS)  # an x86 EC2 instance: no Graviton row
    assert soc_memory.choose_peak(root, 2, SMBIOS_UNKNOWN) is SMBIOS_UNKNOWN
    assert soc_memory.choose_peak(root, 2, SMBIOS_KNOWN) is SMBIOS_KNOWN


def test_the_core_from_sysfs_where_cpuinfo_lacks_it(tmp_path):
    root = tree(tmp_path, "arm-grace-superchip", GRACE_ID)
    (root / "proc/cpuinfo").write_text("processor\t: 0\nBogoMIPS\t: 2000.00\n")
    assert soc_memory.arm_core(root) is None
    sysfs_tree._write(root, "sys/devices/system/cpu/cpu0/regs/identification/midr_el1", "0x00000000410fd4f0")
    assert soc_memory.arm_core(root) == (0x41, 0xD4F)
    assert soc_memory.choose_peak(root, 2, SMBIOS_UNKNOWN)["soc"] == "NVIDIA Grace"


GRACE_TOPOLOGY = {"packages": 2, "nodes": [{"node": 0, "cpus": [0]}, {"node": 1, "cpus": [1]}]}


def test_the_report_names_the_soc_its_sources_and_its_bound(tmp_path):
    found = probed(tree(tmp_path, "arm-grace-superchip", GRACE_ID))
    system = peak.system_peak("grace", None, GRACE_TOPOLOGY, {"memory_peak": found})
    assert system["source"] == "probe (per-SoC table: NVIDIA Grace)" and system["total_gbps"] == pytest.approx(1000)
    assert system["node_gbps"] == pytest.approx(500)
    assert system["derivation"].startswith("NVIDIA Grace (Neoverse V2 (0x41/0xd4f), soc_id jep106:036b:0241; LPDDR5X")
    assert "up to 1 TB/s" in system["derivation"] and "https://docs.nvidia.com/grace-perf-tuning-guide" in system["derivation"]
    assert any("upper bound" in c for c in system["caveats"])
    graviton = probed(tree(tmp_path, "arm-graviton3-c7g16x", None, AWS))
    text = peak.system_peak("g3", None, {"packages": 1, "nodes": [{"node": 0, "cpus": [0]}]}, {"memory_peak": graviton})["derivation"]
    assert "8 channels × 4800 MT/s × 8 B = 307.2 GB/s per socket, 1 socket" in text
    # the config still wins
    stated = peak.system_peak("grace", {"peak": {"socket_gbps": 400}}, GRACE_TOPOLOGY, {"memory_peak": found})
    assert stated["source"] == "config (systems.grace.peak)" and stated["total_gbps"] == 800


def test_the_table_is_the_documented_file():
    text = yaml.safe_load(soc_memory.TABLE.read_text())
    assert soc_memory.TABLE_NAME == str(soc_memory.TABLE.relative_to(soc_memory.paths.REPO)) and text["socs"]
