"""What `make run` shows on the terminal: membench's own lines, and
Snakemake's errors; not Snakemake's job blocks (`VERBOSE=1` shows them).

Snakemake's output (stdout and stderr together) comes in on stdin and goes
out on stdout, a line as it comes. Snakemake's own quiet settings cannot do
this: `--quiet rules` hides a failed job's error box too. So lines are
dropped only when they are known chatter (a job's input/output/reason
block, its shell command, progress counts, the scheduler's lines); anything
else, an error above all, is shown. Ctrl-C stops Snakemake, not this
filter: Snakemake's last lines still come through.
"""

from __future__ import annotations

import re
import signal
import sys

CHATTER = re.compile(
    r"^(Assuming unrestricted shared filesystem usage\.|Building DAG of jobs\.\.\.|Using shell: |Provided cores: "
    r"|Rules claiming more threads will be scaled down\.|Provided resources: |Conda environments: "
    r"|Select jobs to execute\.\.\.|Execute \d+ jobs\.\.\.|Shell command: |host: |Elapsed time: "
    r"|Finished jobid: \d+ \(Rule: |\d+ of \d+ steps \(\d+%\) done$|Singularity containers: |Job counts:"
    r"|Using workflow specific profile \S+ for setting default command line arguments\.)"
)
TIMESTAMP = re.compile(r"^\[\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4}\]$")
JOB_BLOCK = re.compile(r"^(local)?(rule|checkpoint) \S+:$")
ERROR_BLOCK = re.compile(r"^Error in (rule|group job) ")
COMPLETE_LOG = re.compile(r"^Complete log\(s\): ")
NOTHING_TO_DO = "Nothing to be done (all requested files are present and up to date)."
LONGEST = 400  # an error box's input list is hundreds of paths: cut, the log keeps it whole
# One measurement's line (membench.measure.rounds): on a terminal each
# overwrites the last, so a run's screen keeps each round's closing line,
# not one line per measurement; a log file keeps them all.
MEASUREMENT = re.compile(r"^\S+ round \d+: \d+/\d+ ")


class Terminal:
    """The filter's state: which block a line belongs to."""

    def __init__(self, out=sys.stdout, overwrite: bool | None = None):
        self.out = out
        self.overwrite = out.isatty() if overwrite is None else overwrite
        self.transient = False  # the last line shown is a measurement's, to be overwritten
        self.block = None  # "job", "stats", "header" or "error" while inside one
        self.held_time = None  # a timestamp shown only before an error box
        self.failed = False

    def say(self, line: str) -> None:
        line = line if len(line) <= LONGEST else line[:LONGEST] + " ..."
        clear = "\r\033[K" if self.transient else ""
        self.transient = self.overwrite and bool(MEASUREMENT.match(line))
        self.out.write(clear + line + ("" if self.transient else "\n"))
        self.out.flush()

    def feed(self, line: str) -> None:
        line = line.rstrip("\n")
        if self.block in ("job", "stats", "header"):
            if line.startswith((" ", "\t")) or (self.block != "job" and line):
                return  # the block goes on
            self.block = None
            if not line:
                return
        if self.block == "error":
            if line.startswith((" ", "\t")):
                self.say(line)
                return
            self.block = None
        if TIMESTAMP.match(line):
            self.held_time = line
            return
        held, self.held_time = self.held_time, None
        if ERROR_BLOCK.match(line):
            self.failed, self.block = True, "error"
            if held:
                self.say(held)
            self.say(line)
        elif JOB_BLOCK.match(line):
            self.block = "job"
        elif line == "Job stats:":
            self.block = "stats"
        elif line == "SNAKEMAKE":
            self.block = "header"
        elif CHATTER.match(line) or not line.strip():
            return  # blank lines only space Snakemake's blocks out
        elif COMPLETE_LOG.match(line):
            if self.failed:
                self.say(line)
        elif line == NOTHING_TO_DO:
            self.say("membench: nothing to do: every repetition is stored and the report is current")
        else:
            if line.startswith(("WorkflowError", "RuleException", "Exiting because")):
                self.failed = True
            self.say(line)


def main() -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Snakemake's last words still come through
    terminal = Terminal()
    for line in sys.stdin:
        terminal.feed(line)
    if terminal.transient:
        terminal.out.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
