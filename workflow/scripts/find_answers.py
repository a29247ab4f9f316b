import sys

sys.stderr = open(snakemake.log[0], "w")

from membench.findings.document import write_answers  # noqa: E402

write_answers(
    config=snakemake.params.config,
    cells_csv=snakemake.input.cells,
    problems_csv=snakemake.input.problems,
    modes_csv=snakemake.input.modes,
    c2c_classes_csv=snakemake.input.c2c_classes,
    measurements=list(snakemake.input.measurements),
    system_files={
        system: {"topology": topology, "environment": environment}
        for system, topology, environment in zip(
            snakemake.params.systems, snakemake.input.topology, snakemake.input.environment
        )
    },
    stored=snakemake.params.stored,
    findings_out=snakemake.output.findings,
    findings_csv_out=snakemake.output.findings_csv,
    sections_out=snakemake.output.sections,
)
