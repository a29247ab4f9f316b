"""membench's own lock: one measuring round per system at a time, whatever
Snakemake's lock says (`snakemake --unlock` while a run still measures, two
checkouts sharing a results folder). A round holds flock(2) on
results/<system>/.measure.lock while it measures; the file holds the
holder's pid. A second round waits for it, saying whose pid it waits for;
the kernel releases the lock when the holder ends, however it ends."""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

from membench.core import results_files
from membench.core.store_errors import store_error

LOCK_NAME = ".measure.lock"


def holder(path: Path) -> str:
    try:
        return results_files.read_text(path, path.parent, errors="replace")[:200].strip() or "unknown"
    except OSError:
        return "unknown"


@contextmanager
def measuring(results_system_dir: str | Path, say: Callable[[str], None], keep_waiting: Callable[[], None] = lambda: None, poll: float = 0.5):
    """Hold the system's measure lock for the block. `say` gets one line
    when the lock is taken by another process; `keep_waiting` is called
    while waiting and may raise to give up (Snakemake ended)."""
    path = Path(results_system_dir) / LOCK_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    # as the umask allows, like every result file; never through a link
    # or into a FIFO (membench.core.results_files)
    try:
        fd = results_files.open_fd(path, path.parent, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError as error:
        raise store_error("lock", str(path), error) from None
    try:
        told = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not told:
                    say(
                        f"{path} is held by membench process {holder(path)}, which is measuring this system: "
                        "waiting for it to finish (two measurements at once would disturb each other)"
                    )
                    told = True
                keep_waiting()
                time.sleep(poll)
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield
    finally:
        os.close(fd)  # releases the lock
