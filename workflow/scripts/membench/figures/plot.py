"""One figure of one experiment, as SVG text, by its kind (the kinds an
experiment gets: membench.plan.figure_kinds). Each kind is one row of
KINDS: the table it reads and the module that draws it.

- scaling, size, ladder (membench.figures.bandwidth): GB/s vs threads, vs
  bytes per array, McCalpin's versions; each with the stated peak;
- histogram, placement (membench.figures.distribution): every repetition;
- latency, loaded (membench.figures.latency): ns per load vs working set,
  and vs the load threads' GB/s;
- matrix (membench.figures.node_heatmap): the node x node matrices;
- handoff (membench.figures.c2c): cache-to-cache latency per pair.
A "series" is the combination of the axes other than threads and op that
vary inside the experiment (affinity, variant, policy, ...).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from membench.analyse.node_matrix import experiment_matrices
from membench.core.atomic_files import write_text_atomic
from membench.figures import bandwidth, c2c, distribution, latency, node_heatmap, style
from membench.figures.peak_lines import figure_systems, peak_lines
from membench.figures.style import THEME, empty, plt
from membench.analyse.caches import mark_in_cache
from membench.plan import knobs
from membench.store.collect import read_measurements

# The measurement columns the figures read (a study's table has many more).
FIGURE_COLUMNS = [
    "system", "experiment", "cell", "kernel", knobs.column("variant"), "op", "threads",
    *knobs.columns("threads", "affinity", "policy", "pages"), knobs.asked("pages"), *knobs.columns("init", "size"),
    "status", "gbps",
    "threads_per_node", "threads_per_package", "node_imbalance", "smt_shared_cores", "oversubscribed_cpus",
    "migrated_threads", "page_locality", "hugepages", "disturbed",
    "reason",  # a figure with no ok run says why (membench.figures.nothing_drawn)
]  # fmt: skip


@dataclass(frozen=True)
class Inputs:
    """What a figure job is handed (the plot rule's inputs and params)."""

    experiment: str
    cells_csv: str
    measurements: list[str]
    topology: list[str]
    modes_csv: str | None = None
    environment: list[str] = ()
    peak_settings: dict | None = None
    problems_csv: str | None = None
    c2c_pairs_csv: str | None = None

    def cells(self) -> pd.DataFrame:
        """The experiment's cells, an in-cache cell's size marked (its
        legend entry and labels say so)."""
        cells = pd.read_csv(self.cells_csv)
        return mark_in_cache(cells[cells["experiment"] == self.experiment])

    def runs(self) -> pd.DataFrame:
        table = read_measurements(self.measurements, FIGURE_COLUMNS)
        table = table[table["experiment"] == self.experiment]
        size = knobs.asked("size")
        marked = self.cells()[["system", "cell", size]].drop_duplicates(["system", "cell"])
        if table.empty or marked.empty:
            return table
        sizes = dict(zip(zip(marked["system"], marked["cell"]), marked[size]))
        table = table.copy()
        table[size] = [sizes.get(key, asked) for key, asked in zip(zip(table["system"], table["cell"]), table[size])]
        return table

    def peaks(self) -> list[tuple[float, str]]:
        return peak_lines(self.cells(), figure_systems(self.topology, self.environment), self.peak_settings)


def _matrix(inputs: Inputs, name: str) -> str:
    problems = pd.read_csv(inputs.problems_csv or Path(inputs.cells_csv).with_name("problems.csv"))
    topologies = {Path(p).parent.name: json.loads(Path(p).read_text()) for p in inputs.topology}
    matrices = experiment_matrices(pd.read_csv(inputs.cells_csv), problems, topologies, inputs.experiment)
    return node_heatmap.matrix_svg(matrices, name) if matrices else empty("no measurements", name)


def _handoff(inputs: Inputs, name: str) -> str:
    pairs = pd.read_csv(inputs.c2c_pairs_csv) if inputs.c2c_pairs_csv else pd.DataFrame()
    return c2c.c2c_svg(pairs, inputs.experiment, name)


def _placement(inputs: Inputs, name: str) -> str:
    modes = pd.read_csv(inputs.modes_csv) if inputs.modes_csv else None
    return distribution.placement_svg(inputs.runs(), name, modes)


KINDS = {
    "scaling": lambda i, name: bandwidth.scaling_svg(i.cells(), name, i.peaks()),
    "size": lambda i, name: bandwidth.size_svg(i.cells(), name, i.peaks()),
    "ladder": lambda i, name: bandwidth.ladder_svg(i.runs(), name, i.peaks()),
    "histogram": lambda i, name: distribution.histogram_svg(i.runs(), name),
    "placement": _placement,
    "latency": lambda i, name: latency.latency_svg(i.cells(), latency.data_caches(i.topology), name),
    "loaded": lambda i, name: latency.loaded_svg(i.cells(), name, latency.line_sizes(i.topology)),
    "matrix": _matrix,
    "handoff": _handoff,
}


def plot_figure(
    kind: str, experiment: str, cells_csv: str, measurements: list[str], topology: list[str], output: str,
    modes_csv: str | None = None, environment: list[str] = (), peak_settings: dict | None = None,
    problems_csv: str | None = None, c2c_pairs_csv: str | None = None,
) -> None:
    plt.rcParams.update(THEME)
    inputs = Inputs(experiment, cells_csv, measurements, topology, modes_csv, environment, peak_settings,
                    problems_csv, c2c_pairs_csv)  # fmt: skip
    style.want_png = True
    write_text_atomic(Path(output), KINDS[kind](inputs, f"{experiment}-{kind}"))
    png = style.PNGS.pop(f"{experiment}-{kind}", None)
    if png is not None:  # beside the SVG, for slides; written whole, then renamed
        part = Path(output).with_suffix(".png.part")
        part.write_bytes(png)
        os.replace(part, Path(output).with_suffix(".png"))
