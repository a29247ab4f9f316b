"""The analyse stage's files: per-cell statistics, the modes of every
bandwidth cell and what explains them, and the cells that did not run, for
every system at once."""

from __future__ import annotations

from pathlib import Path

from membench.analyse import c2c_summary
from membench.store.collect import read_measurements
from membench.analyse.modes import modes_table
from membench.core.atomic_files import write_text_atomic
from membench.analyse.stats import CELL_KEYS, problem_cells, summarise_cells, undisturbed


def write_summaries(
    measurements: list[str], cells_out: str, problems_out: str, modes_out: str | None,
    c2c_classes_out: str | None = None, c2c_pairs_out: str | None = None,
) -> None:  # fmt: skip
    table = read_measurements(measurements, without=("memory_nodes",))
    # conclusions (c2c classes and pairs, modes) from the repetitions the
    # disturbed rule does not mark; the cells and class summaries count them
    quiet = undisturbed(table)
    if c2c_classes_out:
        write_text_atomic(Path(c2c_classes_out), c2c_summary.class_table(table).to_csv(index=False))
    if c2c_pairs_out:
        write_text_atomic(Path(c2c_pairs_out), c2c_summary.pair_table(quiet).to_csv(index=False))
    write_text_atomic(Path(cells_out), summarise_cells(table).to_csv(index=False))
    if modes_out:  # a round's planning leaves them out: modes change a finding's words, never whether it is decided
        write_text_atomic(Path(modes_out), modes_table(quiet, CELL_KEYS).to_csv(index=False))
    write_text_atomic(Path(problems_out), problem_cells(table).to_csv(index=False))
