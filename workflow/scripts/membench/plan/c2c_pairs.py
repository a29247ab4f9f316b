"""CPU pairs of the cache-to-cache (c2c) kernel: their locality class from
topology.json, and which pairs a cell measures.

Classes, nearest first: smt (SMT siblings of one core), same_l2 (other
cores sharing an L2), same_l3 (sharing an L3), same_package (another L3 of
the same package: chiplets), other_package. A class needs the cache ids the
probe records per CPU (l2_id, l3_id); a topology without them (an older
probe) never yields same_l2 or same_l3.

A c2c cell's `pair` is either "<class>:<i>", the i-th pair of a
deterministic sample of that class spread over the machine, resolved on the
measuring host from its topology, or "all": every pair of the allowed CPUs
(at most MAX_ALL_CPUS of them). The sample never enumerates more than the
N (N - 1) / 2 pairs once per topology: at 256 CPUs, 32,640 pairs in well
under a second.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path

from membench.core import layout
from membench.plan import families, knobs

CLASSES = ("smt", "same_l2", "same_l3", "same_package", "other_package")
MAX_ALL_CPUS = 64
PLACE_KEYS = ("core", "l2", "l3", "package", "node")


def place(cpu_entry: dict) -> dict:
    """Where one CPU sits: core, L2 and L3 cache ids, package and node."""
    return {
        "core": cpu_entry.get("core"),
        "l2": cpu_entry.get("l2_id"),
        "l3": cpu_entry.get("l3_id"),
        "package": cpu_entry.get("package", 0),
        "node": cpu_entry.get("node", 0),
    }


def classify(a: dict, b: dict) -> str:
    """The locality class of two CPU entries of topology.json."""
    package = a.get("package", 0) == b.get("package", 0)
    siblings = a.get("siblings")
    if package and (b["cpu"] in siblings if siblings else a.get("core") == b.get("core")):
        return "smt"
    if a.get("l2_id") is not None and a.get("l2_id") == b.get("l2_id"):
        return "same_l2"
    if package and a.get("l3_id") is not None and a.get("l3_id") == b.get("l3_id"):
        return "same_l3"
    return "same_package" if package else "other_package"


def _freeze(topology: dict, allowed) -> tuple:
    cpus = tuple(
        (c["cpu"], c.get("core"), c.get("package", 0), c.get("node", 0), c.get("l2_id"), c.get("l3_id"),
         tuple(c.get("siblings", [c["cpu"]])))
        for c in topology["cpus"]
        if allowed is None or c["cpu"] in allowed
    )  # fmt: skip
    return tuple(sorted(cpus))


@lru_cache(maxsize=8)
def _pairs_by_class(frozen: tuple) -> dict[str, list[tuple[int, int]]]:
    entries = [
        {"cpu": c, "core": core, "package": pkg, "node": node, "l2_id": l2, "l3_id": l3, "siblings": list(sib)}
        for c, core, pkg, node, l2, l3, sib in frozen
    ]
    by_class: dict[str, list[tuple[int, int]]] = {name: [] for name in CLASSES}
    for i, a in enumerate(entries):
        for b in entries[i + 1 :]:
            by_class[classify(a, b)].append((a["cpu"], b["cpu"]))
    return by_class


def pairs_by_class(topology: dict, allowed=None) -> dict[str, list[tuple[int, int]]]:
    """Every pair (a < b) of the (allowed) CPUs, by class, in CPU order."""
    return _pairs_by_class(_freeze(topology, None if allowed is None else set(allowed)))


def spread(pairs: list[tuple[int, int]], count: int) -> list[tuple[int, int]]:
    """`count` pairs evenly spaced through the list (CPU order: so over the
    packages, nodes and caches of the machine), first CPUs distinct where
    the class allows it. Deterministic."""
    if count >= len(pairs):
        return list(pairs)
    firsts = sorted({a for a, _ in pairs})
    if len(firsts) >= count:
        # one pair per evenly spaced first CPU: its middle partner
        chosen = [firsts[int((i + 0.5) * len(firsts) / count)] for i in range(count)]
        out = []
        for a in chosen:
            partners = [p for p in pairs if p[0] == a]
            out.append(partners[len(partners) // 2])
        return out
    return [pairs[int((i + 0.5) * len(pairs) / count)] for i in range(count)]


def sample(topology: dict, per_class: int, classes=CLASSES, allowed=None) -> dict[str, list[tuple[int, int]]]:
    """The deterministic sample: up to per_class pairs of each class."""
    by_class = pairs_by_class(topology, allowed)
    return {name: spread(by_class[name], per_class) for name in classes}


def pair_specs(pairs: str, per_class: int, classes) -> list[str]:
    """The `pair` axis values of one experiment."""
    if pairs == "all":
        return ["all"]
    return [f"{name}:{i}" for name in classes for i in range(per_class)]


def resolve(spec: str, per_class: int, topology: dict, allowed: list[int]) -> tuple[list[int] | None, str | None]:
    """The CPUs a cell measures ([a, b], or every allowed CPU for "all"),
    or None and why this host cannot."""
    if spec == "all":
        if len(allowed) > MAX_ALL_CPUS:
            return None, (
                f"pairs: all measures every pair of at most {MAX_ALL_CPUS} CPUs; this host allows "
                f"{len(allowed)} (use pairs: sample)"
            )
        if len(allowed) < 2:
            return None, f"a CPU pair needs 2 CPUs; {len(allowed)} allowed"
        return list(allowed), None
    name, _, index = spec.partition(":")
    chosen = sample(topology, per_class, (name,), allowed)[name]
    if int(index) < len(chosen):
        return list(chosen[int(index)]), None
    present = [c for c, p in pairs_by_class(topology, allowed).items() if p]
    if not chosen:
        return None, (
            f"no CPU pair of class {name} on this host ({len(allowed)} CPUs allowed; classes present: "
            f"{', '.join(present) or 'none'})"
        )
    return None, f"class {name} has {len(chosen)} pair(s) on this host; sample {int(index) + 1} of {per_class} not measured"


def pair_keys(record: dict, topology: dict, spec: str) -> dict:
    """The keys a c2c record gets from topology.json: the class of its pair
    and where each CPU sits (core, L2, L3, package, node)."""
    by_cpu = {c["cpu"]: c for c in topology["cpus"]}
    a, b = by_cpu.get(record.get("cpu_a")), by_cpu.get(record.get("cpu_b"))
    keys = {knobs.asked("pair"): spec}
    if a is None or b is None:
        keys["pair_class"] = None if spec == "all" else spec.partition(":")[0]
        places = ({}, {})
    else:
        keys["pair_class"] = classify(a, b)
        places = (place(a), place(b))
    for side, where in zip("ab", places):
        for key in PLACE_KEYS:
            keys[f"cpu_{side}_{key}"] = where.get(key)
    return keys


def planned_pairs(cells, topology_file: Path | None, host_cpus: int | None = None) -> tuple[int, bool]:
    """How many pairs the c2c cells measure on a system: exact when its
    topology.json exists (the probe ran), else an upper bound (all: from
    host_cpus when this host measures, else 64 CPUs)."""
    cells = [c for c in cells if families.family(c.kernel).pairs]
    if topology_file is None or not Path(topology_file).exists():
        n = min(host_cpus or MAX_ALL_CPUS, MAX_ALL_CPUS)
        return sum(1 if c.pair != "all" else n * (n - 1) // 2 for c in cells), False
    topology = json.loads(Path(topology_file).read_text())
    allowed = [c["cpu"] for c in topology["cpus"]]
    total = 0
    for cell in cells:
        cpus, _ = resolve(cell.pair, cell.pairs_per_class, topology, allowed)
        total += 0 if cpus is None else len(cpus) * (len(cpus) - 1) // 2
    return total, True


def too_many_for_all(cells, topology_file: Path | None, fallback_cpus: int | None) -> str | None:
    """A config error when pairs: all meets a system of more than
    MAX_ALL_CPUS CPUs (known from its topology.json, else from this host
    when it is the one that measures)."""
    if not any(families.family(c.kernel).pairs and c.pair == "all" for c in cells):
        return None
    if topology_file is not None and Path(topology_file).exists():
        count = len(json.loads(Path(topology_file).read_text())["cpus"])
    else:
        count = fallback_cpus
    if count is not None and count > MAX_ALL_CPUS:
        names = sorted({c.experiment for c in cells if families.family(c.kernel).pairs and c.pair == "all"})
        return (
            f"experiments {names}: pairs: all measures every CPU pair, allowed up to {MAX_ALL_CPUS} CPUs; "
            f"this system has {count} CPUs ({count * (count - 1) // 2} pairs); allowed: pairs: sample"
        )
    return None


def plan_lines(cells, systems: list[str], remote: bool, results: Path = Path("results")) -> list[str]:
    """One line per system with c2c cells: the pairs it measures (exact
    once its topology.json exists); "error: ..." for pairs: all on a system
    of more than MAX_ALL_CPUS CPUs. remote: the systems are measured
    elsewhere (SLURM), so this host's CPU count says nothing."""
    c2c = [c for c in cells if families.family(c.kernel).pairs]
    if not c2c:
        return []
    lines = []
    host_cpus = None if remote else len(os.sched_getaffinity(0))
    for system in systems:
        topology = layout.topology_path(results, system)
        try:
            error = too_many_for_all(c2c, topology, host_cpus)
            count, exact = planned_pairs(c2c, topology, host_cpus) if not error else (0, False)
        except (ValueError, KeyError, TypeError, AttributeError, IndexError) as damage:
            reason = "not JSON" if isinstance(damage, ValueError) else f"no usable CPU list ({type(damage).__name__}: {damage})"
            return [
                f"error: system {system}: {topology} is damaged ({reason}); the c2c pairs come from it: "
                "copy it whole from where the runs were measured, or delete it and rerun (the probe writes it again)"
            ]
        if error:
            return [f"error: system {system}: {error}"]
        cells_text = f"{len(c2c)} c2c cell{'s' if len(c2c) != 1 else ''}"
        if exact:
            lines.append(f"membench c2c: system {system}: {count} CPU pairs in {cells_text} (from {topology})")
        else:
            lines.append(
                f"membench c2c: system {system}: up to {count} CPU pairs in {cells_text} "
                "(resolved from topology.json once the probe ran)"
            )
    return lines
