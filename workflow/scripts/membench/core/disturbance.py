"""The disturbed rule: which repetitions something else disturbed.

A record carries what could have disturbed its timed region, read outside
it by the harness (kernels/harness/disturb.c; keys disturb_*). A
repetition is *disturbed* when:

  switched   where the record says what each timed iteration waited
             (disturb_iter_wait_s, the bandwidth families): the iteration
             the statistic came from (the best, gbps) had a measuring
             thread wait runnable for its CPU, while another task had it,
             for more than 1 % of that iteration. A barrier-synchronised
             iteration is as slow as its slowest thread, so such a wait is
             in the number; 1 % is half of make compare's 2 % threshold. A
             wait in the other iterations moved nothing the record reports
             (a neighbour taking 1 ms in 20 is in every iteration longer
             than 20 ms, so in the best one too). An iteration in which two
             measuring threads were seen on one CPU (affinity none: the
             threads stacked) waited behind the measurement's own threads:
             that is placement, never disturbance (placement() says it,
             columns' disturb_placement counts it), and the run is kept.
             Elsewhere, over the whole region: a measuring thread waited
             more than 5 % of the region and more than 8 ms (schedstat
             run_delay; where that is not recorded, or schedstat reads
             "0 0 0" with sched_info off: it was switched out
             involuntarily at all, getrusage RUSAGE_THREAD ru_nivcsw). c2c
             decides per sample instead: its statistics come from the
             samples neither thread was switched out in, and the record is
             disturbed only when too few of those were left (handoff_basis
             "all");
  lost       where the record says what each timed iteration lost
             (disturb_iter_lost_s, the bandwidth families): the iteration
             the statistic came from lost more than 1 % of itself and more
             than 1 ms (the region's thresholds, applied to it) to neither
             running nor waiting: every measuring thread's span between the
             readings around it less its run time and run_delay, in ns
             (steal while it ran, interrupts), the least over the threads,
             because a thread asleep at a barrier behind a slow one also
             loses its time. Time lost in the other iterations moved
             nothing reported, as for a wait. Elsewhere (older records, the
             latency, loaded and c2c families), over the whole region: every
             measuring thread lost more than 1 % of it and more than 1 ms;
  steal      without disturb_iter_lost_s only: the hypervisor stole more
             than 1 % of the region's CPU time for certain (/proc/stat
             steal counts 10 ms ticks per CPU and the difference of two
             readings over-reads by up to one tick a CPU, so that much is
             taken off first; "lost" sees the rest). Where the iteration's
             lost time is recorded it decides alone: steal while a
             measuring thread ran is part of that thread's lost time, in
             ns, and a 10 ms tick is as long as a whole iteration, so the
             region's steal cannot say which iteration it fell in;
  clock      the measuring core's clock after the region differs from the
             one before by more than 10 % (dependent-add chain, cpu.c).

A neighbour that only uses memory (another process streaming on other
CPUs) causes no wait, no steal and no clock change, so none of the above
sees it. neighbour() says instead when other tasks kept the machine's
other CPUs busy during the region (disturb_others_busy_s: every CPU's busy
ticks less the measuring threads' own run time), more than a quarter of a
CPU on average for certain (less a tick a CPU counted): a memory-side
neighbour is possible. Such a run is kept and counted, not marked
disturbed: on this 2-vCPU guest a STREAM thread beside it moved neither a
one-thread copy nor the chase (docs/disturbance.md). Another VM on the
host is seen by nothing in the guest.

The thresholds come from sittings on a 2-vCPU KVM guest (README,
"Disturbed repetitions"). A pinned STREAM thread of a quiet minute
waited 0-0.04 % of its region; with a busy loop on its CPU 49.7-52.4 %
(scheduler slices; 18-25 GB/s instead of 41), beside other people's test
runs 19-84 %. A cell on every CPU leaves the machine's own work (kernel
threads, Snakemake's loop) no free CPU: in quiet sittings its threads
waited up to 3.2 % of a region over 0.1 s (a loaded-latency load thread
30 ms of 3.5 s), hence 5 %, a quarter of the least a neighbour took.
Regions under 60 ms lost up to 14 % to single turns of kernel threads (a
chase thread 6.7 ms of 48 ms; the longest turn traced was 3.99 ms, at
HZ=250 one tick) with their results where the other repetitions put
them, so a wait must also pass 8 ms, two ticks, which a neighbour taking
half the CPU passes in any region over 16 ms. Steal stayed at 0-1 tick a
CPU in quiet sittings; the clock estimate within 4.0-4.4 GHz. Other
runnable tasks (disturb_others_running) are recorded and shown, never
part of the rule: one that wanted a measuring CPU shows up as a wait;
one elsewhere cannot be told from an idle loop by a count.

A record whose counters were not recorded (an older record, or a kernel
without the per-thread count or the steal field) is "not recorded"
(disturbed None), never quiet. Imports nothing of membench.
"""

from __future__ import annotations

import json
import math

from membench.core.text import percent

WAIT_FRACTION = 0.05  # a measuring thread's wait for its CPU over the timed region
WAIT_FLOOR_S = 0.008  # ... and in seconds: two ticks at HZ=250, past a kernel thread's turn
STEAL_FRACTION = 0.01  # steal over the region's CPU time, less the ticks' rounding
STEAL_TICK_S = 0.01  # /proc/stat counts in USER_HZ = 100 ticks on Linux
CLOCK_CHANGE = 0.10  # relative change of the core clock across the region
NEIGHBOUR_CPUS = 0.25  # other tasks' busy time over the region, in CPUs, for certain
ITERATION_WAIT_FRACTION = 0.01  # a wait in the iteration the statistic came from: half compare's threshold
LOST_FRACTION = 0.01  # time neither run nor waited (steal, interrupts), least over the threads: of the region or the iteration
LOST_FLOOR_S = 0.001  # ... and in seconds
NOT_RECORDED = "not recorded"


def _value(value):
    """A record's value, or one read back from a table (JSON text, NaN)."""
    if isinstance(value, str) and value[:1] in "[{":
        try:
            return json.loads(value)
        except ValueError:
            return None
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _statistic_iteration(record: dict) -> tuple[float, float, bool] | None:
    """(longest wait, seconds, threads shared a CPU) of the iteration the
    record's statistic came from (the fastest kept iteration: gbps), or
    None where the record does not say per iteration."""
    waits, shared = _value(record.get("disturb_iter_wait_s")), _value(record.get("disturb_iter_shared"))
    seconds = _value(record.get("seconds"))
    if not (isinstance(waits, list) and isinstance(seconds, list) and isinstance(shared, list)):
        return None
    if not seconds or not len(waits) == len(seconds) == len(shared):
        return None
    best = min(range(len(seconds)), key=lambda k: seconds[k])
    return float(waits[best]), float(seconds[best]), bool(shared[best])


def _statistic_iteration_lost(record: dict) -> tuple[float, float] | None:
    """(time lost, seconds) of the iteration the statistic came from, or
    None where the record does not say what each iteration lost (the
    harness writes that key on its own: a run time the kernel does not
    give leaves the waits standing)."""
    lost, seconds = _value(record.get("disturb_iter_lost_s")), _value(record.get("seconds"))
    if not (isinstance(lost, list) and isinstance(seconds, list) and seconds and len(lost) == len(seconds)):
        return None
    best = min(range(len(seconds)), key=lambda k: seconds[k])
    return float(lost[best]), float(seconds[best])


def _lost_and_steal(get, timed, iteration_lost) -> tuple[bool, list[str]]:
    """(known, causes) of the lost and steal rules: the statistic's
    iteration where its lost time is recorded, else the region's."""
    if iteration_lost is not None:
        lost, seconds = iteration_lost
        if lost > max(LOST_FRACTION * seconds, LOST_FLOOR_S):
            return True, [f"lost {percent(lost / seconds, 1)} of the iteration the number came from (steal or interrupts)"]
        return True, []
    known, causes = False, []
    lost = get("disturb_lost_s")
    if isinstance(lost, list) and lost and timed:
        known = True
        least = min(lost)
        if least > max(LOST_FRACTION * timed, LOST_FLOOR_S):
            causes.append(f"lost {percent(least / timed, 1)} of the region (steal or interrupts)")
    steal = get("disturb_steal_s")
    if steal is not None and timed:
        known = True
        cpus = get("disturb_steal_cpus")
        ncpus = len(cpus) if isinstance(cpus, list) and cpus else 1
        # each CPU's count may have ticked over just after the first
        # reading and just before the second: that much is not certain
        certain = steal - ncpus * STEAL_TICK_S
        if certain > STEAL_FRACTION * timed * ncpus:
            causes.append(f"steal {percent(steal / (timed * ncpus), 1)} of the CPU time")
    return known, causes


def placement(record: dict) -> str | None:
    """What the measurement's own placement cost the number, when its
    threads shared a CPU in the iteration the statistic came from (affinity
    none): placement, shown as such and never disturbance; None otherwise."""
    iteration = _statistic_iteration(record)
    if iteration is None or not iteration[2]:
        return None
    wait, seconds, _ = iteration
    return f"threads shared a CPU (waited {percent(wait / seconds, 1)} of the iteration behind their own)"


def neighbour(record: dict) -> str | None:
    """What other tasks did beside the region, when they kept the machine's
    other CPUs busy (NEIGHBOUR_CPUS, less the ticks' rounding): a
    memory-side neighbour possible, which the rule cannot see; None when
    they did not, or nothing was recorded."""
    busy, cpus, timed = (_value(record.get(k)) for k in ("disturb_others_busy_s", "disturb_busy_cpus", "disturb_timed_s"))
    if not (isinstance(busy, (int, float)) and isinstance(cpus, (int, float)) and isinstance(timed, (int, float)) and timed > 0):
        return None
    if busy - cpus * STEAL_TICK_S <= NEIGHBOUR_CPUS * timed:
        return None
    return f"other tasks kept {busy / timed:.1f} CPUs busy beside it (a memory-side neighbour possible)"


def verdict(record: dict) -> tuple[bool | None, list[str]]:
    """(disturbed, causes) of one record: True with what disturbed it
    (short phrases: "switched out 3x", "steal 2.0 %", "clock 4.2->3.1 GHz"),
    False when nothing did, None when nothing was recorded (causes then
    says so)."""
    get = lambda key: _value(record.get(key))  # noqa: E731
    causes: list[str] = []
    known = False
    timed = get("disturb_timed_s")
    basis = get("handoff_basis")
    if basis is not None:  # c2c: per sample
        known = True
        switched = get("samples_switched") or 0
        if basis == "all" and switched > 0:
            causes.append(f"switched out in {switched} of {get('samples')} samples")
    else:
        switches, waits = get("disturb_nivcsw"), get("disturb_wait_s")
        if isinstance(waits, list) and isinstance(switches, list) and waits and not any(waits) and sum(switches):
            waits = None  # switched out yet never waited: schedstat did not count ("0 0 0")
        iteration = _statistic_iteration(record)
        if iteration is not None:
            known = True
            wait, seconds, shared = iteration
            if not shared and wait > ITERATION_WAIT_FRACTION * seconds:
                causes.append(f"switched out in the iteration the number came from (waited {percent(wait / seconds, 1)} of it)")
        elif isinstance(waits, list) and waits and timed:
            # the time lost, not the count: a kernel thread's few microseconds
            # are no disturbance, a neighbour's scheduler slices are
            known = True
            worst = max(waits)
            if worst > max(WAIT_FRACTION * timed, WAIT_FLOOR_S):
                count = f", {sum(switches)} switches" if isinstance(switches, list) else ""
                causes.append(f"switched out (waited {percent(worst / timed, 1)} of the region{count})")
        elif isinstance(switches, list):
            known = True
            if sum(switches) > 0:
                causes.append(f"switched out {sum(switches)}x")
    lost_known, lost_causes = _lost_and_steal(get, timed, _statistic_iteration_lost(record))
    known |= lost_known
    causes += lost_causes
    clock = get("disturb_core_ghz")
    if isinstance(clock, list) and len(clock) == 2 and all(clock):
        known = True
        before, after = clock
        if abs(after / before - 1) > CLOCK_CHANGE:
            causes.append(f"clock {before:.2f}->{after:.2f} GHz")
    if not known:
        return None, [NOT_RECORDED]
    return bool(causes), causes


def label(record: dict) -> str:
    """What the report says of one record: the causes, "quiet", or "not
    recorded"."""
    disturbed, causes = verdict(record)
    if disturbed is None:
        return NOT_RECORDED
    return "; ".join(causes) if disturbed else "quiet"


def columns(record: dict) -> dict:
    """The table columns of one record: disturbed (True / False / None) and
    disturbed_by (the causes; None unless disturbed), and the measuring
    threads' involuntary switches in all (None when not recorded), and
    disturb_placement: placement()'s phrase when the threads shared a CPU
    (such a run is kept and drawn, counted as placement), and neighbour:
    neighbour()'s phrase when other tasks kept other CPUs busy (kept,
    counted)."""
    disturbed, causes = verdict(record)
    switches = _value(record.get("disturb_nivcsw"))
    return {
        "disturbed": disturbed,
        "disturbed_by": "; ".join(causes) if disturbed else None,
        "disturb_switches": sum(switches) if isinstance(switches, list) else None,
        "disturb_placement": placement(record),
        "neighbour": neighbour(record),
    }


def cause_kind(text: str) -> str:
    """The kind of one cause phrase (switched, steal, clock) for counting."""
    return text.split(" ", 1)[0].replace("switched", "switched out")


def is_disturbed(value) -> bool:
    """A table's disturbed cell (True, "True", 1.0; False, NaN, None,
    empty) as a bool: only a repetition marked disturbed is True."""
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "1.0")
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return False
    return bool(value)
