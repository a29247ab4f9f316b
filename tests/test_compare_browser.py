"""compare.html at the size of a default run's comparison (issue 39, item 8),
laid out in a real headless Chromium at 1280 px: 132 rows of one
experiment, a planted change and a row whose interval is absurdly wide.
The page stays as wide as the window, the forest plot stays bounded with
every row label inside it, and the table holds every row and scrolls in
its own box."""

from __future__ import annotations

import json
import os
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from conftest import REPO  # noqa: E402
from first_screen import probed  # noqa: E402

sys.path.insert(0, str(REPO / "tools"))

import synthetic_runs  # noqa: E402
from membench.compare import html as compare_html  # noqa: E402
from membench.compare.output import run_compare  # noqa: E402

SYSTEM = "two-socket"
WIDTH, HEIGHT = 1280, 900
THREADS = [1, 2, 4, 6, 8, 12, 16, 24, 32, 48, 64]  # x 3 affinities x 4 ops: 132 rows

# Every section opened; then what a reader would see, as JSON in the title.
PROBE = """
<script>
for (const d of document.querySelectorAll('details')) d.open = true;
const page = document.documentElement.clientWidth;
const past = [];
for (const e of document.querySelectorAll('body > *, section > *, .scroll, figure, figure svg')) {
  const r = e.getBoundingClientRect();
  if (r.width && r.right > page + 1) past.push(e.tagName + '.' + e.className + ' ' + Math.round(r.right));
}
const figures = [...document.querySelectorAll('section.experiment figure svg')].map(svg => {
  const box = svg.getBoundingClientRect();
  const labels = [...svg.querySelectorAll('g[id^="text_"]')].map(g => g.getBoundingClientRect()).filter(r => r.width);
  return {
    width: box.width, height: box.height, labels: labels.length,
    // how far the label reaching furthest out of the figure's box reaches (px)
    past: Math.max(0, ...labels.map(r => Math.max(box.left - r.left, r.right - box.right, box.top - r.top, r.bottom - box.bottom))),
  };
});
const tables = [...document.querySelectorAll('table.cells')];
const every = tables[tables.length - 1];
const holder = every ? every.closest('.scroll') : null;
document.title = btoa(unescape(encodeURIComponent(JSON.stringify({
  page_width: document.documentElement.scrollWidth, past: past, figures: figures,
  rows: every ? every.querySelectorAll('tbody tr').length : null,
  holder: holder ? {height: holder.clientHeight, scrolls: holder.scrollHeight > holder.clientHeight,
                    right: holder.getBoundingClientRect().right} : null,
  text: document.body.innerText,
}))));
</script>
"""


def side(tmp_path, name, edit=lambda record, path: None):
    """The synthetic study, written afresh, each record edited."""
    out = tmp_path / name
    out.mkdir()
    synthetic_runs.write_affinity_study(out, "aff", THREADS, 5, machine="2x16x2", system=SYSTEM)
    for path in sorted((out / "results" / SYSTEM / "runs").glob("**/r*.jsonl")):
        records = [json.loads(line) for line in path.read_text().splitlines()]
        for record in records:
            edit(record, path)
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return out


def test_compare_html_at_130_rows_stays_bounded_and_readable_at_1280_px(tmp_path):
    def planted(record, path):
        if record.get("gbps") and "/t12_close_" in str(path):
            record["gbps"] *= 0.8  # a real change: worse
            record["gbps_wa"] *= 0.8
        if record.get("gbps") and "/t2_none_" in str(path) and path.name == "r0.jsonl":
            record["gbps"] *= 1000  # one wild run: an interval far past what the data support
            record["gbps_wa"] *= 1000

    base, new = side(tmp_path, "base"), side(tmp_path, "new", planted)
    result, code = run_compare(str(base), str(new), tmp_path / "out")
    rows = len(result["rows"])
    assert rows >= 130 and code == 1, (rows, code)  # the planted change is a worse gate row
    seen = probed(tmp_path / "out" / "compare.html", PROBE, tmp_path, WIDTH, HEIGHT)

    assert seen["page_width"] <= WIDTH and not seen["past"], (seen["page_width"], seen["past"])
    assert seen["rows"] == rows, "the table holds every row"
    holder = seen["holder"]
    assert holder and holder["scrolls"] and holder["height"] <= HEIGHT, holder  # it scrolls in its own box
    (figure,) = seen["figures"]
    drawn = compare_html.FIGURE_ROWS
    assert figure["height"] <= 0.24 * 96 * drawn + 300, figure  # bounded: the rows drawn, not all 132
    # every row label inside the figure, the longest ("…" and 55 characters) included
    assert figure["labels"] >= drawn and figure["past"] == 0, figure
    assert f"left out: {rows - drawn} rows" in seen["text"], "the figure says what it left out"
    assert "worse" in seen["text"] and "e+" not in seen["text"].split("Every row", 1)[-1], "no absurd number"
