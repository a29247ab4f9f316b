"""Stopping cleanly: a measurement ends with the Snakemake that started it.

Snakemake 9.27's local executor never signals a running job. On SIGTERM it
waits for the running jobs to finish, and its handler takes the scheduler's
lock, which the interrupted main thread may hold (selecting jobs): the
process then hangs for good. On SIGINT it relies on the terminal having
sent SIGINT to the jobs as well, but a job started in a shell's background
(`&`, nohup, a script) ignores SIGINT. Killed outright, Snakemake leaves its
job and harness measuring on, re-parented to init.

So, three parts, each where it belongs:
- the harness dies with the measure process that started it (the kernel's
  parent-death signal, set in the child before exec);
- the measure process waits on its harness and on Snakemake at once, and
  stops (harness killed, nothing stored for that repetition) when
  Snakemake ends first;
- inside Snakemake, SIGTERM and SIGINT first stop the running measure
  processes; SIGTERM then asks the scheduler for its graceful exit from a
  thread of its own, never inside the signal handler.
"""

from __future__ import annotations

import ctypes
import os
import select
import signal
import subprocess
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from membench.measure import quiet

PR_SET_PDEATHSIG = 1


class Stopped(Exception):
    """A measurement stopped from outside; nothing is stored for it."""


# The watched process (watch): its pid, and a pidfd on it where the kernel
# has them (Linux >= 5.3); else run_child polls.
_watched_pid: int | None = None
_watched_pidfd: int | None = None
POLL_SECONDS = 0.2

# A SIGTERM to the round (Snakemake stopping, scancel, kill) only sets this
# flag; the round acts on it where it is safe to (check_stop: before each
# try, while waiting on a harness or a lock). A handler that raised
# SystemExit could run inside a hook Python calls from C (logging's at-fork
# hook around Popen's fork), where the exception is printed as "ignored" and
# lost: the round then measured on and stored.
_terminated_by: int | None = None


def _set_terminated(signum, frame) -> None:
    global _terminated_by
    _terminated_by = signum


def stop_on_sigterm() -> None:
    """SIGTERM sets the flag check_stop reads, nothing else."""
    signal.signal(signal.SIGTERM, _set_terminated)


def terminated_by() -> int | None:
    """The signal that asked this process to stop, or None."""
    return _terminated_by


def check_stop() -> None:
    """Raise Stopped when a SIGTERM came, or the watched process (Snakemake)
    has ended: called before each try and while waiting."""
    if _terminated_by is not None:
        raise Stopped(f"{signal.Signals(_terminated_by).name} received")
    if not _watched_alive():
        raise Stopped(f"process {_watched_pid} (Snakemake) ended")


def _pidfd(pid: int) -> int | None:
    """A pidfd on `pid`, or None where the kernel (older than 5.3) or the
    sandbox has none. ProcessLookupError when `pid` has ended."""
    try:
        return os.pidfd_open(pid)
    except ProcessLookupError:
        raise
    except (OSError, AttributeError):
        return None


def watch(pid: int) -> None:
    """From now on, run_child stops (raising Stopped) when process `pid`
    ends. Stopped at once if it has already ended."""
    global _watched_pid, _watched_pidfd
    try:
        _watched_pidfd = _pidfd(pid)
        if _watched_pidfd is None:
            os.kill(pid, 0)
    except ProcessLookupError:
        raise Stopped(f"process {pid} (Snakemake) has already ended") from None
    _watched_pid = pid


def _watched_alive() -> bool:
    """Whether the watched process runs; a zombie (ended, not yet reaped by
    its parent) has ended, as a pidfd would tell."""
    if _watched_pid is None:
        return True
    try:
        stat = Path(f"/proc/{_watched_pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2 :].split()[0] not in ("Z", "X")


def check_watched() -> None:
    """check_stop, for a round waiting on something else than a child
    (membench.measure.lock)."""
    check_stop()


def _wait_child(proc: subprocess.Popen) -> None:
    """Return when the child ends; Stopped when the watched process ends
    first, or a SIGTERM comes. Where the kernel has pidfds this process
    sleeps until one of those happens (a blocking select on the child's
    pidfd, the watched one's and the signal wakeup pipe): it takes no turn
    on any CPU while the harness measures (membench.measure.quiet)."""
    child = _pidfd(proc.pid) if _watched_pid is None or _watched_pidfd is not None else None
    if child is None:  # no pidfds: poll both
        while True:
            check_stop()
            try:
                proc.wait(timeout=POLL_SECONDS)
                return
            except subprocess.TimeoutExpired:
                if not _watched_alive():
                    raise Stopped("Snakemake ended during the measurement") from None
    try:
        with _signal_wakeup() as wakeup:
            waiting = [child] + ([_watched_pidfd] if _watched_pidfd is not None else [])
            while True:
                check_stop()  # a SIGTERM's flag, set before the select woke
                ready, _, _ = select.select(waiting + ([wakeup] if wakeup is not None else []), [], [],
                                            None if wakeup is not None else POLL_SECONDS)  # fmt: skip
                if child in ready:
                    return
                if _watched_pidfd is not None and _watched_pidfd in ready:
                    raise Stopped("Snakemake ended during the measurement")
                _drain(wakeup)
    finally:
        os.close(child)


@contextmanager
def _signal_wakeup():
    """A pipe the interpreter writes a byte to when a signal with a Python
    handler arrives (signal.set_wakeup_fd), so that a select without a
    timeout still wakes for a SIGTERM; None where it cannot be set (not the
    main thread: the select then wakes every POLL_SECONDS)."""
    read, write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        previous = signal.set_wakeup_fd(write, warn_on_full_buffer=False)
    except ValueError:
        os.close(read), os.close(write)
        yield None
        return
    try:
        yield read
    finally:
        signal.set_wakeup_fd(previous)
        os.close(read), os.close(write)


def _drain(fd: int | None) -> None:
    try:
        while fd is not None and os.read(fd, 512):
            pass
    except BlockingIOError:
        pass


def _die_with_parent(parent: int):
    """A preexec function: the child gets SIGKILL when the thread that
    forked it ends (here the main thread of a single-threaded process, so
    when the process ends), and gives up if that already happened. It is
    also the OOM killer's first choice (oom_score_adj 1000, which any user
    may set for their own process): should a cell still outgrow the memory
    it can get (a bind policy on a full node), the harness dies alone,
    never a neighbour on a shared node."""
    prctl = ctypes.CDLL(None, use_errno=True).prctl  # resolved before fork
    # the CPUs this process had before membench.measure.quiet confined it
    # to those the cell leaves free: the harness binds from all of them
    cpus = quiet.child_affinity()

    def preexec():
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if cpus:
            os.sched_setaffinity(0, cpus)
        if os.getppid() != parent:
            os._exit(128 + signal.SIGKILL)
        try:
            fd = os.open("/proc/self/oom_score_adj", os.O_WRONLY)
            try:
                os.write(fd, b"1000")
            finally:
                os.close(fd)
        except OSError:
            pass  # no procfs: the memory check before the run still holds

    return preexec


def run_child(argv: list[str], *, stdout, stderr, env: dict) -> int:
    """Run argv to its end and return its exit status (negative: the
    signal that ended it). The child dies with this process, also when this
    process is killed outright. When the watched process (watch) ends
    first, the child is killed and Stopped raised; when this process is
    interrupted (KeyboardInterrupt, SystemExit), the child is killed before
    the exception goes on."""
    check_stop()
    proc = subprocess.Popen(argv, stdout=stdout, stderr=stderr, env=env, preexec_fn=_die_with_parent(os.getpid()))
    try:
        _wait_child(proc)
        check_stop()  # a SIGTERM as the harness ended: nothing is stored
        return proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def descendants(root: int) -> list[int]:
    """Every live descendant of process `root`, from /proc."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        ppid = int(text[text.rindex(")") + 2 :].split()[1])
        children.setdefault(ppid, []).append(int(stat.parent.name))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def terminate_descendants(marker: str) -> list[int]:
    """SIGTERM to each descendant of this process whose command line holds
    `marker`; the pids signalled."""
    signalled = []
    for pid in descendants(os.getpid()):
        if marker in _command_line(pid):
            try:
                os.kill(pid, signal.SIGTERM)
                signalled.append(pid)
            except ProcessLookupError:
                pass
    return signalled


def stop_measurements_on_signal(marker: str) -> None:
    """Call in Snakemake's main process once its scheduler is up (onstart).
    Either signal first stops every running measure process (SIGTERM to the
    descendants whose command line holds `marker`; each stores nothing for
    the repetition it was on), from a thread, twice (a job whose start was
    under way at the first sweep).

    SIGTERM then asks the scheduler for its graceful exit (no new job), also
    from that thread: the scheduler's own handler takes a lock that the
    interrupted main thread may hold. SIGINT raises KeyboardInterrupt, as by
    default (Snakemake cancels its jobs, on SLURM with scancel), even where
    SIGINT was ignored at start: a background job cannot get a Ctrl-C, so a
    SIGINT that arrives was sent on purpose."""
    graceful = signal.getsignal(signal.SIGTERM)

    def sweep(signum: int) -> None:
        if signum == signal.SIGTERM and callable(graceful):
            graceful(signum, None)
        for _ in range(2):
            terminate_descendants(marker)
            time.sleep(1)

    def handler(signum, frame):
        threading.Thread(target=sweep, args=(signum,), name="membench-stop", daemon=True).start()
        if signum == signal.SIGINT:
            raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
