"""The findings on the terminal: what `make run` ends with and `make
findings` prints again from stored results. It formats findings.json
(membench.findings.document) and computes nothing: the numbers are the
report's first screen's, with the same rounding (membench.core.text)."""

from __future__ import annotations

import json
from pathlib import Path

from membench.core.text import DASH, WRITE_ALLOCATE_CAVEAT, number

WIDTH = 25  # the label column


BOUND_SIGN = {"at least": "≥ ", "at most": "≤ "}


def _value(row: dict) -> str:
    if row["value"] is None:
        return DASH
    return f"{BOUND_SIGN.get(row.get('bound'), '')}{number(row['value'], row.get('digits', 1))} {row['unit']}"


def _runs(row: dict) -> str:
    return f" (n={row['n']})" if row.get("n") else ""


def _flag(row: dict) -> str:
    """The report's flag of a row ("⚑ ..."), said on the terminal too."""
    return f" {row['flag']}" if row.get("flag") else ""


def _bandwidth(row: dict) -> str:
    """"stream triad 99.6 GB/s (n=2; traffic 132.8 modelled*)": the STREAM
    count, its op where the family has several, the modelled traffic."""
    op = f" {row['op']}" if row.get("op") and row["op"] != row["what"] else ""
    notes = [f"n={row['n']}"] if row.get("n") else []
    if row.get("traffic_gbps") and row["value"] and abs(row["traffic_gbps"] / row["value"] - 1) > 0.005:
        notes.append(f"traffic {number(row['traffic_gbps'], 1)} modelled*")
    notes += [row["flag"]] if row.get("flag") else []
    return f"{row['what']}{op} {_value(row)}" + (f" ({'; '.join(notes)})" if notes else "")


def _concurrency(row: dict) -> str:
    """"at the highest 319.0 lines (daxpy 88.8 GB/s read × loaded latency 230.0 ns)"."""
    if row["value"] is None:
        return f"{row['what']}: {row['how']}"
    kind = "; a lower bound" if row.get("bound") else ""
    return (f"{row['what']} {_value(row)} ({row['of']} {number(row['traffic_gbps'], 1)} GB/s read × "
            f"{row['latency_kind']} latency {number(row['latency_ns'], 1)} ns{kind})")


def _group_line(group: str, rows: list[dict]) -> str:
    if group == "hierarchy":
        body = " · ".join(f"{r['what']} {number(r['value'], 1)}" + (f"–{number(r['upto'], 1)}" if r.get("upto") else "") + _flag(r)
                          for r in rows) + " ns"  # fmt: skip
    elif group == "idle latency":
        body = " · ".join(f"{r['what']} {_value(r)} ({r['how'].split(' pages')[0]}{', n=' + str(r['n']) if r.get('n') else ''}{_flag(r)})"
                          for r in rows)  # fmt: skip
    elif group == "published machines":
        body = f"{_value(rows[0])} {rows[0]['what']}: {rows[0]['how']}" if rows[0]["value"] is not None else f"{rows[0]['what']}: {rows[0]['how']}"
    elif group == "effective concurrency":
        body = _concurrency(rows[0])
    elif rows[0]["value"] is None:
        body = f"{rows[0]['what']}: {rows[0]['how']}"
    elif rows[0].get("unit") == "GB/s" and "op" in rows[0]:
        body = " · ".join(_bandwidth(r) for r in rows)
    else:
        body = " · ".join(f"{r['what']} {_value(r)}{_runs(r)}{_flag(r)}" for r in rows)
    return f"  {group:<{WIDTH}}{body}"


def _model_note(rows: list[dict]) -> list[str]:
    """The write-allocate caveat, once, under the lines that mark a traffic with *."""
    if not any("modelled*" in _bandwidth(r) for r in rows if r.get("unit") == "GB/s" and "op" in r):
        return []
    return [f"  {'':<{WIDTH}}* memory traffic by the {WRITE_ALLOCATE_CAVEAT}"]


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
        lines += _model_note(system["headline"])
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
