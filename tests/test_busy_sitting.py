"""A busy sitting is not measured again and again (issue 41): retries help
against a passing neighbour, not a machine that stays busy. After
BUSY_STREAK repetitions in a row stayed disturbed through every try, the
round measures its later repetitions once (kept, marked, as always); the
first repetition that comes out quiet gives retries back."""

import json
from pathlib import Path
from types import SimpleNamespace

import measure_round
from test_identity import box, cells_of  # noqa: F401 (box is a fixture)

from membench.measure import rounds as measure_rounds


def _harness(box, lists_options, disturbed_starts) -> Path:
    """A fake harness whose nth start (from 1) is disturbed when n is in
    `disturbed_starts` (a range or set), quiet otherwise."""
    starts = box.results.parent.parent / "starts"
    listed = " ".join(str(n) for n in disturbed_starts)
    box.harness.write_text(
        f"#!/bin/sh\n{lists_options}echo x >> {starts}\n"
        f"n=$(wc -l < {starts}); s=0\n"
        f'for d in {listed}; do [ "$n" -eq "$d" ] && s=3; done\n'
        "echo '{\"status\": \"ok\", \"affinity\": \"close\", \"disturb_timed_s\": 1.0, "
        "\"disturb_nivcsw\": ['$s'], \"disturb_steal_s\": 0.0}'\n"
    )  # fmt: skip
    return starts


SIX = {"e": {"kernel": "stream", "threads": [1], "size": ["1MiB", "2MiB", "3MiB", "4MiB", "5MiB", "6MiB"]}}


def test_a_machine_that_stays_busy_is_measured_once_a_repetition_after_the_streak(box, lists_options):
    _harness(box, lists_options, range(1, 100))
    manifest = box.round(cells_of(SIX), disturbed_retries=2)
    streak = measure_rounds.BUSY_STREAK
    # the first BUSY_STREAK repetitions took every try, the rest one each
    assert box.started() == 3 * streak + (6 - streak)
    assert len(manifest["disturbed"]) == 6, "every repetition kept and marked"
    assert manifest["busy_spans"] == [[streak + 1, 6]]
    tries = [json.loads(Path(p).read_text().splitlines()[0])["measure_try"] for p in manifest["runs"]]
    assert sorted(tries) == sorted([3] * streak + [1] * (6 - streak))
    plan = SimpleNamespace(system="box", round_index=0)
    assert f"the machine stayed busy: repetitions {streak + 1}–6 were measured once each" in measure_round.closing_line(manifest, plan)


def test_a_quiet_repetition_gives_the_retries_back(box, lists_options):
    # disturbed through the streak and the next repetition's one try; the
    # one after is quiet; the next is disturbed at its first try only
    streak = measure_rounds.BUSY_STREAK
    busy_end = 3 * streak + 1
    _harness(box, lists_options, [*range(1, busy_end + 1), busy_end + 2])
    manifest = box.round(cells_of(SIX), disturbed_retries=2)
    assert manifest["busy_spans"] == [[streak + 1, streak + 2]]
    assert len(manifest["disturbed"]) == streak + 1
    # the repetition after the quiet one was measured again, and its second try was quiet
    third = manifest["runs"][streak + 2]
    assert third not in manifest["disturbed"] and len(manifest["disturbed_tries"][third]) == 1
    assert json.loads(Path(third).read_text().splitlines()[0])["measure_try"] == 2


def test_a_passing_neighbour_still_gets_its_retries(box, lists_options):
    _harness(box, lists_options, [1])  # only the very first try disturbed
    manifest = box.round(cells_of(SIX), disturbed_retries=2)
    assert manifest["busy_spans"] == [] and manifest["disturbed"] == [] and box.started() == 7


def test_every_busy_streak_is_named(box, lists_options):
    # two streaks, each ended by a quiet repetition measured once
    streak = measure_rounds.BUSY_STREAK
    first = range(1, 3 * streak + 1)  # the streak's tries; the next start is quiet
    second = range(3 * streak + 2, 6 * streak + 2)
    _harness(box, lists_options, [*first, *second])
    twelve = {"e": {"kernel": "stream", "threads": [1], "size": [f"{n}MiB" for n in range(1, 13)]}}
    manifest = box.round(cells_of(twelve), disturbed_retries=2)
    assert manifest["busy_spans"] == [[streak + 1, streak + 1], [2 * streak + 2, 2 * streak + 2]]
    plan = SimpleNamespace(system="box", round_index=0)
    assert f"repetitions {streak + 1}, {2 * streak + 2} were measured once each" in measure_round.closing_line(manifest, plan)
