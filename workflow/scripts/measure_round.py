"""One round of measurements (rule measure_round): a plain command, so that
the job starts no Snakemake of its own; only light imports.

Prints one line per repetition and a closing line with the pace; details go
to the round's log.
"""

import argparse
import json
import sys
from pathlib import Path

from membench.plan import rounds
from membench.measure import rounds as measure_rounds
from membench.measure import quiet, stopping
from membench.core import last_words, layout
from membench.core.store_errors import StoreError


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--study-file", required=True, help="the round's requests, as JSON (rounds.RoundInputs.study)")
    parser.add_argument("--system", required=True)
    parser.add_argument("--round", type=int, required=True)
    parser.add_argument("--topology", required=True)
    parser.add_argument("--bin-dir", help="default bin/SYSTEM")
    parser.add_argument("--runs-dir", help="default results/SYSTEM/runs")
    parser.add_argument("--manifest", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--parent-pid", type=int, help="stop when this process (Snakemake) ends")
    return parser.parse_args(argv)


def duration(seconds: float) -> str:
    """As `make status` says a time (membench.store.progress.duration,
    which is not imported here: with its schema checks it took a third of
    this command's start, a gap between two rounds' measurements)."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    hours, minutes = divmod(round(seconds / 60), 60)
    return f"{minutes} min" if hours == 0 else f"{hours} h {minutes} min"


def closing_line(manifest: dict, plan: rounds.Plan) -> str:
    line = (
        f"{plan.system} round {plan.round_index} done: {len(manifest['measured'])} measured, "
        f"{len(manifest['kept'])} kept, {duration(manifest['seconds'])}"
    )
    notes = [
        f"{len(manifest[key])} {what}"
        for key, what in (
            ("superseded", "moved aside to results/" + plan.system + "/superseded/ (README, Everyday use)"),
            ("adopted", "brought back from files stored under another name (superseded/ after an undone edit, a renamed experiment)"),
            ("kept_unverified", "kept on their request alone (stored before binary and machine were recorded)"),
            ("disturbed", "marked disturbed (kept, shown, left out of conclusions)"),
            ("disturbed_tries", "measured again after a disturbed try"),
            ("neighbour", "ran while other tasks kept other CPUs busy (a memory-side neighbour possible; kept)"),
        )
        if manifest.get(key)
    ]
    if manifest.get("busy_spans"):
        spans = ", ".join(str(a) if a == b else f"{a}–{b}" for a, b in manifest["busy_spans"])
        notes.append(f"the machine stayed busy: repetitions {spans} were measured once each, "
                     "until one came out quiet")  # fmt: skip
    if notes:
        line += " (" + "; ".join(notes) + ")"
    if manifest["measured"]:
        line += f" ({manifest['seconds'] / len(manifest['measured']):.1f} s per measurement)"
    return line + "; `make status` tells the time left"


def stopped(plan: rounds.Plan, error: StoreError) -> int:
    """One line, now and again as the run's last lines (membench.core.last_words)."""
    message = f"{plan.system} round {plan.round_index} stopped: {error}"
    print(message, file=sys.stderr, flush=True)
    last_words.leave(message)
    return 1


def main(argv=None) -> int:
    args = parse_args(argv)
    bin_dir = args.bin_dir or layout.bin_dir(args.system)
    runs_dir = args.runs_dir or str(layout.runs_dir("results", args.system))
    # SIGTERM (Snakemake stopping, scancel) sets a flag the round reads
    # before each try and while it waits: the harness is killed and the
    # repetition it was on is not stored (membench.measure.stopping).
    stopping.stop_on_sigterm()
    study = json.loads(Path(args.study_file).read_text())
    # The system's probe (a Snakemake input of the round, always there in
    # the pipeline) makes the node-matrix pairs concrete.
    probe = Path(args.topology)
    try:
        plan = rounds.plan_of_study(study, args.system, args.round, json.loads(probe.read_text()) if probe.exists() else None)
    except rounds.StudyError as error:
        print(f"{args.system} round {args.round}: {args.study_file}: {error}", file=sys.stderr)
        return 1
    with open(args.log, "a") as log:
        try:
            if args.parent_pid:
                stopping.watch(args.parent_pid)
                quiet.keep_parent_off(args.parent_pid)  # Snakemake, off the measuring CPUs too
            manifest = measure_rounds.measure_round(
                plan, topology=args.topology, bin_dir=bin_dir, runs_dir=runs_dir, log=log,
                progress=lambda line: print(line, flush=True), keep_waiting=stopping.check_watched,
                disturbed_retries=study.get("disturbed_retries", 0),
            )  # fmt: skip
        except stopping.Stopped as stop:
            log.write(f"stopped: {stop}\n")
            print(f"{plan.system} round {plan.round_index} stopped: {stop}", file=sys.stderr)
            return 128 + stopping.terminated_by() if stopping.terminated_by() else 1
        except StoreError as error:
            log.write(f"stopped: {error}\n")
            return stopped(plan, error)
    if stopping.terminated_by():  # after the last repetition: the round is not done
        print(f"{plan.system} round {plan.round_index} stopped: SIGTERM received", file=sys.stderr)
        return 128 + stopping.terminated_by()
    try:
        measure_rounds.write_manifest(args.manifest, manifest)
    except StoreError as error:
        return stopped(plan, error)
    print(closing_line(manifest, plan), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
