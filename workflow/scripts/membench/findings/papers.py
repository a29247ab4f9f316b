"""The papers' own published numbers beside this machine's.

The numbers are data (references/papers/<paper>.yaml, each with the seed
line it is printed on; tests/test_references.py holds them to the seed).
Absolute numbers of 2009 hardware do not compare with today's, so each
row compares a shape: a ratio to the paper's own baseline (its first
version, its fewest threads, its unpinned mean) and the direction of the
effect, beside the same ratio measured here.
"""

from __future__ import annotations

import math
from pathlib import Path

import yaml

from membench.core import paths

PAPERS_DIR = paths.REPO / "references" / "papers"
# The system of McCalpin's table its ratios are taken on (his reference box).
MCCALPIN_REFERENCE = "shanghai_2s"


def load_papers(folder: Path = PAPERS_DIR) -> dict[str, dict]:
    """paper id -> its file, for every paper file there is."""
    return {p.stem: yaml.safe_load(p.read_text()) for p in sorted(folder.glob("*.yaml"))} if folder.is_dir() else {}


def _number(paper: dict, **match) -> dict | None:
    for number in paper.get("numbers", []):
        if all(number.get(k) == v for k, v in match.items()):
            return number
    return None


def _row(paper: dict, what: str, paper_value, unit: str, numbers: list[dict], this_value, note: str = "") -> dict:
    lines = sorted({n["line"] for n in numbers})
    systems = list(dict.fromkeys(n["system"] for n in numbers))
    return {
        "what": what,
        "paper_value": paper_value,
        "this_value": this_value,
        "unit": unit,
        "paper_system": ", ".join(systems),
        "seed": paper["seed"],
        "lines": lines,
        "source": f"{paper['seed']}, line{'s' if len(lines) > 1 else ''} {', '.join(map(str, lines))}",
        "same_direction": None if paper_value is None or this_value is None
        else (paper_value > _neutral(unit)) == (this_value > _neutral(unit)),
        "note": note,
    }  # fmt: skip


def _neutral(unit: str) -> float:
    return 0.0 if unit == "%" else 1.0


def _detail(finding: dict, test) -> dict | None:
    return next((d for d in finding.get("details", []) if test(d) and d.get("value") is not None), None)


def _change(detail: dict | None) -> float | None:
    return None if detail is None else 100 * (detail["value"] - 1)


def colfax(paper: dict, finding: dict) -> list[dict]:
    rows = []
    plus = _number(paper, unit="%", affinity="spread", statistic="mean")
    spread = _detail(finding, lambda d: d.get("axis") == "affinity" and d.get("base") == "none" and d.get("level") == "spread")
    if plus:
        rows.append(_row(paper, "none → spread (scatter): change of the mean", plus["value"], "%", [plus], _change(spread),
                         "the paper: over the average unpinned run, op and threads unstated; here: the most threads, last op"))  # fmt: skip
    compact = _number(paper, affinity="close", threads=20)
    none20 = _number(paper, affinity="none", threads=20, statistic="mean")
    close = _detail(finding, lambda d: d.get("axis") == "affinity" and d.get("base") == "none" and d.get("level") == "close")
    if compact and none20:
        rows.append(_row(paper, "none → close (compact) at many threads", 100 * (compact["value"] / none20["value"] - 1), "%",
                         [none20, compact], _change(close), "the paper: 20 threads on 4 sockets; here: the most threads"))  # fmt: skip
    std20 = _number(paper, affinity="none", threads=20, statistic="std")
    cv = _detail(finding, lambda d: d.get("unit") == "cv" and "affinity none" in d["label"])
    if std20 and none20:
        rows.append(_row(paper, "run-to-run spread without pinning (std / mean)", 100 * std20["value"] / none20["value"], "% of mean",
                         [none20, std20], None if cv is None else 100 * cv["value"], "copy, 20 threads, 1000 runs"))  # fmt: skip
    return rows


def mccalpin(paper: dict, finding: dict, versions: dict[str, float]) -> list[dict]:
    """Each version's bandwidth over v001's, on his reference system and here."""
    base = _number(paper, system=MCCALPIN_REFERENCE, variant="v001")
    mine = versions.get("v001")
    rows = []
    for number in paper.get("numbers", []):
        if number.get("system") != MCCALPIN_REFERENCE or not number.get("variant") or number["variant"] == "v001" or base is None:
            continue
        here = versions.get(number["variant"])
        rows.append(_row(paper, f"{number['variant']} / v001", number["value"] / base["value"], "x", [base, number],
                         None if here is None or not mine else here / mine, "single thread, read-only sum"))  # fmt: skip
    return rows


def sun(paper: dict, finding: dict) -> list[dict]:
    """Per machine of the paper: the bandwidth at its most threads over one thread."""
    scaling = max((d for d in finding.get("details", []) if d.get("axis") == "threads" and d.get("value")),
                  key=lambda d: float(d["level"]), default=None)  # fmt: skip
    rows = []
    for system in paper.get("systems", []):
        mine = [n for n in paper["numbers"] if n["system"] == system["id"] and n.get("threads")]
        one = next((n for n in mine if n["threads"] == 1), None)
        top = max((n for n in mine if n.get("statistic") in ("max", "single")), key=lambda n: n["threads"], default=None)
        if one and top and top["threads"] > 1:
            rows.append(_row(paper, f"1 → {top['threads']} threads ({system['id']}, best run)", top["value"] / one["value"], "x",
                             [one, top], None if scaling is None else scaling["value"],
                             f"here: 1 → {scaling['level'] if scaling else '?'} threads, medians"))  # fmt: skip
    return rows


def ornl(paper: dict, finding: dict) -> list[dict]:
    spill = _number(paper, unit="%", op="triad", statistic="max")
    drop = _detail(finding, lambda d: d["label"].startswith("size ") and d.get("decided") and d["value"] < 1)
    if not spill:
        return []
    return [_row(paper, "triad when pages spill off the socket", -spill["value"], "%", [spill], _change(drop),
                 "here: the first decided fall between neighbouring sizes" if drop else
                 "here: no decided fall (a size sweep past one node shows it)")]  # fmt: skip


def aws_latency(paper: dict, finding: dict, levels: dict | None) -> list[dict]:
    rows = []
    mine = {}
    for row in (levels or {}).get("rows", []):
        one = next(iter(row["per_pages"].values()), None)
        if one:
            mine[row["level"]] = one
    for level in ("L1", "L2", "L3"):
        number = _number(paper, level=level)
        if number:
            here = mine.get(level, {}).get("cycles")
            rows.append(_row(paper, f"{level} latency", number["value"], "cycles", [number], here, "a generic Xeon server"))
    local, remote = _number(paper, level="local_memory"), _number(paper, level="remote_memory")
    if local:
        rows.append(_row(paper, "local memory latency", local["value"], "ns", [local], finding.get("value"),
                         "absolute: a 2016 Xeon server against this machine"))  # fmt: skip
    if local and remote:
        ratio = _detail(finding, lambda d: d["label"].startswith(("remote against local", "remote pairs against local")))
        rows.append(_row(paper, "remote / local memory latency", remote["value"] / local["value"], "x", [local, remote],
                         None if ratio is None else ratio["value"], "" if ratio else "here: one node, no remote memory"))  # fmt: skip
    return rows


def aws_loaded(paper: dict, finding: dict) -> list[dict]:
    idle = _number(paper, system="x1_32xl", kernel="chase", policy="local")
    loaded = _number(paper, system="x1_32xl", kernel="loaded", policy="local")
    ratio = _detail(finding, lambda d: d["label"] == "loaded against idle latency")
    if not (idle and loaded):
        return []
    return [_row(paper, "loaded / idle latency, local", loaded["value"] / idle["value"], "x", [idle, loaded],
                 None if ratio is None else ratio["value"],
                 "the paper's latencies are lmbench's 64 B stride (prefetched), 7 STREAM copies as load; here the random chase")]  # fmt: skip


def aws_c2c(paper: dict, finding: dict) -> list[dict]:
    rows = []
    # the paper's modified line is one load of it (MLC's HITM: dirty); its
    # "shared" line is one load of a clean line another core holds (clean, Exclusive there)
    for level, op in (("c2c_modified", "dirty"), ("c2c_shared", "clean")):
        number = _number(paper, level=level)
        here = _detail(finding, lambda d, op=op: d.get("op") == op)
        if number:
            rows.append(_row(paper, f"load of a line {'modified' if op == 'dirty' else 'clean'} in another core", number["value"],
                             "cycles", [number], None, f"here: {op} {here['value']:.1f} ns ({here['pair_class']})" if here
                             else f"here: {op} not measured"))  # fmt: skip
    return rows


def beside(finding: dict, papers: dict[str, dict], versions: dict[str, float], levels: dict | None) -> list[dict]:
    """The paper's rows for one finding (none for MLC's mixes: no paper)."""
    which = finding["paper"]
    paper = papers.get(which.split("-")[0])
    if paper is None:
        return []
    rows = {
        "colfax": lambda: colfax(paper, finding),
        "mccalpin": lambda: mccalpin(paper, finding, versions),
        "sun": lambda: sun(paper, finding),
        "ornl": lambda: ornl(paper, finding),
        "aws-latency": lambda: aws_latency(paper, finding, levels),
        "aws-loaded": lambda: aws_loaded(paper, finding),
        "aws-c2c": lambda: aws_c2c(paper, finding),
    }.get(which, list)()
    return [r for r in rows if not (isinstance(r["paper_value"], float) and math.isnan(r["paper_value"]))]
