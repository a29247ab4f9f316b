"""The papers' own published numbers beside this machine's, like with like.

The numbers are data (references/papers/<paper>.yaml, each with the seed
line it is printed on; tests/test_references.py holds them to the seed).
Each row sets a paper's number beside this machine's number of the same
kind: the same op and thread step where the paper states them, the
paper's most threads beside this machine's most threads. Absolute numbers
of 2009 hardware do not compare with today's, so "same direction" is
judged only for effects (ratios, changes); an absolute row says "not an
effect", and a row that cannot be measured here, or where the compared
placements coincide, says so instead of reading as a reversal
(`comparison`: the same-direction column in words).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import yaml

from membench.core import paths
from membench.plan import families
from membench.plan import variants as variant_table

PAPERS_DIR = paths.REPO / "references" / "papers"
# The system of McCalpin's table its ratios are taken on (his reference box).
MCCALPIN_REFERENCE = "shanghai_2s"
# The op Colfax prints its numbers for (67 ± 6 GB/s at 20 threads: copy).
COLFAX_OP = "copy"
# The thread step every machine of the Sun table has (1 → 2, as ranges).
SUN_COMMON_STEP = 2
NOT_AN_EFFECT = "not an effect: absolute values across 15 years of hardware"
SPILL_HOWTO = "config/ornl_spill.yaml on two or more"


def load_papers(folder: Path = PAPERS_DIR) -> dict[str, dict]:
    """paper id -> its file, for every paper file there is."""
    return {p.stem: yaml.safe_load(p.read_text()) for p in sorted(folder.glob("*.yaml"))} if folder.is_dir() else {}


def _number(paper: dict, **match) -> dict | None:
    for number in paper.get("numbers", []):
        if all(number.get(k) == v for k, v in match.items()):
            return number
    return None


def _row(paper: dict, what: str, paper_value, unit: str, numbers: list[dict], this_value, note: str = "", *,
         effect: bool = True, comparison: str | None = None) -> dict:
    """One row; same_direction only for an effect measured on both sides
    and not overruled by `comparison` (why the two cannot be compared)."""
    lines = sorted({n["line"] for n in numbers})
    systems = list(dict.fromkeys(n["system"] for n in numbers))
    same = None
    if effect and comparison is None and paper_value is not None and this_value is not None:
        same = (paper_value > _neutral(unit)) == (this_value > _neutral(unit))
    if comparison is None:
        comparison = NOT_AN_EFFECT if not effect else "not measured here" if same is None else "yes" if same else "no"
    return {
        "what": what,
        "paper_value": paper_value,
        "this_value": this_value,
        "unit": unit,
        "paper_system": ", ".join(systems),
        "seed": paper["seed"],
        "lines": lines,
        "source": f"{paper['seed']}, line{'s' if len(lines) > 1 else ''} {', '.join(map(str, lines))}",
        "same_direction": same,
        "comparison": comparison,
        "note": note,
    }


def _neutral(unit: str) -> float:
    return 0.0 if unit == "%" else 1.0


def _detail(finding: dict, test) -> dict | None:
    return next((d for d in finding.get("details", []) if test(d) and d.get("value") is not None), None)


def _change(detail: dict | None) -> float | None:
    return None if detail is None else 100 * (detail["value"] - 1)


def _threads_at(detail: dict) -> float | None:
    threads = (detail.get("at_levels") or {}).get("threads")
    return float(threads) if threads is not None else None


# --- Colfax: placement at the most threads, in the paper's op --------------------------------------------------


def _colfax_where(finding: dict) -> tuple[float | None, str | None]:
    """(most threads, op) of the affinity comparisons: the paper's op where
    measured, else the last op (the one the figures show)."""
    placed = [d for d in finding.get("details", []) if d.get("axis") == "affinity" and d.get("at") != "same CPUs"]
    threads = [t for t in map(_threads_at, placed) if t is not None]
    ops = list(dict.fromkeys(d.get("op") for d in placed))
    return (max(threads) if threads else None), (COLFAX_OP if COLFAX_OP in ops else (ops[-1] if ops else None))


def _affinity_change(finding: dict, level: str, threads, op) -> dict | None:
    return _detail(finding, lambda d: d.get("axis") == "affinity" and d.get("base") == "none" and d.get("level") == level
                   and d.get("at") != "same CPUs" and d.get("op") == op and _threads_at(d) in (threads, None))  # fmt: skip


def _same_cpus(finding: dict, level: str, threads) -> str | None:
    """Why none and `level` cannot differ by placement here: both put one
    thread on every CPU of the machine (answers.same_cpus), else None."""
    pair = next((d for d in finding.get("details", []) if d.get("at") == "same CPUs" and {d.get("base"), d.get("level")} == {"none", level}
                 and _threads_at(d) in (threads, None)), None)  # fmt: skip
    if pair is None:
        return None
    return "not applicable: one node, the same CPUs" if pair.get("one_node") else "not applicable: the same CPUs"


def colfax(paper: dict, finding: dict) -> list[dict]:
    rows = []
    threads, op = _colfax_where(finding)
    where = f"here: {int(threads) if threads else '?'} threads (the most), {op}"
    plus = _number(paper, unit="%", affinity="spread", statistic="mean")
    if plus:
        rows.append(_row(paper, "none → spread (scatter): change of the mean", plus["value"], "%", [plus],
                         _change(_affinity_change(finding, "spread", threads, op)),
                         f"the paper: over the average unpinned run, op and threads unstated; {where}",
                         comparison=_same_cpus(finding, "spread", threads)))  # fmt: skip
    compact = _number(paper, affinity="close", threads=20)
    none20 = _number(paper, affinity="none", threads=20, statistic="mean")
    if compact and none20:
        rows.append(_row(paper, "none → close (compact) at many threads", 100 * (compact["value"] / none20["value"] - 1), "%",
                         [none20, compact], _change(_affinity_change(finding, "close", threads, op)),
                         f"the paper: 20 threads on 4 sockets, copy unpinned; {where}",
                         comparison=_same_cpus(finding, "close", threads)))  # fmt: skip
    std20 = _number(paper, affinity="none", threads=20, statistic="std")
    cv = _detail(finding, lambda d: d.get("unit") == "cv" and d.get("affinity") == "none" and d.get("op") in (op, None)
                 and float(d.get("threads", -1)) == threads)  # fmt: skip
    if std20 and none20:
        rows.append(_row(paper, "run-to-run spread without pinning (std / mean)", 100 * std20["value"] / none20["value"], "% of mean",
                         [none20, std20], None if cv is None else 100 * cv["value"],
                         f"the paper: copy, 20 threads, 1000 runs; {where}" + (f", n={cv['n']}" if cv else ""),
                         effect=False, comparison="a spread: no direction to compare"))  # fmt: skip
    return rows


# --- McCalpin: each version over v001, and each step over the version it adds one feature to ----------------


def _ladder_family() -> str:
    """The family of McCalpin's read-only ladder (the one its paper names)."""
    return families.one(lambda f: f.paper == "mccalpin")


def ladder_steps(table: dict | None = None) -> list[tuple[str, str, str]]:
    """(parent, version, feature) for each version of the read-only ladder
    but the first: the version its description names ("Version010 minus SW
    prefetch"), else the latest earlier version that differs from it in
    one feature alone."""
    table = table or variant_table.load_variants(paths.VARIANTS_FILE)
    declared = table["families"][_ladder_family()]["variants"]
    ladder = sorted(v for v in declared if re.fullmatch(r"v\d{3}", v))
    steps = []
    for i, version in enumerate(ladder[1:], start=1):
        mine = declared[version].get("features", {})
        named = [f"v{n}" for n in re.findall(r"Version(\d{3})", declared[version].get("description", "")) if f"v{n}" != version]
        for parent in [p for p in named if p in declared] + ladder[:i][::-1]:
            theirs = declared[parent].get("features", {})
            differ = [k for k in mine if mine[k] != theirs.get(k)]
            if len(differ) == 1:
                steps.append((parent, version, differ[0]))
                break
    return steps


def _step_words(feature: str, before, after) -> str:
    words = feature.replace("_", " ")
    if isinstance(after, bool):
        return f"{words} {'on' if after else 'off'}"
    return f"{words} {before} → {after}"


def mccalpin(paper: dict, finding: dict, versions: dict[str, float], table: dict | None = None) -> list[dict]:
    """Each version over v001 on his reference system and here; then each
    step (what one feature bought) on both."""
    def his(variant):
        return _number(paper, system=MCCALPIN_REFERENCE, variant=variant)

    def ratio(new, base):
        return versions[new] / versions[base] if versions.get(new) and versions.get(base) else None

    rows = []
    base = his("v001")
    for number in paper.get("numbers", []):
        if base is None or number.get("system") != MCCALPIN_REFERENCE or not number.get("variant") or number["variant"] == "v001":
            continue
        rows.append(_row(paper, f"{number['variant']} / v001", number["value"] / base["value"], "x", [base, number],
                         ratio(number["variant"], "v001"), "single thread, read-only sum"))  # fmt: skip
    table = table or variant_table.load_variants(paths.VARIANTS_FILE)
    declared = table["families"][_ladder_family()]["variants"]
    for parent, version, feature in ladder_steps(table):
        before, after = his(parent), his(version)
        if before and after:
            words = _step_words(feature, declared[parent]["features"][feature], declared[version]["features"][feature])
            rows.append(_row(paper, f"step {version} / {parent} ({words})", after["value"] / before["value"], "x", [before, after],
                             ratio(version, parent), "what one feature bought: the version over the one it changes"))  # fmt: skip
    return rows


# --- Sun: the same thread step on both sides ----------------------------------------------------------------------


def sun(paper: dict, finding: dict) -> list[dict]:
    """Per machine of the paper and thread step 1 → N: its best run and
    range over its one-thread number, beside this machine's 1 → N (ratio
    of geometric means) where it measured N threads. 1 → 2 is in the
    paper for every machine; other steps only where measured here."""
    here = {float(d["level"]): d for d in finding.get("details", [])
            if d.get("axis") == "threads" and str(d.get("base")) in ("1", "1.0") and d.get("value") is not None}  # fmt: skip
    measured = ", ".join(str(int(n)) for n in sorted(here)) or "none"
    rows = []
    for system in paper.get("systems", []):
        mine = [n for n in paper["numbers"] if n["system"] == system["id"] and n.get("threads")]
        one = next((n for n in mine if n["threads"] == 1), None)
        for step in sorted({n["threads"] for n in mine if n["threads"] > 1}):
            if one is None or (step != SUN_COMMON_STEP and float(step) not in here):
                continue
            at = [n for n in mine if n["threads"] == step]
            best = max(n["value"] for n in at)
            low = min(n["value"] for n in at)
            ours = here.get(float(step))
            spread = f"runs ranged {low / one['value']:.2f}–{best / one['value']:.2f}×" if low != best else "one run"
            note = (f"the paper: best run, {spread}; here: 1 → {step} threads, n={ours['n']}" if ours
                    else f"the paper: best run, {spread}; here: {step} threads not measured (1 → {measured})")  # fmt: skip
            rows.append(_row(paper, f"1 → {step} threads ({system['id']})", best / one["value"], "x", [one, *at],
                             None if ours is None else ours["value"], note))  # fmt: skip
    return rows


# --- ORNL: the spill, where it can be measured ----------------------------------------------------------------------


def ornl(paper: dict, finding: dict) -> list[dict]:
    spill = _number(paper, unit="%", op="triad", statistic="max")
    if not spill:
        return []
    sizes = [d for d in finding.get("details", []) if d.get("label", "").startswith("size ")]
    # a decided fall: "the same within the margin" is decided too, and is no fall
    drop = next((d for d in sizes if d.get("answer") == "worse" and d["value"] is not None and d["value"] < 1), None)
    nodes = finding.get("memory_nodes")
    comparison = note = None
    if nodes == 1:
        comparison = f"not measurable: one NUMA node; {SPILL_HOWTO}"
    elif not sizes:
        comparison = f"not measurable: no size sweep; {SPILL_HOWTO} NUMA nodes"
    elif drop is None:
        comparison, note = "not measured here", "here: no decided fall between neighbouring sizes"
    else:
        note = f"here: the first decided fall, {drop['label']}"
    measurable = nodes != 1 and drop is not None
    return [_row(paper, "triad when pages spill off the socket", -spill["value"], "%", [spill],
                 _change(drop) if measurable else None, note or "", comparison=comparison)]  # fmt: skip


# --- AWS: the hierarchy in cycles, loaded latency, cache-to-cache -------------------------------------------------


def _clock(levels: dict | None) -> float | None:
    return ((levels or {}).get("clock") or {}).get("ghz")


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
            rows.append(_row(paper, f"{level} latency", number["value"], "cycles", [number], here,
                             "a generic Xeon server; here: the plateau of the first page size, ns × the measured clock",
                             effect=False))  # fmt: skip
    local, remote = _number(paper, level="local_memory"), _number(paper, level="remote_memory")
    if local:
        rows.append(_row(paper, "local memory latency", local["value"], "ns", [local], finding.get("value"),
                         "a 2016 Xeon server against this machine", effect=False))  # fmt: skip
    if local and remote:
        ratio = _detail(finding, lambda d: d["label"].startswith(("remote against local", "remote pairs against local")))
        rows.append(_row(paper, "remote / local memory latency", remote["value"] / local["value"], "x", [local, remote],
                         None if ratio is None else ratio["value"], "" if ratio else "here: no remote memory measured",
                         comparison=None if ratio else "not measurable: no remote memory here (one NUMA node, or no remote placement)"))  # fmt: skip
    return rows


def aws_loaded(paper: dict, finding: dict) -> list[dict]:
    idle = _number(paper, system="x1_32xl", kernel=families.idle_latency()[0], policy="local")
    loaded = _number(paper, system="x1_32xl", kernel=families.one(lambda f: f.metric == families.LOADED), policy="local")
    ratio = _detail(finding, lambda d: d["label"] == "loaded against idle latency")
    if not (idle and loaded):
        return []
    lighter = "; here at a lighter load: every run of the heaviest was disturbed" if ratio and ratio.get("heaviest_lost") else ""
    return [_row(paper, "loaded / idle latency, local", loaded["value"] / idle["value"], "x", [idle, loaded],
                 None if ratio is None else ratio["value"],
                 "the paper's latencies are lmbench's 64 B stride (prefetched), 7 STREAM copies as load; here the random chase"
                 + lighter)]  # fmt: skip


# The paper's table is of cores sharing one L3; the nearest class that does, in order.
C2C_CLASSES = ("same_l3", "same_l2")


def _c2c_here(finding: dict, op: str) -> dict | None:
    for pair_class in C2C_CLASSES:
        found = _detail(finding, lambda d, c=pair_class: d.get("op") == op and d.get("pair_class") == c)
        if found:
            return found
    return None


def aws_c2c(paper: dict, finding: dict, levels: dict | None = None) -> list[dict]:
    """The paper's modified line is one load of it (MLC's HITM: dirty); its
    "shared" line one load of a clean line another core holds (clean,
    Exclusive there). Cycles = ns × the core clock the chase measured."""
    ghz = _clock(levels)
    rows, here = [], {}
    for level, op, words in (("c2c_modified", "dirty", "modified"), ("c2c_shared", "clean", "clean")):
        number = _number(paper, level=level)
        here[op] = _c2c_here(finding, op)
        if not number:
            continue
        mine = here[op]
        cycles = mine["value"] * ghz if mine and ghz else None
        if mine is None:
            note = f"here: {op} not measured between cores sharing an L3"
        else:
            note = (f"here: {op} {mine['value']:.1f} ns ({mine['pair_class']}, n={mine['n']})"
                    + (f" × {ghz:.2f} GHz" if ghz else "; core clock not measured: no cycles")
                    + (f"; FLAG: {mine['flag']}" if mine.get("flag") else ""))  # fmt: skip
        rows.append(_row(paper, f"load of a line {words} in another core", number["value"], "cycles", [number], cycles, note,
                         effect=False))  # fmt: skip
    modified, shared = _number(paper, level="c2c_modified"), _number(paper, level="c2c_shared")
    if modified and shared:
        both = here.get("dirty") and here.get("clean") and here["dirty"]["pair_class"] == here["clean"]["pair_class"]
        rows.append(_row(paper, "clean (shared) over modified line hand-off", shared["value"] / modified["value"], "x",
                         [modified, shared], here["clean"]["value"] / here["dirty"]["value"] if both else None,
                         f"here: {here['clean']['pair_class']}, clean over dirty" if both else "here: clean and dirty not both measured"))  # fmt: skip
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
        "aws-c2c": lambda: aws_c2c(paper, finding, levels),
    }.get(which, list)()
    return [r for r in rows if not (isinstance(r["paper_value"], float) and math.isnan(r["paper_value"]))]
