"""The first screen of a report with every family in it, laid out in
headless Chromium at 1280 x 800: stream, the read-only ladder, xor, daxpy,
the five mixes, the chase sweep (so the hierarchy table and the summary's
hierarchy line), loaded latency and cache-to-cache (so the hierarchy's c2c
rows). The records are made here, shaped as the harness writes them, at
the default config's repetitions; the report goes through the package's
own summaries and renderer. Nothing on the first screen may run past its
card, and no line may be cut off."""

import json
import math
import re
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))

from membench.analyse import summary  # noqa: E402
from membench.report import render  # noqa: E402
from membench.findings import document  # noqa: E402
import synthetic_runs  # noqa: E402

SYSTEM = "two-socket"
MACHINE = synthetic_runs.MACHINES["2x16x2"]
CHASE_SIZES = [2**k for k in range(12, 31)]  # the default sweep: 4 KiB to 1 GiB, one point per octave


def chase_ns(working_set: int) -> float:
    """L1 48 KiB, L2 2 MiB, L3 32 MiB, then memory (the machine's caches)."""
    for size, ns in ((48 * 2**10, 1.2), (2 * 2**20, 4.1), (32 * 2**20, 14.8)):
        if working_set <= size:
            return ns
    return 96.0


def base(experiment: str, kernel: str, cell: str, repeat: int, **values) -> dict:
    record = dict(
        system=SYSTEM, experiment=experiment, cell=f"{experiment}/{cell}", kernel=kernel, variant="default",
        op="triad", threads_requested=1, threads=1, affinity="close", affinity_requested="close", policy_requested="default", policy="default",
        pages="4k", init="parallel", size_requested="auto", size_bytes=2**28, load_delay_requested=0,
        chase_group_requested=math.nan, chase_spacing_requested=math.nan, status="ok", reason=None, repeat=repeat,
        gbps=math.nan, gbps_wa=math.nan, ns_per_load=math.nan, working_set_bytes=math.nan, core_ghz=math.nan,
        hugepage_fraction=0.0, cpus="[0]", page_nodes='{"0": 1.0}', migrated=False, placement_problems=None,
        node_name=SYSTEM,
    )  # fmt: skip
    return {**record, **values}


def records(repeats: dict[str, int]) -> pd.DataFrame:
    """Every family's records at the given repetitions per experiment."""
    rows = []
    wobble = [1.0, 1.012, 0.991, 1.004, 0.997, 1.008, 0.994, 1.002]
    for r in range(repeats["stream_affinity"]):
        for threads, affinity, gbps in ((1, "none", 11.0), (1, "close", 11.2), (64, "none", 150.0),
                                        (64, "close", 172.0), (64, "spread", 181.0)):  # fmt: skip
            for op, share in (("copy", 0.92), ("scale", 0.92), ("add", 1.0), ("triad", 1.0)):
                rows.append(base("stream_affinity", "stream", f"t{threads}_{affinity}", r, op=op, threads=threads,
                                 threads_requested=threads if threads == 1 else "all", affinity=affinity, affinity_requested=affinity,
                                 gbps=gbps * share * wobble[r % 8], gbps_wa=gbps * share * 1.4 * wobble[r % 8]))  # fmt: skip
    for r in range(repeats["readonly_ladder"]):
        for v in range(1, 16):
            rows.append(base("readonly_ladder", "readonly", f"v{v:03d}", r, variant=f"v{v:03d}", op="sum",
                             gbps=(4 + v) * wobble[r % 8], feature_sw_prefetch=v > 8, feature_vector_bits=64 * (1 + v // 5)))  # fmt: skip
    for experiment, kernel, op in (("xor_scaling", "xor", "xor"), ("daxpy_scaling", "daxpy", "daxpy")):
        for r in range(repeats[experiment]):
            for threads, gbps in ((1, 9.0), (64, 160.0)):
                rows.append(base(experiment, kernel, f"t{threads}", r, op=op, threads=threads,
                                 threads_requested=threads if threads == 1 else "all", gbps=gbps * wobble[r % 8]))  # fmt: skip
    for r in range(repeats["mix"]):
        for op, gbps in (("r1w0", 180.0), ("r3w1", 170.0), ("r2w1", 165.0), ("r1w1", 150.0), ("r2w1nt", 175.0)):
            rows.append(base("mix", "mix", "all", r, op=op, threads=64, threads_requested="all", gbps=gbps * wobble[r % 8]))
    for r in range(repeats["latency"]):
        for pages in ("4k", "thp"):
            for ws in CHASE_SIZES:
                rows.append(base("latency", "chase", f"{pages}", r, op="random", pages=pages, size_requested="1GiB",
                                 size_bytes=ws, working_set_bytes=ws, chase_group_requested=262144,
                                 ns_per_load=chase_ns(ws) * (0.8 if pages == "thp" and ws > 2**25 else 1) * wobble[r % 8],
                                 core_ghz=2.9))  # fmt: skip
    for r in range(repeats["loaded_latency"]):
        for delay, gbps, ns in ((0, 150.0, 180.0), (10, 110.0, 130.0), (50, 40.0, 101.0)):
            rows.append(base("loaded_latency", "loaded", f"d{delay}", r, threads=64, threads_requested="all",
                             load_delay_requested=delay, size_requested="512MiB", gbps=gbps, gbps_wa=gbps * 1.33,
                             ns_per_load=ns * wobble[r % 8], chase_group_requested=262144))  # fmt: skip
    classes = {"smt": 18.0, "same_l2": 30.0, "same_l3": 44.0, "same_package": 60.0, "other_package": 150.0}
    for r in range(repeats["cache_to_cache"]):
        for pair, (name, ns) in enumerate(classes.items()):
            for op in ("cas", "two_line", "clean"):
                rows.append(base("cache_to_cache", "c2c", f"{name}", r, op=op, threads=2, threads_requested=2,
                                 size_requested="8MiB", cpu_a=0, cpu_b=pair + 1, pair_class=name, pair_requested=f"{name}:0",
                                 handoff_ns=ns * wobble[r % 8], handoff_p10_ns=ns * 0.95, handoff_p90_ns=ns * 1.1,
                                 **{f"cpu_{side}_{key}": 0 for side in "ab" for key in ("core", "l2", "l3", "package", "node")}))  # fmt: skip
    return pd.DataFrame(rows)


def render_full_report(out: Path, config: dict) -> Path:
    """The report of records(), at the repetitions `config` asks for."""
    repeats = {name: spec.get("repeats", config["repeats"]) for name, spec in config["experiments"].items()}
    system = out / "results" / SYSTEM
    system.mkdir(parents=True)
    (system / "topology.json").write_text(json.dumps(MACHINE.topology()))
    (system / "environment.json").write_text(json.dumps(synthetic_runs.environment(SYSTEM)))
    measurements = system / "measurements.csv"
    records(repeats).to_csv(measurements, index=False)
    names = ("cells", "problems", "modes", "c2c_classes", "c2c_pairs")
    out_csv = {name: str(out / f"{name}.csv") for name in names}
    summary.write_summaries([str(measurements)], out_csv["cells"], out_csv["problems"], out_csv["modes"],
                            out_csv["c2c_classes"], out_csv["c2c_pairs"])  # fmt: skip
    html = out / "report.html"
    answers = {name: str(out / f"{name}.{kind}") for name, kind in (("findings", "json"), ("findings_csv", "csv"), ("sections", "json"))}
    document.write_answers(
        config=config, cells_csv=out_csv["cells"], problems_csv=out_csv["problems"], modes_csv=out_csv["modes"],
        c2c_classes_csv=out_csv["c2c_classes"], measurements=[str(measurements)],
        system_files={SYSTEM: {"topology": str(system / "topology.json"), "environment": str(system / "environment.json")}},
        findings_out=answers["findings"], findings_csv_out=answers["findings_csv"], sections_out=answers["sections"],
    )  # fmt: skip
    render.render_report(
        template=str(REPO / "reports" / "report.html.j2"), stylesheet=str(REPO / "reports" / "report.css"),
        findings_json=answers["findings"], sections_json=answers["sections"], figures=[],
        provenance={"membench_version": "t", "commit": "c", "config_hash": "h"}, output=str(html),
    )  # fmt: skip
    return html


@pytest.fixture(scope="module")
def default_config() -> dict:
    return yaml.safe_load((REPO / "config" / "config.yaml").read_text())


@pytest.fixture(scope="module")
def full_report(tmp_path_factory, default_config) -> Path:
    return render_full_report(tmp_path_factory.mktemp("full"), default_config)


def test_every_family_c2c_and_hierarchy_are_in_the_report(full_report, default_config):
    text = full_report.read_text()
    for name in default_config["experiments"]:
        assert f'id="experiment-{name}"' in text, name
    assert 'id="hierarchy"' in text and "c2c half round trip, modified line (two_line, c2clat&#39;s): other package" in text
    assert "<th>hierarchy</th>" in text  # the summary's hierarchy line


def test_first_screen_fits_its_cards_at_1280(full_report, tmp_path):
    """Every element of the first screen lies inside its card, no line is
    cut off (overflow hidden or an ellipsis would hide it), and the summary
    ends above 800 px."""
    from first_screen import HEIGHT, WIDTH, lay_out

    layout = lay_out(full_report, tmp_path)
    assert not layout["outside_card"], layout["outside_card"]
    assert layout["page_width"] <= WIDTH and not layout["wide"], (layout["page_width"], layout["wide"])
    assert layout["links"] and not layout["missing"], layout["missing"]
    assert layout["summary_bottom"] <= HEIGHT, layout["summary_bottom"]
    # one-transfer hand-offs (clean, dirty) and two_line's two transfers: two ranges, never one
    assert re.search(r"hierarchy\s+4k pages\s+L1 [\d.]+ ns · .* · c2c [\d.]+–[\d.]+ ns · c2c two_line [\d.]+–[\d.]+ ns · memory",
                     layout["text"]), layout["text"]  # fmt: skip


def test_default_config_first_screen_says_something_for_every_experiment(full_report, default_config, tmp_path):
    """At the shipped config's repetitions no experiment line says "too few
    runs to tell": a line with fewer runs than mode detection needs gives
    the spread and how many more runs would tell modes."""
    from first_screen import lay_out

    text = lay_out(full_report, tmp_path)["text"]
    assert "too few runs" not in text
    for name in default_config["experiments"]:
        line = next(line for line in text.splitlines() if line.startswith(f"{name} ("))
        # its answer: a value with its unit, or an effect decided or not (membench.findings)
        assert re.search(r"\d(\.\d+)? ?(GB/s|ns|%)|\bdecided\b|undecided at n=\d+", line), line
