# membench: memory bandwidth experiments, from a YAML matrix to an HTML report.
# The stages live in workflow/rules/, the logic in workflow/scripts/membench/.
from pathlib import Path

from snakemake.utils import min_version

min_version("9.0")

# No configfile directive: profiles/default names config/config.yaml, so that
# `--configfile other.yaml` replaces it (a directive would be merged with the
# other file, also in the jobs a cluster executor starts).
# membench's own files, wherever this Snakefile is: its checkout, or the
# module of another workflow (`module membench: snakefile: ...`), whose
# workflow.basedir is the other workflow's.
REPO = Path(workflow.current_basedir.get_path_or_uri(secret_free=True))


include: "workflow/rules/common.smk"


# In figures-only mode the stored runs are plain inputs: with no rule that
# could produce them, nothing can ever trigger a re-measurement.
if not FIGURES_ONLY:

    include: "workflow/rules/build.smk"
    include: "workflow/rules/probe.smk"
    include: "workflow/rules/measure.smk"


include: "workflow/rules/analyse.smk"
include: "workflow/rules/report.smk"


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


# Once, in the Snakemake that plans (never in a job's): what planning has to
# say, the run lock, stale round manifests, the index and study files; a
# figures-only run that cannot draw stops here. Here, before the job graph
# is built, not in onstart (which runs after it): they decide which jobs
# run. A dry run writes and holds nothing (membench.core.run_start says
# what it does instead).
if workflow.is_main_process:
    STARTED = start_run()


# Snakemake alone never stops a running job (SIGTERM waits for it, SIGINT
# relies on a terminal); membench.measure.stopping says why and what this does.
onstart:
    from membench.measure import stopping

    last_words.take()  # what an earlier, killed run left unsaid
    stopping.stop_measurements_on_signal(marker=MEASURE_ROUND.name)


# A failed step's own message (collect's problems, a full disk) comes last,
# after Snakemake's error boxes; whichever step failed, the report from
# before is set aside, marked STALE (membench.core.last_words).
onerror:
    for _message in last_words.after_failure("results/report.html"):
        print(f"\n{_message}", file=sys.stderr)


onsuccess:
    last_words.take()
    # the report a failed run set aside, now that a current one is there
    if Path("results/report.html").exists():
        Path("results/report-stale.html").unlink(missing_ok=True)


# The topology is named here too: a deleted results/<system>/topology.json
# is probed again (as an input of later rules only, Snakemake would leave it
# missing while their outputs exist). The rounds then rerun and keep every
# stored repetition: the machine is judged by content (membench.measure.identity).
# The intermediates are named too (each system's measurements.csv, the
# summary tables, and the round manifests): Snakemake leaves a missing
# intermediate missing while what was built from it exists, so without
# them a deleted measurements.csv, or "Measure again" (README), would be
# "Nothing to be done". A manifest that no longer describes its run files
# is rerun as well (membench.core.run_start).
rule all:
    default_target: True
    input:
        "results/report.html",
        expand("results/{system}/topology.json", system=SYSTEMS),
        expand("results/{system}/measurements.csv", system=SYSTEMS),
        rules.analyse_measurements.output,
        []
        if FIGURES_ONLY
        else [m for system in SYSTEMS for m in round_manifests(system)],
