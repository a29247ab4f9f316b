"""The report on an Arm machine speaks Arm (membench.findings.arch_words):
an x86 variant's skipped records say the variant does not apply there and
name the Arm counterpart, and the notes say streaming stores (stnp /
stnt1d) where an x86-only report says non-temporal stores. A report of
x86 systems alone reads as before; one of both says both."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import pandas as pd
from markupsafe import Markup

from membench.analyse import stats
from membench.findings import arch_words
from membench.report import render as report
from report_context import context_of

AVX512_SKIP = "op r2w1nt requires CPU feature 'avx512f', which this CPU lacks"
SVE_SKIP = "op r2w1nt requires CPU feature 'sve256', which this CPU lacks"


def record(system, variant="default", status="ok", reason=None, gbps=50.0, op="r2w1nt"):
    return dict(
        system=system, experiment="mlc", cell=f"mlc/{variant}", kernel="mix", variant=variant, op=op,
        threads_requested=2, threads=2, affinity="close", affinity_requested="close", policy_requested="default", policy="default", pages="4k",
        init="parallel", size_requested=2**30, size_bytes=2**30, load_delay_requested=0, status=status, reason=reason,
        gbps=gbps if status == "ok" else math.nan, gbps_wa=gbps if status == "ok" else math.nan, ns_per_load=math.nan,
        working_set_bytes=math.nan, hugepage_fraction=0.0, cpus="[0, 1]", page_nodes='{"0": 1.0}', migrated=False,
        placement_problems=None, bytes_per_iter=24, bytes_per_iter_wa=24, bytes_read_per_iter=16, bytes_written_per_iter=8,
    )  # fmt: skip


def topology(arch: str) -> dict:
    return {
        "packages": 1, "line_bytes": 64, "cpu_model": "Neoverse V1 (0x41/0xd40)" if arch == "aarch64" else "Xeon",
        "cpu_flags": [], "cores": 2, "llc_bytes": 2**20, "arch": arch, "caches": [],
        "cpus": [{"cpu": c, "core": c, "package": 0, "node": 0, "siblings": [c]} for c in range(2)],
        "nodes": [{"node": 0, "cpus": [0, 1], "memory_bytes": 2**34, "distances": [10]}],
    }  # fmt: skip


ENVIRONMENT = {"hostname": "h", "kernel": "6.1", "virtualized": False, "thp_enabled": "madvise", "thp_defrag": "madvise",
               "hugepages": {}, "numa_balancing": 0, "zone_reclaim_mode": 0, "governor": None, "compiler": "gcc 12"}  # fmt: skip


def render(archs: dict[str, str]) -> str:
    rows = []
    for system, arch in archs.items():
        for rep in range(2):
            rows.append(record(system, gbps=50.0 + rep))
            rows.append(record(system, op="r1w0", gbps=60.0 + rep))
        own_lack = SVE_SKIP if arch == "aarch64" else "op r2w1nt requires CPU feature 'avx512f', which this CPU lacks"
        rows.append(record(system, "nt-avx512", "skipped", AVX512_SKIP))
        rows.append(record(system, "nt-sve256", "skipped", SVE_SKIP if arch == "x86_64" else own_lack))
    table = pd.DataFrame(rows)
    context = context_of(
        config={"experiments": {"mlc": {"kernel": "mix"}}}, cells=stats.summarise_cells(table),
        problems=stats.problem_cells(table), figures={},
        systems={name: {"topology": topology(arch), "environment": ENVIRONMENT} for name, arch in archs.items()},
        provenance={"membench_version": "t", "commit": "abc", "config_hash": "h", "snakemake_version": "9", "rendered_at": "now"},
    )  # fmt: skip
    env = report.make_environment(report.TEMPLATE_DIR)
    return env.get_template("report.html.j2").render(**context, stylesheet=Markup(""))


def test_an_arm_report_says_what_does_not_apply_and_the_arm_words():
    html = render({"g3": "aarch64"})
    assert "requires CPU feature &#39;avx512f&#39;" not in html and "requires CPU feature 'avx512f'" not in html
    assert "does not apply on aarch64: AVX-512 (avx512f) is x86_64&#39;s" in html
    assert "NEON (asimd) and SVE-256 (sve256) variants" in html
    # Arm's own feature that this CPU lacks is a real skip, said as the harness said it
    assert "requires CPU feature &#39;sve256&#39;, which this CPU lacks" in html
    assert "non-temporal stores" not in html and "streaming stores (Arm&#39;s stnp / stnt1d)" in html
    assert "AVX-512" not in html.replace("does not apply on aarch64: AVX-512", "")


def test_an_x86_report_reads_as_before_and_a_mixed_one_says_both():
    html = render({"x": "x86_64"})
    assert "stnp" not in html and "none for non-temporal stores or read-modify-write" in html
    assert "does not apply on x86_64: SVE at 256 bits (sve256) is aarch64&#39;s" in html
    assert "requires CPU feature &#39;avx512f&#39;, which this CPU lacks" in html  # x86's own: a real skip
    both = render({"x": "x86_64", "g3": "aarch64"})
    assert "non-temporal stores (x86 movnt; Arm stnp / stnt1d, a hint)" in both


def test_a_topology_without_arch_is_x86():
    assert arch_words.report_archs({"old": {"topology": {}}}) == frozenset({"x86_64"})
    assert arch_words.not_applicable("op x requires CPU feature 'avx512f', which this CPU lacks", "x86_64") is None
    assert arch_words.not_applicable("validation failed", "aarch64") is None


def test_every_x86_phrase_is_still_in_the_notes_it_rewords():
    """The notes are written by analyse and findings: a phrase reworded
    there would silently stay x86 on an Arm report."""
    package = Path(arch_words.__file__).resolve().parents[1]
    notes = " ".join(node.value for p in package.rglob("*.py") if p.name != "arch_words.py"
                     for node in ast.walk(ast.parse(p.read_text()))  # a literal split over lines is one constant
                     if isinstance(node, ast.Constant) and isinstance(node.value, str))  # fmt: skip
    for phrase in arch_words.PHRASES:
        assert phrase in notes, phrase
    loaded = "The delay is the pause count asked, then one delay (a pause costs 10 to 140 cycles by CPU model)."
    assert arch_words.in_words(loaded, frozenset({"aarch64"})) == (
        "The delay is the isb count asked, then one delay (an isb's cost differs by core).")
    assert arch_words.in_words(loaded, frozenset({"x86_64"})) == loaded
