"""The report stays bounded at scale: a synthetic 2-socket, 64-CPU study
(tools/synthetic_runs.py; 3 thread counts x 3 affinities x 60 runs, a
smaller version of the bench's 64-CPU and 27,000-run studies) rendered
through the package's own stages. Sizes only: times are for `make bench`."""

import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))

from membench.analyse import summary  # noqa: E402
from membench.store import collect
from membench.figures import plot as figures
from membench.plan import figure_kinds
from membench.report import render
from membench.findings import document
import synthetic_runs  # noqa: E402

FIGURE_LIMIT = 1_000_000
REPORT_LIMIT = 3_000_000


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    out = tmp_path_factory.mktemp("size")
    _, system = synthetic_runs.write_affinity_study(out, "big", [1, 16, 64], repeats=60)
    measurements = str(system / "measurements.csv")
    collect.collect_runs(sorted(str(p) for p in system.glob("runs/**/r*.jsonl")), measurements, str(system / "topology.json"))
    summaries = {name: str(out / f"{name}.csv") for name in ("cells", "problems", "modes")}
    summary.write_summaries([measurements], summaries["cells"], summaries["problems"], summaries["modes"])
    svgs = []
    for kind in figure_kinds.kinds_for({"kernel": "stream"}):
        svgs.append(out / f"big-{kind}.svg")
        figures.plot_figure(kind, "big", summaries["cells"], [measurements], [str(system / "topology.json")],
                            str(svgs[-1]), summaries["modes"])  # fmt: skip
    html = out / "report.html"
    config = {"experiments": {"big": {"kernel": "stream", "threads": [1, 16, 64], "affinity": ["none", "close", "spread"]}}}
    answers = {name: str(out / f"{name}.{kind}") for name, kind in (("findings", "json"), ("findings_csv", "csv"), ("sections", "json"))}
    document.write_answers(
        config=config, cells_csv=summaries["cells"], problems_csv=summaries["problems"], modes_csv=summaries["modes"],
        c2c_classes_csv=None, measurements=[measurements],
        system_files={"two-socket": {"topology": str(system / "topology.json"), "environment": str(system / "environment.json")}},
        findings_out=answers["findings"], findings_csv_out=answers["findings_csv"], sections_out=answers["sections"],
    )  # fmt: skip
    render.render_report(
        template=str(REPO / "reports" / "report.html.j2"), stylesheet=str(REPO / "reports" / "report.css"),
        findings_json=answers["findings"], sections_json=answers["sections"], figures=[str(p) for p in svgs],
        provenance={"membench_version": "t", "commit": "c", "config_hash": "h"}, output=str(html),
    )  # fmt: skip
    return svgs, html


def test_every_figure_under_1_mb(rendered):
    svgs, _ = rendered
    sizes = {p.name: p.stat().st_size for p in svgs}
    assert all(size <= FIGURE_LIMIT for size in sizes.values()), sizes


def test_report_under_3_mb(rendered):
    _, html = rendered
    assert html.stat().st_size <= REPORT_LIMIT, html.stat().st_size


def test_placement_figure_text_stays_bounded(rendered):
    svgs, _ = rendered
    svg = next(p for p in svgs if p.name.endswith("-placement.svg")).read_text()
    assert len(re.findall(r"<text\b", svg)) < 120  # ticks, titles, <= 8 legend entries: not one per run
    assert svg.count(" runs)</text>") <= 8


def test_report_lists_classes_not_cpu_lists(rendered):
    _, html = rendered
    text = html.read_text()
    assert "Modes and what explains them" in text and "Affinity none → spread" in text
    assert not re.search(r"\[\d+(, \d+){4,}\]", text)  # no raw CPU lists (16 and 64 threads) in the report


def test_first_screen_summary_links_and_nothing_overflows(rendered, tmp_path):
    """Headless Chromium at 1280 x 800: the summary fills the first screen
    (its bottom above 800 px), every number in it links to a section that
    exists, and no table, figure or block is wider than its box or the page
    (the All-cells table included, opened)."""
    from first_screen import HEIGHT, WIDTH, lay_out

    _, html = rendered
    layout = lay_out(html, tmp_path)
    assert layout["summary_bottom"] <= HEIGHT, layout["summary_bottom"]
    assert layout["links"] and not layout["missing"], layout["missing"]
    assert layout["numbers"] and set(layout["numbers"]) == {"linked"}, layout["numbers"]
    assert layout["page_width"] <= WIDTH, layout["page_width"]
    assert not layout["wide"], layout["wide"]
    assert "GB/s" in layout["text"] and "highest bandwidth" in layout["text"]
