import sys

sys.stderr = open(snakemake.log[0], "w")

from membench.collect import collect_runs  # noqa: E402

collect_runs(inputs=list(snakemake.input.runs), output=snakemake.output[0], topology=snakemake.input.topology)
