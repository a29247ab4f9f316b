"""This machine among published ones: the reference atlas
(references/machines/*.yaml, each number with its source and conditions)
matched by CPU model, else by CPU generation, and held against this run's
highest all-read bandwidth and idle latency.

A match is said with how it was made ("same CPU model", "same generation
by its features", "another machine") and with the conditions that differ
(a 16-vCPU guest against a whole socket). A bandwidth is held like with
like: at the same core count, or per core between similar core counts;
otherwise it is "not comparable" and has no ratio. A value from one run
is never held against anything, nor a value that is not a positive finite
number on either side (0, a negative, NaN: an atlas entry written by hand
or an older make reference): that reference is "not comparable", said
with why, never a division by zero in every report.
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


def positive(value) -> bool:
    """A number a ratio or its logarithm can be taken of."""
    return type(value) in (int, float) and math.isfinite(value) and value > 0


def _number(value) -> float:
    """A value as a float to show (NaN where it is no number)."""
    return float(value) if type(value) in (int, float) else math.nan


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


# Per-core bandwidths compare only between core counts within this factor of
# each other: a socket's bandwidth saturates long before all its cores load
# it, so a few cores' share per core is far above a whole socket's.
PER_CORE_SPAN = 2
# A number this run holds against a published one stands on at least this many undisturbed runs.
COMPARE_RUNS = 2


def _conditions(system: dict, number: dict, topology: dict, virtualised: bool) -> str:
    mine = f"this run: {len(topology.get('cpus', []))} CPUs{' of a virtual machine' if virtualised else ''}"
    scope = (number.get("conditions") or {}).get("scope") or f"{system.get('cores') or '?'} cores"
    return f"{mine}; the reference: {scope} of {system['description']}"


def reference_cores(system: dict, number: dict) -> int | None:
    """The cores behind a published number: its stated threads, else its
    share of the machine's sockets, else the whole machine's cores."""
    conditions = number.get("conditions") or {}
    if conditions.get("threads") or number.get("threads"):
        return int(conditions.get("threads") or number["threads"])
    cores, sockets, used = system.get("cores"), system.get("sockets"), conditions.get("sockets")
    if cores and sockets and used:
        return cores // sockets * used
    return cores if cores and not used else None


def _scope_word(number: dict, cores: int | None) -> str:
    unit = "socket" if (number.get("conditions") or {}).get("sockets") == 1 else "machine"
    return f"a {cores}-core {unit}" if cores else f"a {unit} of cores not stated"


def like_with_like(mine: dict, reference_value: float, cores: int | None, number: dict, virtualised: bool) -> dict:
    """How this run's bandwidth may stand against a published one: at the
    same core count, or per core where the counts are within PER_CORE_SPAN;
    otherwise not comparable (no ratio), said with both counts. mine: value,
    threads, runs."""
    cpus = f"{mine['threads']} {'v' if virtualised else ''}CPU{'s' if mine['threads'] != 1 else ''}"
    plain = {"ratio": None, "this_compared": mine["value"], "reference_compared": reference_value, "compared_unit": number["unit"]}
    if mine["runs"] < COMPARE_RUNS:
        return {**plain, "basis": f"not comparable: this run's value stands on n={mine['runs']}"}
    if cores == mine["threads"]:
        return {**plain, "ratio": mine["value"] / reference_value, "basis": f"at the same core count ({cores})"}
    if cores and max(cores, mine["threads"]) <= PER_CORE_SPAN * min(cores, mine["threads"]):
        this, theirs = mine["value"] / mine["threads"], reference_value / cores
        return {"ratio": this / theirs, "this_compared": this, "reference_compared": theirs, "compared_unit": f"{number['unit']} per core",
                "basis": f"per core ({cpus} vs {cores} cores)"}  # fmt: skip
    return {**plain, "basis": f"not comparable: {cpus} vs {_scope_word(number, cores)}"}


def _candidate(source: dict, system: dict, number: dict, how: str, mine: dict, what: str, context: dict) -> dict:
    virtualised = bool(context["environment"].get("virtualized"))
    if not positive(number.get("value")) or not positive(mine.get("value")):
        which = "the reference's" if not positive(number.get("value")) else "this run's"
        compared = {"ratio": None, "this_compared": _number(mine.get("value")), "reference_compared": _number(number.get("value")),
                    "compared_unit": number.get("unit", "?"), "basis": f"not comparable: {which} value is not a positive number"}  # fmt: skip
    elif what == "idle latency":  # a latency is not shared among cores: held as it is
        compared = {"ratio": mine["value"] / number["value"], "this_compared": mine["value"], "reference_compared": number["value"],
                    "compared_unit": number["unit"], "basis": "idle latency against the reference's unloaded latency"}  # fmt: skip
    else:
        compared = like_with_like(mine, number["value"], reference_cores(system, number), number, virtualised)
    return {
        "reference": source.get("reference", ""), "system": system["id"], "description": system["description"],
        "match": how, "what": what, "this_value": _number(mine.get("value")), "reference_value": _number(number.get("value")),
        "unit": number.get("unit", "?"),
        **compared, "conditions": _conditions(system, number, context["topology"], virtualised),
        "source": number.get("address") or source.get("address") or "", "date": str(source.get("date", "")),
    }  # fmt: skip


def _nearness(candidate: dict) -> tuple:
    """Comparable first, bandwidth before latency, nearest in value first."""
    this, theirs = candidate["this_value"], candidate["reference_value"]
    apart = abs(math.log(this / theirs)) if positive(this) and positive(theirs) else math.inf
    return (candidate["ratio"] is None, candidate["what"] == "idle latency", apart)


def references_beside(topology: dict, environment: dict, read: dict | None, idle: dict | None,
                      atlas: list[dict] | None = None) -> list[dict]:  # fmt: skip
    """The published machines to hold this run against: those of the same
    CPU model, else of the same generation, else the NEAREST closest in
    bandwidth, each held like with like (like_with_like) with its
    conditions. read: this run's bandwidth {what, value (GB/s), threads,
    runs}, all reads where the run has them; idle: {value (ns), runs}."""
    atlas = load_atlas() if atlas is None else atlas
    model = topology.get("cpu_model", "")
    generation = generation_of_flags(model, topology.get("cpu_flags", []))
    context = {"topology": topology, "environment": environment}
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
                    candidates.append(_candidate(source, system, number, how, read, read["what"], context))
                elif number.get("level") == "local_memory" and number.get("unit") == "ns" and idle and idle["runs"] >= COMPARE_RUNS:
                    candidates.append(_candidate(source, system, number, how, idle, "idle latency", context))
    for how in ("same CPU model", f"same generation by its features ({generation})"):
        matched = [c for c in candidates if c["match"] == how]
        if matched:
            return sorted(matched, key=_nearness)
    return sorted((c for c in candidates if c["what"] != "idle latency"), key=_nearness)[:NEAREST]
