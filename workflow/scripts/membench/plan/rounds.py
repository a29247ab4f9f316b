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
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from membench.core import layout
from membench.core.atomic_files import write_text_atomic
from membench.plan import grammar
from membench.plan import node_pairs
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


def round_cells(cells: list[Cell], round_index: int, seed: int) -> list[Cell]:
    """The cells with a repetition `round_index`, in this round's shuffled
    order (a different order each round, the same on every rerun)."""
    members = [(cell.id, cell) for cell in cells if cell.repeats > round_index]
    members.sort(key=lambda entry: (grammar.shuffle_key(entry[0], round_index, seed), entry[0]))
    return [cell for _, cell in members]


@dataclass(frozen=True)
class Plan:
    """What one round of one system measures, in order; the digest covers
    every request of the round (the manifest keeps it)."""

    system: str
    round_index: int
    cells: list[Cell]
    requests: list[dict]
    digest: str


def plan_round(cells: list[Cell], system: str, round_index: int, seed: int, variants_table: dict) -> Plan:
    members = round_cells(cells, round_index, seed)
    requests = [cell_request(cell, system, round_index, variants_table) for cell in members]
    return Plan(system, round_index, members, requests, digest([[c.id, r] for c, r in zip(members, requests)]))


def round_study(config: dict, round_index: int) -> dict:
    """What the job of round k is handed (and Snakemake tracks, as a param):
    the shuffle seed and every experiment with a repetition k, less its
    repeats. So Snakemake reruns round k exactly when one of its
    experiments changes or joins it; a new repeat adds a round and changes
    none of the others."""
    return {
        "shuffle_seed": config["shuffle_seed"],
        "disturbed_retries": config.get("disturbed_retries", 2),
        "experiments": {
            name: {key: value for key, value in experiment.items() if key != "repeats"}
            for name, experiment in config["experiments"].items()
            if experiment["repeats"] > round_index
        },
    }


def study_cells(study: dict, round_index: int, variants_table: dict, topology: dict | None = None) -> list[Cell]:
    """The cells of a round from its study (round_study): every cell of
    each experiment in it, the node-matrix shorthand (node:each, bind:each)
    made concrete for the system's topology (membench.plan.node_pairs)."""
    experiments = {name: {**e, "repeats": round_index + 1} for name, e in study["experiments"].items()}
    return node_pairs.expand_pairs(grammar.expand({"experiments": experiments}, variants_table), topology)


class RoundInputs:
    """Round k's study (as JSON) and binaries, worked out once per set of
    experiments (those with more than k repeats) rather than per round:
    Snakemake asks every round of a 1000-round study for both."""

    def __init__(self, config: dict, cells: list[Cell]):
        self._config, self._cells = config, cells
        self._thresholds = sorted({cell.repeats for cell in cells})
        self._cache: dict[int, tuple[dict, list[Cell]]] = {}
        self._written: set[Path] = set()

    def _members(self, round_index: int) -> tuple[dict, list[Cell]]:
        key = next((t for t in self._thresholds if t > round_index), 0)
        if key not in self._cache:
            study = round_study(self._config, round_index)
            self._cache[key] = (study, [cell for cell in self._cells if cell.repeats > round_index])
        return self._cache[key]

    def study(self, round_index: int) -> str:
        study = self._members(round_index)[0]
        return json.dumps(study, sort_keys=True)

    def study_digest(self, round_index: int) -> str:
        """Names round k's manifest (r<k>-<digest>.json): two configs that
        share a results folder have manifests of their own, so that running
        one never makes Snakemake delete the other's."""
        return hashlib.sha256(self.study(round_index).encode()).hexdigest()[:12]

    def study_file(self, round_index: int, directory: str) -> str:
        """The round's study written to a file named by its content (once):
        the job reads it from there, as a shell argument it would be capped
        at 128 KiB (Linux's MAX_ARG_STRLEN), a few hundred experiments."""
        text = self.study(round_index)
        path = Path(directory) / f"{hashlib.sha256(text.encode()).hexdigest()[:24]}.json"
        if path not in self._written:
            if not path.exists() or path.read_text() != text:
                write_text_atomic(path, text)
            self._written.add(path)
        return str(path)

    def binaries(self, round_index: int, bin_dir: str) -> list[str]:
        return sorted({layout.binary_path(bin_dir, cell) for cell in self._members(round_index)[1]})
