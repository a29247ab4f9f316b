# Validation and input functions only; no rules here.
import hashlib
import json
import os
import shlex
import subprocess
import sys

import yaml
from snakemake.exceptions import WorkflowError
from snakemake_interface_executor_plugins.settings import DeploymentMethod

sys.path.insert(0, str(REPO / "workflow" / "scripts"))

# Planning imports the plan stage only: never measurement, analysis or
# plotting code (tests/test_architecture.py).
from membench import __version__
from membench.core import last_words, layout, manifests, measured_with
from membench.core import run_lock, run_start
from membench.plan import budget, c2c_pairs, figure_kinds, node_pairs, rounds, variants
from membench.plan import checks, config_limits, first_answer
from membench.probe import estimate_host
from membench.plan import grammar


# Rule inputs and commands name the checkout's files relative to the
# working directory, never by absolute path: a moved or copied checkout
# (results and all) then gives Snakemake the same inputs and commands, and
# compilers embed the same names. (Identity of what is stored is by
# content, membench.measure.identity; README, "Everyday use".)
def from_workdir(path):
    return Path(os.path.relpath(path))


KERNEL_DIR = from_workdir(REPO / "kernels")
VARIANTS_FILE = KERNEL_DIR / "families" / "variants.yaml"
VARIANTS = variants.load_variants(VARIANTS_FILE)
if not config:
    raise WorkflowError(
        "no config: run with --configfile config/config.yaml (profiles/default "
        "names it; --workflow-profile none or another profile does not)"
    )
# Figures-only draws the runs that are there: with no --configfile named,
# the config they were measured with (results/measured-with.yaml), not the
# profile's default (membench.core.measured_with).
_CONFIG_NAMED = any(
    a.split("=")[0] in ("--configfile", "--configfiles") for a in sys.argv[1:]
)
if config.get("figures_only") in (True, "True", "true"):
    _measured, _said = measured_with.config_to_draw("results", config, _CONFIG_NAMED)
    if _measured is not None:
        config.clear()
        config.update(_measured)  # in place: the jobs read this same dict
        if workflow.is_main_process:
            print(f"membench: {_said}", file=sys.stderr)
# Snakemake's YAML loader keeps the last of two equal keys (an experiment
# written twice): the config files are read again, refusing that.
try:
    config_limits.config_file_problems_raise(workflow.configfiles)
    CONFIG, CELLS = checks.load(
        config, REPO / "workflow" / "schemas" / "config.schema.yaml", VARIANTS
    )
except grammar.ConfigError as error:
    raise WorkflowError(str(error)) from None
SYSTEMS = grammar.system_names(CONFIG)
# A budget too small for every cell's fixed rounds measures a first answer
# and what else fits; the rest is left out, said here and in the findings.
CONFIG = first_answer.with_left_out(
    CONFIG, CELLS, estimate_host.this_host(VARIANTS, Path("results"), SYSTEMS)
)
# A run that only reads (-n, --summary): nothing written, deleted or held
# (membench.core.run_start).
READ_ONLY = run_lock.read_only(sys.argv[1:])
# c2c: pairs: all is bounded at 64 CPUs (from the probed topology, else this
# host when it measures); the dry run states the pairs each system measures.
for _line in c2c_pairs.plan_lines(CELLS, SYSTEMS, bool(CONFIG.get("systems"))):
    if _line.startswith("error: "):
        raise WorkflowError(_line.removeprefix("error: "))
    print(_line, file=sys.stderr)


def slurm_requested(argv):
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


# On a cluster `system: auto` names the host that parses the config: the
# login node here, each compute node in its jobs. Refused, in one line.
if (
    workflow.is_main_process
    and not CONFIG.get("systems")
    and CONFIG.get("system") == "auto"
    and slurm_requested(sys.argv[1:])
):
    raise WorkflowError(
        "system: auto cannot name a SLURM system (it is whichever host reads the "
        "config): name each one under systems: with its partition or constraint "
        "(docs/slurm.md)"
    )
EXPERIMENTS = list(CONFIG["experiments"])
# How a report is built is no part of the config it shows: one set of
# records makes one report, figures-only or not.
FIGURES_ONLY = CONFIG.pop("figures_only")


def figures_only_stops(message):
    """A figures-only run that cannot draw stops before any job, and, as
    every failure does, leaves no report that looks current."""
    if workflow.is_main_process:
        try:
            message = run_start.stop_before_any_job("results", sys.argv[1:], message)
        except run_start.RunRefused as busy:
            message = str(busy)
    raise WorkflowError(message)


if FIGURES_ONLY:
    from membench.store import stored

    # Stored results are checked, not trusted: damaged or missing system
    # files stop the run here, by name, before any job (membench.store.stored).
    _SYSTEM_FILE_PROBLEMS = [
        problem
        for system in SYSTEMS
        for problem in stored.system_file_problems(f"results/{system}")
    ]
    if _SYSTEM_FILE_PROBLEMS:
        figures_only_stops(stored.system_files_message(_SYSTEM_FILE_PROBLEMS))


wildcard_constraints:
    system=r"[A-Za-z0-9][A-Za-z0-9._-]*",
    round=r"[0-9]+",
    study=r"[0-9a-f]{12}",
    key=r"[0-9a-f]{12}",
    experiment=r"[a-z][a-z0-9_]*",
    kind=r"[a-z]+",


# The package the analysis rules run: an edit re-runs tables, figures and
# report (never a measurement: measure rules do not list it). One input, an
# index of the sources' digests rewritten when one changes (start_run), not
# the 80 files: a failed job's error box lists its inputs
# (membench.core.manifests).
PACKAGE_INDEX = ".snakemake/membench/code.txt"


def written_index(path):
    """An index file as a rule input. A read-only run (-n) writes none, so
    one not written yet is left out of its plan (start_run says what a run
    would make again)."""
    return [path] if not READ_ONLY or Path(path).exists() else []


PACKAGE_SOURCES = written_index(PACKAGE_INDEX)


# Without a budget every round measures every cell with a repetition k;
# with one, rounds 0 .. ROUNDS-1 do, and rounds ROUNDS .. ALL_ROUNDS-1 are
# planned one after another from the findings so far (checkpoint
# plan_next_round, membench.findings.next_round).
BUDGET_S = budget.seconds(CONFIG.get("budget"))
ROUNDS = budget.fixed_rounds(CELLS, CONFIG)
ALL_ROUNDS = budget.all_rounds(CELLS) if BUDGET_S is not None else ROUNDS
ROUND_INPUTS = rounds.RoundInputs(CONFIG, CELLS, VARIANTS)
MEASURE_ROUND = from_workdir(REPO / "workflow" / "scripts" / "measure_round.py")
# The measure job's command: its rule's conda env under --sdm conda, else
# the interpreter running Snakemake (a shell job's PATH may lack the venv).
MEASURE_COMMAND = shlex.join(
    [
        (
            "python"
            if DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method
            else sys.executable
        ),
        str(MEASURE_ROUND),
    ]
)


def stored_runs(wildcards):
    """What collect_runs reads for one system: the round manifests (each
    lists its repetition files), the planned rounds' too; in figures-only
    mode, the repetition files that are stored."""
    if not FIGURES_ONLY:
        return round_manifests(wildcards.system) + planned_manifests(wildcards.system)
    return written_index(stored_index(wildcards.system))


def stored_index(system):
    """Figures-only: one file listing the stored run files collect reads,
    with their sizes and times, rewritten before the job graph when one of
    them changed (start_run: so collect runs again), instead of the files
    themselves as inputs: a failed collect's error box lists one path, not
    hundreds."""
    return f".snakemake/membench/stored/{system}.txt"


_CLAIMS = {}


def stored_claims(system):
    """Figures-only: the stored repetition files the config's cells claim,
    those of an earlier membench's cell ids migrated, and the rest with the
    reason they are not shown (membench.store.claims)."""
    if system not in _CLAIMS:
        from membench.store import claims

        probe = Path(f"results/{system}/topology.json")
        try:
            topology = json.loads(probe.read_text()) if probe.exists() else None
        except ValueError:
            topology = None  # collect names what is wrong with it
        cells = node_pairs.expand_pairs(CELLS, topology)
        _CLAIMS[system] = claims.claim(f"results/{system}/runs", cells)
    return _CLAIMS[system]


def not_shown():
    """Figures-only: per system, the lines saying what is stored but not
    shown, and which earlier cells are shown migrated (also in the report)."""
    if not FIGURES_ONLY:
        return {}
    return {
        system: {
            "not_shown": stored_claims(system).lines(),
            "migrated": stored_claims(system).migrated_lines(),
        }
        for system in SYSTEMS
    }


def round_manifests(system):
    return [
        layout.manifest_path(
            f"results/{system}", k, ROUND_INPUTS.study_digest(system, k)
        )
        for k in range(ROUNDS)
    ]


def stored_fingerprint(wildcards):
    """Figures-only: the names, sizes and times of the stored run files
    collect reads (membench.core.manifests.fingerprint), as a param: files
    copied in with `cp -a` (older times) or restored are collected again."""
    if not FIGURES_ONLY:
        return ""
    return manifests.fingerprint(stored_claims(wildcards.system).files)


def start_run():
    """Called once by the Snakefile, in the Snakemake that plans: the run
    lock, the round manifests that no longer describe their run files
    deleted (their rounds run again), the index files written; before the
    job graph, which they decide; a read-only run only says what a run
    would do (membench.core.run_start)."""
    indexes = {
        PACKAGE_INDEX: manifests.source_index_lines(REPO / "workflow/scripts/membench")
    }
    if FIGURES_ONLY:
        indexes |= {
            stored_index(system): manifests.stored_index_lines(
                stored_claims(system).files
            )
            for system in SYSTEMS
        }
    try:
        run_start.begin(
            "results",
            argv=sys.argv[1:],
            config=config,
            measuring=not FIGURES_ONLY,
            round_manifests=(
                []
                if FIGURES_ONLY
                else [
                    m
                    for s in SYSTEMS
                    for m in round_manifests(s) + stored_planned_manifests(s)
                ]
            ),
            indexes=indexes,
            say=lambda line: print(line, file=sys.stderr),
        )
    except run_start.RunRefused as busy:
        raise WorkflowError(str(busy)) from None


# Figures-only with a config that claims none of the stored runs (measured
# with another): one line naming the config to use, not an empty table.
if FIGURES_ONLY and not any(stored_claims(system).files for system in SYSTEMS):
    from membench.store import claims as _claims

    figures_only_stops(
        measured_with.nothing_claimed_line(
            "results",
            measured_with.config_name(sys.argv[1:]),
            sum(
                len(_claims.stored_files(str(d)))
                for d in Path("results").glob("*/runs")
            ),
        )
    )
if FIGURES_ONLY and workflow.is_main_process:
    for _system, _said in not_shown().items():
        for _line in _said["migrated"]:
            print(f"membench: {_system}: {_line}", file=sys.stderr)
        for _line in _said["not_shown"]:
            print(
                f"membench: {_system}: stored but not shown: {_line}", file=sys.stderr
            )


def round_binaries(wildcards):
    return ROUND_INPUTS.binaries(int(wildcards.round), f"bin/{wildcards.system}")


def round_study_file(wildcards):
    return ROUND_INPUTS.study_file(
        wildcards.system,
        int(wildcards.round),
        ".snakemake/membench/studies",
        write=not READ_ONLY,
    )


def report_figures():
    """Every figure of the report: its kinds depend on the experiment's kernel."""
    return [
        f"results/figures/{name}-{kind}.svg"
        for name, experiment in CONFIG["experiments"].items()
        for kind in figure_kinds.kinds_for(experiment)
    ]


# On a cluster (profiles/slurm) the light end of the pipeline runs in the
# submitting Snakemake: seconds of work each, not four queue waits in a row.
# Named as the rules are named here: as a module of another workflow
# (`use rule * from membench as membench_*`) a plain localrules directive names
# rules that are not there, and Snakemake warns.
workflow.localrules(
    *(
        workflow.modifier.modify_rulename(name)
        for name in (
            "collect_runs",
            "analyse_measurements",
            "find_answers",
            "plot_figure",
            "render_report",
        )
    )
)


def slurm_resources():
    """The SLURM resources (partition, constraint, account) of a job's
    system from the config's `systems:` map; only those some system sets,
    so a local run does not evaluate three functions per job. Only the
    SLURM executor reads them (profiles/slurm)."""
    names = {
        "partition": "slurm_partition",
        "constraint": "constraint",
        "account": "slurm_account",
    }
    systems = CONFIG.get("systems") or {}
    used = {key for settings in systems.values() for key in (settings or {})}

    def setting(key):
        return lambda wildcards: systems.get(wildcards.system, {}).get(key) or None

    return {name: setting(key) for key, name in names.items() if key in used}


# Each system's stated peak (systems.<name>.peak): fed to the figures and
# the report through params, never to a probe or a measurement.
PEAK_SETTINGS = {
    name: {"peak": settings["peak"]}
    for name, settings in (CONFIG.get("systems") or {}).items()
    if (settings or {}).get("peak")
}


def figure_peaks(wildcards):
    """The stated peaks a figure draws: only the bandwidth-vs-threads,
    -size and version-ladder figures draw one, so a peak edit redraws only
    those."""
    return PEAK_SETTINGS if wildcards.kind in ("scaling", "size", "ladder") else {}


def provenance():
    """Where this report comes from; fed to the report only, never to the
    measurements (a new commit must not re-measure anything)."""
    try:
        commit = subprocess.run(
            ["git", "-C", str(REPO), "describe", "--always", "--dirty", "--abbrev=12"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown (not a git checkout)"
    config_text = json.dumps(CONFIG, sort_keys=True)
    return {
        "membench_version": __version__,
        "commit": commit,
        "config_hash": hashlib.sha256(config_text.encode()).hexdigest()[:16],
    }


include: "planned_rounds.smk"
