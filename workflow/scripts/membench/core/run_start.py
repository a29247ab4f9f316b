"""What a membench run does once to its results folder before Snakemake
builds the job graph, called by the Snakefile in the Snakemake that plans
(never in a job's): hold the folder's run lock (membench.core.run_lock),
say which config it measures with (membench.core.measured_with), delete the
round manifests that no longer describe their run files (a file deleted,
replaced, copied in, or written by an undone edit's round: a manifest is
checked, never trusted, and holds no data) so that those rounds run again
and keep what is the same by content (membench.core.manifests), and write
the index files that rules name as inputs (the package's source digests;
figures-only, the stored run files collect reads).

Why then, and not in an onstart handler or a first rule: Snakemake decides
which jobs run from the files as it finds them while it builds the graph,
and onstart (or any rule) runs after that; a manifest deleted or an index
rewritten there would run nothing until the next invocation. What keeps a
read-only run (-n, --summary, --list-...: run_lock.read_only) free of side
effects is this module's own rule: it only looks at the lock and says what a
run would do (which rounds run again, whether the analysis is redone for a
changed package); it writes, deletes and holds nothing.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from membench.core import last_words, manifests, measured_with, run_lock

# Stale manifests named one by one; the rest counted.
NAMED_STALE = 5


class RunRefused(Exception):
    """Another live run holds the results folder (or its lock cannot be
    taken): the run stops before planning, with this one line."""


def named_config(argv: list[str]) -> str:
    """The config file the command line names, as the lock and
    results/measured-with.yaml say it."""
    return next((b for a, b in zip(argv, argv[1:]) if a in ("--configfile", "--configfiles")), "from the profile")


def begin(
    results: str,
    *,
    argv: list[str],
    config: dict,
    measuring: bool,
    round_manifests: list[str],
    indexes: dict[str, list[str]],
    say: Callable[[str], None],
    said: list[str] = (),
    stop: str | None = None,
    write: Callable[[], object] | None = None,
) -> dict[str, list[str]]:
    """Once per run, before the job graph (the module's docstring).
    `round_manifests`: every round manifest the run's rules name;
    `indexes`: path -> lines of each index file a rule reads; `said`: what
    planning has to say, said first; `stop`: why the run cannot go on (a
    figures-only run that cannot draw), raised as RunRefused with the
    report set aside (stop_before_any_job); `write`: writes the files the
    jobs read (the rounds' studies), not called by a read-only run. Raises
    RunRefused when another run holds the folder (a read-only run says so
    and goes on). Returns {"stale": manifests deleted (or that would be),
    "changed": index files written (or that would be)}."""
    for line in said:
        say(line)
    if stop is not None:
        raise RunRefused(stop_before_any_job(results, argv, stop))
    read_only = run_lock.read_only(argv)
    hold_lock(results, argv)
    if measuring and not read_only:
        measured_with.record(results, named_config(argv), config)
    stale = {path: reason for path in round_manifests if (reason := manifests.stale_reason(path))}
    for path, reason in list(stale.items())[:NAMED_STALE]:
        say(f"membench: round {path} runs again: {reason}")
    if len(stale) > NAMED_STALE:
        say(f"membench: ... and {len(stale) - NAMED_STALE} more rounds run again")
    changed = [path for path, lines in indexes.items() if not manifests.index_holds(path, lines)]
    if read_only:
        if stale:
            say("membench: (a dry run: the plan below does not show them yet)")
        if changed:
            say(f"membench: {', '.join(changed)} would be written: what reads it is made again "
                "(a dry run: the plan below does not show it yet)")  # fmt: skip
        return {"stale": list(stale), "changed": changed}
    for path in stale:
        Path(path).unlink(missing_ok=True)
    for path in changed:
        manifests.write_index(path, indexes[path])
    if write is not None:
        write()
    return {"stale": list(stale), "changed": changed}


def hold_lock(results: str, argv: list[str]) -> None:
    """Hold the folder's run lock for this process (run_lock.take: idempotent);
    RunRefused when another live run holds it, a line when a read-only run
    finds it held."""
    busy = run_lock.take(results, named_config(argv), argv)
    if busy and not run_lock.read_only(argv):
        raise RunRefused(busy)
    if busy:
        print(f"membench: {busy}", file=sys.stderr)


def stop_before_any_job(results: str, argv: list[str], message: str) -> str:
    """A run that stops before any job (figures-only cannot draw): as every
    failure does, it leaves no report that looks current (membench.core.last_words),
    once it holds the folder, so another live run's report is never touched;
    a read-only run moves nothing. The message to stop with."""
    if run_lock.read_only(argv):
        return message
    hold_lock(results, argv)
    aside = last_words.set_report_aside(f"{results}/report.html", "figures-only stopped")
    return message + (f"\n{aside}" if aside else "")
