"""The one way membench opens a file inside a results folder.

A results folder is copied in from elsewhere (a colleague's run, a
backup), so any name in it may be a symbolic link or a FIFO. Opened the
plain way, a lock or report written through `results/.membench.lock ->
~/.bashrc` overwrites the user's file, and reading a run file that is a
FIFO (or a link to /dev/zero) hangs, or reads until memory runs out.

Every file opened here is:
- reached without following a link in its last component (O_NOFOLLOW),
  its folder resolved under the results root (a linked folder leading out
  of it is refused; the root itself may be a link, the user chose it);
- opened without blocking (O_NONBLOCK: a FIFO with no writer does not
  hang the open) and refused unless fstat says it is a regular file (on
  which O_NONBLOCK changes nothing, so it stays set).

A refusal is an UnsafeResultsFile (an OSError) whose text names the file,
what it is, and what to do. Writes that replace a whole file go through
membench.core.atomic_files (a rename never follows a link); this module is
for what is opened in place (locks) and for every read.
"""

from __future__ import annotations

import errno
import functools
import os
import stat
from pathlib import Path

# The most a run file, manifest or probe file may hold: far past any real
# one (a repetition file of 10,000 records is under 10 MB), short of what
# would take the machine's memory.
MAX_READ_BYTES = 1 << 30


class UnsafeResultsFile(OSError):
    """A file in a results folder that membench will not open."""

    def __init__(self, path, what: str):
        super().__init__(errno.EPERM, f"{path}: {what}")
        self.path = str(path)

    def __str__(self) -> str:
        return self.strerror


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a folder"),
    ):
        if test(mode):
            return name
    return "not a regular file"


@functools.lru_cache(maxsize=4096)
def _resolved(folder: str) -> str:
    # collect reads thousands of run files from a few hundred folders: one
    # resolution per folder and process (os.path.realpath lstats every part)
    return os.path.realpath(folder)


def check_under(path: str | Path, root: str | Path) -> None:
    """Refuse `path` when its folder, links resolved, is not inside `root`
    (links resolved)."""
    folder = _resolved(os.path.dirname(os.path.abspath(path)))
    top = _resolved(os.path.abspath(root))
    if folder != top and not folder.startswith(top.rstrip("/") + "/"):
        raise UnsafeResultsFile(
            path,
            f"its folder leads out of {root} (to {folder}) through a symbolic link: membench writes and reads "
            f"only inside the results folder; replace the link with a real folder",
        )


def open_fd(path: str | Path, root: str | Path, flags: int = os.O_RDONLY, mode: int = 0o666) -> int:
    """A file descriptor on `path`, a regular file inside `root` (see the
    module's text); `flags` as for os.open (O_CREAT to create it)."""
    check_under(path, root)
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise UnsafeResultsFile(
                path,
                f"a symbolic link (to {os.readlink(path) if os.path.islink(path) else '?'}): membench never "
                "opens a link inside the results folder (it could lead out of it); replace it with a copy "
                "of the file (cp --remove-destination \"$(readlink -f F)\" F), or remove it",
            ) from None
        if error.errno == errno.ENXIO:  # O_WRONLY on a FIFO with no reader
            raise UnsafeResultsFile(path, "a FIFO (named pipe), not a regular file: remove it") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafeResultsFile(
                path, f"{_kind(st.st_mode)}, not a regular file: membench stores only regular files here; remove it"
            )
        if flags & (os.O_WRONLY | os.O_RDWR) and st.st_nlink > 1:
            # written in place (a lock): a hard link would carry the write
            # to a file outside the results folder
            raise UnsafeResultsFile(path, f"a file with {st.st_nlink} hard links, opened to be written: remove it")
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_bytes(path: str | Path, root: str | Path, limit: int = MAX_READ_BYTES) -> bytes:
    """The whole of a regular file inside `root`, refused past `limit` bytes."""
    fd = open_fd(path, root)
    with os.fdopen(fd, "rb") as fh:
        if os.fstat(fd).st_size > limit:  # a regular file: its size is what a read gets
            raise UnsafeResultsFile(path, f"over {limit} bytes: no file membench stores is this large; it is not one")
        return fh.read()


def open_binary(path: str | Path, root: str | Path):
    """A binary file object on a regular file inside `root`, for reading."""
    return os.fdopen(open_fd(path, root), "rb")


def read_text(path: str | Path, root: str | Path, errors: str = "strict") -> str:
    return read_bytes(path, root).decode("utf-8", errors=errors)


def system_root(path: str | Path) -> Path:
    """The results root of a file in a system's folder, from its path:
    the folder holding `runs/` or `rounds/` (results/<system>), else the
    file's own folder."""
    parts = Path(path).parts
    for at in range(len(parts) - 2, -1, -1):
        if parts[at] in ("runs", "rounds", "superseded"):
            return Path(*parts[:at]) if at else Path(".")
    return Path(path).parent
