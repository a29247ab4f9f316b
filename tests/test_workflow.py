"""The whole pipeline on a tiny config, through the real Snakemake, in a
private copy of the workflow (its own git repository) under a temp dir."""

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from PIL import Image

from conftest import copy_workflow, seed_binaries
from membench.core import disturbance
from membench.core.atomic_files import contract_problems, read_jsonl
from membench.plan import families

OPS = 4  # copy, scale, add, triad: one record each per process
TINY = {
    "system": "testbox",
    "repeats": 2,
    "ntimes": 3,
    "experiments": {
        "tiny": {"kernel": "stream", "threads": [1, "all"], "affinity": ["none", "close"], "size": ["2MiB"]},
        "unrunnable": {"kernel": "stream", "policy": ["bind:7"], "size": ["1MiB"], "repeats": 1},
        # One cell of every other kind, so every figure and table is drawn.
        "ladder": {"kernel": "readonly", "variants": ["v001", "v012"], "affinity": ["close"], "size": ["2MiB"], "repeats": 1},
        "lat": {"kernel": "chase", "affinity": ["close"], "size": ["1MiB"], "sweep_from": "256KiB", "points_per_octave": 1,
                "ntimes": 2, "repeats": 1},  # fmt: skip
        "load": {"kernel": "loaded", "threads": ["all"], "affinity": ["close"], "size": ["2MiB"], "load_delay": [0, 10],
                 "ntimes": 2, "repeats": 1},  # fmt: skip
    },
}
# Measurement processes (run files) of the config above, per experiment.
RUNS = {"tiny": 2 * 2 * 2, "unrunnable": 1, "ladder": 2, "lat": 1, "load": 2}
ROUNDS = 2  # one measure job per repetition index: the most repeats of any cell
SECTIONS = [
    "provenance", "machine", "experiment-tiny", "experiment-unrunnable", "experiment-ladder", "experiment-lat",
    "experiment-load", "concurrency", "cells", "problems", "config",
]  # fmt: skip


def snakemake(workdir: Path, venv_bin: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    out = subprocess.run(
        [str(venv_bin / "snakemake"), "--cores", "2", "--configfile", "tiny.yaml", *args],
        cwd=workdir, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    if check:
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return out


def ran(out: subprocess.CompletedProcess, rule: str) -> int:
    """How many jobs of a rule a real run finished."""
    return len(re.findall(rf"\(Rule: {rule}\)", out.stdout + out.stderr))


def planned(out: subprocess.CompletedProcess, rule: str) -> int:
    """How many jobs of a rule a dry run plans (from its job stats table)."""
    match = re.search(rf"^{rule}\s+(\d+)\s*$", out.stdout + out.stderr, re.M)
    return int(match.group(1)) if match else 0


def run_files(workdir: Path) -> dict[str, float]:
    return {str(p.relative_to(workdir)): p.stat().st_mtime_ns for p in (workdir / "results").glob("*/runs/**/*.jsonl")}


@pytest.fixture(scope="module")
def workflow(tmp_path_factory, venv_bin, variant_builds):
    workdir = seed_binaries(copy_workflow(tmp_path_factory.mktemp("membench")), TINY, variant_builds)
    (workdir / "tiny.yaml").write_text(yaml.safe_dump(TINY))
    first = snakemake(workdir, venv_bin)
    return workdir, first


def test_every_cell_and_repeat_has_its_records(workflow):
    workdir, first = workflow
    files = run_files(workdir)
    assert len(files) == sum(RUNS.values())
    assert ran(first, "measure_round") == ROUNDS
    manifests = [json.loads(p.read_text()) for p in sorted((workdir / "results/testbox/rounds").glob("r*.json"))]
    assert sorted(f for m in manifests for f in m["measured"]) == sorted(files)
    assert sorted(f for m in manifests for f in m["runs"]) == sorted(files)
    records = [r for f in files for r in read_jsonl(workdir / f)]
    assert all(contract_problems(r) == [] for r in records)
    by_experiment = {e: [r for r in records if r["experiment"] == e] for e in RUNS}
    assert len(by_experiment["tiny"]) == RUNS["tiny"] * OPS
    assert all(r["status"] == "ok" and r["valid"] and r["gbps"] > 0 for r in by_experiment["tiny"])
    assert {r["threads_requested"] for r in by_experiment["tiny"]} == {1, "all"}
    assert all(r["status"] == "skipped" and "7" in r["reason"] for r in by_experiment["unrunnable"])
    ladder = by_experiment["ladder"]
    assert {r["variant"] for r in ladder} == {"v001", "v012"} and all(r["status"] == "ok" for r in ladder)
    assert {r["features"]["pages_per_loop"] for r in ladder} == {0, 8}  # the variant's feature columns
    assert {r["pages"] for r in ladder} == {"4k", "thp"}  # pages: variant -> what each declares
    lat = by_experiment["lat"]
    assert {r["op"] for r in lat} == {"random", "stride"} and all(r["ns_per_load"] > 0 for r in lat)
    assert len({r["working_set_bytes"] for r in lat}) == 3  # 256 KiB, 512 KiB, 1 MiB
    assert {r["delay"] for r in by_experiment["load"]} == {0, 10}


def test_collected_table_holds_every_record(workflow):
    workdir, _ = workflow
    table = (workdir / "results" / "testbox" / "measurements.csv").read_text().splitlines()
    records = sum(len(read_jsonl(workdir / f)) for f in run_files(workdir))
    assert len(table) - 1 == records


def test_report_has_every_section(workflow):
    workdir, _ = workflow
    html = (workdir / "results" / "report.html").read_text()
    for section in SECTIONS:
        assert f'id="{section}"' in html, section
    assert html.count("<svg") >= 8  # every figure of every experiment, inline (none vs threads at one thread count)
    for title in ("The version ladder", "Latency vs working set", "Loaded latency", "Distribution by obtained placement",
                  "Versions and their features", "Little's law"):
        assert title in html, title  # fmt: skip
    assert "bind:7" in html and "skipped" in html  # the unrunnable cell and why
    assert "testbox" in html and "Bandwidth vs threads" in html and "1 GB/s bins" in html
    assert ">nan<" not in html.lower()
    assert "src=" not in html and "<link" not in html  # self-contained


def test_report_has_the_effective_concurrency_table(workflow):
    """The effective-concurrency table needs the idle latency: the chase's
    largest point, a number unless the disturbed rule marked its last try
    (a busy machine), when the table is left out: then nothing is checked
    here, and the skip says why."""
    workdir, _ = workflow
    op = families.idle_latency()[1]
    points = [r for f in run_files(workdir) if "/lat/" in f for r in read_jsonl(workdir / f) if r["op"] == op]
    largest = max(points, key=lambda r: r["working_set_bytes"])
    if disturbance.verdict(largest)[0]:
        pytest.skip(f"the chase's largest point ({largest['working_set_bytes']} B) was marked disturbed in its last try "
                    "(a busy machine): no idle latency, so no effective-concurrency table to check")  # fmt: skip
    assert "Effective concurrency, cache lines in flight" in (workdir / "results" / "report.html").read_text()


def test_report_renders_in_a_real_browser(workflow, tmp_path):
    """Headless Chromium loads the report: the DOM holds every section and
    the inline figures, and the screenshot shows them (not a blank page)."""
    workdir, _ = workflow
    chromium = shutil.which("chromium")
    assert chromium, "chromium is missing: `make test` installs it from Debian's apt"
    flags = [
        "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}",
    ]  # fmt: skip
    url = (workdir / "results" / "report.html").as_uri()
    dom = subprocess.run([chromium, *flags, "--dump-dom", url], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    for section in SECTIONS:
        assert f'id="{section}"' in dom.stdout, section
    assert dom.stdout.count("<svg") >= 8
    shot = tmp_path / "report.png"
    subprocess.run(
        [chromium, *flags, "--window-size=1280,2400", f"--screenshot={shot}", url],
        capture_output=True, timeout=120, check=True,
    )  # fmt: skip
    image = Image.open(shot).convert("RGB")
    assert image.size == (1280, 2400)
    assert len(image.getcolors(maxcolors=1 << 20)) > 50  # text, tables and plotted colours


def test_first_screen_answers(workflow, tmp_path):
    """A real run's report at 1280 x 800: the summary (bandwidth, idle
    latency, effective concurrency, a verdict per experiment) is on the
    first screen, each of its numbers links to a section that exists, and
    nothing is wider than the page or its box."""
    from first_screen import HEIGHT, WIDTH, lay_out

    workdir, _ = workflow
    layout = lay_out(workdir / "results" / "report.html", tmp_path)
    assert layout["summary_bottom"] <= HEIGHT, layout["summary_bottom"]
    assert not layout["missing"], layout["missing"]
    assert layout["numbers"] and set(layout["numbers"]) == {"linked"}, layout["numbers"]
    assert layout["page_width"] <= WIDTH and not layout["wide"], (layout["page_width"], layout["wide"])
    text = layout["text"]
    for headline in ("highest bandwidth", "idle latency", "effective concurrency"):
        assert headline in text, headline
    # this study's arrays (2 MiB) fit the cache: no bandwidth number, no one-thread row and no Little's
    # law at the peak come from them, and the first screen says why (issue 29)
    assert "no bandwidth cell measured past the caches" in text and not re.search(r"^one thread\t", text, re.M)
    assert "left out of the first screen" in text
    assert "unrunnable" in text and "skipped" in text  # the verdict line names the skipped cell
    # the idle latency is the chase's largest point: a number unless the disturbed rule marked
    # its last try (default retries: 2 more; a busy machine), then said and skipped
    op = families.idle_latency()[1]
    points = [r for f in run_files(workdir) if "/lat/" in f for r in read_jsonl(workdir / f) if r["op"] == op]
    shown = max(points, key=lambda r: r["working_set_bytes"])
    disturbed, causes = disturbance.verdict(shown)
    if disturbed:
        pytest.skip(f"the idle latency's point was disturbed (the last of up to 3 tries): {'; '.join(causes)}")
    assert re.search(r"idle latency\s+local\s+[\d.]+ ns", text), text


def test_two_renders_of_one_study_differ_only_in_when_they_were_rendered(workflow, tmp_path):
    """membench.report.render.render_report twice on this study's findings,
    sections and figures, a second apart: the same bytes but for a line
    that says when it was rendered (its time masked, that line is equal too)."""
    from membench.report import render

    workdir, _ = workflow
    results = workdir / "results"
    arguments = dict(
        template=str(workdir / "reports" / "report.html.j2"), stylesheet=str(workdir / "reports" / "report.css"),
        findings_json=str(results / "summary" / "findings.json"), sections_json=str(results / "summary" / "sections.json"),
        figures=sorted(str(p) for p in (results / "figures").glob("*.svg")),
        provenance={"membench_version": "t", "commit": "c", "config_hash": "h"},
    )  # fmt: skip
    assert arguments["figures"], "the study drew figures"
    render.render_report(**arguments, output=str(tmp_path / "first.html"))
    time.sleep(1.1)
    render.render_report(**arguments, output=str(tmp_path / "second.html"))
    first, second = ((tmp_path / name).read_text().splitlines() for name in ("first.html", "second.html"))
    assert len(first) == len(second)
    differing = [(a, b) for a, b in zip(first, second) if a != b]
    when = re.compile(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(\.\d+)?( ?UTC|Z|[+-]\d\d:?\d\d)?")
    assert all("rendered" in a.lower() and when.sub("TIME", a) == when.sub("TIME", b) for a, b in differing), differing


def test_measurements_never_overlap(workflow):
    """One span per measuring process (its first start to its last end);
    sorted, each begins after the previous one ended."""
    workdir, _ = workflow
    spans = []
    for f in run_files(workdir):
        ok = [r for r in read_jsonl(workdir / f) if r["status"] == "ok"]
        if ok:
            spans.append((min(r["t_start"] for r in ok), max(r["t_end"] for r in ok)))
    spans.sort()
    assert len(spans) == sum(RUNS.values()) - RUNS["unrunnable"]
    for (_, end), (start, _) in zip(spans, spans[1:]):
        assert start >= end, f"a measurement started at {start} before the previous one ended at {end}"


def test_second_run_does_nothing(workflow, venv_bin):
    workdir, _ = workflow
    before = run_files(workdir)
    again = snakemake(workdir, venv_bin)
    assert "Nothing to be done" in again.stdout + again.stderr
    assert run_files(workdir) == before


def test_a_commit_that_touches_no_kernel_or_rule_remeasures_nothing(workflow, venv_bin):
    workdir, _ = workflow
    (workdir / "NOTES.md").write_text("a note\n")
    (workdir / "config" / "README.md").write_text("an edited readme\n")
    git = ["git", "-C", str(workdir), "-c", "user.name=t", "-c", "user.email=t@localhost"]
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "docs"], check=True)
    plan = snakemake(workdir, venv_bin, "--dry-run")
    for rule in ("measure_round", "build_kernel", "probe_system", "collect_runs"):
        assert planned(plan, rule) == 0, plan.stdout


def test_config_edit_measures_only_new_cells(workflow, venv_bin):
    workdir, _ = workflow
    before = run_files(workdir)
    config = json.loads(json.dumps(TINY))
    config["experiments"]["tiny"]["threads"].append(2)  # a new thread count
    config["experiments"]["tiny"]["repeats"] = 3  # one more repeat everywhere
    config["experiments"]["ladder"]["ntimes"] = 4  # a knob outside the cell's name
    (workdir / "tiny.yaml").write_text(yaml.safe_dump(config))
    out = snakemake(workdir, venv_bin)
    after = run_files(workdir)
    new = set(after) - set(before)
    # new cells (threads 2 x 2 affinities) x 3 repeats + the 4 old cells' third repeat
    assert len(new) == 2 * 3 + 4
    assert ran(out, "measure_round") == 3  # rounds 0 and 1 gained cells, round 2 is new
    redone = {f for f in before if after[f] != before[f]}
    assert redone == {f for f in before if "/ladder/" in f}, "only the edited knob's cells are measured again"
    assert {r["ntimes"] for f in redone for r in read_jsonl(workdir / f)} == {4}
    assert ran(out, "render_report") == 1
    assert ran(out, "build_kernel") == 0 and ran(out, "probe_system") == 0


def test_figures_only_rebuilds_the_report_without_measuring(workflow, venv_bin):
    """Stored runs are plain inputs: even with the binaries gone (as with an
    archive from another machine), nothing is compiled, probed or measured."""
    workdir, _ = workflow
    before = run_files(workdir)
    subprocess.run(["rm", "-rf", str(workdir / "bin")], check=True)
    (workdir / "results" / "report.html").unlink()
    out = snakemake(workdir, venv_bin, "--config", "figures_only=True")
    for rule in ("measure_round", "build_kernel", "probe_system"):
        assert ran(out, rule) == 0, rule
    assert ran(out, "render_report") == 1
    assert run_files(workdir) == before
    assert 'id="experiment-tiny"' in (workdir / "results" / "report.html").read_text()


def test_bad_config_fails_before_anything_runs(tmp_path, venv_bin, repo):
    workdir = copy_workflow(tmp_path / "bad")
    bad = {"experiments": {"e": {"kernel": "stream", "threads": [0], "affinity": ["compakt"], "pages": ["2m"]}}}
    (workdir / "tiny.yaml").write_text(yaml.safe_dump(bad))
    out = snakemake(workdir, venv_bin, check=False)
    assert out.returncode != 0
    text = out.stdout + out.stderr
    for fragment in ("threads[0]: 0", "'compakt'", "'2m'", "3 problems"):
        assert fragment in text, text
    assert not (workdir / "results").exists() and not (workdir / "bin").exists()


def test_every_result_file_honours_the_umask(workflow):
    """Run files, tables, figures and the report get the mode the user's
    umask gives (0644 under 022), not the atomic writer's temporary 0600."""
    workdir, _ = workflow
    mask = os.umask(0)
    os.umask(mask)
    files = [p for p in (workdir / "results").rglob("*") if p.is_file()]
    kinds = {p.suffix for p in files}
    assert {".jsonl", ".csv", ".svg", ".html", ".json"} <= kinds
    wrong = {str(p.relative_to(workdir)): oct(p.stat().st_mode & 0o777) for p in files if p.stat().st_mode & 0o777 != 0o666 & ~mask}
    assert not wrong, f"umask {mask:03o}: {wrong}"
