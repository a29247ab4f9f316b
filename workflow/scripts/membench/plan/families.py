"""Every kernel family's traits in one table: what its records measure,
which config knobs apply to it, whether CPU pairs set its threads, which
figures it gets. Code that differs by family asks this table (by trait),
never the family's name.

The harness's own option tables (kernels/families/*.c, printed by
--list-options) are the truth for the knobs a family's binary takes; a test
(tests/test_request.py) checks `knobs` against them. Adding a family is one
row here, beside its entry in kernels/families/variants.yaml, its C file, its
declarations in kernels/families/families.h and its rows in
kernels/families/kernel_table.c: the config schema's kernel enum follows;
a family of another metric than bandwidth also names itself in the record
schema's per-family blocks (tests/test_new_family.py and
tests/test_new_latency_family.py add them so, docs/design.md counts the files).
"""

from __future__ import annotations

from dataclasses import dataclass

# What a family's records measure.
BANDWIDTH, LATENCY, LOADED, HANDOFF = "bandwidth", "latency", "loaded", "handoff"
# How `size: auto` is resolved on the host (membench.measure.auto_size):
# ARRAYS each array 4 x the last-level caches (STREAM's rule), REACH the
# chase sweep's reach, POOL the hand-off pool (4 x the L2).
ARRAYS, REACH, POOL = "arrays", "reach", "pool"
ARRAYS_FLOOR = 256 * 2**20


def arrays_bytes(llc_total_bytes: int) -> int:
    """STREAM's rule for one array: 4 x the sum of every last-level cache
    instance, at least ARRAYS_FLOOR (the run's auto size and the estimate's)."""
    return max(4 * llc_total_bytes, ARRAYS_FLOOR)
# The figures of a family that declares none of its own.
DEFAULT_FIGURES = ("scaling", "histogram", "placement")


@dataclass(frozen=True)
class Family:
    # BANDWIDTH (GB/s per op), LATENCY (the idle chase: ns per load),
    # LOADED (the chase's latency under the load threads' bandwidth) or
    # HANDOFF (core-to-core transfers)
    metric: str
    # config knobs, beyond the axes every family has, that mean something
    # for it (threads and affinity included where the config chooses them)
    knobs: tuple[str, ...] = ("threads", "affinity")
    # CPU pairs (pairs, pairs_per_class, pair_classes) set its threads and CPUs
    pairs: bool = False
    # the knob that chooses its one op (else it runs every op of variants.yaml)
    op_knob: str | None = None
    # the op whose records are the idle latency
    latency_op: str | None = None
    # bounds on the (resolved) threads, as the harness has them; 0 = none
    min_threads: int = 0
    max_threads: int = 0
    figures: tuple[str, ...] = DEFAULT_FIGURES
    # the rule of its `size: auto` (ARRAYS, REACH or POOL)
    auto_size: str = ARRAYS
    # the question its experiments answer (membench.findings.answers.QUESTIONS)
    paper: str = ""
    # the estimate's model (membench.plan.estimate): a bandwidth family's
    # passes over one array per iteration of all its ops, reads and writes
    # as STREAM counts them (kernels/families/kernel_table.c)
    passes: int = 0

    @property
    def bandwidth(self) -> bool:
        return self.metric == BANDWIDTH


_CHASE = ("chase_group", "chase_spacing")
# The report's axis lists show threads and affinity for every family but mix
# and c2c (as before the table; for mix a gap rather than a reason).
FAMILIES = {
    "stream": Family(BANDWIDTH, knobs=("threads", "affinity", "prefetch_distance"), paper="colfax", passes=10),
    "readonly": Family(BANDWIDTH, knobs=("threads", "affinity", "prefetch_distance"), figures=("ladder",),
                       paper="mccalpin", passes=1),
    "xor": Family(BANDWIDTH, paper="sun", passes=2),
    "daxpy": Family(BANDWIDTH, paper="ornl", passes=3),
    "mix": Family(BANDWIDTH, knobs=(), paper="mlc", passes=13),
    "chase": Family(LATENCY, knobs=("threads", "affinity", "sweep_from", "points_per_octave", *_CHASE),
                    latency_op="random", min_threads=1, max_threads=1, figures=("latency",), paper="aws-latency",
                    auto_size=REACH),
    "loaded": Family(LOADED, knobs=("threads", "affinity", "load_op", "load_delay", *_CHASE), op_knob="load_op",
                     min_threads=2, figures=("loaded",), paper="aws-loaded"),
    "c2c": Family(HANDOFF, knobs=("pair", "pairs", "pairs_per_class", "pair_classes", "c2c_samples", "c2c_roundtrips"),
                  pairs=True, min_threads=2, figures=("handoff",), paper="aws-c2c", auto_size=POOL),
}  # fmt: skip


def family(kernel: str) -> Family:
    return FAMILIES[kernel]


def applies(knob: str, kernel: str) -> bool:
    """Whether a family knob (one that some family's `knobs` lists) means
    something for this kernel."""
    return knob in FAMILIES[kernel].knobs


def named(test) -> list[str]:
    """The families whose traits pass `test` (for filtering tables of
    records by their kernel column), in table order."""
    return [name for name, traits in FAMILIES.items() if test(traits)]


def one(test) -> str:
    """The one family whose traits pass `test` (ValueError when none or
    several do): code that needs, say, the loaded latency's family asks so."""
    found = named(test)
    if len(found) != 1:
        raise ValueError(f"{len(found)} families pass the test: {found}")
    return found[0]


def idle_latency() -> tuple[str, str]:
    """(family, op) of the idle latency: the chase's random walk."""
    return next((name, t.latency_op) for name, t in FAMILIES.items() if t.metric == LATENCY)
