"""Which figures an experiment gets. Apart from figures.py (which draws them)
so that planning the workflow does not import the plotting libraries."""

from __future__ import annotations

from membench.plan.node_pairs import uses_pairs

# Figure kinds per kernel family: the ladder replaces the thread scaling for
# the single-thread read-only versions; latency kernels have their own.
KINDS = {"readonly": ("ladder",), "chase": ("latency",), "loaded": ("loaded",), "c2c": ("handoff",)}
DEFAULT_KINDS = ("scaling", "histogram", "placement")


def kinds_for(experiment: dict) -> tuple[str, ...]:
    """The figures of one (validated) experiment; a size sweep adds the
    bandwidth-vs-size (spill) curve."""
    if uses_pairs(experiment):  # node x node: one heat map per system
        return ("matrix",)
    kinds = KINDS.get(experiment["kernel"], DEFAULT_KINDS)
    if experiment["kernel"] not in ("chase", "loaded", "c2c") and len(experiment.get("size", [])) > 1:
        kinds = (*kinds, "size")
    return kinds
