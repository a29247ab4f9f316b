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

from membench import collect, figures, report, summary  # noqa: E402
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
    for kind in figures.kinds_for({"kernel": "stream"}):
        svgs.append(out / f"big-{kind}.svg")
        figures.plot_figure(kind, "big", summaries["cells"], [measurements], [str(system / "topology.json")],
                            str(svgs[-1]), summaries["modes"])  # fmt: skip
    html = out / "report.html"
    report.render_report(
        template=str(REPO / "reports" / "report.html.j2"), stylesheet=str(REPO / "reports" / "report.css"),
        config={"experiments": {"big": {"kernel": "stream", "threads": [1, 16, 64], "affinity": ["none", "close", "spread"]}}},
        cells_csv=summaries["cells"], problems_csv=summaries["problems"], modes_csv=summaries["modes"],
        figures=[str(p) for p in svgs], system_files={"two-socket": {"topology": str(system / "topology.json"),
                                                                       "environment": str(system / "environment.json")}},
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


def test_wide_tables_scroll_in_their_own_box_not_the_page(rendered, tmp_path):
    """Headless Chromium lays the report out at 1280 px: the page itself
    is no wider than the window (wide tables scroll inside their box)."""
    import shutil
    import subprocess

    _, html = rendered
    chromium = shutil.which("chromium")
    assert chromium, "chromium is missing: `make test` installs it from Debian's apt"
    probe = tmp_path / "probe.html"
    widths = "document.documentElement.scrollWidth + ' ' + Math.max(...[...document.querySelectorAll('.scroll')].map(e => e.scrollWidth))"
    probe.write_text(html.read_text().replace("</body>", f"<script>document.body.dataset.widths = {widths};</script></body>"))
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([chromium, *flags, "--window-size=1280,800", "--dump-dom", probe.as_uri()],
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert dom.returncode == 0, dom.stderr[-2000:]
    page, widest_box = map(int, re.search(r'data-widths="(\d+) (\d+)"', dom.stdout).groups())
    assert page <= 1280, page
    assert widest_box > 1280  # the All-cells table is wider than the window: it scrolls in its box
