import sys

sys.stderr = open(snakemake.log[0], "w")

from membench import matrix, variants  # noqa: E402
from membench.collect import MissingRunsError, collect_runs  # noqa: E402
from membench.stored import Expected, StoredRunsError  # noqa: E402

table = variants.load_variants(snakemake.params.variants)
expected = Expected(matrix.expand({"experiments": snakemake.params.experiments}, table), table)
try:
    collect_runs(list(snakemake.input.runs), snakemake.output[0], snakemake.input.topology, expected)
except (StoredRunsError, MissingRunsError) as error:
    # The problems, in the log and on the terminal; no traceback.
    for stream in (sys.stderr, sys.__stderr__):
        print(f"collect_runs: {error}", file=stream, flush=True)
    sys.exit(1)
