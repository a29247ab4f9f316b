"""What a failed step has to tell the user, said last on the terminal.

A job's own output scrolls away under Snakemake's error box (about 150
input paths for collect); a step that fails for a reason the user must act
on (damaged stored runs, a full disk, a bad probe) also leaves its message
here, and the workflow's onerror handler prints every message after
Snakemake's boxes, as the run's last lines.
"""

from __future__ import annotations

import os
from pathlib import Path

from membench.core import results_files
from membench.core.atomic_files import write_text_atomic

FILE = Path(".snakemake/membench/last_words.txt")


def leave(text: str, where: Path = FILE) -> None:
    """Append one message (one or more lines); never fails the caller."""
    try:
        where.parent.mkdir(parents=True, exist_ok=True)
        with open(where, "a") as fh:
            fh.write(text.rstrip("\n") + "\n\0")
    except OSError:
        pass  # a full disk: the message is still in the job's own output


def take(where: Path = FILE) -> list[str]:
    """Every message left since the last take, once each; the file is gone after."""
    try:
        text = where.read_text(errors="replace")
        os.unlink(where)
    except OSError:
        return []
    seen, messages = set(), []
    for message in (m.strip("\n") for m in text.split("\0")):
        if message and message not in seen:
            seen.add(message)
            messages.append(message)
    return messages


def after_failure(report: str | Path = "results/report.html", where: Path = FILE) -> list[str]:
    """What the workflow's onerror handler says, whatever step failed (a
    round, collect, a figure, the report): the messages the steps left,
    then, when the report was still in place, the line saying it was set
    aside (a failed run leaves no report that looks current)."""
    messages = take(where)
    if Path(report).exists() and not Path(report).is_symlink():
        aside = set_report_aside(report, "a step of the run failed")
        if aside:
            messages.append(aside)
    return messages


STALE_BANNER = (
    '<div id="stale-report" style="background:#b00020;color:#fff;padding:1em;font:bold 1.1em sans-serif">'
    "STALE: this report shows the stored runs as they were before a failed run ({why}); it is not "
    "current. Fix what the run's last lines said and rerun: the report is then rebuilt as "
    "results/report.html.</div>"
)


def set_report_aside(report: str | Path, why: str) -> str | None:
    """A failed step leaves no report that looks current: results/report.html
    becomes results/report-stale.html, with a banner at its top saying so.
    Returns the line that says it on the terminal (None: there was no report)."""
    report = Path(report)
    stale = report.with_name(report.stem + "-stale" + report.suffix)
    if not report.exists():
        return f"no current report: {stale} (marked STALE) predates this failure" if stale.exists() else None
    banner = STALE_BANNER.format(why=why.replace("<", "&lt;"))
    try:
        html = results_files.read_text(report, report.parent, errors="replace")
        head, body, rest = html.partition("<body")
        if body:
            tag_end = rest.index(">") + 1
            html = head + body + rest[:tag_end] + banner + rest[tag_end:]
        else:
            html = banner + html
        write_text_atomic(stale, html)  # replaces a link there, never writes through it
        report.unlink()
    except OSError:
        try:
            os.replace(report, stale)  # no room for the banner: the name says it
        except OSError:
            return f"{report} could not be set aside: it is NOT current (it predates this failure)"
    return f"{report} is not current: set aside as {stale} (marked STALE at its top)"
