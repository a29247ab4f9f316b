"""The results layout, written down once:

    results/<system>/runs/<cell>/r<k>.jsonl          one repetition's records
    results/<system>/rounds/r<k>-<study>.json        round k's manifest
    results/<system>/superseded/<what>-<digest>/<cell>/r<k>.jsonl
    results/<system>/{topology,environment}.json     the probe
    results/<system>/measurements.csv                collected records
    results/summary/<table>.csv                      the analysis (SUMMARY_FILES)
    results/summary/{findings.json,findings.csv,sections.json}  the findings
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
TOPOLOGY = "topology.json"
ENVIRONMENT = "environment.json"
MEASUREMENTS = "measurements.csv"
SYSTEM_FILES = (TOPOLOGY, ENVIRONMENT)  # the probe's, beside runs/
SUMMARY = "summary"
# what results/summary/ holds, by the name the rules give each file: the
# analysis's tables, then the findings stage's files
SUMMARY_FILES = {
    "cells": "cells.csv",
    "problems": "problems.csv",
    "modes": "modes.csv",
    "c2c_classes": "c2c_classes.csv",
    "c2c_pairs": "c2c_pairs.csv",
    "findings": "findings.json",
    "findings_csv": "findings.csv",
    "sections": "sections.json",
}
RUN_FILE = re.compile(r"^r([0-9]+)\.jsonl$")
RUN_GLOB = "r*.jsonl"
# a cell id: <experiment>/<kernel>-<variant>/<axes>
CELL_PARTS = 3


def system_dir(results: str | Path, system: str) -> Path:
    return Path(results) / system


def runs_dir(results: str | Path, system: str) -> Path:
    return Path(results) / system / RUNS


def rounds_dir(results: str | Path, system: str) -> Path:
    return Path(results) / system / ROUNDS


def topology_path(results: str | Path, system: str) -> Path:
    return Path(results) / system / TOPOLOGY


def environment_path(results: str | Path, system: str) -> Path:
    return Path(results) / system / ENVIRONMENT


def measurements_path(results: str | Path, system: str) -> Path:
    return Path(results) / system / MEASUREMENTS


def summary_path(results: str | Path, name: str) -> Path:
    """results/summary/<file> by its name in SUMMARY_FILES ("findings": findings.json)."""
    return Path(results) / SUMMARY / SUMMARY_FILES[name]


def findings_path(results: str | Path) -> Path:
    return summary_path(results, "findings")


def summary_paths(results: str | Path) -> dict[str, str]:
    """Every file of results/summary/, by its name: the rules' inputs and outputs."""
    return {name: str(summary_path(results, name)) for name in SUMMARY_FILES}


def bin_dir(system: str, root: str | Path = "bin") -> str:
    return f"{root}/{system}"


def holds_runs(folder: str | Path) -> bool:
    """A system's own folder (results/<system>): it holds runs/."""
    return (Path(folder) / RUNS).is_dir()


def systems_with_runs(results: str | Path) -> list[str]:
    """The systems of a results folder that hold runs/, by name (none when
    the folder is not there)."""
    results = Path(results)
    return sorted(p.name for p in results.iterdir() if holds_runs(p)) if results.is_dir() else []


def run_files(results: str | Path, system: str, pattern: str = RUN_GLOB) -> list[Path]:
    """One system's stored files under runs/ whose name matches `pattern`
    (by default the repetition files), sorted."""
    return sorted(runs_dir(results, system).rglob(pattern))


def cell_dirs(results: str | Path, system: str) -> list[Path]:
    """One system's cell folders (runs/<experiment>/<kernel>-<variant>/<axes>)."""
    return sorted(runs_dir(results, system).glob("/".join(["*"] * CELL_PARTS)))


def topology_files(results: str | Path) -> list[Path]:
    """Every system's topology.json of a results folder, sorted."""
    return sorted(Path(results).glob(f"*/{TOPOLOGY}"))


def run_parts(path: str | Path) -> dict | None:
    """system, cell id, experiment, kernel-variant and repeat from a
    repetition file's path (…/<system>/runs/<experiment>/<kernel>-<variant>/<axes>/r<k>.jsonl),
    the last runs/ of the path naming it; None for any other path."""
    parts = str(path).split("/")
    match = RUN_FILE.match(parts[-1]) if parts else None
    if not match or RUNS not in parts[:-1]:
        return None
    at = len(parts) - 1 - parts[::-1].index(RUNS)
    cell = parts[at + 1 : -1]
    if at < 1 or len(cell) != CELL_PARTS:
        return None
    return {"system": parts[at - 1], "cell": "/".join(cell), "experiment": cell[0], "kernel_variant": cell[1],
            "repeat": int(match.group(1))}  # fmt: skip


def binary_path(bin_dir: str, cell) -> str:
    return f"{bin_dir}/{cell.kernel}-{cell.variant}"


def harness_archive(bin_dir: str) -> str:
    """The harness archive the binaries of bin_dir link (the build_harness
    rule), in a folder of its own: bin_dir itself holds binaries only."""
    return f"{bin_dir}/harness/libmbharness.a"


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
