import sys

sys.stderr = open(snakemake.log[0], "w")

from membench.probe.topology import write_probe  # noqa: E402

write_probe(
    root=snakemake.params.root,
    topology_out=snakemake.output.topology,
    environment_out=snakemake.output.environment,
)
