import sys

sys.stderr = open(snakemake.log[0], "w")

import json  # noqa: E402

from membench.plan import variants  # noqa: E402
from membench.plan import grammar
from membench.plan import node_pairs
from membench.store.collect import MissingRunsError, collect_runs  # noqa: E402
from membench.store.stored import Expected, StoredRunsError  # noqa: E402

table = variants.load_variants(snakemake.params.variants)
cells = grammar.expand({"experiments": snakemake.params.experiments}, table)
try:
    topology = json.loads(open(snakemake.input.topology).read())
except (OSError, ValueError):
    topology = None  # collect_runs names what is wrong with it
expected = Expected(node_pairs.expand_pairs(cells, topology), table)
try:
    collect_runs(list(snakemake.input.runs), snakemake.output[0], snakemake.input.topology, expected)
except (StoredRunsError, MissingRunsError) as error:
    # The problems, in the log and on the terminal; no traceback.
    for stream in (sys.stderr, sys.__stderr__):
        print(f"collect_runs: {error}", file=stream, flush=True)
    sys.exit(1)
