"""The memory-hierarchy table (the AWS paper's first table), derived from
the chase's working-set sweep.

Levels come from the data: the sweep's latency curve (the median over
undisturbed runs at each point) is cut into plateaus (runs of points whose
latency stays flat). Memory is the final plateau when the curve shows it
is past the caches, by the rule the idle latency is found by
(membench.analyse.memory_plateau: past the sysfs LLC, after a plateau of
every cache level, or a run held flat by the C stop rule); its latency is
the idle latency itself (membench.analyse.concurrency.idle_latencies: the
median over runs of each run's median over the plateau's points past the
caches), so the memory row, the first screen, effective concurrency and
loaded/idle read one number. Where the memory plateau begins well before
the sysfs LLC (a VM's share of a host L3 ends early), the row says so with
both figures. The other plateaus are named by the cache sizes sysfs
reports, which are annotations: the smallest level whose size holds the
plateau's last working set. A level with no plateau is "not found"
(memory: "could not be reached" when the sweep never passed the LLC), a
second plateau within one level is shown as unassigned: nothing is filled
in from what a level should be.
Cycles are ns x the core clock measured by the chase itself (a dependent
add chain: a VM has no cycle counters to read), and said so.
"""

from __future__ import annotations

import math
import pandas as pd

from membench.analyse.concurrency import PAGE_BYTES
from membench.analyse.memory_plateau import LLC_REACH, Memory, Plateau, find_memory, held_runs, memory_text, plateaus
from membench.plan.grammar import DEFAULT_CHASE_GROUP, DEFAULT_CHASE_SPACING, group_text, size_text
from membench.plan import families, knobs, latency_sweep

MEMORY = "memory"
# The memory plateau begins "well before" the sysfs LLC at this share of it or below.
WELL_BEFORE = 0.5
# The record keys of the knobs a chase curve is chosen by, as asked.
POLICY, GROUP, SPACING, AFFINITY = (knobs.asked(name) for name in ("policy", "chase_group", "chase_spacing", "affinity"))


def cache_levels(topology: dict) -> list[tuple[str, int]]:
    """("L1", bytes), ("L2", bytes), ... of the first CPU's data and unified caches."""
    sizes = {}
    for cache in topology.get("caches", []):
        if cache.get("type") in ("Data", "Unified"):
            sizes[int(cache["level"])] = int(cache["size_bytes"])
    return [(f"L{level}", sizes[level]) for level in sorted(sizes)]


def name_plateaus(found: list[Plateau], levels: list[tuple[str, int]], memory: Plateau | None = None) -> dict[str, Plateau | None]:
    """Each cache level and memory -> its plateau or None: memory the
    plateau membench.analyse.memory_plateau found (None: no memory row),
    each cache level the first of the others that falls in it; plateaus that
    fall in an already named level, or past the LLC without reaching the
    end of the sweep, are returned under "unassigned N"."""
    named: dict[str, Plateau | None] = {name: None for name, _ in levels}
    named[MEMORY] = memory
    extra = 0
    for plateau in found:
        if plateau == memory:
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


def memory_reach(largest: int | None, llc: int | None, memory: Memory | None = None) -> str | None:
    """Why a memory latency may not be past the caches, or None when it is:
    the memory plateau had points LLC_REACH x past the last cache, or (no
    plateau: the largest working set, bytes of lines) it is at least
    LLC_REACH x the LLC."""
    if memory is not None:
        return None if not memory.short else f"⚑ {memory.reach}"
    if not llc or largest is None or largest >= LLC_REACH * llc:
        return None
    return (
        f"⚑ largest working set {size_text(largest)} of lines is short of {LLC_REACH} × the LLC "
        f"({size_text(LLC_REACH * llc)}; sysfs LLC {size_text(llc)})"
    )


def memory_derivation(memory: Memory | None, llc: int | None, largest: int | None, before: Plateau | None, note: str = "",
                      idle: pd.Series | None = None) -> str:
    """How the memory row was found, or why it was not; idle: the idle
    latency the row reads (its runs)."""
    if memory is None:
        if largest is not None and llc and largest <= llc:
            return (
                f"could not be reached: the sweep ends at {size_text(largest)}{note}, not past the last-level cache "
                f"(sysfs {size_text(llc)}); size: auto sweeps to {LLC_REACH} × the LLC"
            )
        if largest is not None:
            return f"no flat plateau reaching the largest working set ({size_text(largest)}{note}) past the caches: not found"
        return "no plateau found"
    text = memory_text(memory, note)
    plateau = memory.plateau
    if llc and plateau.first_bytes <= WELL_BEFORE * llc:
        cache_end = before.last_bytes if before is not None else None
        text += (
            f"; sysfs and the curve disagree: memory from {size_text(plateau.first_bytes)} of lines"
            + (f" (the last cache plateau ends at {size_text(cache_end)})" if cache_end else "")
            + f" against a sysfs LLC of {size_text(llc)}: an effective cache smaller than reported (a VM's share of a host L3?)"
        )
    if idle is not None:
        text += f"; the idle latency: median over runs of each run's median there ({int(idle['runs'])} run{'s' * (int(idle['runs']) != 1)}, " \
                f"{idle['ns_min']:.1f}–{idle['ns_max']:.1f} ns)"
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
    chase = chase[chase[POLICY].isin(["default", "local"])]
    if GROUP in chase:
        default = chase[GROUP].map(lambda g: not pd.isna(g) and group_text(g) == group_text(DEFAULT_CHASE_GROUP))
        has_default = default.groupby([chase["system"], chase["pages"]]).transform("any")
        chase = chase[default | ~has_default]
    if SPACING in chase:  # one spacing per curve: the default when measured
        spacing = chase[SPACING]
        default = spacing == DEFAULT_CHASE_SPACING
        has_default = default.groupby([chase["system"], chase["pages"]]).transform("any")
        chase = chase[default | ~has_default | spacing.isna()]
    return chase


def matrix_memory_rows(cells: pd.DataFrame, system: str) -> dict[str, dict[str, dict]]:
    """Local and remote memory from a node x node latency matrix (chase
    cells with affinity node:I and policy bind:J, at their largest working
    set): level -> pages -> {"ns", "derivation"}; empty when none was
    measured."""
    kernel, op = families.idle_latency()
    chase = cells[(cells["system"] == system) & (cells["kernel"] == kernel) & (cells["op"] == op) & (cells["n_ok"] > 0)]
    if chase.empty or "ns_median" not in chase or AFFINITY not in chase:
        return {}
    chase = chase.reset_index(drop=True)
    cpu = chase[AFFINITY].astype(str).str.extract(r"^node:(\d+)$")[0]
    mem = chase[POLICY].astype(str).str.extract(r"^bind:(\d+)$")[0]
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
    kernel, op = families.idle_latency()
    chase = cells[(cells["system"] == system) & (cells["kernel"] == kernel) & (cells["op"] == op) & (cells["n_ok"] > 0)]
    if chase.empty or "ns_median" not in chase:
        return {}
    rows: dict[str, dict[str, dict]] = {}
    llc = levels[-1][1] if levels else None
    for policy, level in (("local", "local memory"), ("remote", "remote memory")):
        mine = chase[chase[POLICY] == policy]
        for pages, points in mine.groupby("pages", sort=False):
            spacing = points[SPACING].iloc[0] if SPACING in points else None
            curve = points.groupby("working_set_bytes")["ns_median"].median().dropna()  # a point whose every run was disturbed has no number
            if curve.empty:  # every point of this page size disturbed: its column reads "not found"
                continue
            lines = latency_sweep.touched_bytes(pd.Series(curve.index, index=curve.index), spacing, line_bytes)
            memory = find_memory(lines.values, curve.values, levels, _held(points, lines, curve, levels), _runs_at(points, curve))
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


def _local_idle(latencies: pd.DataFrame | None, system: str, page: str) -> pd.Series | None:
    """The local idle latency of one system and page size, where it was
    taken over a memory plateau (not a lone largest point)."""
    if latencies is None or latencies.empty or "lines_first" not in latencies:
        return None
    mine = latencies[(latencies["system"] == system) & (latencies["placement"] == "local") & (latencies["pages"] == page)
                     & latencies["lines_first"].notna()]  # fmt: skip
    return None if mine.empty else mine.iloc[0]


def _held(points: pd.DataFrame, lines: pd.Series, curve: pd.Series, levels: list[tuple[str, int]]) -> bool:
    """Whether a run of this curve stopped "held" by the C stop rule; from
    the pooled curve by the rule's mirror where the records predate it."""
    if "sweep_held" in points:
        return held_runs(points) > 0
    return bool(levels) and latency_sweep.answer_in(lines.values, curve.values, len(levels), levels[-1][1])


def _runs_at(points: pd.DataFrame, curve: pd.Series) -> list[float]:
    """The undisturbed runs at each point of the curve (its working sets, in order)."""
    used = points["n_used"] if "n_used" in points else points["n_ok"]
    return list(used.groupby(points["working_set_bytes"]).sum().reindex(curve.index).fillna(0).values)


def _page_rows(points: pd.DataFrame, levels: list[tuple[str, int]], clock: dict, line_bytes: int,
               idle: pd.Series | None) -> dict[str, dict]:
    """One page size's column of the table: level -> {ns, cycles, derivation[, memory's flag]}."""
    spacing = points[SPACING].iloc[0] if SPACING in points else None
    curve = points.groupby("working_set_bytes")["ns_median"].median().dropna()  # a point whose every run was disturbed has no number
    if curve.empty:  # every point of this page size disturbed: its column reads "not found"
        return {}
    lines = latency_sweep.touched_bytes(pd.Series(curve.index, index=curve.index), spacing, line_bytes)
    found = plateaus(lines.values, curve.values)
    memory = find_memory(lines.values, curve.values, levels, _held(points, lines, curve, levels), _runs_at(points, curve))
    named = name_plateaus(found, levels, memory.plateau if memory else None)
    note = (
        f" of lines (one pointer per {int(spacing)} B: spans {int(spacing) // line_bytes}× larger)"
        if lines.ne(curve.index.to_series()).any() else ""
    )
    llc = levels[-1][1] if levels else None
    out = {}
    for name, plateau in named.items():
        ns = plateau.ns if plateau else None
        if name == MEMORY:
            before = found[found.index(plateau) - 1] if plateau is not None and found.index(plateau) > 0 else None
            ns = None if memory is None else float(idle["ns"]) if idle is not None else memory.ns
            text = memory_derivation(memory, llc, _largest(lines), before, note, idle)
        else:
            text = derivation(name, plateau, dict(levels), _largest(lines), note)
        out[name] = {"ns": ns, "cycles": _cycles(ns, clock["ghz"]), "derivation": text}
        if name == MEMORY:
            out[name].update(flag=memory_reach(_largest(lines), llc, memory), largest_lines=_largest(lines),
                             reached=ns is not None or not llc or _largest(lines) > llc)  # fmt: skip
    return out


def hierarchy(
    cells: pd.DataFrame,
    topologies: dict[str, dict],
    clocks: dict[str, dict] | None = None,
    extra_rows: dict[str, dict[str, dict]] | None = None,
    latencies: pd.DataFrame | None = None,
) -> list[dict]:
    """Per system: the levels found per page size, each with ns, cycles and
    the derivation. clocks: system -> {"ghz": float | None, "source": str};
    extra_rows: system -> level -> {"ns", "derivation"}, rows measured
    without a page size (cache-to-cache hand-offs), shown for every one;
    latencies: the idle latencies (membench.analyse.concurrency), whose
    local one is the memory row's number where its plateau was found."""
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
            idle = _local_idle(latencies, system, page)
            for name, one in _page_rows(mine[mine["pages"] == page], levels, clock, line_bytes, idle).items():
                rows.setdefault(name, {"level": name, "per_pages": {}})["per_pages"][page] = one
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
