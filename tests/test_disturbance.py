"""The disturbed rule (membench.core.disturbance): what marks a repetition,
and that what was not recorded is never read as quiet."""

import math
from pathlib import Path

import yaml

from membench.core import disturbance
from membench.store import record_versions

QUIET = {"disturb_timed_s": 0.5, "disturb_nivcsw": [0, 0], "disturb_steal_s": 0.0, "disturb_core_ghz": [3.0, 3.05]}


def test_a_quiet_region_is_not_disturbed():
    assert disturbance.verdict(QUIET) == (False, [])
    assert disturbance.label(QUIET) == "quiet"


def test_a_switched_thread_steal_or_a_clock_change_mark_it_and_say_what():
    assert disturbance.verdict({**QUIET, "disturb_nivcsw": [0, 2]}) == (True, ["switched out 2x"])
    # 1 % of 0.5 s is 5 ms: three 10 ms ticks are 20 ms for certain
    assert disturbance.verdict({**QUIET, "disturb_steal_s": 0.03})[1] == ["steal 6.0 % of the CPU time"]
    assert disturbance.verdict({**QUIET, "disturb_core_ghz": [3.0, 2.0]})[1] == ["clock 3.00->2.00 GHz"]
    both = disturbance.columns({**QUIET, "disturb_nivcsw": [1, 0], "disturb_steal_s": 0.1})
    assert both == {"disturbed": True, "disturbed_by": "switched out 1x; steal 20.0 % of the CPU time",
                    "disturb_switches": 1, "disturb_placement": None, "neighbour": None}  # fmt: skip


def test_one_tick_of_steal_a_cpu_is_rounding_not_evidence():
    # two readings of a count in 10 ms ticks: a difference of one tick may
    # be microseconds that crossed a tick boundary
    assert disturbance.verdict({**QUIET, "disturb_steal_s": 0.01})[0] is False
    assert disturbance.verdict({**QUIET, "disturb_steal_s": 0.02})[0] is True  # 10 ms for certain, 2 %
    # summed over the region's CPUs: one tick each is still nothing certain
    two = {**QUIET, "disturb_steal_cpus": [0, 1]}
    assert disturbance.verdict({**two, "disturb_steal_s": 0.02})[0] is False
    assert disturbance.verdict({**two, "disturb_steal_s": 0.05})[1] == ["steal 5.0 % of the CPU time"]


def test_the_time_a_thread_waited_for_its_cpu_decides_when_it_is_recorded():
    # a kernel thread's short turns: switches, but 0.1 % of the region lost
    brief = {**QUIET, "disturb_nivcsw": [12, 3], "disturb_wait_s": [0.0005, 0.0001]}
    assert disturbance.verdict(brief) == (False, [])
    # a neighbour's slices: 30 % lost
    slices = {**brief, "disturb_wait_s": [0.15, 0.0]}
    assert disturbance.verdict(slices) == (True, ["switched out (waited 30.0 % of the region, 15 switches)"])


def test_a_wait_must_also_outlast_a_kernel_threads_turn():
    # a cell on every CPU of a quiet 2-vCPU guest: the kernel's housekeeping
    # has no free CPU, 4.5 ms of a 0.3 s STREAM region (1.5 %)
    all_cpus = {**QUIET, "disturb_timed_s": 0.3, "disturb_nivcsw": [19, 3], "disturb_wait_s": [0.0045, 0.0002]}
    assert disturbance.verdict(all_cpus)[0] is False
    # one 4 ms turn in a 41 ms chase region (10 %): the chase's statistic
    # did not move
    chase = {**QUIET, "disturb_timed_s": 0.041, "disturb_nivcsw": [1], "disturb_wait_s": [0.004]}
    assert disturbance.verdict(chase)[0] is False
    # a neighbour taking half of that CPU: 20 ms of the same region
    assert disturbance.verdict({**chase, "disturb_nivcsw": [9], "disturb_wait_s": [0.0205]})[0] is True
    # a long region on every CPU: the machine's own work, 1.5 %, is no neighbour
    long = {**QUIET, "disturb_timed_s": 1.6, "disturb_nivcsw": [18, 73], "disturb_wait_s": [0.0014, 0.0233]}
    assert disturbance.verdict(long)[0] is False
    # but 5 % is: 0.2 s of 3 s
    long = {**QUIET, "disturb_timed_s": 3.0, "disturb_nivcsw": [40, 0], "disturb_wait_s": [0.2, 0.0]}
    assert disturbance.verdict(long)[1] == ["switched out (waited 6.7 % of the region, 40 switches)"]


def test_c2c_judges_per_sample_and_only_marks_a_median_taken_over_switched_samples():
    c2c = {**QUIET, "disturb_nivcsw": [5, 3], "samples": 50, "samples_switched": 4}
    assert disturbance.verdict({**c2c, "handoff_basis": "undisturbed"}) == (False, [])
    assert disturbance.verdict({**c2c, "handoff_basis": "all"}) == (True, ["switched out in 4 of 50 samples"])


def test_not_recorded_is_never_quiet():
    old = record_versions.migrate({"schema": 2, "kernel": "c2c", "host": "h", "handoff_ns": 20.0})
    assert old["disturb_nivcsw"] is None and old["handoff_basis"] is None and old["handoff_all_ns"] == 20.0
    assert disturbance.verdict(old) == (None, ["not recorded"])
    assert disturbance.columns(old)["disturbed"] is None
    # read back from a table: JSON text and NaN
    assert disturbance.verdict({"disturb_nivcsw": "[0, 1]", "disturb_timed_s": math.nan})[0] is True
    assert [disturbance.is_disturbed(v) for v in (True, "True", 1.0, False, math.nan, None, "")] == [
        True, True, True, False, False, False, False]  # fmt: skip


def test_migration_steps_compose_from_every_older_version():
    v1 = record_versions.migrate({"schema": 1, "kernel": "stream", "host": "h", "affinity": "node:0",
                                  "affinity_resolved": "cpus:0,1"})  # fmt: skip
    assert v1["migrated_from"] == 1 and v1["schema"] == 4 and v1["disturb_steal_s"] is None
    assert (v1["affinity_requested"], v1["affinity"]) == ("node:0", "cpus:0,1")  # version 3 -> 4
    placeholder = record_versions.migrate({"schema": 2, "kernel": "stream", "status": "failed"})
    assert "disturb_nivcsw" not in placeholder  # no harness ran: nothing to say


def test_the_default_profile_keeps_snakemakes_solver_off_the_measuring_cpus():
    """While a round measures, Snakemake picks jobs again every second; the
    ILP scheduler forks its solver (cbc) each time, and on a 2-vCPU guest
    that took 1.6-18 % of an all-CPU STREAM region (README, Disturbed
    repetitions). The default profile picks greedily, in Snakemake's loop."""
    profile = yaml.safe_load((Path(__file__).parents[1] / "profiles" / "default" / "config.yaml").read_text())
    assert profile.get("scheduler") == "greedy"


def test_each_threshold_is_pinned_on_both_sides_of_its_edge():
    """Just under an edge is quiet, just over it disturbed: the 5 % wait (a
    1 s region, where the 8 ms floor is far below), the 8 ms floor (a 0.1 s
    region, where 5 % is 5 ms), 1 % of steal past one tick, a 10 % clock."""
    def waited(timed, wait):
        return disturbance.verdict({**QUIET, "disturb_timed_s": timed, "disturb_nivcsw": [3], "disturb_wait_s": [wait]})[0]

    assert (waited(1.0, 0.0499), waited(1.0, 0.0501)) == (False, True)
    assert (waited(0.1, 0.0079), waited(0.1, 0.0081)) == (False, True)
    # steal over 1 s on one CPU: one 10 ms tick is rounding, then 1 % of the region
    steal = lambda s: disturbance.verdict({**QUIET, "disturb_timed_s": 1.0, "disturb_steal_s": s})[0]  # noqa: E731
    assert (steal(0.0199), steal(0.0201)) == (False, True)
    clock = lambda after: disturbance.verdict({**QUIET, "disturb_core_ghz": [4.0, after]})[0]  # noqa: E731
    assert (clock(4.399), clock(4.401), clock(3.601), clock(3.599)) == (False, True, False, True)
