"""THE request: what one repetition of one cell asks the harness for, from
the config's cell to the harness's argv (membench.measure.harness resolves
it on the host and turns it into flags from the binary's option table).

What a cell and its request both carry is one class, `Knobs`; every
default is the knob table's (membench.plan.knobs; tests/test_knobs.py holds
it against the harness's option tables and the schemas). Its JSON (`as_dict`) is
what a round digests: stored runs are kept by that digest, so its keys and
values stay those of every earlier membench (tests/test_request.py pins
them for every family).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, make_dataclass

from membench.plan import families, knobs, variants

# Re-exported: the knob table (membench.plan.knobs) holds them.
DEFAULT_CHASE_GROUP = knobs.DEFAULT_CHASE_GROUP
DEFAULT_CHASE_SPACING = knobs.DEFAULT_CHASE_SPACING
# Knobs in the request only where they apply to the family (added after the
# others: other families' requests, and digests, stay as they were).
WHERE_THEY_APPLY = knobs.request_only_where_they_apply()


def _shared_field(knob: knobs.Knob) -> tuple:
    """A Knobs field: the knob's name and its default (none: the config must
    give it, as the kernel)."""
    return (knob.name, object) if knob.default is None else (knob.name, object, field(default=knob.default))


Knobs = make_dataclass("Knobs", [_shared_field(k) for k in knobs.shared_fields()], frozen=True, kw_only=True,
                       namespace={"__module__": __name__})  # fmt: skip
Knobs.__doc__ = """What a cell and its request both carry, as the config writes it
(threads may be "all", size may be "auto", policy may be "remote"): one
field per knob the table names alike in both (membench.plan.knobs.
shared_fields), each default the table's. Cell (membench.plan.grammar) and
Request add what is theirs alone."""


@dataclass(frozen=True, kw_only=True)
class Request(Knobs):
    """What one repetition of a cell asks for: its knobs, the system, the
    ops, the repetition and the variant's features; `pages` is the page
    size the variant declares where the config says "variant"
    (pages_requested)."""

    system: str
    ops: tuple[str, ...]
    pages: str
    repeat: int | None
    pages_requested: str = "4k"
    features: dict = field(default_factory=dict)

    @classmethod
    def of_cell(cls, cell, system: str, repeat: int | None, variants_table: dict) -> Request:
        """The request of one repetition of a cell (membench.plan.grammar.Cell)."""
        traits = families.family(cell.kernel)
        ops = [getattr(cell, traits.op_knob)] if traits.op_knob else variants_table["families"][cell.kernel]["ops"]
        shared = {name: getattr(cell, name) for name in Knobs.__dataclass_fields__}
        return cls(
            system=system, ops=tuple(ops), repeat=repeat, pages_requested=cell.pages,
            pages=(variants.declared_pages(variants_table, cell.kernel, cell.variant)
                   if cell.pages == "variant" else cell.pages),
            features=variants.features(variants_table, cell.kernel, cell.variant),
            **shared,
        )  # fmt: skip

    @classmethod
    def of_dict(cls, values: dict) -> Request:
        """A request from its JSON (as_dict): a knob absent there (one that
        does not apply to the family) takes its default."""
        return cls(**{**values, "ops": tuple(values["ops"])})

    def applies(self, knob: str) -> bool:
        return families.applies(knob, self.kernel)

    def as_recorded(self) -> dict:
        """The record keys stating this request as asked, which the round
        writes beside the harness's own (the knob table's; null in the
        records of a family a knob does not apply to)."""
        return {k.record: getattr(self, k.request) if k.in_record == knobs.EVERY or self.applies(k.name) else None
                for k in knobs.written_by_the_round()}  # fmt: skip

    def as_dict(self) -> dict:
        """Every knob the measurement depends on: its digest decides whether
        a stored repetition still holds."""
        values = {**asdict(self), "ops": list(self.ops)}
        return {k: v for k, v in values.items() if k not in WHERE_THEY_APPLY or self.applies(k)}
