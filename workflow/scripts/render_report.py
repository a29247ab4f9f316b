import sys

sys.stderr = open(snakemake.log[0], "w")

from membench.report.render import render_report  # noqa: E402

render_report(
    template=snakemake.input.template,
    stylesheet=snakemake.input.stylesheet,
    config=snakemake.params.config,
    cells_csv=snakemake.input.cells,
    problems_csv=snakemake.input.problems,
    modes_csv=snakemake.input.modes,
    c2c_classes_csv=snakemake.input.c2c_classes,
    figures=list(snakemake.input.figures),
    system_files={
        system: {"topology": topology, "environment": environment}
        for system, topology, environment in zip(
            snakemake.params.systems, snakemake.input.topology, snakemake.input.environment
        )
    },
    provenance=snakemake.params.provenance,
    stored=snakemake.params.stored,
    output=snakemake.output[0],
)
