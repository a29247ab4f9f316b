"""membench does not disturb its own measurements (issue 55, item 4).

While a harness runs, the round's process and its parent (Snakemake) stay
off the CPUs the cell measures on where the cell leaves any free; the round
waits for the harness without waking; the harness itself starts from every
CPU the round had; each record says how much CPU membench's own processes
took meanwhile (membench.measure.quiet, docs/disturbance.md)."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from membench.measure import harness, quiet, stopping
from membench.plan.request import Request
from membench.probe.topology import parse_cpulist

ALLOWED = sorted(os.sched_getaffinity(0))
two_cpus = pytest.mark.skipif(len(ALLOWED) < 2, reason="needs two CPUs this process may use")

# 2 nodes x 2 cores x 2 SMT siblings, as tests/test_harness.py's ORDER_DRIVER
SMT_TOPOLOGY = {
    "cpus": [
        {"cpu": cpu, "node": node, "package": node, "core": core, "siblings": sorted({cpu % 4, cpu % 4 + 4})}
        for cpu, node, core in [(0, 0, 0), (1, 0, 1), (2, 1, 0), (3, 1, 1), (4, 0, 0), (5, 0, 1), (6, 1, 0), (7, 1, 1)]
    ]
}


@pytest.mark.parametrize("affinity, order", [("close", [0, 4, 1, 5, 2, 6, 3, 7]), ("spread", [0, 2, 1, 3, 4, 6, 5, 7])])
def test_the_measured_cpus_are_the_harness_plan(affinity, order):
    """The harness's own order on the same topology (test_harness.py)."""
    for threads in range(1, 9):
        assert quiet.measured_cpus(affinity, threads, list(range(8)), SMT_TOPOLOGY) == set(order[:threads])
    assert quiet.measured_cpus("cpus:5,3", 1, list(range(8)), SMT_TOPOLOGY) == {5}
    assert quiet.measured_cpus("none", 1, list(range(8)), SMT_TOPOLOGY) is None


@pytest.mark.parametrize("affinity", ["close", "spread", f"cpus:{ALLOWED[-1]}"])
def test_the_measured_cpus_are_where_the_harness_ran(stream_binary, affinity):
    topology = {"cpus": [{"cpu": c, "node": 0, "package": 0, "core": c, "siblings": [c]} for c in ALLOWED]}
    out = subprocess.run([stream_binary, "--size", "1048576", "--ntimes", "2", "--threads", "1", "--affinity", affinity,
                          "--op", "copy"], capture_output=True, text=True, check=True).stdout  # fmt: skip
    (record,) = [json.loads(line) for line in out.splitlines()]
    assert set(record["cpus"]) == quiet.measured_cpus(affinity, 1, ALLOWED, topology)


def _request(**knobs) -> Request:
    values = dict(system="host", kernel="stream", variant="default", ops=("copy",), policy="default", pages="4k",
                  init="parallel", size=2**20, ntimes=3, repeat=0)  # fmt: skip
    return Request(**values, **knobs)


def _parent_like_snakemake():
    """A process with a second thread, as the round's parent."""
    code = "import threading, time; threading.Thread(target=time.sleep, args=(60,)).start(); time.sleep(60)"
    proc = subprocess.Popen([sys.executable, "-c", code])
    for _ in range(100):
        if len(os.listdir(f"/proc/{proc.pid}/task")) == 2:
            return proc
        time.sleep(0.05)
    proc.kill()
    pytest.fail("the stand-in parent did not start its thread")


def _fake_harness(seen: dict, with_parent: bool = True):
    """A harness that notes the CPUs the round (and its parent) had while it ran."""
    def run_process(argv, *, stdout, stderr, env):
        seen["round"] = os.sched_getaffinity(0)
        if with_parent:
            parent = quiet.own_pids()[1]
            seen["parent"] = [os.sched_getaffinity(int(t)) for t in os.listdir(f"/proc/{parent}/task")]
        seen["child"] = quiet.child_affinity()
        stdout.write(json.dumps({"kernel": "stream", "op": "copy", "status": "ok"}) + "\n")
        return 0

    return run_process


@two_cpus
def test_a_one_thread_cell_keeps_the_round_and_its_parent_off_its_cpu(monkeypatch):
    parent = _parent_like_snakemake()
    try:
        monkeypatch.setattr(harness, "harness_argv", lambda *args: ["fake-harness"])
        quiet.keep_parent_off(parent.pid)
        seen = {}
        request = _request(threads=1, affinity=f"cpus:{ALLOWED[0]}")
        resolved = {"threads": 1, "affinity": f"cpus:{ALLOWED[0]}", "size": 2**20, "policy": "default"}
        records = harness.run_harness("stream", request, resolved, open(os.devnull, "w"), _fake_harness(seen),
                                      (ALLOWED, {}))  # fmt: skip
        free = set(ALLOWED) - {ALLOWED[0]}
        assert seen["round"] == free
        assert seen["parent"] == [free, free]  # every thread of the parent
        assert seen["child"] == set(ALLOWED)  # the harness starts from all of them
        # given back when the harness ended
        assert os.sched_getaffinity(0) == set(ALLOWED)
        assert all(os.sched_getaffinity(int(t)) == set(ALLOWED) for t in os.listdir(f"/proc/{parent.pid}/task"))
        assert records[0]["own_cpus"] == sorted(free) and records[0]["own_cpu_s"] >= 0
    finally:
        quiet.keep_parent_off(None)
        parent.kill()
        parent.wait()


@two_cpus
def test_a_cell_on_every_cpu_moves_nothing_and_counts_own_cpu(monkeypatch):
    monkeypatch.setattr(harness, "harness_argv", lambda *args: ["fake-harness"])
    seen = {}
    request = _request(threads="all", affinity="close")
    resolved = {"threads": len(ALLOWED), "affinity": "close", "size": 2**20, "policy": "default"}
    records = harness.run_harness("stream", request, resolved, open(os.devnull, "w"), _fake_harness(seen, with_parent=False), (ALLOWED, {}))
    assert seen["round"] == set(ALLOWED) and seen["child"] is None
    assert records[0]["own_cpus"] is None and records[0]["own_cpu_s"] >= 0


@two_cpus
def test_the_harness_starts_from_every_cpu_the_round_had(tmp_path):
    """run_child gives the child the CPUs the round had before it was
    confined: a harness with affinity none is placed by the OS on all."""
    path = tmp_path / "status"
    with quiet.kept_off({ALLOWED[0]}, ALLOWED), open(path, "w") as out:
        stopping.run_child(["grep", "Cpus_allowed_list", "/proc/self/status"], stdout=out, stderr=subprocess.DEVNULL,
                           env=dict(os.environ))  # fmt: skip
    assert set(parse_cpulist(path.read_text().split(":")[1].strip())) == set(ALLOWED)
    assert os.sched_getaffinity(0) == set(ALLOWED)


def _slices() -> int:
    """Times this thread was put on a CPU (schedstat's third field)."""
    return int(Path("/proc/thread-self/schedstat").read_text().split()[2])


def _wake_ups_waiting_for(seconds: float) -> int:
    before = _slices()
    stopping.run_child(["sleep", str(seconds)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ))
    return _slices() - before


def test_the_round_does_not_wake_while_the_harness_runs():
    """No polling: waiting 1.5 s longer for a harness costs the round no
    more turns on a CPU (polling every 0.2 s: 7 more). Watching a parent
    (Snakemake) as the pipeline does."""
    if stopping._pidfd(os.getpid()) is None:
        pytest.skip("no pidfds here: the wait polls")
    watcher = subprocess.Popen(["sleep", "30"])
    try:
        stopping.watch(watcher.pid)
        extra = min(_wake_ups_waiting_for(1.6) - _wake_ups_waiting_for(0.1) for _ in range(3))
    finally:
        stopping._watched_pid, stopping._watched_pidfd = None, None
        watcher.kill()
        watcher.wait()
    assert extra <= 2, f"the round ran {extra} more times while a harness ran 1.5 s longer"


def test_a_sigterm_still_stops_a_blocking_wait():
    before = signal.getsignal(signal.SIGTERM)
    stopping.stop_on_sigterm()
    timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGTERM))
    start = time.monotonic()
    try:
        timer.start()
        with pytest.raises(stopping.Stopped, match="SIGTERM"):
            stopping.run_child(["sleep", "30"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ))
    finally:
        timer.cancel()
        signal.signal(signal.SIGTERM, before)
        stopping._terminated_by = None
    assert time.monotonic() - start < 5


def test_the_watched_parent_ending_still_stops_a_blocking_wait():
    watcher = subprocess.Popen(["sleep", "0.3"])
    start = time.monotonic()
    try:
        stopping.watch(watcher.pid)
        with pytest.raises(stopping.Stopped, match="Snakemake ended"):
            stopping.run_child(["sleep", "30"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ))
    finally:
        stopping._watched_pid, stopping._watched_pidfd = None, None
        watcher.wait()
    assert time.monotonic() - start < 5
