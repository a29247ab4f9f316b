"""Which config the runs in a results folder were measured with.

A run that measures writes results/measured-with.yaml: the config file it
was named and the config itself, as it was then. Figures-only reads it
back, so that the README's plain `--config figures_only=True` draws the
runs that are there, whatever config the profile names
(config/config.yaml), and a folder whose config is unknown is said in one
line instead of ending in an empty table.
"""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from membench.core.atomic_files import write_text_atomic

FILE = "measured-with.yaml"
HEADER = (
    "# The config of the last membench run that measured into this folder, as it was then.\n"
    "# Figures-only (--config figures_only=True) draws with it when no --configfile is named.\n"
)
PROFILE_CONFIG = "config/config.yaml"  # what profiles/default names


def record(results: str | Path, config_file: str, config: dict) -> None:
    """Say which config this run measures with (never fails the run: a
    folder that cannot take it still measures, figures-only then asks)."""
    measured = {key: value for key, value in config.items() if key != "figures_only"}
    text = HEADER + yaml.safe_dump({"configfile": config_file, "config": measured}, sort_keys=False)
    try:
        write_text_atomic(Path(results) / FILE, text)
    except OSError:
        pass


def read(results: str | Path) -> dict | None:
    """{"configfile": name, "config": {...}}, or None when the folder does
    not say (measured before membench wrote it, or damaged)."""
    try:
        said = yaml.safe_load((Path(results) / FILE).read_text())
    except (OSError, ValueError, yaml.YAMLError):
        return None
    ok = isinstance(said, dict) and isinstance(said.get("config"), dict) and isinstance(said.get("configfile"), str)
    return said if ok else None


def is_profile_config(config_file: str) -> bool:
    """The file the default profile names, however it was written."""
    return os.path.normpath(config_file) == PROFILE_CONFIG or (
        Path(config_file).exists() and Path(PROFILE_CONFIG).exists() and Path(config_file).samefile(PROFILE_CONFIG)
    )


def config_to_draw(results: str | Path, config: dict, named_on_command_line: bool) -> tuple[dict | None, str | None]:
    """Figures-only: the measured config to draw with instead of `config`,
    and the line that says so; (None, None) to keep `config`. A config
    named on the command line is always kept, and so is the profile's own
    file when the runs were measured with it (an edit to it is drawn)."""
    if named_on_command_line:
        return None, None
    measured = read(results)
    if measured is None or is_profile_config(measured["configfile"]):
        return None, None
    current = {key: value for key, value in config.items() if key != "figures_only"}
    if measured["config"] == current:
        return None, None
    line = (
        f"figures-only: {results}/ was measured with {measured['configfile']}; drawing it with that config "
        f"(as stored in {results}/{FILE}; name another with --configfile)"
    )
    return {**measured["config"], "figures_only": True}, line


def draw_with_measured(results: str | Path, config: dict, named_on_command_line: bool) -> str | None:
    """Figures-only (`figures_only` set in `config`): `config` replaced, in
    place (the jobs read this same dict), by the one the runs were measured
    with where config_to_draw says so; the line that says it, or None."""
    if config.get("figures_only") not in (True, "True", "true"):
        return None
    measured, line = config_to_draw(results, config, named_on_command_line)
    if measured is None:
        return None
    config.clear()
    config.update(measured)
    return f"membench: {line}"


def config_name(argv: list[str]) -> str:
    """The config file a Snakemake command line names, or the profile's."""
    for flag, value in zip(argv, argv[1:] + [""]):
        if flag in ("--configfile", "--configfiles"):
            return value
        if flag.startswith(("--configfile=", "--configfiles=")):
            return flag.split("=", 1)[1]
    return f"{PROFILE_CONFIG} (the profile's)"


def nothing_claimed_line(results: str | Path, config_name: str, stored_files: int) -> str:
    """Figures-only: the config claims none of the stored runs (one line,
    naming the config to use where the folder says it)."""
    if stored_files == 0:
        return f"figures-only: nothing is stored under {results}/<system>/runs/: measure first (make run)"
    measured = read(results)
    named = measured["configfile"] if measured else None
    use = f"--configfile {named}" if named else "--configfile <the config they were measured with>"
    return (
        f"figures-only: {config_name} claims none of the {stored_files} run file(s) stored under {results}/ "
        f"(measured with {named or 'another config'}): rerun with {use} --config figures_only=True"
    )
