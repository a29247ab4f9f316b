"""The report's tables of where two things sit: the cache-to-cache table
by locality class (from results/summary/c2c_classes.csv, the numbers of
membench.analyse.c2c_summary) and a node x node matrix as the template
shows it (from membench.analyse.node_matrix's NodeMatrix).
"""

from __future__ import annotations

import pandas as pd

from membench.analyse.node_matrix import NodeMatrix
from membench.core.text import DASH, number


def c2c_class_table(classes: pd.DataFrame) -> dict | None:
    """The report's table of one experiment: per class and op, the median
    hand-off with its spread and the pair count."""
    if classes is None or classes.empty:
        return None
    several = classes["system"].nunique() > 1 or classes["variant"].nunique() > 1
    # a class this host lacks (no pair of it: every record skipped) is one footnote, not rows of dashes
    lacking = classes[(classes["records"] == 0) & (classes["n_failed"] == 0)]
    footnotes = [f"Not on this host (skipped): {', '.join(dict.fromkeys(lacking['pair_class']))}."] if not lacking.empty else []
    rows = []
    for row in classes.drop(lacking.index).itertuples():
        spread = DASH if pd.isna(row.handoff_ns_p10) else f"{row.handoff_ns_p10:.1f} – {row.handoff_ns_p90:.1f}"
        modes = getattr(row, "modes_unexplained", None)
        if isinstance(modes, str) and modes:
            spread += f"; modes, unexplained: {modes}"
        samples = (
            DASH if pd.isna(row.sample_p10_ns_median) else f"{row.sample_p10_ns_median:.1f} – {row.sample_p90_ns_median:.1f}"
        )
        label = [f"{row.system} {row.variant}"] if several else []
        switched = getattr(row, "samples_switched", float("nan"))
        if not row.records:
            switched = DASH
        elif pd.isna(switched):
            switched = "not recorded"
        else:
            switched = f"{int(switched)} of {int(row.samples)}"
        rows.append([*label, row.pair_class, row.op, number(row.handoff_ns_median, 1), spread, samples,
                     row.pairs, row.records, switched, int(getattr(row, "n_disturbed", 0) or 0),
                     f"{row.n_failed} / {row.n_skipped}"])  # fmt: skip
    return {
        "title": "Cache-to-cache latency by locality class",
        "note": (
            "ns per hand-off: half the round trip (cas, two_line: c2clat's quantity), one dependent load of a "
            "line the other core just read, Exclusive there (clean: MLC's HIT), or just wrote, Modified there "
            "(dirty: MLC's HITM). Median over the "
            "records of the class (one record = one pair in one repetition, itself the median of its samples); "
            "spread = p10 – p90 across those records; within a record = the median p10 – p90 of its samples. "
            "Classes from topology.json: smt (SMT siblings), same_l2, same_l3, same_package (another L3), "
            "other_package. Samples switched out: those in which either thread was switched out, left out "
            "of their record's statistics; a record is disturbed (and left out) only when too few others remain."
        ),
        "columns": [*(["system, variant"] if several else []), "class", "op", "median ns", "p10 – p90 ns",
                    "within a record", "pairs", "records", "samples switched out", "disturbed (left out)",
                    "failed / skipped"],  # fmt: skip
        "rows": rows,
        "footnotes": footnotes,
    }


def _value_text(value: float, metric: str) -> str:
    return f"{value:.1f}" if metric == "ns" or value < 100 else f"{value:.0f}"


def table_context(matrix: NodeMatrix) -> dict:
    """The matrix as the report's template shows it: a cell's median and
    spread, or a footnote mark whose text (the reason, or what differed)
    is listed once under the table."""
    footnotes: dict[str, str] = {}

    def mark(text: str) -> str:
        if text not in footnotes:
            footnotes[text] = f"({_letters(len(footnotes))})"
        return footnotes[text]

    rows = []
    for r in matrix.status.index:
        out = []
        for c in matrix.status.columns:
            state, median = matrix.status.loc[r, c], matrix.median.loc[r, c]
            cell = {"status": state, "local": r == c, "value": "", "spread": "", "mark": ""}
            if state in ("ok", "mismatch"):
                cell["value"] = _value_text(median, matrix.metric)
                runs = int(matrix.runs.loc[r, c])
                cell["spread"] = (
                    f"{_value_text(matrix.low.loc[r, c], matrix.metric)}–{_value_text(matrix.high.loc[r, c], matrix.metric)}"
                    if runs > 1
                    else "1 run"
                )
            if state != "ok":
                cell["mark"] = mark(matrix.note.loc[r, c])
            out.append(cell)
        rows.append({"node": r, "note": matrix.row_notes.get(r, ""), "cells": out})
    return {
        "title": matrix.title,
        "metric": matrix.metric,
        "columns": [{"node": c, "note": matrix.column_notes.get(c, "")} for c in matrix.status.columns],
        "rows": rows,
        "footnotes": [{"mark": m, "text": t} for t, m in footnotes.items()],
        "counts": {s: int((matrix.status == s).sum().sum()) for s in ("ok", "mismatch", "disturbed", "skipped", "failed", "missing")},
    }


def _letters(index: int) -> str:
    """0 -> a, 25 -> z, 26 -> aa: footnote marks at any count."""
    text = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        text = chr(ord("a") + rest) + text
    return text
