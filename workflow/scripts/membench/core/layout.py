"""The results layout, written down once:

    results/<system>/runs/<cell>/r<k>.jsonl          one repetition's records
    results/<system>/rounds/r<k>-<study>.json        round k's manifest
    results/<system>/superseded/<what>-<digest>/<cell>/r<k>.jsonl
    results/<system>/{topology,environment}.json     the probe
    results/<system>/measurements.csv                collected records
    bin/<system>/<kernel>-<variant>                  one binary per variant

Every stage that names one of these paths asks this module.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from pathlib import Path

RUNS = "runs"
ROUNDS = "rounds"
SUPERSEDED = "superseded"
RUN_FILE = re.compile(r"^r([0-9]+)\.jsonl$")


def binary_path(bin_dir: str, cell) -> str:
    return f"{bin_dir}/{cell.kernel}-{cell.variant}"


def run_path(runs_dir: str, cell, round_index: int) -> str:
    """A repetition's file: `cell` is anything with the cell's `id`."""
    return f"{runs_dir}/{cell.id}/r{round_index}.jsonl"


def manifest_path(system_dir: str, round_index: int, study_digest: str) -> str:
    return f"{system_dir}/{ROUNDS}/r{round_index}-{study_digest}.json"


def superseded_dir(runs_dir: str | Path) -> Path:
    return Path(runs_dir).parent / SUPERSEDED


def superseded_counts(results_system_dir: str | Path) -> Counter:
    """Superseded repetitions per cell id of one system's results folder."""
    base = Path(results_system_dir) / SUPERSEDED
    found = Counter()
    if not base.is_dir():
        return found
    for dirpath, _, files in os.walk(base):
        n = sum(1 for f in files if f.startswith("r") and ".jsonl" in f)
        if n:
            parts = Path(dirpath).relative_to(base).parts
            found["/".join(parts[1:])] += n  # parts[0] is <what>-<digest>
    return found
