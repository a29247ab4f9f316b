"""A repetition that cannot be stored stops the round with one line naming
the path and what to do, not a traceback; every repetition stored before
it stays (each is stored as soon as it is measured)."""

from __future__ import annotations

import errno

from membench.core.results_files import UnsafeResultsFile


class StoreError(Exception):
    """One line: the path, the cause, what to do."""


ADVICE = {
    errno.ENOSPC: "the filesystem is full: free space there (df -h {dir}) and rerun",
    errno.EDQUOT: "the disk quota is exhausted: free space or raise the quota and rerun",
    errno.EACCES: "no permission to write there: fix the folder's permissions (ls -ld {dir}) and rerun",
    errno.EPERM: "no permission to write there: fix the folder's permissions (ls -ld {dir}) and rerun",
    errno.EROFS: "the filesystem is read-only: measure into a writable results folder",
}


def store_error(action: str, path: str, error: OSError) -> StoreError:
    if isinstance(error, UnsafeResultsFile):
        return StoreError(f"cannot {action} {path}: {error}")
    where = str(error.filename or path)
    directory = where.rsplit("/", 1)[0] if "/" in where else "."
    advice = ADVICE.get(error.errno, "fix the cause and rerun").format(dir=directory)
    return StoreError(
        f"cannot {action} {path} ({error.strerror or error} at {where}): {advice}; "
        "the repetitions stored so far are kept and the rerun measures only what is missing",
    )
