from membench.measure import Request, measure_cell

measure_cell(
    binary=snakemake.input.binary,
    topology=snakemake.input.topology,
    output=snakemake.output[0],
    log=snakemake.log[0],
    request=Request(**snakemake.params.request),
    experiment=snakemake.params.experiment,
    cell_id=snakemake.wildcards.cell,
)
