# Validation and input functions only; no rules here.
import hashlib
import json
import subprocess
import sys

from snakemake.exceptions import WorkflowError

sys.path.insert(0, str(REPO / "workflow" / "scripts"))

from membench import __version__, figures, matrix, variants  # noqa: E402

KERNEL_DIR = REPO / "kernels"
VARIANTS = variants.load_variants(KERNEL_DIR / "variants.yaml")
if not config:
    raise WorkflowError(
        "no config: run with --configfile config/config.yaml (profiles/default "
        "names it; --workflow-profile none or another profile does not)"
    )
try:
    CONFIG, CELLS = matrix.load(
        config, REPO / "workflow" / "schemas" / "config.schema.yaml", VARIANTS
    )
except matrix.ConfigError as error:
    raise WorkflowError(str(error)) from None
CELLS_BY_ID = {cell.id: cell for cell in CELLS}
SYSTEMS = matrix.system_names(CONFIG)
EXPERIMENTS = list(CONFIG["experiments"])
FIGURES_ONLY = CONFIG["figures_only"]


wildcard_constraints:
    system=r"[A-Za-z0-9][A-Za-z0-9._-]*",
    cell=r"[a-z][a-z0-9_]*/[^/]+/[^/]+",
    repeat=r"[0-9]+",
    experiment=r"[a-z][a-z0-9_]*",
    kind=r"[a-z]+",


# The package the analysis rules run: an edit re-runs tables, figures and
# report (never a measurement: measure rules do not list it).
PACKAGE_SOURCES = sorted(
    str(p) for p in (REPO / "workflow/scripts/membench").glob("*.py")
)


def run_files(wildcards):
    """Every repetition file of every cell of one system; in figures-only
    mode, those of them that are stored."""
    files = [
        f"results/{wildcards.system}/runs/{cell.id}/r{repeat}.jsonl"
        for cell in CELLS
        for repeat in range(cell.repeats)
    ]
    return [f for f in files if Path(f).exists()] if FIGURES_ONLY else files


def cell_binary(wildcards):
    cell = CELLS_BY_ID[wildcards.cell]
    return f"bin/{wildcards.system}/{cell.kernel}-{cell.variant}"


def measure_request(wildcards):
    """The harness request of one repetition: every knob the measurement
    depends on, so that Snakemake reruns exactly the cells whose knobs changed."""
    cell = CELLS_BY_ID[wildcards.cell]
    return {
        "system": wildcards.system,
        "kernel": cell.kernel,
        "variant": cell.variant,
        "ops": (
            (cell.load_op,)
            if cell.kernel == "loaded"
            else tuple(VARIANTS["families"][cell.kernel]["ops"])
        ),
        "threads": cell.threads,
        "affinity": cell.affinity,
        "policy": cell.policy,
        "pages": (
            variants.declared_pages(VARIANTS, cell.kernel, cell.variant)
            if cell.pages == "variant"
            else cell.pages
        ),
        "pages_requested": cell.pages,
        "init": cell.init,
        "size": cell.size,
        "ntimes": cell.ntimes,
        "prefetch_distance": cell.prefetch_distance,
        "features": variants.features(VARIANTS, cell.kernel, cell.variant),
        "load_delay": cell.load_delay,
        "sweep_from": cell.sweep_from,
        "points_per_octave": cell.points_per_octave,
        "chase_group": cell.chase_group,
        "repeat": int(wildcards.repeat),
    }


def report_figures():
    """Every figure of the report: its kinds depend on the experiment's kernel."""
    return [
        f"results/figures/{name}-{kind}.svg"
        for name, experiment in CONFIG["experiments"].items()
        for kind in figures.kinds_for(experiment)
    ]


# On a cluster (profiles/slurm) the light end of the pipeline runs in the
# submitting Snakemake: seconds of work each, not four queue waits in a row.
localrules:
    collect_runs,
    analyse_measurements,
    plot_figure,
    render_report,


def slurm_setting(key):
    """The SLURM setting `key` (partition, constraint, account) of the job's
    system from the config's `systems:` map, or None (the cluster's default).
    Only the SLURM executor reads these resources (profiles/slurm)."""

    def setting(wildcards):
        return CONFIG.get("systems", {}).get(wildcards.system, {}).get(key) or None

    return setting


def measure_priority(wildcards):
    return matrix.shuffle_priority(
        wildcards.cell, int(wildcards.repeat), CONFIG["shuffle_seed"]
    )


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
