"""The findings on the terminal: what `make run` ends with and `make
findings` prints again from stored results. It formats findings.json
(membench.findings.document) and computes nothing: the numbers are the
report's first screen's, with the same rounding (membench.core.text)."""

from __future__ import annotations

import json
from pathlib import Path

from membench.core.text import DASH, number

WIDTH = 25  # the label column


def _value(row: dict) -> str:
    if row["value"] is None:
        return DASH
    return f"{number(row['value'], row.get('digits', 1))} {row['unit']}"


def _runs(row: dict) -> str:
    return f" (n={row['n']})" if row.get("n") else ""


def _group_line(group: str, rows: list[dict]) -> str:
    if group == "hierarchy":
        body = " · ".join(f"{r['what']} {number(r['value'], 1)}" + (f"–{number(r['upto'], 1)}" if r.get("upto") else "") for r in rows) + " ns"
    elif group == "idle latency":
        body = " · ".join(f"{r['what']} {_value(r)} ({r['how'].split(' pages')[0]}{', n=' + str(r['n']) if r.get('n') else ''})" for r in rows)
    elif group == "published machines":
        body = f"{_value(rows[0])} {rows[0]['what']}: {rows[0]['how']}"
    elif rows[0]["value"] is None:
        body = f"{rows[0]['what']}: {rows[0]['how']}"
    else:
        body = " · ".join(f"{r['what']} {_value(r)}{_runs(r)}" for r in rows)
    return f"  {group:<{WIDTH}}{body}"


def summary_lines(findings: dict) -> list[str]:
    """About 15 lines: per system its first-screen numbers, then one line
    per experiment's finding."""
    records = findings["records"]
    lines = [f"This machine was {records['verdict']}." if not records["quiet"] else records["verdict"][:1].upper() + records["verdict"][1:]]
    for system in findings["systems"]:
        lines.append(f"membench findings for {system['system']}: {system['cpu_model']}, {system['cpus']} CPUs, "
                     f"{system['nodes']} NUMA node{'s' if system['nodes'] != 1 else ''}; {records['ok']} ok records, "
                     f"{records['disturbed']} disturbed, {records['skipped']} skipped, {records['failed']} failed")  # fmt: skip
        groups: dict[str, list[dict]] = {}
        for row in system["headline"]:
            groups.setdefault(row["group"], []).append(row)
        lines += [_group_line(group, rows) for group, rows in groups.items()]
        for one in findings["findings"]:
            if one["system"] == system["system"]:
                lines.append(f"  {one['experiment'] + ':':<{WIDTH}}{one['line']}")
    return lines


def print_summary(path: str, report: str | None = None) -> int:
    """The summary of a findings.json, then the report's path; 2 with one
    line when there is none yet."""
    file = Path(path)
    if not file.is_file():
        print(f"no findings at {path}: run `make run` (or figures-only) first")
        return 2
    for line in summary_lines(json.loads(file.read_text())):
        print(line)
    if report:
        print(f"Report: {Path(report).resolve()}")
    return 0
