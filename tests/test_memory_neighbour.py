"""What the disturbed rule cannot see, said instead (issue 39, 3): a
neighbour that only uses memory, on other CPUs, causes no wait, steal or
clock change. The harness records what other tasks ran on any CPU during
the region (disturb_others_busy_s); disturbance.neighbour() names a run
beside such a neighbour, which is kept and counted, and the first screen
and the round's line say how many."""

import json
import os
import subprocess
import time

import pandas as pd
import pytest

from membench.core import disturbance
from membench.findings import document

REGION = {"disturb_timed_s": 0.2, "disturb_busy_cpus": 2}


def test_the_neighbour_edge_is_a_quarter_cpu_for_certain_after_a_tick_a_cpu():
    # 0.2 s region on 2 CPUs: a tick a CPU (0.02 s) may be rounding; past
    # that, more than 0.25 CPU x 0.2 s = 0.05 s of other tasks' time
    assert disturbance.neighbour({**REGION, "disturb_others_busy_s": 0.07}) is None
    assert disturbance.neighbour({**REGION, "disturb_others_busy_s": 0.0701}) == (
        "other tasks kept 0.4 CPUs busy beside it (a memory-side neighbour possible)")  # fmt: skip
    # more CPUs counted: more rounding to take off first
    assert disturbance.neighbour({**REGION, "disturb_busy_cpus": 16, "disturb_others_busy_s": 0.2}) is None
    # not recorded (older records, a kernel without /proc/stat) says nothing
    assert disturbance.neighbour({**REGION, "disturb_others_busy_s": None}) is None
    assert disturbance.neighbour({"disturb_timed_s": 0.2}) is None


def test_a_run_beside_a_neighbour_is_kept_counted_and_said_on_the_first_screen():
    beside = {**REGION, "disturb_others_busy_s": 0.19, "disturb_nivcsw": [0], "disturb_wait_s": [0.0],
              "disturb_steal_s": 0.0, "disturb_core_ghz": [3.0, 3.0]}  # fmt: skip
    columns = disturbance.columns(beside)
    assert columns["disturbed"] is False and columns["neighbour"].startswith("other tasks kept 0.9 CPUs busy")
    cells = pd.DataFrame({"n_ok": [5, 3], "n_disturbed": [0, 0], "disturbed_by": [None, None], "n_neighbour": [2, 0]})
    said = document.quiet(cells)
    assert said["quiet"] is True and said["neighbour"] == 2
    assert said["verdict"] == ("quiet: 0 of 8 repetitions disturbed; 2 ran while other tasks kept other CPUs busy "
                               "(a memory-side neighbour possible, which the rule cannot see; kept)")  # fmt: skip
    assert document.quiet(cells.assign(n_neighbour=0))["verdict"] == "quiet: 0 of 8 repetitions disturbed"


# ------------------------------------------------------------- real threads

SIZE = 256 << 20  # bytes per array: each copy iteration ~40 ms here, the region ~0.2 s


def _copy_on(binary, cpus: list[int]) -> dict:
    run = subprocess.run([str(binary), "--op", "copy", "--threads", str(len(cpus)), "--affinity",
                          "cpus:" + ",".join(map(str, cpus)), "--size", str(SIZE), "--ntimes", "5"],
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert run.returncode == 0, run.stderr
    record = json.loads(run.stdout.splitlines()[0])
    assert record["disturb_busy_cpus"] == os.cpu_count()  # /proc/stat's cpuN lines, not their sum line
    return record


def _alone_or_skip(measure, tries: int = 3) -> dict:
    """A record no other task ran beside, measured again up to `tries`
    times; skips naming what ran beside it when the machine never was
    quiet."""
    seen = []
    for _ in range(tries):
        record = measure()
        if disturbance.neighbour(record) is None:
            return record
        seen.append(disturbance.neighbour(record))
        time.sleep(0.5)
    pytest.skip(f"machine not quiet in {tries} tries: {'; '.join(seen)}")


@pytest.mark.quiet
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_a_stream_on_the_other_cpu_is_named_beside_a_one_thread_copy(stream_binary):
    """Issue 39's planted memory-side neighbour: STREAM pinned to the second
    CPU beside a one-thread copy on the first. Alone first (measured again
    up to 3 times, else skipped naming what ran beside it), then beside it:
    named, whatever the copy read."""
    first, second = sorted(os.sched_getaffinity(0))[:2]
    alone = _alone_or_skip(lambda: _copy_on(stream_binary, [first]))
    neighbour = subprocess.Popen([str(stream_binary), "--threads", "1", "--affinity", f"cpus:{second}",
                                  "--size", str(SIZE), "--ntimes", "1000"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        time.sleep(1.0)  # its arrays touched: streaming
        beside = _copy_on(stream_binary, [first])
    finally:
        neighbour.kill()
        neighbour.wait()
    said = disturbance.neighbour(beside)
    assert said and said.startswith("other tasks kept"), (
        beside["disturb_others_busy_s"], beside["disturb_timed_s"], alone["disturb_others_busy_s"])  # fmt: skip
    # the copy's own checks saw nothing of it (no wait on its CPU): that is the point
    assert disturbance.placement(beside) is None


@pytest.mark.quiet
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_a_copy_on_every_cpu_is_not_its_own_neighbour(stream_binary):
    """The measuring threads' own run time is taken off every CPU's busy
    time: a team on all CPUs leaves no other task's time, however busy the
    CPUs were."""
    cpus = sorted(os.sched_getaffinity(0))
    seen = []
    for _ in range(3):
        record = _copy_on(stream_binary, cpus)
        if disturbance.neighbour(record) is None:
            return
        # with every CPU the team's, another task's time there is a wait of ours
        assert disturbance.verdict(record)[0], (disturbance.neighbour(record), record["disturb_wait_s"])
        seen.append(disturbance.label(record))
        time.sleep(0.5)
    pytest.skip(f"machine not quiet in 3 tries: {'; '.join(seen)}")
