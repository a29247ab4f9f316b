"""The quiet tests' account of themselves (issue 52), a pytest plugin that
tests/conftest.py registers.

The tests marked `quiet` judge real threads quiet or not, and a busy
machine makes them skip (no quiet run in N tries, a neighbour that never
showed). Skips are reported one by one by -rs, but a run where most of
them skipped tested little: at the end of every run that ran quiet tests
this says how many skipped, out of how many, and why, and with
MEMBENCH_REQUIRE_QUIET=1 (CI, .ci/run) a run where more than half of them
skipped fails: a machine too busy to test is said, not passed."""

from __future__ import annotations

import os

import pytest

MARKER = "quiet"
REQUIRE = "MEMBENCH_REQUIRE_QUIET"
RANK = {"passed": 0, "skipped": 1, "failed": 2}


def skip_reason(report) -> str:
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return reason.removeprefix("Skipped: ")


class QuietAccount:
    """Each quiet test's outcome (failed over skipped over passed, across
    its setup, call and teardown), and the verdict on the whole set."""

    def __init__(self, required: bool):
        self.required = required
        self.outcomes: dict[str, tuple[str, str]] = {}

    def pytest_runtest_logreport(self, report):
        if MARKER not in report.keywords:
            return
        outcome = "failed" if report.failed else "skipped" if report.skipped else "passed"
        before = self.outcomes.get(report.nodeid)
        if before is None or RANK[outcome] > RANK[before[0]]:
            self.outcomes[report.nodeid] = (outcome, skip_reason(report) if outcome == "skipped" else "")

    def skipped(self) -> dict[str, str]:
        return {nodeid: reason for nodeid, (outcome, reason) in self.outcomes.items() if outcome == "skipped"}

    def too_few_ran(self) -> bool:
        """More than half of the quiet tests skipped."""
        return 2 * len(self.skipped()) > len(self.outcomes)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session):
        if self.outcomes and self.required and self.too_few_ran() and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter):
        if not self.outcomes:
            return
        skipped = self.skipped()
        write = terminalreporter.write_line
        terminalreporter.section("quiet tests")
        write(f"quiet tests: {len(skipped)} of {len(self.outcomes)} skipped")
        for nodeid, reason in sorted(skipped.items()):
            write(f"  {nodeid}: {reason}")
        if self.too_few_ran():
            consequence = (f"this run fails ({REQUIRE}=1)" if self.required
                           else f"not a pass of the quiet set; CI ({REQUIRE}=1) fails on this")  # fmt: skip
            write(f"more than half of the quiet tests skipped: this machine was too busy to test them; {consequence}",
                  red=True)  # fmt: skip


def register(config) -> None:
    if not config.pluginmanager.has_plugin("quiet_account"):
        config.pluginmanager.register(QuietAccount(os.environ.get(REQUIRE) == "1"), "quiet_account")


def pytest_configure(config):
    """Also a plugin of its own: `pytest -p quiet_summary`."""
    register(config)
