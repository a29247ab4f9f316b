import sys

sys.stderr = open(snakemake.log[0], "w")

from membench.figures.plot import plot_figure  # noqa: E402

plot_figure(
    kind=snakemake.wildcards.kind,
    experiment=snakemake.wildcards.experiment,
    cells_csv=snakemake.input.cells,
    measurements=list(snakemake.input.measurements),
    topology=list(snakemake.input.topology),
    output=snakemake.output[0],
    modes_csv=snakemake.input.modes,
    c2c_pairs_csv=snakemake.input.c2c_pairs,
    problems_csv=snakemake.input.problems,
    environment=list(snakemake.input.environment),
    peak_settings=snakemake.params.peaks,
)
