"""This machine among published ones: the reference atlas
(references/machines/*.yaml, each number with its source and conditions)
matched by CPU model, else by CPU generation, and held against this run's
highest all-read bandwidth and idle latency.

A match is said with how it was made ("same CPU model", "same generation
by its features", "another machine") and with the conditions that differ
(a 16-vCPU guest against a whole socket): a ratio never stands alone.
"""

from __future__ import annotations

import math
from pathlib import Path

import yaml

from membench.core import paths

ATLAS_DIR = paths.REPO / "references" / "machines"
# Microarchitectures by the features a guest's flags still show: a KVM guest
# often reports a generic model name, so the flags are what is left to match.
GENERATIONS = {
    "Sapphire Rapids": "intel-amx", "Emerald Rapids": "intel-amx", "Granite Rapids": "intel-amx",
    "Xeon Max": "intel-amx", "Ice Lake": "intel-avx512", "Cascade Lake": "intel-avx512", "Skylake": "intel-avx512",
    "Zen 4": "amd-avx512", "Zen 5": "amd-avx512", "Genoa": "amd-avx512", "Zen 2": "amd-avx2", "Zen 3": "amd-avx2",
    "Milan": "amd-avx2", "Rome": "amd-avx2", "Grace": "arm-sve2", "Graviton": "arm",
}  # fmt: skip
NEAREST = 3  # references shown when nothing shares the CPU model


def load_atlas(folder: Path = ATLAS_DIR) -> list[dict]:
    return [yaml.safe_load(p.read_text()) for p in sorted(folder.glob("*.yaml"))] if folder.is_dir() else []


def generation_of_flags(cpu_model: str, flags: list[str]) -> str | None:
    """A CPU's generation from its model name and feature flags."""
    vendor = "intel" if "Intel" in cpu_model else "amd" if "AMD" in cpu_model else None
    flags = set(flags)
    if vendor == "intel":
        return "intel-amx" if "amx_tile" in flags else "intel-avx512" if "avx512f" in flags else None
    if vendor == "amd":
        return "amd-avx512" if "avx512f" in flags else "amd-avx2" if "avx2" in flags else None
    return None


def generation_of_reference(system: dict) -> str | None:
    text = f"{system.get('description', '')} {system.get('cpu_model', '')}"
    return next((g for name, g in GENERATIONS.items() if name in text), None)


def _conditions(system: dict, number: dict, topology: dict, virtualised: bool) -> str:
    mine = f"this run: {len(topology.get('cpus', []))} CPUs{' of a virtual machine' if virtualised else ''}"
    scope = (number.get("conditions") or {}).get("scope") or f"{system.get('cores') or '?'} cores"
    return f"{mine}; the reference: {scope} of {system['description']}"


def references_beside(topology: dict, environment: dict, read: tuple[str, float] | None, idle_ns: float | None,
                      atlas: list[dict] | None = None) -> list[dict]:  # fmt: skip
    """The published machines to hold this run against: those of the same
    CPU model, else of the same generation, else the NEAREST closest in
    all-read bandwidth, each with the ratio and the conditions. read: (what
    this run's bandwidth is, GB/s), all reads where the run has them."""
    atlas = load_atlas() if atlas is None else atlas
    model = topology.get("cpu_model", "")
    generation = generation_of_flags(model, topology.get("cpu_flags", []))
    candidates = []
    for source in atlas:
        for system in source.get("systems", []):
            if system.get("cpu_model") and system["cpu_model"] == model:
                how = "same CPU model"
            elif generation and generation_of_reference(system) == generation:
                how = f"same generation by its features ({generation})"
            else:
                how = "another machine"
            for number in source.get("numbers", []):
                if number["system"] != system["id"]:
                    continue
                if number["quantity"] == "bandwidth" and number.get("unit") == "GB/s" and read:
                    what, mine = read
                elif number.get("level") == "local_memory" and number.get("unit") == "ns" and idle_ns:
                    mine, what = idle_ns, "idle latency"
                else:
                    continue
                candidates.append({
                    "reference": source.get("reference", ""), "system": system["id"], "description": system["description"],
                    "match": how, "what": what, "this_value": mine, "reference_value": number["value"], "unit": number["unit"],
                    "ratio": mine / number["value"], "conditions": _conditions(system, number, topology, bool(environment.get("virtualized"))),
                    "source": number.get("address") or source.get("address") or "", "date": str(source.get("date", "")),
                })  # fmt: skip
    for how in ("same CPU model", f"same generation by its features ({generation})"):
        matched = [c for c in candidates if c["match"] == how]
        if matched:  # bandwidth first, each kind nearest first
            return sorted(matched, key=lambda c: (c["what"] == "idle latency", abs(math.log(c["ratio"]))))
    others = sorted((c for c in candidates if c["what"] != "idle latency"), key=lambda c: abs(math.log(c["ratio"])))
    return others[:NEAREST]
