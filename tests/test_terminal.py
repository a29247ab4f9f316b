"""What `make run` and `make plan` say on the terminal (issue 42): membench's
own lines and Snakemake's errors, never its job blocks; the plan in
membench's words."""

import io
import json
import subprocess
import sys
from pathlib import Path

from conftest import REPO
from membench.core import layout
from membench.plan import checks, rounds, variants

sys.path.insert(0, str(REPO / "workflow" / "scripts"))
from terminal_lines import Terminal  # noqa: E402

# Snakemake 9's own output around a failed job, as a run prints it (cut).
TRANSCRIPT = """\
Using workflow specific profile profiles/default for setting default command line arguments.
Assuming unrestricted shared filesystem usage.
Building DAG of jobs...
Using shell: /usr/bin/bash
Provided cores: 2
Rules claiming more threads will be scaled down.
Provided resources: machine=Resource("machine", 100)
Job stats:
job                     count
--------------------  -------
build_kernel                5
total                      17

Select jobs to execute...
Execute 2 jobs...

[Thu Nov 26 10:30:54 2026]
localrule build_kernel:
    input: kernels/harness/measure.c, kernels/harness/cli.c
    output: bin/testbox/loaded-default
    log: logs/build_kernel/testbox/loaded-default.log
    jobid: 5
    reason: Missing output files: bin/testbox/loaded-default
    wildcards: system=testbox, kernel=loaded, variant=default
    resources: tmpdir=/tmp, machine=1
Shell command: gcc -std=gnu11 -fopenmp kernels/harness/measure.c -o bin/testbox/loaded-default.part
testbox round 0: 1/7 versions/readonly-v001/t1_close_default_variant_parallel_s2097152 (0.2 s)
[Thu Nov 26 10:31:10 2026]
Finished jobid: 9 (Rule: build_kernel)
1 of 17 steps (6%) done
RuleException:
CalledProcessError in file "workflow/rules/build.smk", line 33:
[Thu Nov 26 10:31:17 2026]
Error in rule build_kernel:
    message: None
    jobid: 5
    log: logs/build_kernel/testbox/loaded-default.log (check log file(s) for error details)
Shutting down, this might take some time.
Exiting because a job execution failed. Look above for error messages
Complete log(s): /tmp/x/.snakemake/log/2026.snakemake.log
Elapsed time: 0:00:26.283037
membench: collect_runs (testbox): 1 repetition file(s) listed by round manifests are missing:
"""


def shown(text: str) -> str:
    out = io.StringIO()
    terminal = Terminal(out)
    for line in text.splitlines(keepends=True):
        terminal.feed(line)
    return out.getvalue()


def test_the_terminal_keeps_membench_lines_and_errors_and_drops_job_blocks():
    said = shown(TRANSCRIPT)
    for kept in ("testbox round 0: 1/7 versions", "Error in rule build_kernel:", "    log: logs/build_kernel/testbox",
                 "RuleException:", "Exiting because a job execution failed", "Complete log(s):",
                 "membench: collect_runs (testbox)", "[Thu Nov 26 10:31:17 2026]"):  # fmt: skip
        assert kept in said, kept
    for dropped in ("localrule build_kernel:", "reason: Missing", "Shell command:", "Finished jobid", "steps (6%)",
                    "Job stats:", "build_kernel                5", "Select jobs", "Provided cores", "[Thu Nov 26 10:30:54 2026]",
                    "Elapsed time", "Using workflow specific profile"):  # fmt: skip
        assert dropped not in said, dropped
    assert len(said.splitlines()) == 12 and "\n\n" not in said


def test_on_a_terminal_each_measurement_overwrites_the_last():
    out = io.StringIO()
    terminal = Terminal(out, overwrite=True)
    for line in ("vm round 0: 1/2 s/stream-default/t1 (0.1 s)", "vm round 0: 2/2 s/stream-default/t2 (0.1 s)",
                 "vm round 0 done: 2 measured, 0 kept, 1 s"):  # fmt: skip
        terminal.feed(line + "\n")
    assert out.getvalue() == ("vm round 0: 1/2 s/stream-default/t1 (0.1 s)\r\033[Kvm round 0: 2/2 s/stream-default/t2 (0.1 s)"
                              "\r\033[Kvm round 0 done: 2 measured, 0 kept, 1 s\n")  # fmt: skip


def test_a_run_that_did_not_fail_names_no_log_and_nothing_to_do_is_said_plainly():
    said = shown("Building DAG of jobs...\nNothing to be done (all requested files are present and up to date).\n"
                 "Complete log(s): /x.log\n")  # fmt: skip
    assert said == "membench: nothing to do: every repetition is stored and the report is current\n"


def test_make_plan_says_what_is_new_what_changed_and_what_is_kept(tmp_path):
    """Three cells planted: one stored for its request (kept), one stored
    with another ntimes (measured again, naming the knob), one never stored."""
    table = variants.load_variants(REPO / "kernels" / "families" / "variants.yaml")
    config = {"system": "box", "repeats": 1, "ntimes": 3,
              "experiments": {"s": {"kernel": "stream", "threads": [1, 2, 4], "affinity": ["close"], "size": ["2MiB"]}}}  # fmt: skip
    _, cells = checks.load(config, REPO / "workflow" / "schemas" / "config.schema.yaml", table)
    runs = tmp_path / "results" / "box" / "runs"
    for cell, ntimes, same in ((cells[0], 3, True), (cells[1], 5, False)):
        request = rounds.cell_request(cell, "box", 0, table)
        path = Path(layout.run_path(str(runs), cell, 0))
        path.parent.mkdir(parents=True)
        digest = rounds.digest(request) if same else "0" * 16
        path.write_text(json.dumps({"request_digest": digest, "ntimes": ntimes}) + "\n")
    (tmp_path / "my.yaml").write_text(json.dumps(config))
    out = subprocess.run([sys.executable, str(REPO / "workflow" / "scripts" / "study_status.py"), "--plan", "--configfile", "my.yaml",
                          "--directory", "."], cwd=tmp_path, capture_output=True, text=True)  # fmt: skip
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert "box: 2 of 3 repetitions to measure" in lines[1]
    assert any("s: 1 new repetition(s) of 1 cell(s) (stream: default t4 close 2 MiB)" in line for line in lines), lines
    assert any("1 measured again, ntimes: stored 5, asked 3" in line and "t2" in line for line in lines), lines
    assert any("1 stored repetition(s) kept" in line for line in lines), lines
