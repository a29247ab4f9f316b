"""Rounds planned: repetition k of every cell of one system, in a shuffled
order, as one Snakemake job (measured by membench.measure.rounds).

A round is one Snakemake job (one SLURM allocation). It measures its cells
in a deterministic shuffled order (slow drift of the machine spreads over
all cells), one harness process per repetition, and writes each
repetition's file atomically as soon as it is measured. A repetition already
stored for the same request, binary and machine, judged by content and
never by time or path (membench.measure.identity), is kept: a rerun after an
interruption, a move, a touch, --forceall, a new cell or a new repeat
measures only what is missing; a real change moves the old file aside
(membench.measure.superseded) before measuring again. The round's manifest (its Snakemake output) lists its
repetition files; those files are not Snakemake outputs, so Snakemake never
deletes one, whatever happens to the job.

The round carries its requests, not the config: its study (round k of one
system) lists the request of every cell with a repetition k
(membench.plan.request, as_dict) and that request's digest, and the job
measures those (plan_of_study) without expanding the config's grammar
again; only the node-matrix pairs are made there, from the probe.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from membench.core import layout
from membench.core.atomic_files import write_text_atomic
from membench.plan import budget, grammar, node_pairs
from membench.plan.grammar import Cell
from membench.plan.request import Request


def cell_request(cell: Cell, system: str, repeat: int | None, variants_table: dict) -> dict:
    """The harness request of one repetition (membench.plan.request), as
    the JSON a round digests: every knob the measurement depends on. Its
    digest decides whether a stored repetition still holds."""
    return Request.of_cell(cell, system, repeat, variants_table).as_dict()


def digest(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]


def round_count(cells: list[Cell]) -> int:
    return max((cell.repeats for cell in cells), default=0)


def _round_order(members: list, round_index: int, seed: int) -> list:
    """Cells or members (anything with an id) in round k's shuffled order (a
    different order each round, the same on every rerun)."""
    return sorted(members, key=lambda m: (grammar.shuffle_key(m.id, round_index, seed), m.id))


def round_cells(cells: list[Cell], round_index: int, seed: int) -> list[Cell]:
    """The cells with a repetition `round_index`, in this round's order."""
    return _round_order([cell for cell in cells if cell.repeats > round_index], round_index, seed)


@dataclass(frozen=True)
class Member:
    """One repetition a round measures: its cell's id and experiment and its
    request (Request.as_dict, with system and repeat), whose digest is what
    a stored repetition is kept by (membench.measure.identity)."""

    id: str
    experiment: str
    request: dict
    request_digest: str

    @classmethod
    def of(cls, cell_id: str, experiment: str, request: dict) -> Member:
        return cls(cell_id, experiment, request, digest(request))

    @property
    def kernel(self) -> str:
        return self.request["kernel"]

    @property
    def variant(self) -> str:
        return self.request["variant"]

    def as_dict(self) -> dict:
        return {"cell": self.id, "experiment": self.experiment, "request": self.request,
                "request_digest": self.request_digest}  # fmt: skip


@dataclass(frozen=True)
class Plan:
    """What one round of one system measures, in order; the digest covers
    every request of the round (the manifest keeps it)."""

    system: str
    round_index: int
    members: list[Member]
    digest: str

    @property
    def requests(self) -> list[dict]:
        return [member.request for member in self.members]


def _plan(members: list[Member], system: str, round_index: int, seed: int) -> Plan:
    ordered = _round_order(members, round_index, seed)
    return Plan(system, round_index, ordered, digest([[m.id, m.request] for m in ordered]))


def plan_round(cells: list[Cell], system: str, round_index: int, seed: int, variants_table: dict) -> Plan:
    """Round k of concrete cells (their node pairs made)."""
    members = [Member.of(cell.id, cell.experiment, cell_request(cell, system, round_index, variants_table))
               for cell in cells if cell.repeats > round_index]  # fmt: skip
    return _plan(members, system, round_index, seed)


class StudyError(ValueError):
    """A study file that is not the round's (another system or round, or a
    request edited after its digest was taken)."""


def plan_of_study(study: dict, system: str, round_index: int, topology: dict | None) -> Plan:
    """The round's plan from its study (RoundInputs.study), as the job
    reads it: the requests as they are carried, the node-matrix pairs made
    for the system's topology (membench.plan.node_pairs; left out without
    one), in the round's order. The grammar is not expanded again."""
    if (study["system"], study["round"]) != (system, round_index):
        raise StudyError(f"the study is round {study['round']} of {study['system']}, not round {round_index} of {system}")
    members: dict[str, Member] = {}
    for entry in study["requests"]:
        if digest(entry["request"]) != entry["request_digest"]:
            raise StudyError(f"{entry['cell']}: its request does not match its digest {entry['request_digest']}")
        for cell_id, request in node_pairs.pair_requests(entry["cell"], entry["request"], topology):
            members.setdefault(cell_id, Member.of(cell_id, entry["experiment"], request))
    return _plan(list(members.values()), system, round_index, study["shuffle_seed"])


class MemberText:
    """A cell's Member.of(...).as_dict() at round k as json.dumps(...,
    sort_keys=True) writes it, byte for byte: its request's JSON is made
    once, with a stand-in where the repeat goes."""

    STAND_IN = -7_349_016_281_503  # never a repeat

    def __init__(self, cell_id: str, experiment: str, request: dict):
        self.request = request
        self.before, _, self.after = json.dumps({**request, "repeat": self.STAND_IN}, sort_keys=True).partition(
            str(self.STAND_IN))
        self.head = f'{{"cell": {json.dumps(cell_id)}, "experiment": {json.dumps(experiment)}, "request": '
        self.cell_id, self.experiment = cell_id, experiment

    def __call__(self, round_index: int) -> str:
        if str(self.STAND_IN) in self.after:  # a value of the request spells it too: the slow way
            member = Member.of(self.cell_id, self.experiment, {**self.request, "repeat": round_index})
            return json.dumps(member.as_dict(), sort_keys=True)
        request = f"{self.before}{round_index}{self.after}"
        return f'{self.head}{request}, "request_digest": "{hashlib.sha256(request.encode()).hexdigest()[:16]}"}}'


class RoundInputs:
    """Round k's study (as JSON) and binaries for each system: Snakemake
    asks every round of a 1000-round study for both. A cell's request is
    worked out once; a round adds its repeat."""

    def __init__(self, config: dict, cells: list[Cell], variants_table: dict):
        self._config, self._cells = config, cells
        # the rounds that measure each cell whatever the findings say (all its repeats without a budget)
        self._fixed = [budget.fixed_repeats(cell, config) for cell in cells]
        self._table = variants_table
        self._requests: dict[str, list[dict]] = {}
        self._digests: dict[tuple[str, int], str] = {}
        self._written: set[Path] = set()
        self._texts: dict[str, list[MemberText]] = {}

    def _cell_requests(self, system: str) -> list[dict]:
        if system not in self._requests:
            self._requests[system] = [cell_request(cell, system, None, self._table) for cell in self._cells]
        return self._requests[system]

    def study(self, system: str, round_index: int) -> str:
        """What the job of round k is handed: the shuffle seed, the retry
        bound and every request of a cell with a repetition k (node-matrix
        cells as the config names them), with its digest. So round k's
        study changes exactly when one of its requests changes or joins it;
        a new repeat adds a round and changes none of the others. The JSON
        of _study (sort_keys), put together from each member's text."""
        members = [text(round_index) for text, fixed in zip(self._member_texts(system), self._fixed) if fixed > round_index]
        head = {k: v for k, v in self._study(system, round_index, [False] * len(self._cells)).items() if k != "requests"}
        # sort_keys puts "requests" second: after "disturbed_retries", before "round"
        first, rest = json.dumps(head, sort_keys=True).split(", ", 1)
        return f"{first}, \"requests\": [{', '.join(members)}], {rest}"

    def _member_texts(self, system: str) -> list:
        """Per cell, its member's JSON at a round (MemberText): planning a
        1000-round study digests each of its requests once a round."""
        if system not in self._texts:
            self._texts[system] = [MemberText(cell.id, cell.experiment, request)
                                   for cell, request in zip(self._cells, self._cell_requests(system))]  # fmt: skip
        return self._texts[system]

    def _study(self, system: str, round_index: int, wanted: list[bool]) -> dict:
        members = [
            Member.of(cell.id, cell.experiment, {**request, "repeat": round_index}).as_dict()
            for cell, request, want in zip(self._cells, self._cell_requests(system), wanted)
            if want
        ]
        return {"system": system, "round": round_index, "shuffle_seed": self._config["shuffle_seed"],
                "disturbed_retries": self._config.get("disturbed_retries", 2), "requests": members}  # fmt: skip

    def adaptive_study(self, system: str, round_index: int, cell_ids: set[str]) -> dict:
        """A planned round's study (a budget's round past min_repeats):
        repetition k of the config cells named (config_cell_ids maps a
        node-matrix pair to its cell) that have one, never a cell a small
        budget left out (its binary is not built)."""
        wanted = [cell.repeats > round_index and fixed > 0 and cell.id in cell_ids
                  for cell, fixed in zip(self._cells, self._fixed)]  # fmt: skip
        return self._study(system, round_index, wanted)


    def _sha256(self, system: str, round_index: int) -> str:
        """The study's content digest, worked out once (a study is made
        again only to be written)."""
        key = (system, round_index)
        if key not in self._digests:
            self._digests[key] = hashlib.sha256(self.study(system, round_index).encode()).hexdigest()
        return self._digests[key]

    def study_digest(self, system: str, round_index: int) -> str:
        """Names round k's manifest (r<k>-<digest>.json): two configs that
        share a results folder have manifests of their own, so that running
        one never makes Snakemake delete the other's; a changed study is a
        new output, so Snakemake runs its round."""
        return self._sha256(system, round_index)[:12]

    def study_file(self, system: str, round_index: int, directory: str, write: bool = True) -> str:
        """The round's study in a file named by its content, written once
        (not by a read-only run: write=False): the job reads it from there,
        as a shell argument it would be capped at 128 KiB (Linux's
        MAX_ARG_STRLEN), a few hundred requests. A file already there is
        kept when its content is still the one its name says."""
        digest_hex = self._sha256(system, round_index)
        path = Path(directory) / f"{digest_hex[:24]}.json"
        if write and path not in self._written:
            if not path.exists() or hashlib.sha256(path.read_bytes()).hexdigest() != digest_hex:
                write_text_atomic(path, self.study(system, round_index))
            self._written.add(path)
        return str(path)

    def binaries(self, round_index: int, bin_dir: str) -> list[str]:
        """Round k's binaries: its cells' (an adaptive round's: every cell's
        that may have one; a cell a small budget left out has no findings to
        plan it by, so its binary is never built: membench.plan.estimate, a first answer)."""
        adaptive = round_index >= max(self._fixed, default=0)
        return sorted({layout.binary_path(bin_dir, cell) for cell, fixed in zip(self._cells, self._fixed)
                       if (cell.repeats if adaptive and fixed else fixed) > round_index})  # fmt: skip


def budget_key(config: dict, cells: list[Cell], variants_table: dict, system: str) -> str:
    """The key a run within a budget names its planned rounds by (the
    Snakefile's, for `make status` and `make plan`)."""
    inputs = RoundInputs(config, cells, variants_table)
    return budget.key([inputs.study_digest(system, k) for k in range(budget.fixed_rounds(cells, config))], config, cells)


def config_cell_ids(cells: list[Cell], topology: dict | None) -> dict[str, str]:
    """Every concrete cell id (a node-matrix cell's pairs made for this
    topology) -> the id of the config cell it comes from."""
    return {concrete.id: cell.id for cell in cells for concrete in node_pairs.expand_pairs([cell], topology)}
