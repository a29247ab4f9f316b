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
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

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


@dataclass(frozen=True)
class RoundSetting:
    """What a round measures with, fixed while it runs."""

    plan: Plan
    topology: str
    bin_dir: str
    runs_dir: str
    log: TextIO
    run_harness_process: Callable | None
    progress: Callable[[str], None]
    retries: int  # disturbed_retries: more tries a disturbed repetition may have
    machine: str  # identity.machine_digest of the topology
    index: StoredIndex  # the round's other files, for adopting


@dataclass
class RoundState:
    """The round so far: the manifest's lists, each in the order its
    repetitions came, and the busy streak the round is in."""

    measured: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    kept_unverified: list[str] = field(default_factory=list)
    adopted: list[str] = field(default_factory=list)
    superseded: dict[str, str] = field(default_factory=dict)  # path -> where it was moved
    disturbed: list[str] = field(default_factory=list)
    disturbed_tries: dict[str, list[str]] = field(default_factory=dict)  # path -> earlier tries, moved aside
    neighbour: list[str] = field(default_factory=list)
    repetition_seconds: dict[str, float] = field(default_factory=dict)  # path -> seconds, tries included
    busy_streak: int = 0  # repetitions in a row disturbed through every try
    busy_spans: list[list[int]] = field(default_factory=list)

    @property
    def busy(self) -> bool:
        return self.busy_streak >= BUSY_STREAK


def _measure_locked(plan, topology, bin_dir, runs_dir, log, run_harness_process, progress, retries=0) -> dict:
    started = time.monotonic()
    machine = identity.machine_digest(json.loads(Path(topology).read_text()))
    own = [layout.run_path(runs_dir, member, plan.round_index) for member in plan.members]
    index = StoredIndex(runs_dir, plan.round_index, set(own))
    setting = RoundSetting(plan, topology, bin_dir, runs_dir, log, run_harness_process, progress, retries, machine, index)
    state = RoundState()
    for position, (member, path) in enumerate(zip(plan.members, own), start=1):
        _repetition(setting, state, position, member, path)
    return _summary(plan, own, state, started)


def _repetition(setting: RoundSetting, state: RoundState, position: int, member, path: str) -> None:
    """One step of the round: the repetition at `position` (from 1) kept
    as stored, else measured now."""
    binary = layout.binary_path(setting.bin_dir, member)
    identity_keys = {
        "request_digest": member.request_digest,
        "binary_sha256": identity.file_sha256(binary),
        "machine_digest": setting.machine,
    }
    if not _keep_stored(setting, state, member, path, identity_keys):
        _measure(setting, state, position, member, path, binary, identity_keys)


def _keep_stored(setting: RoundSetting, state: RoundState, member, path: str, identity_keys: dict) -> bool:
    """The stored-state policy: a repetition stored for this request,
    binary and machine (identity.verdict) is kept, one stored before the
    binary and machine were recorded kept as unverified; one a real change
    superseded is moved aside and, as a missing one, looked for under
    another name. True when kept (its tries file, if any, forgotten)."""
    verdict = _stored_state(Path(path), identity_keys, member.request)
    if verdict[0] == "superseded":
        verdict = _supersede(setting, state, path, verdict[1])
    if verdict[0] == "missing":
        verdict = _adopt(setting, state, path, identity_keys, verdict)
    if verdict[0] not in ("current", "unverified"):
        return False
    state.kept.append(path)
    if verdict[0] == "unverified":
        state.kept_unverified.append(path)
    _store(lambda: tries.forget_tries(path), "store", path)  # a stop after its last try was stored
    return True


def _supersede(setting: RoundSetting, state: RoundState, path: str, why: str) -> tuple[str, None]:
    """The superseding policy: the stored file moves aside, never
    overwritten (membench.measure.superseded); the repetition is missing."""
    aside = _store(lambda: superseded.move_aside(path, setting.runs_dir, why), "move aside", path)
    state.superseded[path] = str(aside)
    setting.log.write(f"superseded ({why}): {path} -> {aside}\n")
    return "missing", None


def _adopt(setting: RoundSetting, state: RoundState, path: str, identity_keys: dict, verdict: tuple) -> tuple:
    """The adopting policy: a missing repetition takes the first of the
    round's other files stored for its request (a renamed experiment)
    that this binary and machine would keep; its verdict after, or
    `verdict` when none is taken."""
    for source in setting.index.candidates(identity_keys["request_digest"]):
        if _stored_state(source, identity_keys)[0] in ("current", "unverified"):
            _store(lambda: setting.index.adopt(source, path), "store", path)
            state.adopted.append(path)
            return _stored_state(Path(path), identity_keys)
    return verdict


def _measure(setting: RoundSetting, state: RoundState, position: int, member, path: str, binary, identity_keys: dict) -> None:
    """A repetition measured now, its tries included, and its line said."""
    log = setting.log
    log.write(f"== {member.id} r{setting.plan.round_index}\n")
    log.flush()
    one = time.monotonic()
    attempts = _attempts(setting, state, path, identity_keys)
    asides = state.disturbed_tries.setdefault(path, [])
    records, causes = _tries(setting, member, binary, path, identity_keys, attempts, asides)
    if not asides:
        del state.disturbed_tries[path]
    _store(lambda: tries.forget_tries(path), "store", path)
    if any(disturbance.neighbour(record) for record in records or []):
        state.neighbour.append(path)
    if causes:
        state.disturbed.append(path)
    _busy_streak(setting, state, position, bool(causes))
    state.measured.append(path)
    state.repetition_seconds[path] = round(time.monotonic() - one, 3)
    setting.progress(_progress_line(setting, state, position, member, one))


def _attempts(setting: RoundSetting, state: RoundState, path: str, identity_keys: dict) -> tuple[int, int]:
    """The disturbed-retries bound of one repetition: (the number of its
    first try now, the last try that may be measured again). The bound is
    per repetition: tries an earlier, stopped run measured count; in a
    busy streak none is measured again."""
    attempt = tries.earlier_tries(path, identity_keys) + 1
    allowed = 0 if state.busy else setting.retries
    if attempt > 1:
        setting.log.write(f"{attempt - 1} tries measured by an earlier run (disturbed, moved aside)\n")
    return attempt, allowed


def _busy_streak(setting: RoundSetting, state: RoundState, position: int, disturbed: bool) -> None:
    """The busy-streak policy: BUSY_STREAK repetitions in a row disturbed
    through every try open a span of repetitions measured once each (to the
    round's end, unless a quiet one ends it sooner: it gives retries back)."""
    last = len(setting.plan.members)
    if disturbed:
        state.busy_streak += 1
        if state.busy_streak == BUSY_STREAK and setting.retries and position < last:
            state.busy_spans.append([position + 1, last])  # until a quiet one ends it
            setting.log.write(f"{BUSY_STREAK} repetitions in a row disturbed in every try: the machine stays busy; "
                              "the round's later repetitions are measured once each until one comes out quiet\n")  # fmt: skip
        return
    if state.busy and state.busy_spans:
        state.busy_spans[-1][1] = position  # measured once, quiet: the retries come back after it
    state.busy_streak = 0


def _progress_line(setting: RoundSetting, state: RoundState, position: int, member, one: float) -> str:
    """The terminal's line for a repetition measured now (`one`: when it began)."""
    plan = setting.plan
    again = sum(len(asides) for asides in state.disturbed_tries.values())
    return (
        f"{plan.system} round {plan.round_index}: {position}/{len(plan.members)} "
        f"{member.id} ({time.monotonic() - one:.1f} s)"
        + (f"; disturbed {len(state.disturbed)} kept, {again} measured again" if state.disturbed or again else "")
        + ("; busy: not measured again" if state.busy and setting.retries else "")
    )


def _summary(plan: Plan, own: list[str], state: RoundState, started: float) -> dict:
    """The round's manifest (its Snakemake output, less `stored`)."""
    return {
        "system": plan.system,
        "round": plan.round_index,
        "digest": plan.digest,
        "runs": own,
        "measured": state.measured,
        "kept": state.kept,
        # kept on their request alone: stored before membench recorded the
        # binary and the machine of a repetition (identity.verdict)
        "kept_unverified": state.kept_unverified,
        # kept from a file of another name (a renamed experiment)
        "adopted": state.adopted,
        "superseded": state.superseded,
        # measured now and marked disturbed in their last try; the earlier
        # tries of a repetition measured again (moved aside, in order)
        "disturbed": state.disturbed,
        "disturbed_tries": state.disturbed_tries,
        # [first, last] positions (from 1) the round measured once each, the
        # machine staying busy (BUSY_STREAK), one pair per busy streak
        "busy_spans": state.busy_spans,
        # kept: other tasks kept other CPUs busy beside them (a memory-side
        # neighbour possible, which the disturbed rule cannot see)
        "neighbour": state.neighbour,
        "seconds": round(time.monotonic() - started, 3),
        # each repetition measured now, its tries included: what the next
        # round of a run within a budget expects it to cost again
        "repetition_seconds": state.repetition_seconds,
    }


def _tries(setting: RoundSetting, member, binary, path: str, identity_keys: dict, attempts: tuple, asides: list) -> tuple:
    """The disturbed-retries policy: (records, causes) of one repetition,
    measured, and measured again while the disturbed rule marks it and
    tries are left (attempts: the first try's number and the last one
    allowed to be measured again), each disturbed try moved aside (its path
    appended to `asides`)."""
    attempt, allowed = attempts
    while True:
        records = measure_cell(
            binary, setting.topology, path, setting.log,
            request=Request.of_dict(member.request), experiment=member.experiment, cell_id=member.id,
            extra={**identity_keys, "measure_try": attempt}, run_process=setting.run_harness_process,
        )  # fmt: skip (a write error there is a StoreError too)
        causes = _disturbed_by(records)
        if not causes or attempt > allowed:
            return records, causes
        _store(lambda: tries.note_tries(path, identity_keys, attempt), "store", path)
        aside = _store(lambda: superseded.move_aside(path, setting.runs_dir, superseded.DISTURBED), "move aside", path)
        asides.append(str(aside))
        setting.log.write(f"disturbed ({causes}), try {attempt} of {allowed + 1}: {path} -> {aside}\n")
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

