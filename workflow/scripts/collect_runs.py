import sys

sys.stderr = open(snakemake.log[0], "w")

import json  # noqa: E402

from membench.core import last_words, layout, manifests  # noqa: E402
from membench.core.store_errors import store_error  # noqa: E402
from membench.plan import variants  # noqa: E402
from membench.plan import grammar
from membench.plan import node_pairs
from membench.store import claims  # noqa: E402
from membench.store.collect import MissingRunsError, collect_runs  # noqa: E402
from membench.store.stored import Expected, StoredRunsError  # noqa: E402

table = variants.load_variants(snakemake.params.variants)
cells = grammar.expand({"experiments": snakemake.params.experiments}, table)
try:
    topology = json.loads(open(snakemake.input.topology).read())
except (OSError, ValueError):
    topology = None  # collect_runs names what is wrong with it
cells = node_pairs.expand_pairs(cells, topology)
# figures-only: files stored under an earlier membench's cell id are shown
# as the cell their records state (membench.store.claims)
# (figures-only lists the stored files in one index: membench.core.manifests)
inputs = snakemake.input.runs
inputs = [inputs] if isinstance(inputs, str) else list(inputs)
if inputs and inputs[0].endswith(".txt"):
    inputs = manifests.read_stored_index(inputs[0])
runs = [path for path in inputs if path.endswith(".jsonl")]
moved = claims.claim(str(layout.runs_dir("results", snakemake.wildcards.system)), cells, runs).moved
expected = Expected(cells + list({c.id: c for c in moved.values()}.values()), table, moved)
try:
    collect_runs(inputs, snakemake.output[0], snakemake.input.topology, expected)
except (StoredRunsError, MissingRunsError, OSError) as error:
    if isinstance(error, OSError) and not isinstance(error, MissingRunsError):
        error = store_error("write", snakemake.output[0], error)
    # The problems, in the log and on the terminal, and again as the run's
    # last lines (after Snakemake's box of input paths); no traceback. The
    # report from before is set aside: it no longer says what is stored.
    message = f"collect_runs ({snakemake.wildcards.system}): {error}"
    aside = last_words.set_report_aside(snakemake.params.report, "collect_runs failed")
    if aside:
        message += "\n" + aside
    for stream in (sys.stderr, sys.__stderr__):
        print(message, file=stream, flush=True)
    last_words.leave(message)
    sys.exit(1)
