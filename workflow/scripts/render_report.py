import sys

sys.stderr = open(snakemake.log[0], "w")

from membench.report.render import render_report  # noqa: E402

render_report(
    template=snakemake.input.template,
    stylesheet=snakemake.input.stylesheet,
    findings_json=snakemake.input.findings,
    sections_json=snakemake.input.sections,
    figures=list(snakemake.input.figures),
    provenance=snakemake.params.provenance,
    output=snakemake.output[0],
)
