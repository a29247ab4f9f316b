"""Did a run get the placement it asked for? Obtained vs requested, per
record, from what the harness recorded (bound and final CPUs, the nodes of
sampled pages, the huge-page fraction). Only explicit requests are checked:
`default` policy and `none` affinity ask for nothing and cannot mismatch."""

from __future__ import annotations

import json
import math

from membench.probe.topology import parse_cpulist
from membench.core.text import percent
from membench.plan import knobs

# How much of the sampled pages must land where asked.
BIND_SHARE = 0.99
PREFERRED_SHARE = 0.90
LOCAL_SHARE = 0.90
INTERLEAVE_FAIR_SHARE = 0.5  # each node gets at least half of its fair share
THP_SHARE = 0.5
HUGETLB_SHARE = 0.99


def _load(value):
    """Record values as stored in JSON-lines (lists, objects) or in the CSV
    table (JSON text; NaN where null)."""
    if isinstance(value, str):
        return json.loads(value)
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _nodes(text: str) -> list[int]:
    return parse_cpulist(text)


def _share(page_nodes: dict, nodes) -> float:
    return sum(f for n, f in page_nodes.items() if int(n) in set(nodes))


def policy_problem(policy: str, page_nodes: dict, cpu_nodes: list[int], memory_nodes: list[int] | None = None) -> str | None:
    if not page_nodes:
        return f"asked {policy}, but page nodes could not be sampled"
    got = ", ".join(f"node {n}: {percent(f, spaced=False)}" for n, f in sorted(page_nodes.items()))
    kind, _, arg = policy.partition(":")
    if kind == "bind" and _share(page_nodes, _nodes(arg)) < BIND_SHARE:
        return f"asked {policy}, pages on {got}"
    if kind == "preferred" and _share(page_nodes, _nodes(arg)) < PREFERRED_SHARE:
        return f"asked {policy}, pages on {got}"
    if kind == "local" and cpu_nodes and _share(page_nodes, cpu_nodes) < LOCAL_SHARE:
        return f"asked local (threads on nodes {sorted(set(cpu_nodes))}), pages on {got}"
    if kind == "interleave" and arg != "all":
        wanted = _nodes(arg)
        fair = 1 / len(wanted)
        short = [n for n in wanted if page_nodes.get(str(n), 0) < INTERLEAVE_FAIR_SHARE * fair]
        if short or _share(page_nodes, wanted) < BIND_SHARE:
            return f"asked {policy}, pages on {got}"
    if kind == "interleave" and arg == "all":
        # Every memory node of the machine must get its share; without the
        # machine's node list, at least the nodes that got pages must.
        wanted = memory_nodes or [int(n) for n in page_nodes]
        fair = 1 / len(wanted)
        if any(page_nodes.get(str(n), 0) < INTERLEAVE_FAIR_SHARE * fair for n in wanted):
            return f"asked {policy}, pages on {got}"
    return None


def pages_problem(pages: str, hugepage_fraction: float) -> str | None:
    if math.isnan(hugepage_fraction):
        return f"asked {pages}, huge-page fraction unknown"
    if pages == "4k" and hugepage_fraction > 0:
        return f"asked 4k pages, {percent(hugepage_fraction, spaced=False)} huge pages"
    if pages == "thp" and hugepage_fraction < THP_SHARE:
        return f"asked thp, {percent(hugepage_fraction, spaced=False)} huge pages"
    if pages.startswith("hugetlb") and hugepage_fraction < HUGETLB_SHARE:
        return f"asked {pages}, {percent(hugepage_fraction, spaced=False)} huge pages"
    return None


def affinity_problem(affinity: str, threads: int, cpus: list[int], bound: list[int] | None) -> str | None:
    if affinity == "none":
        return None
    if bound is None:
        return f"asked {affinity}, threads were not bound"
    if affinity.startswith("cpus:") and bound != parse_cpulist(affinity.removeprefix("cpus:"))[:threads]:
        return f"asked {affinity}, bound to {bound}"
    if cpus != bound:
        return f"asked {affinity} (bound {bound}), threads ended on {cpus}"
    return None


def placement_problems(record: dict) -> list[str]:
    """Every way an ok record's obtained placement differs from its request."""
    if record.get("status") != "ok":
        return []
    policy = record.get(knobs.asked("policy")) or record["policy"]
    resolved = record["policy"]  # remote is resolved to bind:N before the run
    problems = [
        policy_problem(
            resolved,
            _load(record["page_nodes"]) or {},
            _load(record.get("cpu_nodes")) or [],
            _load(record.get("memory_nodes")),
        )
        if policy != "default"
        else None,
        pages_problem(record["pages"], float("nan") if record["hugepage_fraction"] is None else float(record["hugepage_fraction"])),
        affinity_problem(
            record["affinity"],
            int(record["threads"]),
            _load(record["cpus"]),
            _load(record.get("cpus_bound")),
        ),
    ]
    return [p for p in problems if p]
