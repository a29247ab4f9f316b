# What a run does first, in one call: start_run, made once by the Snakefile
# in the Snakemake that plans, before the job graph, which it decides
# (membench.core.run_start). Functions only, no rules.


def start_run():
    """Called once by the Snakefile, in the Snakemake that plans, before the
    job graph, which it decides (membench.core.run_start); a read-only run
    only says what a run would do. Returns what it did."""
    stop, stored_lines = STORED.at_start(ARGV) if FIGURES_ONLY else (None, [])
    measured = (
        []
        if FIGURES_ONLY
        else [
            m for s in SYSTEMS for m in round_manifests(s) + stored_planned_manifests(s)
        ]
    )
    code = {
        PACKAGE_INDEX: manifests.source_index_lines(REPO / "workflow/scripts/membench")
    }
    try:
        return run_start.begin(
            "results",
            argv=ARGV,
            config=config,
            measuring=not FIGURES_ONLY,
            round_manifests=measured,
            said=SAID + stored_lines,
            stop=stop,
            indexes=code | (STORED.indexes() if FIGURES_ONLY and not stop else {}),
            write=None if FIGURES_ONLY else write_studies,
            say=lambda line: print(line, file=sys.stderr),
        )
    except run_start.RunRefused as refused:
        raise WorkflowError(str(refused)) from None
