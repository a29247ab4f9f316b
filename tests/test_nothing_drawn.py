"""Every figure draws from a study with no ok (or no undisturbed) records
of its kind, saying why (issue 40, case 3): all skipped, all failed, every
chase repetition disturbed (the log axis once died on it)."""

import re

import numpy as np
import pandas as pd

from membench.figures import distribution, latency

SKIPPED = pd.DataFrame([
    dict(system="t", experiment="s", cell="s/stream-default/t64", kernel="stream", variant="default", op=op,
         threads=64, threads_requested=64, affinity="close", policy_requested="default", pages="4k", init="parallel",
         size_requested=2**26, status="skipped", reason="64 threads requested but only 2 CPUs are available")
    for op in ("copy", "triad") for _ in range(2)
])  # fmt: skip (no gbps column: no record had a value)
DISTURBED_CHASE = pd.DataFrame([
    dict(system="t", experiment="lat", cell=f"lat/chase-default/w{k}", kernel="chase", variant="default", op="random",
         pages="4k", policy_requested="default", affinity="none", chase_group_requested=262144, working_set_bytes=2**k,
         n_ok=3, n_disturbed=3, ns_mean=np.nan, ns_median=np.nan, ns_min=np.nan, ns_max=np.nan)
    for k in range(12, 20)
])  # fmt: skip
FAILED_LOADED = pd.DataFrame([
    dict(system="t", experiment="ld", cell=f"ld/loaded-default/d{d}", kernel="loaded", variant="default", op="r1w1",
         threads=3, threads_requested=3, affinity="close", policy_requested="default", pages="4k", size_requested=2**29,
         load_delay_requested=d, n_ok=0, n_failed=2, gbps_mean=np.nan, gbps_std=np.nan, ns_mean=np.nan, ns_std=np.nan)
    for d in (0, 50)
])  # fmt: skip


def said(svg: str) -> str:
    return " ".join(re.findall(r">(no successful[^<]*)<", svg))


def test_distributions_of_a_study_whose_every_run_was_skipped_say_why():
    for draw in (distribution.histogram_svg, distribution.placement_svg):
        text = said(draw(SKIPPED, "t-" + draw.__name__))
        assert "4 skipped" in text and "only 2 CPUs" in text, text


def test_latency_with_every_repetition_disturbed_says_so():
    text = said(latency.latency_svg(DISTURBED_CHASE, {}, "t-latency"))
    assert "24 disturbed" in text, text
    text = said(latency.latency_svg(DISTURBED_CHASE.assign(ns_median=0.0), {}, "t-latency0"))
    assert "above 0" in text, text


def test_loaded_latency_with_every_run_failed_says_so():
    assert "4 failed" in said(latency.loaded_svg(FAILED_LOADED, "t-loaded", {}))
