"""Rounds measured: repetition k of every cell of one system, by one process.

A round is one Snakemake job (one SLURM allocation). It measures its cells
in the order the plan gives (membench.plan.rounds), one harness process per
repetition, and writes each repetition's file atomically as soon as it is
measured. A repetition already stored for the same request, binary and
machine, judged by content and never by time or path
(membench.measure.identity), is kept: a rerun after an interruption, a
move, a touch, --forceall, a new cell or a new repeat measures only what is
missing; a real change moves the old file aside (membench.measure.superseded)
before measuring again. The round's manifest (its Snakemake output) lists
its repetition files; those files are not Snakemake outputs, so Snakemake
never deletes one, whatever happens to the job.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

from membench.core import disturbance, layout, manifests, results_files
from membench.core.atomic_files import read_jsonl, write_text_atomic
from membench.core.store_errors import store_error
from membench.measure import identity, superseded, tries
from membench.measure import lock as measure_lock
from membench.measure.harness import Request, measure_cell
from membench.measure.stored_index import StoredIndex
from membench.plan.rounds import Plan

# Retries help against a passing neighbour, not a machine that stays busy:
# after this many repetitions in a row disturbed through every try, the
# round measures the rest once each (kept and marked, as any disturbed
# try); the first repetition that comes out quiet gives retries back.
BUSY_STREAK = 3


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
    disturbed_retries: int = 0,
) -> dict:
    """Measure every repetition of the round that is not stored yet, under
    the system's measure lock (membench.measure.lock); return the manifest
    (every repetition file of the round, which were measured now, which
    kept, which moved aside). A stored repetition is kept when its request,
    its binary (by content) and the machine (the stable part of the
    topology) are those of this round (membench.measure.identity); one that a real
    change superseded is moved aside (membench.measure.superseded), never
    overwritten; a missing one is looked up by request among the round's
    other files (membench.measure.stored_index: a renamed experiment).
    A repetition measured now that the disturbed rule marks
    (membench.core.disturbance) is measured again, up to disturbed_retries
    more times in all, also across runs (membench.measure.tries: a stopped
    round's tries count); each earlier try is moved aside
    (superseded/disturbed/), never overwritten, and the last try is kept
    whatever it shows."""

    def say(line: str) -> None:
        log.write(line + "\n")
        log.flush()
        progress(line)

    with measure_lock.measuring(Path(runs_dir).parent, say, keep_waiting):
        return _measure_locked(plan, topology, bin_dir, runs_dir, log, run_harness_process, progress, disturbed_retries)


def _measure_locked(plan, topology, bin_dir, runs_dir, log, run_harness_process, progress, retries=0) -> dict:
    measured, kept, unverified, adopted, moved = [], [], [], [], {}
    seconds: dict[str, float] = {}  # path -> its repetition's seconds, tries included
    disturbed, tried_again, beside = [], {}, []
    busy_streak, busy_spans = 0, []
    started = time.monotonic()
    machine = identity.machine_digest(json.loads(Path(topology).read_text()))
    own = [layout.run_path(runs_dir, member, plan.round_index) for member in plan.members]
    index = StoredIndex(runs_dir, plan.round_index, set(own))
    for position, (member, path) in enumerate(zip(plan.members, own), start=1):
        binary, request = layout.binary_path(bin_dir, member), member.request
        identity_keys = {
            "request_digest": member.request_digest,
            "binary_sha256": identity.file_sha256(binary),
            "machine_digest": machine,
        }
        state = _stored_state(Path(path), identity_keys, request)
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
            _store(lambda: tries.forget_tries(path), "store", path)  # a stop after its last try was stored
            continue
        log.write(f"== {member.id} r{plan.round_index}\n")
        log.flush()
        one = time.monotonic()
        # the bound is per repetition: tries an earlier, stopped run measured count
        attempt = tries.earlier_tries(path, identity_keys) + 1
        allowed = 0 if busy_streak >= BUSY_STREAK else retries
        if attempt > 1:
            log.write(f"{attempt - 1} tries measured by an earlier run (disturbed, moved aside)\n")
        records, causes = _tries(member, binary, topology, path, runs_dir, log, identity_keys, (attempt, allowed),
                                 run_harness_process, tried_again.setdefault(path, []))  # fmt: skip
        if not tried_again[path]:
            del tried_again[path]
        _store(lambda: tries.forget_tries(path), "store", path)
        if any(disturbance.neighbour(record) for record in records or []):
            beside.append(path)
        if causes:
            disturbed.append(path)
            busy_streak += 1
            if busy_streak == BUSY_STREAK and retries and position < len(plan.members):
                busy_spans.append([position + 1, len(plan.members)])  # until a quiet one ends it
                log.write(f"{BUSY_STREAK} repetitions in a row disturbed in every try: the machine stays busy; "
                          "the round's later repetitions are measured once each until one comes out quiet\n")  # fmt: skip
        else:
            if busy_streak >= BUSY_STREAK and busy_spans:
                busy_spans[-1][1] = position  # measured once, quiet: the retries come back after it
            busy_streak = 0
        measured.append(path)
        seconds[path] = round(time.monotonic() - one, 3)
        again = sum(len(asides) for asides in tried_again.values())
        progress(
            f"{plan.system} round {plan.round_index}: {position}/{len(plan.members)} "
            f"{member.id} ({time.monotonic() - one:.1f} s)"
            + (f"; disturbed {len(disturbed)} kept, {again} measured again" if disturbed or again else "")
            + ("; busy: not measured again" if busy_streak >= BUSY_STREAK and retries else "")
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
        # measured now and marked disturbed in their last try; the earlier
        # tries of a repetition measured again (moved aside, in order)
        "disturbed": disturbed,
        "disturbed_tries": tried_again,
        # [first, last] positions (from 1) the round measured once each, the
        # machine staying busy (BUSY_STREAK), one pair per busy streak
        "busy_spans": busy_spans,
        # kept: other tasks kept other CPUs busy beside them (a memory-side
        # neighbour possible, which the disturbed rule cannot see)
        "neighbour": beside,
        "seconds": round(time.monotonic() - started, 3),
        # each repetition measured now, its tries included: what the next
        # round of a run within a budget expects it to cost again
        "repetition_seconds": seconds,
    }


def _tries(member, binary, topology, path, runs_dir, log, identity_keys, attempts, run_harness_process, asides) -> tuple:
    """(records, causes) of one repetition: measured, and measured again
    while the disturbed rule marks it and tries are left (attempts: the
    first try's number and the last one allowed to be measured again), each
    disturbed try moved aside (its path appended to `asides`)."""
    attempt, allowed = attempts
    while True:
        records = measure_cell(
            binary, topology, path, log,
            request=Request.of_dict(member.request), experiment=member.experiment, cell_id=member.id,
            extra={**identity_keys, "measure_try": attempt}, run_process=run_harness_process,
        )  # fmt: skip (a write error there is a StoreError too)
        causes = _disturbed_by(records)
        if not causes or attempt > allowed:
            return records, causes
        _store(lambda: tries.note_tries(path, identity_keys, attempt), "store", path)
        aside = _store(lambda: superseded.move_aside(path, runs_dir, superseded.DISTURBED), "move aside", path)
        asides.append(str(aside))
        log.write(f"disturbed ({causes}), try {attempt} of {allowed + 1}: {path} -> {aside}\n")
        attempt += 1


def _disturbed_by(records: list[dict]) -> str:
    """What disturbed a repetition's records (the disturbed rule), or ""
    when none was marked."""
    causes = []
    for record in records or []:
        disturbed, said = disturbance.verdict(record)
        if disturbed:
            causes += [c for c in said if c not in causes]
    return "; ".join(causes)


def _stored_state(path: Path, identity_keys: dict, request: dict | None = None) -> tuple[str, str | None]:
    if not path.exists():
        return "missing", None
    try:
        records = read_jsonl(path)
    except results_files.UnsafeResultsFile as error:
        # a link or a FIFO where a run file belongs: said, never moved aside
        # (moving it would reach through the link)
        raise store_error("read", str(path), error) from None
    except (OSError, ValueError):
        records = []
    return identity.verdict(records, **identity_keys, request=request)


def _store(action: Callable, what: str, path: str):
    """Run a step that writes under the results folder; an OSError becomes
    a StoreError naming the path and what to do."""
    try:
        return action()
    except OSError as error:
        raise store_error(what, path, error) from None


def write_manifest(path: str, manifest: dict) -> None:
    """The manifest, with the size and time of each run file as the round
    leaves it (membench.core.manifests checks them before the next plan); a
    write error is a StoreError (one line, what to do)."""
    manifest = {**manifest, "stored": manifests.stored_states(manifest["runs"])}
    _store(lambda: write_text_atomic(Path(path), json.dumps(manifest, indent=1, sort_keys=True) + "\n"), "write the manifest", path)

