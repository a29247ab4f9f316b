"""One membench run per results folder, from planning to the report.

Snakemake's own lock covers only the outputs of one run, and `--unlock`
removes it whether or not its run is alive; two configs on one results
folder then share measurements.csv, results/summary/ and the figures, and
one plans (and draws) from the other's files. membench holds
results/.membench.lock (flock) for the whole life of the Snakemake process
that plans and runs the jobs: taken while the Snakefile is read, released
by the kernel when the process ends, however it ends (so a dead run never
blocks the next). A second run that finds it held stops before planning,
naming the live run; a dry run (-n) only says so.
"""

from __future__ import annotations

import fcntl
import os
import re
import time
from pathlib import Path

from membench.core import results_files

# Snakemake options that only read (no job runs): they never wait for the lock.
READ_ONLY = {
    "--dry-run", "--dryrun", "--lint", "--list", "--list-rules", "--list-target-rules", "--lt", "--summary",
    "--detailed-summary", "--dag", "--rulegraph", "--filegraph", "--d3dag", "--list-changes", "--lc",
    "--list-code-changes", "--list-input-changes", "--list-params-changes", "--print-compilation", "-l", "-S", "-D",
}  # fmt: skip
_HELD: dict[str, int] = {}


def read_only(argv: list[str]) -> bool:
    return any(a in READ_ONLY or a.split("=")[0] in READ_ONLY or re.fullmatch(r"-[A-Za-z]*n[A-Za-z]*", a) for a in argv)


def holder(lock_file: Path) -> str:
    try:
        return results_files.read_text(lock_file, lock_file.parent, errors="replace")[:200].strip() or "a process that left no name"
    except OSError:
        return "a process that left no name"


def take(results: str | Path, config_name: str, argv: list[str]) -> str | None:
    """Hold results/.membench.lock for this process; return None, or the
    line that says who holds it (the caller stops, or a read-only run says
    it and goes on)."""
    lock_file = Path(results) / ".membench.lock"
    if str(lock_file) in _HELD:
        return None
    if read_only(argv) and not lock_file.exists():
        return None  # a dry run creates nothing
    try:
        lock_file.parent.mkdir(parents=True, exist_ok=True)
        fd = results_files.open_fd(lock_file, results, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as error:
        # A lock that cannot be taken is said, never skipped: another
        # user's lock file (0644) in a shared results folder, a link, a
        # read-only folder. A dry run writes nothing and goes on.
        return (
            f"{lock_file} cannot be opened to lock {results}/ for this run ({error}): no run can be sure it is "
            "alone there. If another user's run owns it, use a results folder of your own; else remove the "
            "file (when no membench run uses this folder) and rerun"
        )
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return (
            f"{results}/ is in use by another membench run that is still alive ({holder(lock_file)}): "
            "wait until it ends (or stop it: README, \"Stopping and resuming\"), then rerun; "
            "do not use --unlock, that run's lock is not stale"
        )
    if read_only(argv):
        os.close(fd)  # looked, holds nothing
        return None
    os.ftruncate(fd, 0)
    os.write(fd, f"pid {os.getpid()}, config {config_name}, since {time.strftime('%Y-%m-%d %H:%M:%S')}\n".encode())
    _HELD[str(lock_file)] = fd
    return None
