"""Lay a report out in headless Chromium at 1280 x 800 and read back what a
reader sees: where the summary ends, which of its links lead nowhere, and
what is wider than the page or than its own box. A helper of the report
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
const numbers = [...summary.querySelectorAll('td.num')].map(td => td.querySelector('a') ? 'linked' : td.textContent.trim());
document.title = btoa(unescape(encodeURIComponent(JSON.stringify({
  summary_top: summary.getBoundingClientRect().top + window.scrollY,
  summary_bottom: summary.getBoundingClientRect().bottom + window.scrollY,
  links: links, missing: missing, page_width: document.documentElement.scrollWidth,
  wide: wide, numbers: numbers,
  text: summary.innerText,
}))));
</script>
"""


def lay_out(html: Path, tmp_path: Path) -> dict:
    """The report's layout facts at 1280 x 800 (see PROBE)."""
    chromium = shutil.which("chromium")
    assert chromium, "chromium is missing: `make test` installs it from Debian's apt"
    probe = tmp_path / "probe.html"
    probe.write_text(html.read_text().replace("</body>", PROBE + "</body>"))
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([chromium, *flags, f"--window-size={WIDTH},{HEIGHT}", "--dump-dom", probe.as_uri()],
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert dom.returncode == 0, dom.stderr[-2000:]
    title = dom.stdout.split("<title>", 1)[1].split("</title>", 1)[0]
    return json.loads(base64.b64decode(title).decode())
