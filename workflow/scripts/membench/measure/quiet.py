"""membench's own work kept off the CPUs a repetition measures on.

While a harness runs, membench's own processes share the machine with it:
this round's Python process and its parent (Snakemake, whose scheduler
wakes every second while other rounds wait for the `machine` resource, a
few ms each time). Nothing tied them to the CPUs a cell does not measure
on, so on a quiet machine they took turns on a measuring CPU
(docs/disturbance.md, "membench's own work"). So, for the harness's life:

- where the cell leaves CPUs free (a one-thread cell on a 2-CPU machine),
  this process and every thread of its parent are confined to those CPUs
  and given their own CPUs back when the harness ends (`kept_off`); the
  harness itself starts from the CPUs this process had before
  (`child_affinity`, applied in membench.measure.stopping before exec);
- this process waits for the harness without waking (a blocking wait on
  pidfds, membench.measure.stopping), so it runs nothing, collects no
  garbage and writes nothing until the harness has ended;
- the CPU time both processes ran during the harness's life is recorded
  (`own_cpu_s`, from /proc/<pid>/task/*/schedstat, and `own_cpus`: the
  CPUs they were confined to, null where they could run anywhere: a cell on
  every CPU, or threads the OS places). A disturbed repetition of a cell on
  every CPU says so how much of the machine membench itself took.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path

# The parent to keep off the measuring CPUs beside this process (Snakemake's
# pid, measure_round's --parent-pid); None: this process only.
_parent: int | None = None
# The CPUs this process had before kept_off confined it: what a harness
# started inside starts from (its own binding comes after).
_child_mask: set[int] | None = None


def keep_parent_off(pid: int | None) -> None:
    global _parent
    _parent = pid


def child_affinity() -> set[int] | None:
    """The CPUs a harness started now should start from; None: as this process."""
    return _child_mask


def _close_order(cpus: list[dict]) -> list[dict]:
    """The harness's close order (kernels/harness/cpus.c cmp_close): node,
    package, core, SMT rank."""
    return sorted(cpus, key=lambda c: (c.get("node", 0), c.get("package", 0), c.get("core", c["cpu"]), c["smt"], c["cpu"]))


def _spread_order(cpus: list[dict]) -> list[dict]:
    """cmp_spread, then round-robin over nodes (mb_order_cpus)."""
    ordered = sorted(cpus, key=lambda c: (c.get("node", 0), c["smt"], c.get("package", 0), c.get("core", c["cpu"]), c["cpu"]))
    by_node: dict[int, list[dict]] = {}
    for c in ordered:
        by_node.setdefault(c.get("node", 0), []).append(c)
    groups = list(by_node.values())
    return [g[i] for i in range(max(map(len, groups), default=0)) for g in groups if i < len(g)]


def measured_cpus(affinity: str, threads: int, allowed: list[int], topology: dict) -> set[int] | None:
    """The CPUs the harness binds its threads to (its plan for close, spread
    and a CPU list), or None where the OS places them (affinity none) or the
    affinity is not one of those."""
    if affinity.startswith("cpus:"):
        from membench.probe.topology import parse_cpulist

        return set(parse_cpulist(affinity.removeprefix("cpus:"))[:threads])
    if affinity not in ("close", "spread"):
        return None
    known = {c["cpu"]: c for c in topology.get("cpus", [])}
    cpus = []
    for cpu in allowed:
        c = dict(known.get(cpu, {"cpu": cpu}))
        siblings = [s for s in c.get("siblings", [cpu]) if s in allowed]
        c["smt"] = sum(1 for s in siblings if s < cpu)
        cpus.append(c)
    order = _close_order(cpus) if affinity == "close" else _spread_order(cpus)
    return {c["cpu"] for c in order[:threads]}


def _tasks(pid: int) -> list[int]:
    try:
        return [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return []


def own_pids() -> list[int]:
    return [os.getpid()] + ([_parent] if _parent and _parent != os.getpid() else [])


def own_cpu_ns(pids: list[int]) -> int:
    """CPU time (ns) the threads of `pids` have run, alive ones (schedstat's
    first field); a thread that ended in between is not counted, so a
    difference is at least this much less."""
    total = 0
    for pid in pids:
        for tid in _tasks(pid):
            try:
                total += int(Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()[0])
            except (OSError, ValueError, IndexError):
                pass
    return total


def _set_affinity(pids: list[int], cpus: set[int] | None, saved: dict[int, set[int]]) -> None:
    """Confine every thread of `pids` to `cpus` (saving each one's own set
    in `saved`), or give each its saved set back (cpus None; a thread
    started since gets its process's)."""
    for pid in pids:
        for tid in _tasks(pid):
            try:
                if cpus is not None:
                    saved[tid] = os.sched_getaffinity(tid)
                    os.sched_setaffinity(tid, cpus)
                else:
                    back = saved.get(tid, saved.get(pid))
                    if back:
                        os.sched_setaffinity(tid, back)
            except (OSError, ValueError):
                pass  # ended, or not ours to move: left where it is


@contextmanager
def kept_off(measuring: set[int] | None, allowed: list[int]):
    """For the block (the harness's life): this process and its parent on
    the allowed CPUs the cell does not measure on, where there are any;
    yields a dict that gets own_cpu_s and own_cpus when the block ends."""
    global _child_mask
    free = set(allowed) - measuring if measuring is not None else set()
    pids, saved, said = own_pids(), {}, {}
    start = own_cpu_ns(pids)
    if free:
        _child_mask = set(os.sched_getaffinity(0))
        _set_affinity(pids, free, saved)
    try:
        yield said
    finally:
        if free:
            _set_affinity(pids, None, saved)
            _child_mask = None
        said["own_cpu_s"] = round(max(own_cpu_ns(pids) - start, 0) * 1e-9, 6)
        said["own_cpus"] = sorted(free) or None
