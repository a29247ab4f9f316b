"""Which figures an experiment gets. Apart from figures.py (which draws them)
so that planning the workflow does not import the plotting libraries."""

from __future__ import annotations

from membench.plan import families
from membench.plan.node_pairs import uses_pairs

# Figure kinds per kernel family: its `figures` trait (membench.plan.families).
DEFAULT_KINDS = families.DEFAULT_FIGURES


def kinds_for(experiment: dict) -> tuple[str, ...]:
    """The figures of one (validated) experiment; a size sweep adds the
    bandwidth-vs-size (spill) curve."""
    if uses_pairs(experiment):  # node x node: one heat map per system
        return ("matrix",)
    traits = families.family(experiment["kernel"])
    kinds = traits.figures
    if traits.bandwidth and len(experiment.get("size", [])) > 1:
        kinds = (*kinds, "size")
    if len(experiment.get("threads", [])) == 1:  # bandwidth vs threads at one thread count: a point per panel
        kinds = tuple(k for k in kinds if k != "scaling")
    return kinds
