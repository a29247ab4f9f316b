"""A SIGTERM to a round is never lost (issue 40, case 7). The handler only
sets a flag; the round reads it before each try and while it waits, and
kills its harness. Planted: the signal arrives inside logging's kind of
at-fork hook, the moment a try starts its harness (where an exception from
a handler that raised SystemExit is printed as "ignored" and the round
measured on)."""

import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

SIGTERM_AS_A_TRY_STARTS = """
import os, signal, subprocess, sys, time
sys.path.insert(0, {scripts!r})
from membench.measure import stopping
stopping.stop_on_sigterm()
os.register_at_fork(after_in_parent=lambda: os.kill(os.getpid(), signal.SIGTERM))
start = time.monotonic()
try:
    stopping.run_child(["sleep", "30"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ))
    print("measured on")
except stopping.Stopped as stop:
    print(f"stopped: {{stop}} after {{time.monotonic() - start:.1f}} s")
try:
    stopping.run_child(["true"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ))
    print("next try ran")
except stopping.Stopped:
    print("next try refused")
"""


def test_a_sigterm_as_a_try_starts_stops_the_round():
    code = SIGTERM_AS_A_TRY_STARTS.format(scripts=str(REPO / "workflow" / "scripts"))
    start = time.monotonic()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "Exception ignored" not in out.stderr, out.stderr
    lines = out.stdout.splitlines()
    assert lines and lines[0].startswith("stopped: SIGTERM received"), out.stdout + out.stderr
    assert lines[1:] == ["next try refused"]
    assert time.monotonic() - start < 20  # the harness (sleep 30) was killed, not waited for


def test_the_handler_only_sets_a_flag():
    import signal

    from membench.measure import stopping

    before = signal.getsignal(signal.SIGTERM)
    try:
        stopping.stop_on_sigterm()
        handler = signal.getsignal(signal.SIGTERM)
        handler(signal.SIGTERM, None)  # returns: no exception, no exit
        assert stopping.terminated_by() == signal.SIGTERM
    finally:
        signal.signal(signal.SIGTERM, before)
        stopping._terminated_by = None
