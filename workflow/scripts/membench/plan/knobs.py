"""Every knob of a measurement in one table: one row per knob, from the
config key to the harness option and back from the record.

A row holds the config key (the cell's field), its default, the request
field that carries it, the harness option it feeds (the name
`--list-options` prints), the record key that states it as requested, the
record column tables and figures group by, whether it tells series apart,
its unit and formatter, and what the plan needs: how the config's values
are read (its parser), its part of the cell id, and its place in the order
of axes (the table's order). The families a knob applies to are not written
here: plan/families.py lists each family's knobs, and a knob that no
family lists applies to all of them.

What is derived from it: the defaults of a cell and of a request
(membench.plan.request.Knobs), the family options a request feeds
(membench.measure.options.FAMILY_FIELDS), the knobs read back from stored
records (membench.measure.identity.REQUEST_KNOBS,
membench.store.stored.KNOBS, membench.compare.match.KNOBS), the series
axes (membench.analyse.stats.SERIES_AXES), and the plan stage: the axes and
their order (membench.plan.grammar.AXES, ORDERED_AXES,
membench.plan.config_limits.AXIS_KEYS), an experiment's axis values and its
cells' ids (membench.plan.grammar), the fields a cell and its request share
(membench.plan.request.Knobs) and the summary's cell columns
(membench.analyse.stats.CELL_KEYS). A new knob is its row here, its
families' rows in plan/families.py and its keys in both schemas
(tests/test_new_knob.py adds one so). tests/test_knobs.py holds the
table against the config and record schemas and against every built
family's --list-options (the harness's defaults are the table's).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from membench.core.text import size_text
from membench.plan import families

# Where a request (its JSON, so its digest) and a record carry a knob:
# for every family, or only for the families it applies to (a knob added
# after the others: other families' requests and records stay as they were).
EVERY, OWN = "every", "own"
# Who writes a knob's record key: the round, beside the harness's keys
# (membench.measure.harness), the harness itself (it echoes its options),
# or the c2c pair's keys (membench.plan.c2c_pairs).
ROUND, HARNESS, PAIRS = "round", "harness", "pairs"
# Which families' cell ids name an axis knob (IdPart.where), beside any cell
# whose value is off the knob's default (two cells that differ in an axis
# knob never share an id): every family's; every family's but those whose
# CPU pairs set the cell (c2c: the pair, the policy, the pages and the size
# name it); the families it applies to (OWN); none (CHANGED: only off its
# default, as the knobs added to ids later, so that earlier ids stay).
UNPAIRED, CHANGED = "unpaired", "changed"


def group_text(group: int | str) -> str:
    """"256 KiB", "full": how a chase group is named in ids, labels and
    tables (a value read back from a table may be the digits as text)."""
    text = str(group)
    return size_text(float(text)) if text.replace(".", "", 1).isdigit() else text


def bytes_text(value) -> str:
    """A byte count as "256 B" or "4 KiB"; a word (auto, variant) as itself."""
    return size_text(value) if isinstance(value, int) and not isinstance(value, bool) else str(value)


# How the config writes values: sizes with a unit, chase groups as a size
# or a page count, affinity by its aliases (each knob's `parse`).
AFFINITY_ALIASES = {"compact": "close", "scatter": "spread"}
GROUP_PAGE = 4096
SIZE_UNITS = {
    "B": 1,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "KiB": 2**10,
    "MiB": 2**20,
    "GiB": 2**30,
}


def parse_size(value: int | str) -> int | str:
    """Bytes from an int or a string with a unit; "auto" stays "auto"."""
    if isinstance(value, int) or value == "auto":
        return value
    match = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]+)", value)
    if not match or match.group(2) not in SIZE_UNITS:
        raise ValueError(f"not a size: {value!r}")
    return int(float(match.group(1)) * SIZE_UNITS[match.group(2)])


def parse_group(value: int | str) -> int | str:
    """Bytes per chase group from an int, a size ("256KiB") or "N pages"
    (4 KiB each); "full" stays "full"."""
    if isinstance(value, int) or value == "full":
        return value
    match = re.fullmatch(r"([0-9]+)\s*pages?", value)
    return int(match.group(1)) * GROUP_PAGE if match else parse_size(value)


def canonical_affinity(value: str) -> str:
    return AFFINITY_ALIASES.get(value, value)


def path_safe(value: str) -> str:
    """A value as a cell id's path holds it (a pair's `:` and a list's `,` are not safe)."""
    return value.replace(":", "=").replace(",", "+")


def group_id_text(group: int | str) -> str:
    """A chase group as a cell id holds it: "256KiB", "full"."""
    return group_text(group).replace(" ", "")


@dataclass(frozen=True)
class IdPart:
    """How a cell id names an axis knob: its tag before the value ("t" of
    "t4"), in which families' ids (EVERY, UNPAIRED, OWN, CHANGED), the
    value's text, and whether it leads the id's axes (a c2c pair)."""

    tag: str = ""
    where: str = EVERY
    text: Callable[[object], str] = str
    lead: bool = False


@dataclass(frozen=True)
class Knob:
    name: str  # the cell's field (and the config key, unless `config` names another)
    default: object  # None: no default (the config must give it)
    config: str | None = None  # the config key where it is not the name (variants)
    # the request field that carries it (None: the request does not)
    request: str | None = None
    # the harness option it feeds, by its --list-options name (None: none)
    option: str | None = None
    # the record key that states it as requested (None: no record does)
    record: str | None = None
    # the record column tables, figures and `make compare` use (default:
    # the record key); pages: the pages the harness was asked for
    column: str | None = None
    # its values tell the series of a table or figure apart
    series: bool = False
    # stored records are matched to cells on it (the stored-run checks,
    # `make compare`); the knobs added later (the chase spacing) and the
    # sweep's own (the sweep level matches instead) are not, so that older
    # records still match
    matched: bool = False
    in_request: str = EVERY
    in_record: str = EVERY
    written_by: str = ROUND
    # in the config (False: the request derives it, as features from the variant)
    configured: bool = True
    # a config list (each value a cell) rather than one value
    axis: bool = True
    unit: str = ""
    formatter: Callable[[object], str] = str
    # reads one value as the config writes it (a size with a unit, an alias)
    parse: Callable[[object], object] | None = None
    # how the cell id names it (None: an axis the id holds elsewhere, the
    # variant beside the kernel; every other axis has one)
    in_id: IdPart | None = None
    # a family whose CPU pairs set its cells (c2c) has it set by the pair:
    # its config may not write it, its ids do not name it
    by_pair: bool = False
    # its record column is one of the summary's cell columns (CELL_KEYS);
    # the prefetch distance and the pair are not, as before the table
    summarised: bool = True

    @property
    def config_key(self) -> str | None:
        return (self.config or self.name) if self.configured else None

    @property
    def shown_as(self) -> str | None:
        return self.column or self.record

    def families(self) -> list[str]:
        """The families it applies to (plan/families.py)."""
        listed = families.named(lambda traits: self.name in traits.knobs)
        return listed or families.named(lambda traits: True)

    def applies(self, kernel: str) -> bool:
        return kernel in self.families()

    def text(self, value) -> str:
        return self.formatter(value)

    def value(self, written):
        """One value as the cell holds it, from the config's text."""
        return self.parse(written) if self.parse else written

    def named_in_id(self, kernel: str, value) -> bool:
        """Whether the id of a cell of `kernel` with `value` names it."""
        traits = families.family(kernel)
        if self.in_id is None or (traits.pairs and self.by_pair):
            return False
        where = self.in_id.where
        always = where == EVERY or (where == UNPAIRED and not traits.pairs) or (where == OWN and self.applies(kernel))
        return always or value != self.default

    def id_text(self, value) -> str:
        return path_safe(self.in_id.tag + self.in_id.text(value))


# The chase's locality: bytes per group of lines visited in random order
# (groups in random order), or "full" (one random cycle). 256 KiB = 64 pages
# is multichase's default, so membench's idle latency compares with it.
DEFAULT_CHASE_GROUP = 256 * 2**10
# The random chase's pointer spacing (one pointer per this many bytes):
# multichase's default stride, for the same reason.
DEFAULT_CHASE_SPACING = 256

_BYTES = {"unit": "bytes", "formatter": bytes_text}
TABLE = (
    Knob("kernel", None, request="kernel", record="kernel", matched=True, axis=False, written_by=HARNESS),
    Knob("variant", "default", config="variants", request="variant", option="variant", record="variant", series=True,
         matched=True, written_by=HARNESS),
    Knob("threads", 1, request="threads", option="threads", record="threads_requested", matched=True,
         in_id=IdPart("t", UNPAIRED), by_pair=True),
    Knob("affinity", "none", request="affinity", option="affinity", record="affinity_requested", series=True,
         matched=True, parse=canonical_affinity, in_id=IdPart(where=UNPAIRED), by_pair=True),
    Knob("policy", "default", request="policy", option="policy", record="policy_requested", series=True,
         matched=True, in_id=IdPart()),
    # "variant": the pages the variant declares (the request's `pages`)
    Knob("pages", "variant", request="pages_requested", option="pages", record="pages_requested", column="pages",
         series=True, matched=True, in_id=IdPart()),
    Knob("init", "parallel", request="init", option="init", record="init", series=True, matched=True,
         written_by=HARNESS, in_id=IdPart(where=UNPAIRED)),
    Knob("size", "auto", request="size", option="size", record="size_requested", series=True, matched=True,
         parse=parse_size, in_id=IdPart("s"), **_BYTES),
    # "variant": the distance the variant is built with
    Knob("prefetch_distance", "variant", request="prefetch_distance", option="prefetch-distance",
         record="prefetch_distance_requested", matched=True, in_id=IdPart("pf", CHANGED), summarised=False, **_BYTES),
    Knob("load_op", "triad", in_id=IdPart(where=OWN)),  # the request's ops (membench.plan.families: op_knob)
    Knob("load_delay", 0, request="load_delay", option="delay", record="load_delay_requested", matched=True,
         in_id=IdPart("d", OWN), unit="pause iterations"),
    Knob("chase_group", DEFAULT_CHASE_GROUP, request="chase_group", option="group", record="chase_group_requested",
         matched=True, in_record=OWN, parse=parse_group, in_id=IdPart("g", OWN, group_id_text), unit="bytes",
         formatter=group_text),
    Knob("ntimes", 10, request="ntimes", option="ntimes", record="ntimes", matched=True, axis=False,
         unit="iterations", written_by=HARNESS),
    Knob("chase_spacing", DEFAULT_CHASE_SPACING, request="chase_spacing", option="spacing",
         record="chase_spacing_requested", in_request=OWN, in_record=OWN, in_id=IdPart("sp", CHANGED), **_BYTES),
    Knob("sweep_from", 4096, request="sweep_from", option="sweep-from", record="sweep_from", axis=False,
         written_by=HARNESS, parse=parse_size, **_BYTES),
    Knob("points_per_octave", 2, request="points_per_octave", option="points-per-octave", record="points_per_octave",
         axis=False, written_by=HARNESS),
    Knob("repeats", 10, axis=False),
    Knob("features", None, request="features", record="features", configured=False, axis=False),
    # c2c: "<class>:<i>" (the i-th sampled pair of a locality class,
    # resolved from topology.json where it is measured) or "all"; the
    # config's `pairs` and `pair_classes` choose them (membench.plan.c2c_pairs)
    Knob("pair", "", request="pair", record="pair_requested", in_request=OWN, configured=False, written_by=PAIRS,
         in_id=IdPart("p", OWN, lead=True), summarised=False),
    Knob("pairs", "sample", axis=False),
    Knob("pair_classes", ("smt", "same_l2", "same_l3", "same_package", "other_package"), axis=False),
    Knob("pairs_per_class", 3, request="pairs_per_class", in_request=OWN, axis=False),
    Knob("c2c_samples", 100, request="c2c_samples", option="samples", in_request=OWN, axis=False),
    Knob("c2c_roundtrips", 1000, request="c2c_roundtrips", option="roundtrips", in_request=OWN, axis=False),
)  # fmt: skip
BY_NAME = {knob.name: knob for knob in TABLE}
BY_REQUEST = {knob.request: knob for knob in TABLE if knob.request}


def knob(name: str) -> Knob:
    return BY_NAME[name]


def default(name: str):
    return BY_NAME[name].default


def requested() -> dict[str, str]:
    """{request field: record key} of every knob a record states as
    requested: what a request change changed, read back from records."""
    return {k.request: k.record for k in TABLE if k.request and k.record}


# How a record key states a knob as asked, beside the harness's applied
# value under the bare name ("policy_requested" beside "policy"). Code
# outside this table names such keys through asked() and column().
ASKED = "_requested"


def asked(name: str) -> str:
    """The record key that states knob `name` as asked ("policy_requested",
    "affinity_requested"), beside the value handed to the harness under
    the bare name ("policy", "affinity")."""
    key = BY_NAME[name].record
    if key is None:
        raise KeyError(f"no record states the knob {name!r}")
    return key


def column(name: str) -> str:
    """The record column tables, figures and `make compare` show knob
    `name` by: its asked key, or the column named for it (pages: the pages
    the harness was asked for)."""
    shown = BY_NAME[name].shown_as
    if shown is None:
        raise KeyError(f"no record column shows the knob {name!r}")
    return shown


def column_named(word: str) -> str:
    """The column of the knob a person names ("affinity", "policy"), or the
    word itself where no knob is so named (a column named as it is)."""
    return column(word) if word in BY_NAME and BY_NAME[word].shown_as else word


def columns(*names: str) -> list[str]:
    """column() of each knob, in the order given."""
    return [column(name) for name in names]


def asked_keys(*names: str) -> list[str]:
    """asked() of each knob, in the order given."""
    return [asked(name) for name in names]


def states_asked(key: str) -> bool:
    """Whether a record key states a knob as asked (one of the table's or
    one a newer membench added: its records still name it so)."""
    return key.endswith(ASKED)


def knob_word(key: str) -> str:
    """A record key as labels name its knob ("policy_requested" -> "policy",
    "pages" -> "pages"); a key of no knob as it is, less the asked ending."""
    named = next((k.name for k in TABLE if key in (k.record, k.column)), None)
    return named or key.removesuffix(ASKED)


def written_by_the_round() -> list[Knob]:
    """The knobs whose record key the round writes (the request as asked)."""
    return [k for k in TABLE if k.record and k.written_by == ROUND]


def matched() -> list[Knob]:
    """The knobs stored records are matched to cells on, in table order."""
    return [k for k in TABLE if k.matched]


def request_only_where_they_apply() -> tuple[str, ...]:
    """The request fields its JSON holds only for the families they apply to."""
    return tuple(k.request for k in TABLE if k.request and k.in_request == OWN)


# The options of the harness, which every family's binary takes
# (kernels/harness/options.c); a knob's other option is its families' own
# (kernels/families/*.c).
HARNESS_OPTIONS = ("variant", "threads", "affinity", "policy", "pages", "init", "size", "ntimes", "prefetch-distance")


def family_fields() -> dict[str, str]:
    """{option: request field} of the knobs that feed a family's own option."""
    return {k.option: k.request for k in TABLE if k.option and k.option not in HARNESS_OPTIONS}


def series_columns(leaving: tuple[str, ...] = ()) -> list[str]:
    """The record columns whose values tell series apart, in table order;
    leaving: the knobs (by name) a caller shows elsewhere."""
    return [k.shown_as for k in TABLE if k.series and k.name not in leaving]


# What the plan stage derives from the table.


def axes(configured: bool = False) -> list[Knob]:
    """The axis knobs (an experiment's cells are the cross product of their
    lists), in table order: the order cells sort in. configured: those the
    config writes (the pair is chosen by `pairs`)."""
    return [k for k in TABLE if k.axis and (k.configured or not configured)]


def shared_fields() -> list[Knob]:
    """The knobs a cell and its request both carry under one name (the
    fields of membench.plan.request.Knobs), in table order."""
    return [k for k in TABLE if k.request == k.name and (k.configured or k.axis)]


def cell_settings(kernel: str) -> list[Knob]:
    """The knobs a cell of `kernel` takes from its experiment as one value
    (not an axis), where its request carries them (ntimes; c2c's samples)."""
    return [k for k in shared_fields() if not k.axis and k.configured and k.default is not None
            and (k.in_request == EVERY or k.applies(kernel))]  # fmt: skip


def id_axes(cell) -> str:
    """The axes part of a cell's id ("t4_close_default_4k_parallel_sauto"):
    each knob its id names, by the knob's IdPart, in table order, the lead
    first. Stored results are kept by it: tests/test_cell_ids_kept.py."""
    named = [k for k in TABLE if k.in_id and k.named_in_id(cell.kernel, getattr(cell, k.name))]
    named.sort(key=lambda k: not k.in_id.lead)
    return "_".join(k.id_text(getattr(cell, k.name)) for k in named)


def summary_columns() -> list[str]:
    """The record columns of the axis knobs that name a cell's rows in the
    summary (membench.analyse.stats.CELL_KEYS), in table order."""
    return [k.shown_as for k in axes() if k.shown_as and k.summarised]
