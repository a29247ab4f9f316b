import sys

sys.stderr = open(snakemake.log[0], "w")

from membench.analyse.summary import write_summaries  # noqa: E402

write_summaries(
    measurements=list(snakemake.input.measurements),
    cells_out=snakemake.output.cells,
    problems_out=snakemake.output.problems,
    modes_out=snakemake.output.modes,
    c2c_classes_out=snakemake.output.c2c_classes,
    c2c_pairs_out=snakemake.output.c2c_pairs,
)
