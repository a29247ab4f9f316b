"""A figures-only plan (`--config figures_only=True`): the stored runs are
its inputs, read through this module by the workflow's stored.smk, which
only a figures-only run includes (a measuring plan never loads store/).

Stored results are checked, not trusted: damaged or missing system files
stop the run before any job, by name (membench.store.stored); the stored
repetition files the config's cells claim are shown, those of an earlier
membench's cell ids migrated, the rest said with the reason they are not
(membench.store.claims); a config that claims none of them stops with one
line naming the config to use (membench.core.measured_with).
"""

from __future__ import annotations

import json

from membench.core import layout, manifests, measured_with
from membench.plan import node_pairs
from membench.plan.grammar import Cell
from membench.store import claims, stored


class Stored:
    """What the stored runs of each system give the plan, read once per
    system and kept."""

    def __init__(self, results: str, cells: list[Cell], systems: list[str]):
        self.results, self.cells, self.systems = results, cells, systems
        self._claims: dict[str, claims.Claims] = {}

    def claims(self, system: str) -> claims.Claims:
        """The stored repetition files the config's cells claim (a node
        matrix's pairs made for the stored topology), and the rest."""
        if system not in self._claims:
            probe = layout.topology_path(self.results, system)
            try:
                topology = json.loads(probe.read_text()) if probe.exists() else None
            except ValueError:
                topology = None  # collect names what is wrong with it
            cells = node_pairs.expand_pairs(self.cells, topology)
            self._claims[system] = claims.claim(str(layout.runs_dir(self.results, system)), cells)
        return self._claims[system]

    @staticmethod
    def index_path(system: str) -> str:
        """One file listing the stored run files collect reads, with their
        sizes and times, rewritten before the job graph when one of them
        changed (membench.core.run_start: so collect runs again), instead of
        the files themselves as inputs: a failed collect's error box lists
        one path, not hundreds."""
        return f".snakemake/membench/stored/{system}.txt"

    def indexes(self) -> dict[str, list[str]]:
        return {self.index_path(s): manifests.stored_index_lines(self.claims(s).files) for s in self.systems}

    def fingerprint(self, system: str) -> str:
        """The names, sizes and times of the stored run files collect reads,
        as a param: files copied in with `cp -a` (older times) or restored
        are collected again."""
        return manifests.fingerprint(self.claims(system).files)

    def not_shown(self) -> dict[str, dict[str, list[str]]]:
        """Per system, the lines saying what is stored but not shown, and
        which earlier cells are shown migrated (also in the report)."""
        return {
            system: {"not_shown": self.claims(system).lines(), "migrated": self.claims(system).migrated_lines()}
            for system in self.systems
        }

    def at_start(self, argv: list[str]) -> tuple[str | None, list[str]]:
        """(why the run cannot draw, or None; the lines it says before it
        draws): checked in the Snakemake that plans, before any job."""
        problems = [p for system in self.systems for p in stored.system_file_problems(f"{self.results}/{system}")]
        if problems:
            return stored.system_files_message(problems), []
        if not any(self.claims(system).files for system in self.systems):
            files = sum(len(claims.stored_files(str(layout.runs_dir(self.results, s)))) for s in layout.systems_with_runs(self.results))
            return measured_with.nothing_claimed_line(self.results, measured_with.config_name(argv), files), []
        lines = []
        for system, said in self.not_shown().items():
            lines += [f"membench: {system}: {line}" for line in said["migrated"]]
            lines += [f"membench: {system}: stored but not shown: {line}" for line in said["not_shown"]]
        return None, lines
