"""Lay a report out in headless Chromium at 1280 x 800 and read back what a
reader sees: where the summary ends, which of its links lead nowhere, and
what is wider than the page or than its own box, and which element of a
summary card runs past the card's edge. A helper of the report
tests, not a test itself."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from pathlib import Path

WIDTH, HEIGHT = 1280, 800

# Folded sections are opened first, so that their tables are laid out too.
PROBE = """
<script>
for (const d of document.querySelectorAll('details')) d.open = true;
const summary = document.getElementById('summary');
const links = [...summary.querySelectorAll('a')].map(a => a.getAttribute('href'));
const missing = links.filter(h => !h || !h.startsWith('#') || !document.getElementById(h.slice(1)));
const page = document.documentElement.clientWidth;
const wide = [];
for (const t of document.querySelectorAll('table, pre, figure, svg, img')) {
  const box = t.parentElement.getBoundingClientRect();
  const r = t.getBoundingClientRect();
  if (r.right > page + 1 || r.width > box.width + 1)
    wide.push(t.tagName + (t.className && typeof t.className === 'string' ? '.' + t.className : '') + ' ' + Math.round(r.width) + '>' + Math.round(box.width));
}
// Every element of a summary card against the card's inner box (its
// border box less the border): a table that grows past the card, or a line
// that will not wrap, shows here even when the page itself is not wider.
// Text cut off inside an element (scrolled or hidden) counts too.
const outside = [];
for (const card of summary.querySelectorAll('.headline')) {
  const box = card.getBoundingClientRect();
  const style = getComputedStyle(card);
  const right = box.right - parseFloat(style.borderRightWidth);
  const left = box.left + parseFloat(style.borderLeftWidth);
  for (const e of card.querySelectorAll('*')) {
    const r = e.getBoundingClientRect();
    const name = e.tagName + (e.className && typeof e.className === 'string' ? '.' + e.className : '');
    if (r.width && (r.right > right + 0.5 || r.left < left - 0.5))
      outside.push(card.id + ' ' + name + ' ' + Math.round(r.left) + '-' + Math.round(r.right) + ' outside ' + Math.round(left) + '-' + Math.round(right) + ': ' + e.textContent.trim().slice(0, 60));
    else if (e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflowX !== 'visible')
      outside.push(card.id + ' ' + name + ' cuts off ' + (e.scrollWidth - e.clientWidth) + ' px: ' + e.textContent.trim().slice(0, 60));
  }
  if (right > document.documentElement.clientWidth + 1) outside.push(card.id + ' past the page');
}
const numbers = [...summary.querySelectorAll('td.num')].map(td => td.querySelector('a') ? 'linked' : td.textContent.trim());
document.title = btoa(unescape(encodeURIComponent(JSON.stringify({
  summary_top: summary.getBoundingClientRect().top + window.scrollY,
  summary_bottom: summary.getBoundingClientRect().bottom + window.scrollY,
  links: links, missing: missing, page_width: document.documentElement.scrollWidth,
  wide: wide, outside_card: outside, numbers: numbers,
  text: summary.innerText,
}))));
</script>
"""


def lay_out(html: Path, tmp_path: Path) -> dict:
    """The report's layout facts at 1280 x 800 (see PROBE)."""
    return probed(html, PROBE, tmp_path, WIDTH, HEIGHT)


def probed(html: Path, probe_script: str, tmp_path: Path, width: int, height: int) -> dict:
    """What a probe script (ending in base64 JSON put in the title) reads
    from a page laid out in headless Chromium at width x height."""
    chromium = shutil.which("chromium")
    assert chromium, "chromium is missing: `make test` installs it from Debian's apt"
    probe = tmp_path / "probe.html"
    probe.write_text(html.read_text().replace("</body>", probe_script + "</body>"))
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([chromium, *flags, f"--window-size={width},{height}", "--dump-dom", probe.as_uri()],
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert dom.returncode == 0, dom.stderr[-2000:]
    title = dom.stdout.split("<title>", 1)[1].split("</title>", 1)[0]
    return json.loads(base64.b64decode(title).decode())
