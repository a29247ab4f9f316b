"""What a run will measure and about how long it will take, before it
starts (`make run`), and for what is left (`make status`).

The cost of a repetition is not known before it runs (bandwidth, the
latency sweep's stopping point, disturbed repetitions measured again), so
the estimate is a model stated as one: seconds per repetition by family, as
measured for the default config on a quiet 2-CPU guest (issue 41: the
xeon16 records and this project's machine), scaled for the bandwidth
families by the cell's bytes against the default's. A busy machine takes
longer; `make status` gives the pace measured once a round has finished.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from membench.plan import latency_sweep
from membench.plan.grammar import Cell

# Seconds per repetition of a default cell (size auto), by family: the
# issue's quiet 2-CPU run spent 96 s of its 266 s of rounds on the 85
# repetitions of the bandwidth and c2c families (about 1.1 s each). chase:
# op random until the stop rule holds (at most latency_sweep.REPETITION_S),
# then op stride over the same working sets; loaded: touching its arrays
# and a window of at most 3 s (MB_CHASE_WINDOW_S).
SECONDS_PER_REPETITION = {
    "stream": 2.0,
    "readonly": 0.8,
    "xor": 0.8,
    "daxpy": 1.0,
    "mix": 2.0,
    "chase": 12.0,
    "loaded": 5.0,
    "c2c": 0.3,
}
DEFAULT_FAMILY_SECONDS = 3.0
# The size auto a bandwidth family's table cost stands for (STREAM's rule at
# a 300 MiB LLC: 4 x it).
REFERENCE_BYTES = 1200 * 2**20
# Phases around the rounds: seconds per binary compiled (gcc, one job a
# core), the probe, collect + analyse + figures + render together.
COMPILE_SECONDS = 1.5
PROBE_SECONDS = 3.0
REPORT_SECONDS = 25.0
INSTALL_SECONDS = 80.0  # pip into a fresh .venv (skipped when it exists)


@dataclass(frozen=True)
class Estimate:
    experiments: dict[str, tuple[int, int, float]]  # name -> (cells, repetitions, seconds)
    binaries: int
    phases: dict[str, float]  # install, compile, probe, rounds, report
    basis: str = ""  # what the seconds per repetition come from

    @property
    def seconds(self) -> float:
        return sum(self.phases.values())


def repetition_seconds(cell: Cell, measured: dict[str, float] | None = None) -> float:
    """Seconds for one repetition of a cell: the median of this family's
    stored repetitions on this machine when there are any (`measured`), else
    the model's."""
    if measured and cell.kernel in measured:
        return measured[cell.kernel]
    base = SECONDS_PER_REPETITION.get(cell.kernel, DEFAULT_FAMILY_SECONDS)
    if cell.kernel == "chase":
        return min(base, latency_sweep.REPETITION_S + base / 3)
    if isinstance(cell.size, int) and cell.kernel in ("stream", "readonly", "xor", "daxpy", "mix"):
        return max(0.2, base * cell.size / REFERENCE_BYTES)
    return base


def estimate(
    cells: list[Cell], cores: int, left: dict[str, int] | None = None, installed: bool = True, measured: dict[str, float] | None = None
) -> Estimate:
    """The run's estimate; `left`: cell id -> repetitions still to measure
    (None: every repetition, as before a first run); `measured`: family ->
    seconds per repetition stored on this machine, which replace the model's."""
    experiments: dict[str, tuple[int, int, float]] = {}
    for cell in cells:
        reps = cell.repeats if left is None else left.get(cell.id, 0)
        n_cells, n_reps, seconds = experiments.get(cell.experiment, (0, 0, 0.0))
        experiments[cell.experiment] = (n_cells + 1, n_reps + reps, seconds + reps * repetition_seconds(cell, measured))
    binaries = len(Counter((c.kernel, c.variant) for c in cells))
    rounds = sum(seconds for _, _, seconds in experiments.values())
    phases = {
        "install": 0.0 if installed else INSTALL_SECONDS,
        "compile": 0.0 if left is not None else COMPILE_SECONDS * binaries / max(1, cores),
        "probe": 0.0 if left is not None else PROBE_SECONDS,
        "rounds": rounds,
        "report": REPORT_SECONDS,
    }
    basis = (
        f"seconds per repetition as stored on this machine for {', '.join(sorted(measured))}, the model's for the rest"
        if measured else "a model, not a measurement (membench.plan.estimate): a busy machine takes longer"
    ) + "; disturbed repetitions measured again add to it"
    return Estimate(experiments, binaries, phases, basis)


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
    out.append(f"  about {duration(plan.seconds)} in all ({shown}); {plan.basis}")
    return out
