"""What the Snakemake command line (sys.argv, and the profile it names)
tells planning: whether a config file is named on it, and whether the run
goes to SLURM, where `system: auto` cannot name a system."""

from __future__ import annotations

from pathlib import Path

import yaml


def config_named(argv: list[str]) -> bool:
    """A --configfile (or --configfiles) named on the command line, not by
    the profile: figures-only then draws with it (membench.core.measured_with)."""
    return any(a.split("=")[0] in ("--configfile", "--configfiles") for a in argv)


def slurm_requested(argv: list[str]) -> bool:
    """The SLURM executor, named on the command line or by the profile named
    there (profiles/slurm): the profile's settings never reach sys.argv."""
    for flag, value in zip(argv, argv[1:] + [""]):
        if "=" in flag:
            flag, value = flag.split("=", 1)
        if flag in ("--executor", "-e") and value == "slurm":
            return True
        if flag in ("--workflow-profile", "--profile"):
            try:
                settings = yaml.safe_load((Path(value) / "config.yaml").read_text())
            except (OSError, yaml.YAMLError):
                continue
            if isinstance(settings, dict) and settings.get("executor") == "slurm":
                return True
    return False


def slurm_auto_refused(config: dict, argv: list[str]) -> str | None:
    """On a cluster `system: auto` names the host that parses the config:
    the login node there, each compute node in its jobs. The line that
    refuses it, or None."""
    if config.get("systems") or config.get("system") != "auto" or not slurm_requested(argv):
        return None
    return (
        "system: auto cannot name a SLURM system (it is whichever host reads the "
        "config): name each one under systems: with its partition or constraint "
        "(docs/slurm.md)"
    )


def slurm_resources(config: dict) -> dict:
    """The SLURM resources (partition, constraint, account) of a job's
    system from the config's `systems:` map, each a function of the job's
    wildcards; only those some system sets, so a local run does not
    evaluate three functions per job. Only the SLURM executor reads them
    (profiles/slurm)."""
    names = {"partition": "slurm_partition", "constraint": "constraint", "account": "slurm_account"}
    systems = config.get("systems") or {}
    used = {key for settings in systems.values() for key in (settings or {})}

    def setting(key):
        return lambda wildcards: systems.get(wildcards.system, {}).get(key) or None

    return {name: setting(key) for key, name in names.items() if key in used}
