import sys

sys.stderr = open(snakemake.log[0], "w")

from membench.figures import plot_experiment  # noqa: E402

plot_experiment(
    experiment=snakemake.wildcards.experiment,
    cells_csv=snakemake.input.cells,
    measurements=list(snakemake.input.measurements),
    scaling_out=snakemake.output.scaling,
    histogram_out=snakemake.output.histogram,
)
