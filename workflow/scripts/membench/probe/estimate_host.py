"""The host the time model (membench.plan.estimate) plans for: the
topology the run's probe stored for its first system, else this machine's
own, read from sysfs as the probe will read it (the same values, so a
rerun after the probe plans the same rounds)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from membench.core import layout
from membench.plan import estimate
from membench.probe import topology


def this_host(table: dict, results: Path, systems: list[str]) -> estimate.Host:
    stored = layout.topology_path(results, systems[0])
    try:
        topo = json.loads(stored.read_text())
        if not isinstance(topo, dict):  # damaged: c2c_pairs.plan_lines names it, in one line
            raise ValueError(f"{stored} is not a JSON object")
        cpus = len(topo.get("cpus") or []) or len(os.sched_getaffinity(0))
    except (OSError, ValueError):
        topo, cpus = topology.read_topology(), len(os.sched_getaffinity(0))
    return estimate.host_from(table, cpus, topology.llc_total_bytes(topo))
