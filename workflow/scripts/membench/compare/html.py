"""compare.html: the comparison as one self-contained page in the report's
style (reports/compare.html.j2 with reports/report.css inline), with a
ratio-with-interval figure (inline SVG) per experiment.

Bounded at any scale: a figure draws at most FIGURE_ROWS rows of its
experiment (changes first, the order of compare.csv) and says how many it
left out and their verdicts; the page's table holds at most TABLE_ROWS
rows; compare.csv holds every one.
"""

from __future__ import annotations

import io
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from markupsafe import Markup  # noqa: E402

from membench.compare.rows import interval_text, what_text  # noqa: E402
from membench.figures.style import THEME  # noqa: E402
from membench.core import text  # noqa: E402
from membench.core.atomic_files import write_text_atomic  # noqa: E402
from membench.report.render import TEMPLATE_DIR, make_environment  # noqa: E402

FIGURE_ROWS = 40
TABLE_ROWS = 500
COLOURS = {"worse": "#d55e00", "better": "#029e73", "undecided": "#949494", "same": "#0173b2"}


def _label(row: dict) -> str:
    what = what_text(row).removeprefix(f"{row['experiment']}/")
    return ("…" + what[-55:] if len(what) > 56 else what) + f" ({row['unit']})"


def ratio_figure(rows: list[dict], threshold: float) -> str:
    """Ratio NEW/BASE with its interval, one line per row, the threshold
    band shaded: SVG text."""
    count = len(rows)
    with plt.rc_context(THEME):
        fig, ax = plt.subplots(figsize=(9.5, 1.3 + 0.24 * count))
        lows = [r["ratio_low"] for r in rows if r["ratio_low"] > 0 and math.isfinite(r["ratio_high"])]
        highs = [r["ratio_high"] for r in rows if r["ratio_low"] > 0 and math.isfinite(r["ratio_high"])]
        points = [r["ratio"] for r in rows if math.isfinite(r["ratio"])]
        left = min(lows + points + [1 - 2 * threshold])
        right = max(highs + points + [1 + 2 * threshold])
        left, right = left / 1.05, right * 1.05  # a log axis: 0.5 and 2 equally far from 1
        ax.axvspan(1 - threshold, 1 + threshold, color="#0173b2", alpha=0.10, lw=0)
        ax.axvline(1.0, color="#666666", lw=0.8)
        for i, row in enumerate(rows):
            y = count - 1 - i
            colour = COLOURS[row["verdict"]]
            open_ = not (row["ratio_low"] > 0 and math.isfinite(row["ratio_high"]))
            low, high = (left, right) if open_ else (row["ratio_low"], row["ratio_high"])
            ax.plot([low, high], [y, y], color=colour, lw=1.6, ls=":" if open_ else "-")
            if math.isfinite(row["ratio"]):
                ax.plot([row["ratio"]], [y], "o", color=colour, ms=4.5)
        ax.set_yticks(range(count))
        ax.set_yticklabels([_label(r) for r in reversed(rows)], fontsize=7.5)
        ax.set_xscale("log")
        ax.set_xlim(left, right)
        ax.set_ylim(-0.7, count - 0.3)
        ax.set_xlabel(f"ratio NEW / BASE (95 % interval; band: ±{text.percent(threshold, 1, spaced=False)}, no change)")
        handles = [plt.Line2D([], [], color=c, marker="o", lw=1.6, label=v) for v, c in COLOURS.items()]
        ax.legend(handles=handles, loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=4, frameon=False)
        fig.tight_layout()
        # the browser sets the labels in its own font, a little wider than
        # matplotlib measured (the longest reached ~2.5 px past the edge)
        fig.subplots_adjust(left=fig.subplotpars.left + 0.015)
        buffer = io.StringIO()
        fig.savefig(buffer, format="svg", metadata={"Date": None})
        plt.close(fig)
    svg = buffer.getvalue()
    return svg[svg.index("<svg"):]


def experiment_sections(result: dict) -> list[dict]:
    sections = {}
    for row in result["rows"]:
        if row["placement_class"] == "all":
            sections.setdefault(row["experiment"], []).append(row)
    out = []
    for name, rows in sections.items():
        drawn = rows[:FIGURE_ROWS]
        left = rows[FIGURE_ROWS:]
        counts = {v: sum(1 for r in left if r["verdict"] == v) for v in COLOURS}
        out.append({
            "name": name, "rows": len(rows), "figure": Markup(ratio_figure(drawn, result["threshold"])),
            "left_out": len(left), "left_counts": {v: n for v, n in counts.items() if n},
        })  # fmt: skip
    return out


def write_html(result: dict, output: Path) -> None:
    env = make_environment(TEMPLATE_DIR)
    env.filters["interval"] = interval_text
    env.filters["what"] = what_text
    rows = result["rows"]
    context = {
        "result": result,
        "experiments": experiment_sections(result),
        "rows": rows[:TABLE_ROWS],
        "rows_left_out": max(len(rows) - TABLE_ROWS, 0),
        "stylesheet": Markup((TEMPLATE_DIR / "report.css").read_text()),
    }
    write_text_atomic(Path(output), env.get_template("compare.html.j2").render(**context))
