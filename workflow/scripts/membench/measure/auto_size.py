"""`size: auto` on this host, for every family in one place: `resolve`
picks the family's rule by its `auto_size` trait (membench.plan.families),
never by its name. The harness takes --size in bytes only and resolves
nothing itself.

  arrays  STREAM's rule: each array at least 4 x the sum of every
          last-level cache instance (12 L3s on an EPYC Genoa socket, one
          per socket on a Xeon), and at least 256 MiB
  reach   the chase: the most its sweep may reach, the stated rule's
          (membench.plan.latency_sweep.reach_bytes: touched lines 16 x the
          chasing CPU's LLC instance, at least 1 GiB); the sweep stops
          before it once the answer is in, and touches only what it
          measured. Bounded by half the memory this process may still
          allocate, in whole pointer slots
  pool    c2c's clean pool: 4 x the L2, at least 4 MiB
"""

from __future__ import annotations

from membench.measure import memory
from membench.plan import families
from membench.plan.request import Request
from membench.probe.topology import llc_total_bytes

POOL_FLOOR = 4 * 2**20


def arrays_size(topology: dict) -> int:
    return families.arrays_bytes(llc_total_bytes(topology))


def reach_size(topology: dict, spacing: int, available: int | None = None) -> int:
    from membench.plan import latency_sweep  # numpy: imported where a chase needs it, not at every round's start

    llc = topology.get("llc_bytes") or 0
    line = topology.get("line_bytes") or 64
    size = latency_sweep.reach_bytes(llc, spacing, line)
    if available:
        size = min(size, available // 2)
    return max(size // spacing * spacing, spacing)


def pool_size(topology: dict) -> int:
    l2 = max((c["size_bytes"] for c in topology.get("caches", []) if c["level"] == 2), default=0)
    return max(4 * l2, POOL_FLOOR)


def resolve(request: Request, topology: dict) -> int:
    """The request's bytes per array: its size, or auto by its family's rule."""
    if request.size != "auto":
        return request.size
    rule = families.family(request.kernel).auto_size
    if rule == families.REACH:
        return reach_size(topology, request.chase_spacing, memory.host_memory().available)
    if rule == families.POOL:
        return pool_size(topology)
    return arrays_size(topology)
