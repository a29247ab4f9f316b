"""What a run will measure and about how long it will take, before it
starts (`make run`), and for what is left (`make status`).

The cost of a repetition is not known before it runs (bandwidth, the
latency sweep's stopping point, disturbed repetitions measured again), so
the estimate is a model stated as one. A repetition of a bandwidth family
is a process that first-touches its arrays, runs `ntimes` iterations of
its ops over them and checks the result, so its seconds follow the bytes
it moves (`size: auto` resolved on this host: STREAM's rule makes a VM
whose sysfs L3 reads 300 MiB move 4.7 x the bytes of one at 32 MiB) at a
bandwidth that grows with its threads; the chase runs until its stop rule
holds or its budget is spent; loaded latency touches its load arrays and
times a window. The constants are fitted to two machines' records (issue
41): this project's 2-vCPU Xeon guest and the 16-CPU Xeon guest of
`shared/data/xeon16`; tests/test_run_time.py holds the model to both.
Once a family has stored repetitions on this machine (`make status`), its
pace replaces the model's: the model times the median ratio measured/model.
"""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass

from membench.plan import budget, families
from membench.plan.latency_sweep import REPETITION_S
from membench.plan.grammar import Cell

# Bandwidth of one thread streaming from memory (bytes/s, STREAM counting),
# and how the aggregate grows with threads (x threads ** SCALING): 15 GB/s
# and 0.7 put 2 threads at 24 GB/s and 16 at 104 GB/s, as measured (2-vCPU
# guest 12-15 and 22-28 GB/s; 16-CPU guest 17-19 and 90-133 GB/s triad).
THREAD_BYTES_PER_S = 15e9
SCALING = 0.7
# First touch of 4 KiB pages by one thread (a page fault each: 0.6-1.3 GB/s
# on both guests), growing as threads ** TOUCH_SCALING (12 GB/s at 16).
# Huge pages fault 512 x fewer times but are zeroed all the same: taken as
# 4 x faster, a guess that no record here measured.
TOUCH_BYTES_PER_S = 1.2e9
TOUCH_SCALING = 0.8
HUGE_TOUCH_FACTOR = 4.0
# A process's start, topology reads, placement and disturbance checks.
START_SECONDS = 0.5
# The chase: op random until the stop rule holds (about 6.5 s on the 16-CPU
# guest, 9 s here; at most latency_sweep.REPETITION_S on a busy machine),
# then op stride over the same working sets at about 0.4 x its time.
CHASE_RANDOM_SECONDS = 9.0
CHASE_STRIDE_SHARE = 0.4
# Loaded latency: its window (MB_CHASE_WINDOW_S, 3 s) and the chase's cycle
# built over its working set; the load threads' arrays touched first.
LOADED_WINDOW_SECONDS = 3.5
# The hand-off: its samples take milliseconds; the process is the cost.
HANDOFF_SECONDS = 0.5
# Phases around the rounds: the harness archive (once a system), seconds
# per binary compiled (its kernel table and family files; one job a core;
# the default config's 21 binaries took 9.7 s here), the probe, collect +
# analyse + findings + figures + render.
HARNESS_SECONDS = 3.0
COMPILE_SECONDS = 0.5
PROBE_SECONDS = 3.0
REPORT_SECONDS = 30.0
INSTALL_SECONDS = 40.0  # uv into a fresh .venv, modules compiled (skipped when it exists)


@dataclass(frozen=True)
class Host:
    """What the model needs of the machine: CPUs a team of "all" threads
    gets, the sum of its last-level caches (size auto) and the arrays each
    family maps (variants.yaml memory)."""

    cpus: int
    llc_total_bytes: int
    arrays: dict  # family -> arrays of `size` bytes one process maps
    load_arrays: dict  # load op -> arrays per load thread (the family with load threads)


@dataclass(frozen=True)
class Estimate:
    experiments: dict[str, tuple[int, int, float]]  # name -> (cells, repetitions, seconds)
    binaries: int
    phases: dict[str, float]  # install, compile, probe, rounds, report
    basis: str = ""  # what the seconds per repetition come from
    budget: str = ""  # what a budget buys, when the config has one

    @property
    def seconds(self) -> float:
        return sum(self.phases.values())


def host_from(table: dict, cpus: int, llc_total_bytes: int) -> Host:
    memory = {name: entry.get("memory", {}) for name, entry in table["families"].items()}
    load_arrays = next((m["load_arrays"] for m in memory.values() if "load_arrays" in m), {})
    return Host(cpus, llc_total_bytes, {name: m.get("arrays", 1) for name, m in memory.items()}, dict(load_arrays))


def _threads(cell: Cell, host: Host) -> int:
    wanted = host.cpus if cell.threads == "all" else int(cell.threads)
    return max(1, min(wanted, host.cpus))


def _bytes(cell: Cell, host: Host) -> int:
    return cell.size if isinstance(cell.size, int) else families.arrays_bytes(host.llc_total_bytes)


def _touch_seconds(nbytes: float, threads: int, pages: str) -> float:
    rate = TOUCH_BYTES_PER_S * threads**TOUCH_SCALING * (HUGE_TOUCH_FACTOR if pages not in ("4k", "variant") else 1.0)
    return nbytes / rate


def model_seconds(cell: Cell, host: Host) -> float:
    """The model's seconds for one repetition of a cell on this host."""
    traits = families.family(cell.kernel)
    threads = _threads(cell, host)
    if traits.metric == families.LATENCY:
        random = min(CHASE_RANDOM_SECONDS, REPETITION_S)
        return START_SECONDS + random * (1 + CHASE_STRIDE_SHARE)
    if traits.metric == families.LOADED:
        size = _bytes(cell, host)
        load = host.load_arrays.get(cell.load_op, 3) * size * max(1, threads - 1)
        return START_SECONDS + _touch_seconds(load + size, threads, cell.pages) + LOADED_WINDOW_SECONDS
    if traits.metric == families.HANDOFF:
        return HANDOFF_SECONDS
    size = _bytes(cell, host)
    mapped = host.arrays.get(cell.kernel, 1) * size
    streaming = (cell.ntimes * traits.passes + host.arrays.get(cell.kernel, 1)) * size  # + the check's read
    return START_SECONDS + _touch_seconds(mapped, threads, cell.pages) + streaming / (THREAD_BYTES_PER_S * threads**SCALING)


def estimate(
    cells: list[Cell], cores: int, host: Host, left: dict[str, int] | None = None, installed: bool = True,
    stored: dict[str, list[float]] | None = None, config: dict | None = None, spent_s: float = 0.0,
) -> Estimate:
    """The run's estimate; `left`: cell id -> repetitions still to measure
    (None: every repetition, as before a first run); `stored`: cell id ->
    the seconds of its repetitions stored on this machine, which set the
    pace of their family (measured / model) for what is left; `config`:
    its budget (membench.plan.budget), when it has one: the fixed rounds,
    then planned rounds up to what is left of it after `spent_s` (measured
    so far; the budget itself once the planned rounds are over)."""
    pace = family_pace(cells, host, stored or {})
    experiments: dict[str, tuple[int, int, float]] = {}
    planned = 0.0  # the most the planned rounds could take: every cell to its repeats
    for cell in cells:
        fixed = budget.fixed_repeats(cell, config or {})
        reps = fixed if left is None else max(0, left.get(cell.id, 0) - (cell.repeats - fixed))
        n_cells, n_reps, seconds = experiments.get(cell.experiment, (0, 0, 0.0))
        each = model_seconds(cell, host) * pace.get(cell.kernel, 1.0)
        counted = fixed > 0 or cell.repeats == 0  # a cell a budget left out is not measured
        experiments[cell.experiment] = (n_cells + counted, n_reps + reps, seconds + reps * each)
        planned += (cell.repeats - fixed) * each
    binaries = len(Counter((c.kernel, c.variant) for c in cells))
    rounds = sum(seconds for _, _, seconds in experiments.values())
    limit = budget.seconds((config or {}).get("budget"))
    said = ""
    if limit is not None:
        extra = min(planned, max(0.0, limit - spent_s - rounds))
        said = (f"budget {duration(limit)}: the first {budget.fixed_rounds(cells, config)} rounds measure every cell kept "
                f"(about {duration(rounds)}{', over the budget' if rounds > limit else ''}), then up to "
                f"{duration(extra)} of rounds that measure only what undecided findings rest on")  # fmt: skip
        if left is not None and rounds == 0 and extra == 0:
            said = f"budget {duration(limit)}: its fixed rounds are stored and its planned rounds are over"
        rounds += extra
    phases = {
        "install": 0.0 if installed else INSTALL_SECONDS,
        "compile": 0.0 if left is not None else HARNESS_SECONDS + COMPILE_SECONDS * binaries / max(1, cores),
        "probe": 0.0 if left is not None else PROBE_SECONDS,
        "rounds": rounds,
        # make status after a run that measured everything: nothing to draw again either
        "report": 0.0 if left is not None and rounds == 0 else REPORT_SECONDS,
    }
    basis = (
        f"the model at the pace stored on this machine for {', '.join(sorted(pace))}"
        if pace else "a model of this host's CPUs and caches, not a measurement (membench.plan.estimate): a busy machine takes longer"
    ) + "; disturbed repetitions measured again add to it"
    return Estimate(experiments, binaries, phases, basis, said)


def family_pace(cells: list[Cell], host: Host, stored: dict[str, list[float]]) -> dict[str, float]:
    """family -> the median over its stored repetitions of measured / model
    seconds: how much faster or slower this machine runs it than the model
    (a stored span leaves out the process's start: added back)."""
    ratios: dict[str, list[float]] = {}
    for cell in cells:
        for seconds in stored.get(cell.id, []):
            ratios.setdefault(cell.kernel, []).append((seconds + START_SECONDS) / model_seconds(cell, host))
    return {family: statistics.median(values) for family, values in ratios.items()}


def duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes = seconds / 60
    return f"{minutes:.0f} min" if minutes < 100 else f"{minutes / 60:.1f} h"


def lines(plan: Estimate, heading: str) -> list[str]:
    """The estimate as printed: what each experiment measures, then the
    time by phase and in all."""
    out = [heading]
    for name, (cells, reps, seconds) in plan.experiments.items():
        if reps:
            out.append(f"  {name}: {cells} cell{'s' * (cells != 1)}, {reps} repetition{'s' * (reps != 1)}, about {duration(seconds)}")
    shown = ", ".join(f"{phase} {duration(s)}" for phase, s in plan.phases.items() if s)
    if plan.budget:
        out.append(f"  {plan.budget}")
    if not plan.seconds:
        out.append("  nothing left to measure or draw: every repetition the config asks for is stored")
        return out
    out.append(f"  about {duration(plan.seconds)} in all ({shown}); {plan.basis}")
    return out

# ------------------------------------------------------------ a first answer
# Where the budget cannot hold the fixed rounds of every cell (`make run
# BUDGET=60s`, issue 51), the fixed rounds measure a first answer and as
# much of the rest as the budget holds; the others are left out, said
# before the run starts and in the findings. By the model's seconds (the
# same on every parse of one host, so a rerun plans the same rounds): first
# the idle latency (each latency experiment's first cell), then each other
# experiment's first cell at each of its thread counts (one-thread and
# all-thread STREAM in the default config; every locality class of a
# cache-to-cache experiment), the cheapest first, so that the budget answers
# as many experiments as it can; then every other cell in the config's
# order. A cell of the first answer is kept while the fixed rounds' seconds
# stay within the budget, any other while they stay within half of it (the
# other half is for the rounds that decide); the first cell is kept
# whatever it costs.


def _first_cells(cells: list[Cell]) -> list[Cell]:
    """The first answer's cells, in the order they are kept (the comment above)."""
    latency = {c.experiment for c in cells if families.family(c.kernel).metric == families.LATENCY}
    firsts = [next(c for c in cells if c.experiment == name) for name in dict.fromkeys(c.experiment for c in cells) if name in latency]
    seen: set[tuple[str, str]] = set()
    for cell in cells:
        # a pair family's cells are its locality classes, each its own answer (and a host lacks some)
        key = (cell.experiment, cell.id if families.family(cell.kernel).pairs else str(cell.threads))
        if cell.experiment not in latency and key not in seen:
            seen.add(key)
            firsts.append(cell)
    return firsts


def left_out(cells: list[Cell], config: dict, host: Host) -> list[str]:
    """The ids of the cells a budget too small for every cell's fixed rounds
    leaves out (the comment above); none where the budget holds them all, or
    without a budget."""
    limit = budget.seconds(config.get("budget"))
    if limit is None:
        return []
    cost = {cell.id: budget.fixed_repeats(cell, config) * model_seconds(cell, host) for cell in cells}
    if sum(cost.values()) <= limit:
        return []
    first = _first_cells(cells)
    latency = [c for c in first if families.family(c.kernel).metric == families.LATENCY]
    # after the idle latency, the cheapest first: as many experiments answered as the budget holds
    first = latency + sorted((c for c in first if c not in latency), key=lambda c: cost[c.id])
    kept, used = set(), 0.0
    for cell in first + [c for c in cells if c not in first]:
        # the rest only while half the budget is left for the rounds that decide
        within = limit if cell in first else limit / 2
        if not kept or used + cost[cell.id] <= within:
            kept.add(cell.id)
            used += cost[cell.id]
    return [cell.id for cell in cells if cell.id not in kept]


def with_left_out(config: dict, cells: list[Cell], host: Host) -> dict:
    """The config with the cells its budget leaves out under budget.LEFT_OUT
    (read by budget.fixed_repeats: no fixed rounds for them)."""
    return {**config, budget.LEFT_OUT: left_out(cells, config, host)}


def left_out_line(config: dict, cells: list[Cell]) -> str | None:
    """What the budget left out, in one line; None where it left out nothing."""
    ids = set(config.get(budget.LEFT_OUT) or ())
    if not ids:
        return None
    by_experiment: dict[str, list[int]] = {}
    for cell in cells:
        counts = by_experiment.setdefault(cell.experiment, [0, 0])
        counts[0] += cell.id in ids
        counts[1] += 1
    parts = [f"{name} ({'every one' if out == total else out} of {total} cells)" for name, (out, total) in by_experiment.items() if out]
    limit = budget.seconds(config.get("budget"))
    return (f"budget {limit:.0f} s: a first answer (the idle latency, each experiment at each thread count) and what "
            f"else fits; left out for the budget: {', '.join(parts)} (a larger BUDGET, or no budget:, measures them)")
