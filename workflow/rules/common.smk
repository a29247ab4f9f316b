# Validation and input functions only: no rules, and nothing written,
# deleted or printed while Snakemake parses. What a run does first (the
# lock, stale rounds, index and study files, a figures-only run that cannot
# draw, the lines planning has to say) is one call, start_run, made once by
# the Snakefile in the Snakemake that plans (membench.core.run_start).
import json
import os
import shlex
import sys

from snakemake.exceptions import WorkflowError
from snakemake_interface_executor_plugins.settings import DeploymentMethod

sys.path.insert(0, str(REPO / "workflow" / "scripts"))

# Planning imports the plan stage only: never measurement, analysis or
# plotting code; a figures-only plan reads the stored runs through
# stored.smk (tests/test_architecture.py).
from membench.core import command_line, last_words, layout, manifests, measured_with
from membench.core import provenance as about, run_lock, run_start
from membench.plan import budget, c2c_pairs, checks, config_limits, figure_kinds
from membench.plan import estimate, grammar, peak_config, rounds, variants
from membench.probe import estimate_host


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
ARGV = sys.argv[1:]
# A run that only reads (-n, --summary): nothing written, deleted or held.
READ_ONLY = run_lock.read_only(ARGV)
if not config:
    raise WorkflowError(
        "no config: run with --configfile config/config.yaml (profiles/default "
        "names it; --workflow-profile none or another profile does not)"
    )
# Figures-only draws the runs that are there: with no --configfile named,
# the config they were measured with (membench.core.measured_with).
_said = measured_with.draw_with_measured(
    "results", config, command_line.config_named(ARGV)
)
SAID = [_said] if _said else []  # what planning has to say: said by start_run
try:
    # Snakemake's YAML loader keeps the last of two equal keys (an
    # experiment written twice): the config files are read again, refusing that.
    config_limits.config_file_problems_raise(workflow.configfiles)
    CONFIG, CELLS = checks.load(
        config, REPO / "workflow" / "schemas" / "config.schema.yaml", VARIANTS
    )
except grammar.ConfigError as error:
    raise WorkflowError(str(error)) from None
SYSTEMS = grammar.system_names(CONFIG)
# A budget too small for every cell's fixed rounds measures a first answer
# and what else fits; the rest is left out, said here and in the findings.
CONFIG = estimate.with_left_out(
    CONFIG, CELLS, estimate_host.this_host(VARIANTS, Path("results"), SYSTEMS)
)
# c2c: pairs: all is bounded at 64 CPUs (from the probed topology, else this
# host when it measures); the dry run states the pairs each system measures.
SAID += c2c_pairs.plan_lines(CELLS, SYSTEMS, bool(CONFIG.get("systems")))
if SAID and SAID[-1].startswith("error: "):
    raise WorkflowError(SAID[-1].removeprefix("error: "))
if workflow.is_main_process and (
    _refused := command_line.slurm_auto_refused(CONFIG, ARGV)
):
    raise WorkflowError(_refused)
EXPERIMENTS = list(CONFIG["experiments"])
# How a report is built is no part of the config it shows: one set of
# records makes one report, figures-only or not.
FIGURES_ONLY = CONFIG.pop("figures_only")
SLURM_RESOURCES = command_line.slurm_resources(CONFIG)
# The package the analysis rules run: an edit re-runs tables, figures and
# report (never a measurement: measure rules do not list it). One input, an
# index of the sources' digests rewritten when one changes (start_run).
PACKAGE_INDEX = ".snakemake/membench/code.txt"
SUMMARY = layout.summary_paths("results")  # results/summary/, by name


wildcard_constraints:
    system=r"[A-Za-z0-9][A-Za-z0-9._-]*",
    round=r"[0-9]+",
    study=r"[0-9a-f]{12}",
    key=r"[0-9a-f]{12}",
    experiment=r"[a-z][a-z0-9_]*",
    kind=r"[a-z]+",


def written_index(path):
    """An index file as a rule input. A read-only run (-n) writes none, so
    one not written yet is left out of its plan (start_run says what a run
    would make again)."""
    return [path] if not READ_ONLY or Path(path).exists() else []


PACKAGE_SOURCES = written_index(PACKAGE_INDEX)


def stored_runs(wildcards):
    """What collect_runs reads for one system: the round manifests (each
    lists its repetition files), the planned rounds' too; in figures-only
    mode, the index of the repetition files that are stored (stored.smk)."""
    if FIGURES_ONLY:
        return written_index(STORED.index_path(wildcards.system))
    return round_manifests(wildcards.system) + planned_manifests(wildcards.system)


def report_figures():
    """Every figure of the report: its kinds depend on the experiment's kernel."""
    return [
        f"results/figures/{name}-{kind}.svg"
        for name, experiment in CONFIG["experiments"].items()
        for kind in figure_kinds.kinds_for(experiment)
    ]


def figure_peaks(wildcards):
    """The stated peaks a figure draws: only the bandwidth-vs-threads, -size
    and version-ladder figures draw one, so a peak edit redraws only those."""
    return (
        peak_config.stated_peaks(CONFIG)
        if wildcards.kind in ("scaling", "size", "ladder")
        else {}
    )


if FIGURES_ONLY:

    include: "stored.smk"


include: "rounds.smk"
include: "run_start.smk"
include: "planned_rounds.smk"
