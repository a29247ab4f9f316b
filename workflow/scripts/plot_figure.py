import sys

sys.stderr = open(snakemake.log[0], "w")

import traceback  # noqa: E402

from membench.core import last_words  # noqa: E402
from membench.figures.plot import plot_figure  # noqa: E402

try:
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
except Exception as error:  # noqa: BLE001 - said in one line, the traceback in the log
    # Snakemake's box says only "message: None ... check log file(s)": the
    # cause, in one line, now and again as the run's last lines; the
    # report from before is set aside by the workflow's onerror handler.
    traceback.print_exc()
    figure = f"{snakemake.wildcards.experiment}-{snakemake.wildcards.kind}"
    cause = str(error).splitlines()[0] if str(error) else ""
    message = (f"plot_figure ({figure}): {type(error).__name__}: {cause[:300]} "
               f"(the traceback: {snakemake.log[0]}); the other figures and tables are kept")  # fmt: skip
    for stream in (sys.stderr, sys.__stderr__):
        print(message, file=stream, flush=True)
    last_words.leave(message)
    sys.exit(1)
