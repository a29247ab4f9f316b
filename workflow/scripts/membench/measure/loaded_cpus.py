"""Where a loaded cell's threads run (issue 30): thread 0 chases, the load
threads never share the chaser's core (its SMT siblings included), for
every affinity. The AWS paper keeps the latency CPU free of load; with
`affinity: close` the second thread would otherwise land on the chaser's
sibling and the latency would measure a shared core, not the memory.

The affinity's own order is kept (close fills cores and then their
siblings, spread one CPU per core round-robin over the nodes, none the
allowed CPUs in order, cpus:LIST the list): its first CPU chases and the
load threads take the next CPUs off the chaser's core. A machine-wide
thread count (all, cores, node, node-smt) is one chaser plus every such
CPU it names; an explicit count that needs a sibling is not run, and the
reason says so.
"""

from __future__ import annotations

from membench.probe.topology import parse_cpulist

MACHINE_WIDE = ("all", "cores", "node", "node-smt")


def _info(topology: dict) -> dict[int, dict]:
    return {c["cpu"]: c for c in topology.get("cpus", [])}


def core_of(cpu: int, topology: dict) -> tuple:
    """(package, core): what SMT siblings share."""
    c = _info(topology).get(cpu, {})
    return (c.get("package", 0), c.get("core", cpu))


def siblings(cpu: int, topology: dict) -> set[int]:
    """The CPUs of cpu's physical core, itself included."""
    c = _info(topology).get(cpu, {})
    same = {cpu, *c.get("siblings", [])}
    same |= {other for other in _info(topology) if core_of(other, topology) == core_of(cpu, topology)}
    return same


def affinity_order(affinity: str, allowed: list[int], topology: dict) -> list[int]:
    """The allowed CPUs in the order the harness binds threads under this
    affinity (kernels/harness/cpus.c: close by node, package, core, SMT
    rank; spread one CPU per core per node first, round-robin over nodes;
    none: pinned in CPU order; cpus:LIST the list)."""
    if affinity.startswith("cpus:"):
        return parse_cpulist(affinity.removeprefix("cpus:"))
    info = _info(topology)
    cpus = sorted(allowed)

    def smt_rank(cpu):
        return sum(1 for other in cpus if other < cpu and core_of(other, topology) == core_of(cpu, topology))

    def node(cpu):
        return info.get(cpu, {}).get("node", 0)

    if affinity in ("close", "compact"):
        return sorted(cpus, key=lambda c: (node(c), *core_of(c, topology), smt_rank(c), c))
    if affinity in ("spread", "scatter"):
        per_node: dict[int, list[int]] = {}
        for c in sorted(cpus, key=lambda c: (node(c), smt_rank(c), *core_of(c, topology), c)):
            per_node.setdefault(node(c), []).append(c)
        lists = [per_node[n] for n in sorted(per_node)]
        return [lst[i] for i in range(max(map(len, lists), default=0)) for lst in lists if i < len(lst)]
    return cpus  # none: thread t on the t-th allowed CPU


def place(requested: int | str, threads: int, affinity: str, allowed: list[int], topology: dict) -> tuple[list[int], str | None]:
    """The CPUs of a loaded cell, chaser first, and the reason it cannot run
    (None when it can). `requested` is the config's threads value,
    `threads` what it resolved to, `affinity` the resolved affinity."""
    order = [c for c in affinity_order(affinity, allowed, topology) if c in allowed]
    if not order:
        return [], f"affinity {affinity}: none of its CPUs is allowed ({allowed})"
    chaser = order[0]
    core = siblings(chaser, topology)
    free = [c for c in order[1:] if c not in core]
    wanted = threads - 1
    if requested in MACHINE_WIDE:
        wanted = min(wanted, len(free))
    if wanted < 1 or wanted > len(free):
        shared = sorted(core - {chaser})
        return [chaser, *free], (
            f"loaded latency keeps the chaser's core free of load: {threads - 1} load threads need as many CPUs "
            f"off the core of CPU {chaser}"
            + (f" (its SMT siblings {shared} are left out)" if shared else "")
            + f"; affinity {affinity} gives {len(free)}"
        )
    return [chaser, *free[:wanted]], None
