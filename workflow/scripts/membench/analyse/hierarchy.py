"""The memory-hierarchy table (the AWS paper's first table), derived from
the chase's working-set sweep.

Levels come from the data: the sweep's latency curve is cut into plateaus
(runs of points whose latency stays flat). Memory is the median of the
sweep points at or past 8 x the LLC, the one rule it shares with the idle
latency (membench.analyse.concurrency.memory_latency, issue 38: a plateau
opening at 2-4 x the LLC takes in points where some lines still hit).
A sweep that stops short of 8 x the LLC falls back to the final flat
plateau that extends to the largest working set, past the sysfs last-level
cache (issue 30) or past a plateau of every cache level sysfs names (the
caches end early), flagged unless the sweep held flat by its stop rule
(membench.plan.latency_sweep, docs/latency_sweep.md, issue 41): where it begins well before the sysfs LLC (a
VM's share of a host L3 ends early), the row says so with both figures. The other plateaus
are named by the cache sizes sysfs reports, which are annotations: the
smallest level whose size holds the plateau's last working set. A level
with no plateau is "not found" (memory: "could not be reached" when the
sweep never passed the LLC), a second plateau within one level is shown as
unassigned: nothing is filled in from what a level should be.
Cycles are ns x the core clock measured by the chase itself (a dependent
add chain: a VM has no cycle counters to read), and said so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from membench.analyse.concurrency import PAGE_BYTES, memory_latency, memory_latency_text
from membench.plan.grammar import DEFAULT_CHASE_GROUP, DEFAULT_CHASE_SPACING, group_text, size_text
from membench.plan import families, latency_sweep
from membench.core.text import percent

# A point belongs to the plateau in hand while its latency lies within
# FLAT of the plateau's median (in log terms); one stray point is forgiven
# when the point after it is back within FLAT (a noisy repetition is not a
# level), and neighbouring plateaus within FLAT of each other are one.
# Caches differ by 2-10x; noise and the gentle TLB slope inside a level by
# far less.
FLAT = 0.25
MEMORY = "memory"
# An idle (memory) latency counts as past the caches when its working set
# (in touched lines) is past this many times the LLC instance the chasing
# CPU uses; the default sweep (size: auto) reaches it.
LLC_REACH = 8
# The memory plateau begins "well before" the sysfs LLC at this share of it or below.
WELL_BEFORE = 0.5


@dataclass(frozen=True)
class Plateau:
    first_bytes: int
    last_bytes: int
    next_bytes: int | None  # the first working set past the plateau (None: the sweep ended)
    ns: float  # median of the plateau's points
    points: int


def _segments(y: np.ndarray, tolerance: float) -> list[list[int]]:
    segments, current = [], [0]
    i = 1
    while i < len(y):
        centre = np.median(y[current])
        if abs(y[i] - centre) < tolerance:
            current.append(i)
        elif i + 1 < len(y) and abs(y[i + 1] - centre) < tolerance:
            current += [i, i + 1]  # a stray point between two that agree
            i += 1
        else:
            segments.append(current)
            current = [i]
        i += 1
    segments.append(current)
    merged = [segments[0]]
    for segment in segments[1:]:
        if abs(np.median(y[segment]) - np.median(y[merged[-1]])) < tolerance:
            merged[-1] = merged[-1] + segment
        else:
            merged.append(segment)
    return merged


def plateaus(working_sets, ns, flat: float = FLAT) -> list[Plateau]:
    """Runs of at least two sweep points with flat latency (see FLAT), in
    order of working set."""
    order = np.argsort(np.asarray(working_sets, dtype=float))
    ws = np.asarray(working_sets, dtype=float)[order]
    y = np.log(np.asarray(ns, dtype=float)[order])
    if len(ws) == 0:
        return []
    found = []
    for segment in _segments(y, math.log1p(flat)):
        if len(segment) < 2:
            continue
        last = segment[-1]
        found.append(
            Plateau(
                first_bytes=int(ws[segment[0]]),
                last_bytes=int(ws[last]),
                next_bytes=int(ws[last + 1]) if last + 1 < len(ws) else None,
                ns=float(np.median(np.exp(y[segment]))),
                points=len(segment),
            )
        )
    return found


def cache_levels(topology: dict) -> list[tuple[str, int]]:
    """("L1", bytes), ("L2", bytes), ... of the first CPU's data and unified caches."""
    sizes = {}
    for cache in topology.get("caches", []):
        if cache.get("type") in ("Data", "Unified"):
            sizes[int(cache["level"])] = int(cache["size_bytes"])
    return [(f"L{level}", sizes[level]) for level in sorted(sizes)]


def memory_plateau(found: list[Plateau], levels: list[tuple[str, int]]) -> Plateau | None:
    """The final flat plateau, when it extends to the largest working set
    and that lies past the sysfs last-level cache, or when every cache level
    sysfs names had its own plateau before it (the caches ended early; the
    sweep's stop rule ends it there): memory, wherever the plateau begins
    (the sysfs sizes are annotations)."""
    if not found or found[-1].next_bytes is not None:
        return None
    llc = levels[-1][1] if levels else 0
    every_level = bool(levels) and len(found) - 1 >= len(levels)
    return found[-1] if found[-1].last_bytes > llc or every_level else None


def name_plateaus(found: list[Plateau], levels: list[tuple[str, int]]) -> dict[str, Plateau | None]:
    """Each cache level and memory -> its plateau or None: memory the final
    plateau (memory_plateau), each cache level the first of the others that
    falls in it; plateaus that fall in an already named level, or past the
    LLC without reaching the end of the sweep, are returned under
    "unassigned N"."""
    named: dict[str, Plateau | None] = {name: None for name, _ in levels}
    memory = memory_plateau(found, levels)
    named[MEMORY] = memory
    extra = 0
    for plateau in found:
        if plateau is memory:
            continue
        level = next((name for name, size in levels if plateau.last_bytes <= size), MEMORY)
        if level == MEMORY and levels and plateau.first_bytes < levels[-1][1]:
            level = "unassigned"  # straddles the last-level cache: neither cache nor memory
        if level != "unassigned" and named.get(level) is None:
            named[level] = plateau
        else:
            extra += 1
            named[f"unassigned {extra}"] = plateau
    return named


def memory_reach(largest: int | None, llc: int | None, held: bool = False) -> str | None:
    """Why a memory latency at this working set (bytes of lines) may not be
    past the caches, or None when it is: at least LLC_REACH x the LLC, or
    the sweep held flat past the caches by its stop rule (`held`)."""
    if held or not llc or largest is None or largest >= LLC_REACH * llc:
        return None
    return (
        f"⚑ largest working set {size_text(largest)} of lines is short of {LLC_REACH} × the LLC "
        f"({size_text(LLC_REACH * llc)}; sysfs LLC {size_text(llc)})"
    )


def memory_derivation(plateau: Plateau | None, llc: int | None, largest: int | None, before: Plateau | None, note: str = "",
                      held: bool = False) -> str:
    """How the memory row was found, or why it was not."""
    if plateau is None:
        if largest is not None and llc and largest <= llc:
            return (
                f"could not be reached: the sweep ends at {size_text(largest)}{note}, not past the last-level cache "
                f"(sysfs {size_text(llc)}); size: auto sweeps to {LLC_REACH} × the LLC"
            )
        if largest is not None:
            return f"no flat plateau reaching the largest working set ({size_text(largest)}{note}) past the last-level cache: not found"
        return "no plateau found"
    text = (
        f"final plateau {size_text(plateau.first_bytes)}–{size_text(plateau.last_bytes)}{note} ({plateau.points} points), "
        "to the largest working set"
    )
    if llc:
        text += (
            f", past the sysfs LLC {size_text(llc)}" if plateau.last_bytes > llc
            else f", before the sysfs LLC {size_text(llc)} but past a plateau of every cache level sysfs names"
        )
        if plateau.first_bytes <= WELL_BEFORE * llc:
            cache_end = before.last_bytes if before is not None else None
            text += (
                f"; the caches end well before sysfs says: memory latency from {size_text(plateau.first_bytes)} of lines"
                + (f" (the last cache plateau ends at {size_text(cache_end)})" if cache_end else "")
                + f" against a sysfs LLC of {size_text(llc)}: an effective cache smaller than reported (a VM's share of a host L3?)"
            )
    if held:
        text += (
            f"; the sweep stopped once it held within {percent(latency_sweep.HELD, spaced=False)} over {latency_sweep.SPAN_OCTAVES} "
            "doublings past the caches (docs/latency_sweep.md)"
        )
    if (flag := memory_reach(largest, llc, held)) is not None:
        text += f"; {flag}"
    return text


def derivation(name: str, plateau: Plateau | None, sizes: dict[str, int], largest: int | None, note: str = "") -> str:
    """How a row was found; sizes are bytes of lines touched (`note` says
    so when they differ from the working set's span)."""
    if plateau is None:
        if name == MEMORY and largest is not None:
            return memory_derivation(None, max(sizes.values(), default=None), largest, None, note)
        return "no plateau found" + (f" (sysfs {size_text(sizes[name])})" if name in sizes else "")
    text = f"plateau {size_text(plateau.first_bytes)}–{size_text(plateau.last_bytes)}{note} ({plateau.points} points)"
    if plateau.next_bytes is not None:
        text += f", rises by {size_text(plateau.next_bytes)}"
    if name in sizes:
        text += f"; sysfs {size_text(sizes[name])}"
    return text


def sweep_curves(cells: pd.DataFrame) -> pd.DataFrame:
    """The random chase's sweep points (median over repetitions) per system
    and page size, local placement, in the default 256 KiB groups when
    those were measured."""
    kernel, op = families.idle_latency()
    chase = cells[(cells["kernel"] == kernel) & (cells["op"] == op) & (cells["n_ok"] > 0)]
    if chase.empty or "ns_median" not in chase:
        return chase.iloc[0:0]
    chase = chase[chase["policy_requested"].isin(["default", "local"])]
    if "chase_group_requested" in chase:
        default = chase["chase_group_requested"].map(lambda g: not pd.isna(g) and group_text(g) == group_text(DEFAULT_CHASE_GROUP))
        has_default = default.groupby([chase["system"], chase["pages"]]).transform("any")
        chase = chase[default | ~has_default]
    if "chase_spacing_requested" in chase:  # one spacing per curve: the default when measured
        spacing = chase["chase_spacing_requested"]
        default = spacing == DEFAULT_CHASE_SPACING
        has_default = default.groupby([chase["system"], chase["pages"]]).transform("any")
        chase = chase[default | ~has_default | spacing.isna()]
    return chase


def touched_bytes(working_sets: pd.Series, spacing, line_bytes: int) -> pd.Series:
    """The bytes of cache lines a chase over these working sets touches: one
    line per pointer, one pointer per `spacing` bytes (records from before
    the spacing axis had a pointer in every line). Caches hold lines, so the
    levels are named by these, not by the span."""
    if spacing is None or pd.isna(spacing) or spacing <= line_bytes:
        return working_sets
    return working_sets * line_bytes // int(spacing)


def matrix_memory_rows(cells: pd.DataFrame, system: str) -> dict[str, dict[str, dict]]:
    """Local and remote memory from a node x node latency matrix (chase
    cells with affinity node:I and policy bind:J, at their largest working
    set): level -> pages -> {"ns", "derivation"}; empty when none was
    measured."""
    kernel, op = families.idle_latency()
    chase = cells[(cells["system"] == system) & (cells["kernel"] == kernel) & (cells["op"] == op) & (cells["n_ok"] > 0)]
    if chase.empty or "ns_median" not in chase or "affinity" not in chase:
        return {}
    chase = chase.reset_index(drop=True)
    cpu = chase["affinity"].astype(str).str.extract(r"^node:(\d+)$")[0]
    mem = chase["policy_requested"].astype(str).str.extract(r"^bind:(\d+)$")[0]
    pairs = chase[cpu.notna() & mem.notna()].assign(cpu_node=cpu, memory_node=mem)
    if pairs.empty:
        return {}
    largest = pairs.groupby("cell")["working_set_bytes"].transform("max")
    pairs = pairs[pairs["working_set_bytes"] == largest]
    rows: dict[str, dict[str, dict]] = {}
    for level, mine in (("local memory", pairs[pairs["cpu_node"] == pairs["memory_node"]]),
                        ("remote memory", pairs[pairs["cpu_node"] != pairs["memory_node"]])):  # fmt: skip
        for pages, part in mine.groupby("pages", sort=False):
            ns = part["ns_median"]
            rows.setdefault(level, {})[pages] = {
                "ns": float(ns.median()),
                "derivation": (
                    f"node matrix: median of {len(part)} {level.split()[0]} pair{'s' if len(part) != 1 else ''} "
                    f"({ns.min():.1f}–{ns.max():.1f} ns), {size_text(int(part['working_set_bytes'].max()))}"
                ),
            }
    return rows


def policy_memory_rows(cells: pd.DataFrame, system: str, levels: list[tuple[str, int]], line_bytes: int) -> dict[str, dict[str, dict]]:
    """Local and remote memory from chase sweeps under `policy: local` and
    `policy: remote` (issue 30: not only from node x node matrices): the
    memory plateau of each sweep (the final flat plateau past the LLC),
    level -> pages -> {"ns", "derivation"}; empty when none was measured."""
    chase = cells[(cells["system"] == system) & (cells["kernel"] == "chase") & (cells["op"] == "random") & (cells["n_ok"] > 0)]
    if chase.empty or "ns_median" not in chase:
        return {}
    rows: dict[str, dict[str, dict]] = {}
    llc = levels[-1][1] if levels else None
    for policy, level in (("local", "local memory"), ("remote", "remote memory")):
        mine = chase[chase["policy_requested"] == policy]
        for pages, points in mine.groupby("pages", sort=False):
            spacing = points["chase_spacing_requested"].iloc[0] if "chase_spacing_requested" in points else None
            curve = points.groupby("working_set_bytes")["ns_median"].median().dropna()  # a point whose every run was disturbed has no number
            if curve.empty:  # every point of this page size disturbed: its column reads "not found"
                continue
            lines = touched_bytes(pd.Series(curve.index, index=curve.index), spacing, line_bytes)
            found = plateaus(lines.values, curve.values)
            memory = memory_plateau(found, levels)
            text = memory_derivation(memory, llc, _largest(lines), None, " of lines" if lines.ne(curve.index.to_series()).any() else "")
            rows.setdefault(level, {})[pages] = {"ns": memory.ns if memory else None, "derivation": f"policy {policy}: {text}"}
    return rows


def _largest(lines: pd.Series) -> int | None:
    """The sweep's largest point in lines; None when no point has a value
    (every repetition of the curve disturbed)."""
    return int(lines.max()) if len(lines) and lines.notna().any() else None


def _cycles(ns: float | None, ghz: float | None) -> float | None:
    return None if ns is None or ghz is None else ns * ghz


def _derivations(per_pages: dict[str, dict], pages: list[str]) -> list[str]:
    """How a row was found: one line when every page size says the same
    (a cache-to-cache hand-off has no page size), else one per page size."""
    texts = {page: per_pages[page]["derivation"] for page in pages if page in per_pages}
    if len(set(texts.values())) == 1 and len(texts) == len(pages):
        return [next(iter(texts.values()))]
    return [f"{page}: {text}" for page, text in texts.items()]


def hierarchy(
    cells: pd.DataFrame,
    topologies: dict[str, dict],
    clocks: dict[str, dict] | None = None,
    extra_rows: dict[str, dict[str, dict]] | None = None,
) -> list[dict]:
    """Per system: the levels found per page size, each with ns, cycles and
    the derivation. clocks: system -> {"ghz": float | None, "source": str};
    extra_rows: system -> level -> {"ns", "derivation"}, rows measured
    without a page size (cache-to-cache hand-offs), shown for every one."""
    curves = sweep_curves(cells)
    systems = list(dict.fromkeys([*curves["system"], *(extra_rows or {})]))
    systems += [s for s in dict.fromkeys(cells["system"]) if s not in systems and matrix_memory_rows(cells, s)]
    systems += [
        s for s in dict.fromkeys(cells["system"])
        if s not in systems and policy_memory_rows(cells, s, cache_levels(topologies.get(s, {})), 64)
    ]  # fmt: skip
    out = []
    for system in systems:
        mine = curves[curves["system"] == system]
        levels = cache_levels(topologies.get(system, {}))
        sizes = dict(levels)
        clock = (clocks or {}).get(system) or {"ghz": None, "source": "core clock not measured: cycles not shown"}
        pages = sorted(dict.fromkeys(mine["pages"]), key=lambda p: PAGE_BYTES.get(p, math.inf))  # 4k first
        rows: dict[str, dict] = {}
        line_bytes = int(topologies.get(system, {}).get("line_bytes") or 64)
        for page in pages:
            points = mine[mine["pages"] == page]
            spacing = points["chase_spacing_requested"].iloc[0] if "chase_spacing_requested" in points else None
            curve = points.groupby("working_set_bytes")["ns_median"].median().dropna()  # a point whose every run was disturbed has no number
            if curve.empty:  # every point of this page size disturbed: its column reads "not found"
                continue
            lines = touched_bytes(pd.Series(curve.index, index=curve.index), spacing, line_bytes)
            found = plateaus(lines.values, curve.values)
            named = name_plateaus(found, levels)
            held = named[MEMORY] is not None and latency_sweep.answer_in(
                lines.values, curve.values, len(levels), levels[-1][1] if levels else None
            )
            note = (
                f" of lines (one pointer per {int(spacing)} B: spans {int(spacing) // line_bytes}× larger)"
                if lines.ne(curve.index.to_series()).any() else ""
            )
            llc = levels[-1][1] if levels else None
            past_llc = memory_latency(lines, curve, llc)
            for name, plateau in named.items():
                row = rows.setdefault(name, {"level": name, "per_pages": {}})
                ns = plateau.ns if plateau else None
                if name == MEMORY and past_llc is not None and plateau is not None:  # a curve still rising is no memory row
                    llc_plateau = named.get(levels[-1][0]) if levels else None
                    ns, text = past_llc["ns"], memory_latency_text(past_llc, llc, llc_plateau.ns if llc_plateau else None) + note
                elif name == MEMORY:
                    before = found[found.index(plateau) - 1] if plateau is not None and found.index(plateau) > 0 else None
                    text = memory_derivation(plateau, llc, _largest(lines), before, note, held)
                else:
                    text = derivation(name, plateau, sizes, _largest(lines), note)
                row["per_pages"][page] = {
                    "ns": ns,
                    "cycles": _cycles(ns, clock["ghz"]),
                    "derivation": text,
                    **({"flag": memory_reach(_largest(lines), llc, held), "largest_lines": _largest(lines),
                        "reached": ns is not None or not llc or _largest(lines) > llc} if name == MEMORY else {}),
                }  # fmt: skip
        matrix_rows = matrix_memory_rows(cells, system)
        for level, per_pages in policy_memory_rows(cells, system, levels, line_bytes).items():
            matrix_rows.setdefault(level, per_pages)  # a node matrix, where measured, gives these rows
        for per_pages in matrix_rows.values():
            pages += [page for page in per_pages if page not in pages]
        pages = pages or ["4k"]
        for level, per_pages in matrix_rows.items():
            row = rows.setdefault(level, {"level": level, "per_pages": {}})
            for page, one in per_pages.items():
                row["per_pages"][page] = {**one, "cycles": _cycles(one["ns"], clock["ghz"])}
        extra = (extra_rows or {}).get(system, {})
        for level, one in extra.items():
            rows[level] = {"level": level, "per_pages": {page: {**one, "cycles": _cycles(one["ns"], clock["ghz"])} for page in pages}}
        order = (
            [name for name, _ in levels] + list(extra) + [MEMORY, "local memory", "remote memory"]
            + sorted(n for n in rows if n.startswith("unassigned"))
        )  # fmt: skip
        ordered = [rows[name] for name in order if name in rows]
        for row in ordered:
            row["derivations"] = _derivations(row["per_pages"], pages)
        out.append({"system": system, "pages": pages, "rows": ordered, "clock": clock})
    return out


def measured_clocks(cells: pd.DataFrame) -> dict[str, dict]:
    """system -> the core clock its chase cells measured (median over
    cells of their medians), with how it was obtained."""
    if "core_ghz_median" not in cells:
        return {}
    clocks = {}
    for system, values in cells.groupby("system")["core_ghz_median"]:
        values = values.dropna()
        if values.empty:
            continue
        ghz = float(values.median())
        clocks[system] = {
            "ghz": ghz,
            "source": (
                f"cycles = ns × {ghz:.2f} GHz, the core clock measured by the chasing thread (a chain of dependent "
                f"register adds, one per cycle; min–max over cells {values.min():.2f}–{values.max():.2f} GHz), "
                "not read from counters or cpufreq"
            ),
        }
    return clocks
