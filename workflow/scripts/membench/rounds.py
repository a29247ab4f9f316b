"""Rounds: repetition k of every cell of one system, measured by one process.

A round is one Snakemake job (one SLURM allocation). It measures its cells
in a deterministic shuffled order (slow drift of the machine spreads over
all cells), one harness process per repetition, and writes each
repetition's file atomically as soon as it is measured. A repetition already
stored for the same request, binary and machine, judged by content and
never by time or path (membench.identity), is kept: a rerun after an
interruption, a move, a touch, --forceall, a new cell or a new repeat
measures only what is missing; a real change moves the old file aside
(membench.superseded) before measuring again. The round's manifest (its Snakemake output) lists its
repetition files; those files are not Snakemake outputs, so Snakemake never
deletes one, whatever happens to the job.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from membench import identity, matrix, measure_lock, node_pairs, superseded, variants
from membench.matrix import Cell
from membench.measure import Request, measure_cell
from membench.records import read_jsonl, write_text_atomic
from membench.store_errors import store_error
from membench.stored_index import StoredIndex


def cell_request(cell: Cell, system: str, repeat: int | None, variants_table: dict) -> dict:
    """The harness request of one repetition: every knob the measurement
    depends on. Its digest decides whether a stored repetition still holds."""
    return {
        "system": system,
        "kernel": cell.kernel,
        "variant": cell.variant,
        "ops": (
            [cell.load_op]
            if cell.kernel == "loaded"
            else list(variants_table["families"][cell.kernel]["ops"])
        ),
        "threads": cell.threads,
        "affinity": cell.affinity,
        "policy": cell.policy,
        "pages": (
            variants.declared_pages(variants_table, cell.kernel, cell.variant)
            if cell.pages == "variant"
            else cell.pages
        ),
        "pages_requested": cell.pages,
        "init": cell.init,
        "size": cell.size,
        "ntimes": cell.ntimes,
        "prefetch_distance": cell.prefetch_distance,
        "features": variants.features(variants_table, cell.kernel, cell.variant),
        "load_delay": cell.load_delay,
        "sweep_from": cell.sweep_from,
        "points_per_octave": cell.points_per_octave,
        "chase_group": cell.chase_group,
        # only where it changes the measurement: other cells keep their digest
        **({"chase_spacing": cell.chase_spacing} if cell.kernel in ("chase", "loaded") else {}),
        "repeat": repeat,
        # c2c only (other families' requests, and digests, stay as they were)
        **(
            {
                "pair": cell.pair,
                "pairs_per_class": cell.pairs_per_class,
                "c2c_samples": cell.c2c_samples,
                "c2c_roundtrips": cell.c2c_roundtrips,
            }
            if cell.kernel == "c2c"
            else {}
        ),
    }


def digest(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]


def round_count(cells: list[Cell]) -> int:
    return max((cell.repeats for cell in cells), default=0)


def round_cells(cells: list[Cell], round_index: int, seed: int) -> list[Cell]:
    """The cells with a repetition `round_index`, in this round's shuffled
    order (a different order each round, the same on every rerun)."""
    members = [(cell.id, cell) for cell in cells if cell.repeats > round_index]
    members.sort(key=lambda entry: (matrix.shuffle_key(entry[0], round_index, seed), entry[0]))
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
        "experiments": {
            name: {key: value for key, value in experiment.items() if key != "repeats"}
            for name, experiment in config["experiments"].items()
            if experiment["repeats"] > round_index
        },
    }


def study_cells(study: dict, round_index: int, variants_table: dict, topology: dict | None = None) -> list[Cell]:
    """The cells of a round from its study (round_study): every cell of
    each experiment in it, the node-matrix shorthand (node:each, bind:each)
    made concrete for the system's topology (membench.node_pairs)."""
    experiments = {name: {**e, "repeats": round_index + 1} for name, e in study["experiments"].items()}
    return node_pairs.expand_pairs(matrix.expand({"experiments": experiments}, variants_table), topology)


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
        return sorted({binary_path(bin_dir, cell) for cell in self._members(round_index)[1]})


def binary_path(bin_dir: str, cell: Cell) -> str:
    return f"{bin_dir}/{cell.kernel}-{cell.variant}"


def run_path(runs_dir: str, cell: Cell, round_index: int) -> str:
    return f"{runs_dir}/{cell.id}/r{round_index}.jsonl"


def measure_round(
    plan: Plan,
    *,
    topology: str,
    bin_dir: str,
    runs_dir: str,
    log,
    run_harness_process: Callable | None = None,
    progress: Callable[[str], None] = lambda line: None,
    keep_waiting: Callable[[], None] = lambda: None,
) -> dict:
    """Measure every repetition of the round that is not stored yet, under
    the system's measure lock (membench.measure_lock); return the manifest
    (every repetition file of the round, which were measured now, which
    kept, which moved aside). A stored repetition is kept when its request,
    its binary (by content) and the machine (the stable part of the
    topology) are those of this round (membench.identity); one that a real
    change superseded is moved aside (membench.superseded), never
    overwritten; a missing one is looked up by request among the round's
    other files (membench.stored_index: a renamed experiment)."""

    def say(line: str) -> None:
        log.write(line + "\n")
        log.flush()
        progress(line)

    with measure_lock.measuring(Path(runs_dir).parent, say, keep_waiting):
        return _measure_locked(plan, topology, bin_dir, runs_dir, log, run_harness_process, progress)


def _measure_locked(plan, topology, bin_dir, runs_dir, log, run_harness_process, progress) -> dict:
    measured, kept, unverified, adopted, moved = [], [], [], [], {}
    started = time.monotonic()
    machine = identity.machine_digest(json.loads(Path(topology).read_text()))
    own = [run_path(runs_dir, cell, plan.round_index) for cell in plan.cells]
    index = StoredIndex(runs_dir, plan.round_index, set(own))
    for position, (cell, request, path) in enumerate(zip(plan.cells, plan.requests, own), start=1):
        binary = binary_path(bin_dir, cell)
        identity_keys = {
            "request_digest": digest(request),
            "binary_sha256": identity.file_sha256(binary),
            "machine_digest": machine,
        }
        state = _stored_state(Path(path), identity_keys)
        if state[0] == "superseded":
            aside = _store(lambda: superseded.move_aside(path, runs_dir, state[1]), "move aside", path)
            moved[path] = str(aside)
            log.write(f"superseded ({state[1]}): {path} -> {aside}\n")
            state = ("missing", None)
        if state[0] == "missing":
            for source in index.candidates(identity_keys["request_digest"]):
                if _stored_state(source, identity_keys)[0] in ("current", "unverified"):
                    _store(lambda: index.adopt(source, path), "store", path)
                    adopted.append(path)
                    state = _stored_state(Path(path), identity_keys)
                    break
        if state[0] in ("current", "unverified"):
            kept.append(path)
            if state[0] == "unverified":
                unverified.append(path)
            continue
        log.write(f"== {cell.id} r{plan.round_index}\n")
        log.flush()
        one = time.monotonic()
        measure_cell(
            binary, topology, path, log,
            request=Request(**request), experiment=cell.experiment, cell_id=cell.id,
            extra=identity_keys, run_process=run_harness_process,
        )  # fmt: skip (a write error there is a StoreError too)
        measured.append(path)
        progress(
            f"{plan.system} round {plan.round_index}: {position}/{len(plan.cells)} "
            f"{cell.id} ({time.monotonic() - one:.1f} s)"
        )
    return {
        "system": plan.system,
        "round": plan.round_index,
        "digest": plan.digest,
        "runs": own,
        "measured": measured,
        "kept": kept,
        # kept on their request alone: stored before membench recorded the
        # binary and the machine of a repetition (identity.verdict)
        "kept_unverified": unverified,
        # kept from a file of another name (a renamed experiment)
        "adopted": adopted,
        "superseded": moved,
        "seconds": round(time.monotonic() - started, 3),
    }


def _stored_state(path: Path, identity_keys: dict) -> tuple[str, str | None]:
    if not path.exists():
        return "missing", None
    try:
        records = read_jsonl(path)
    except (OSError, ValueError):
        records = []
    return identity.verdict(records, **identity_keys)


def _store(action: Callable, what: str, path: str):
    """Run a step that writes under the results folder; an OSError becomes
    a StoreError naming the path and what to do."""
    try:
        return action()
    except OSError as error:
        raise store_error(what, path, error) from None


def write_manifest(path: str, manifest: dict) -> None:
    write_text_atomic(Path(path), json.dumps(manifest, indent=1, sort_keys=True) + "\n")

