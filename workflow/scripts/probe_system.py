import sys

sys.stderr = open(snakemake.log[0], "w")

from membench.core import last_words  # noqa: E402
from membench.core.store_errors import store_error  # noqa: E402
from membench.probe.topology import write_probe  # noqa: E402

try:
    write_probe(
        root=snakemake.params.root,
        topology_out=snakemake.output.topology,
        environment_out=snakemake.output.environment,
    )
except OSError as error:
    # A full disk, a read-only folder: one line, on the terminal and last.
    message = f"probe_system ({snakemake.wildcards.system}): {store_error('write', snakemake.output.topology, error)}"
    for stream in (sys.stderr, sys.__stderr__):
        print(message, file=stream, flush=True)
    last_words.leave(message)
    sys.exit(1)
