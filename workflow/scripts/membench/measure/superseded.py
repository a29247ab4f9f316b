"""Stored repetitions that a real change superseded are moved aside, never
overwritten nor deleted:

    results/<system>/superseded/<what>-<old digest>/<cell>/r<k>.jsonl

<what> is what changed (request: a knob such as ntimes; binary: the
kernel's code, flags or compiler; machine: the stable part of the
topology; unreadable: a file that holds no records) and <old digest> the
stored value it had, so one folder holds everything one change superseded.
superseded/disturbed/<cell>/r<k>.jsonl[.N] holds the earlier tries of a
repetition a round measured again because they were disturbed;
superseded/failed/<cell>/r<k>.jsonl[.N] the failed repetitions a user asked
to measure again (membench.measure.remeasure). Neither is ever brought back.
Deleting a folder (or all of superseded/) is safe: nothing reads them but
the count in the report and a round looking for a stored repetition whose
request came back (an edit undone)."""

from __future__ import annotations

import os
from pathlib import Path

from membench.core.layout import superseded_dir

# the folder of the tries a round measured again because they were disturbed
# (membench.measure.rounds; membench.core.disturbance)
DISTURBED = "disturbed"
# the folder of failed repetitions moved aside to be measured again
# (make remeasure-failed; membench.measure.remeasure)
FAILED = "failed"

def move_aside(path: str | Path, runs_dir: str | Path, why: str) -> Path:
    """Move a stored repetition under superseded/<why>/ keeping its path
    below runs/; an existing file there is never replaced (a suffix .1, .2,
    ... is added). Bytes and modification time stay as they were."""
    path = Path(path)
    relative = path.relative_to(runs_dir)
    target = superseded_dir(runs_dir) / why / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    candidate, n = target, 0
    while True:
        try:
            move_no_replace(path, candidate)
            return candidate
        except FileExistsError:
            n += 1
            candidate = target.with_name(f"{target.name}.{n}")


def move_no_replace(source: Path, target: Path) -> None:
    """A rename that fails (FileExistsError) rather than replace the target:
    a hard link, then the old name removed; a plain rename after a check
    where the filesystem has no hard links."""
    try:
        os.link(source, target)
    except FileExistsError:
        raise
    except OSError:
        if target.exists():
            raise FileExistsError(target) from None
        os.rename(source, target)
        return
    os.unlink(source)
