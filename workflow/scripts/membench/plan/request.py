"""THE request: what one repetition of one cell asks the harness for, from
the config's cell to the harness's argv (membench.measure.harness resolves
it on the host and turns it into flags from the binary's option table).

Its knobs' defaults are written once, in `Knobs` (a cell and a request both
carry them); those the harness also defaults are checked against its option
tables (--list-options) by tests/test_request.py. Its JSON (`as_dict`) is
what a round digests: stored runs are kept by that digest, so its keys and
values stay those of every earlier membench (tests/test_request.py pins
them for every family).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from membench.plan import families, variants

# The chase's locality: bytes per group of lines visited in random order
# (groups in random order), or "full" (one random cycle). 256 KiB = 64 pages
# is multichase's default, so membench's idle latency compares with it.
DEFAULT_CHASE_GROUP = 256 * 2**10
# The random chase's pointer spacing (one pointer per this many bytes):
# multichase's default stride, for the same reason.
DEFAULT_CHASE_SPACING = 256
# Knobs in the request only where they apply to the family (added after the
# others: other families' requests, and digests, stay as they were).
WHERE_THEY_APPLY = ("chase_spacing", "pair", "pairs_per_class", "c2c_samples", "c2c_roundtrips")


@dataclass(frozen=True, kw_only=True)
class Knobs:
    """The knobs of a cell and of its request that have a default: one
    place for each default."""

    prefetch_distance: int | str = "variant"  # "variant": the binary's built-in distance
    load_delay: int = 0
    sweep_from: int = 4096
    points_per_octave: int = 2
    chase_group: int | str = DEFAULT_CHASE_GROUP
    chase_spacing: int = DEFAULT_CHASE_SPACING
    # c2c only: "<class>:<i>" (the i-th sampled pair of a locality class,
    # resolved from topology.json where it is measured) or "all"
    pair: str = ""
    pairs_per_class: int = 3
    c2c_samples: int = 100
    c2c_roundtrips: int = 1000


@dataclass(frozen=True)
class Request(Knobs):
    """What a cell asks for, as in the config (threads may be "all", size
    may be "auto", policy may be "remote"); `pages` is the page size the
    variant declares where the config says "variant" (pages_requested)."""

    system: str
    kernel: str
    variant: str
    ops: tuple[str, ...]
    threads: int | str
    affinity: str
    policy: str
    pages: str
    init: str
    size: int | str
    ntimes: int
    repeat: int | None
    pages_requested: str = "4k"
    features: dict = field(default_factory=dict)

    @classmethod
    def of_cell(cls, cell, system: str, repeat: int | None, variants_table: dict) -> Request:
        """The request of one repetition of a cell (membench.plan.grammar.Cell)."""
        traits = families.family(cell.kernel)
        ops = [getattr(cell, traits.op_knob)] if traits.op_knob else variants_table["families"][cell.kernel]["ops"]
        knobs = {name: getattr(cell, name) for name in Knobs.__dataclass_fields__}
        return cls(
            system=system, kernel=cell.kernel, variant=cell.variant, ops=tuple(ops), threads=cell.threads,
            affinity=cell.affinity, policy=cell.policy, init=cell.init, size=cell.size, ntimes=cell.ntimes,
            repeat=repeat, pages_requested=cell.pages,
            pages=(variants.declared_pages(variants_table, cell.kernel, cell.variant)
                   if cell.pages == "variant" else cell.pages),
            features=variants.features(variants_table, cell.kernel, cell.variant),
            **knobs,
        )  # fmt: skip

    @classmethod
    def of_dict(cls, values: dict) -> Request:
        """A request from its JSON (as_dict): a knob absent there (one that
        does not apply to the family) takes its default."""
        return cls(**{**values, "ops": tuple(values["ops"])})

    def applies(self, knob: str) -> bool:
        return families.applies(knob, self.kernel)

    def as_dict(self) -> dict:
        """Every knob the measurement depends on: its digest decides whether
        a stored repetition still holds."""
        values = {**asdict(self), "ops": list(self.ops)}
        return {k: v for k, v in values.items() if k not in WHERE_THEY_APPLY or self.applies(k)}
