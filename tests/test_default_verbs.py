"""Every README verb on the default config's own results (issue 52).

The default config (config/config.yaml) made small, every family it has
kept (c2c cells with `=` in their names, the chase, loaded latency, the
mixes, STREAM, read-only, xor, DAXPY) and every experiment under its own
name, is measured once for this file by `make run` in a private checkout,
and once more into a run directory of its own; then each verb runs on
those results as the README (and docs/bundle.md where the README points
there) writes it: `make findings`, `make bundle` and reading the bundle
back, `make reference` then `make compare BASE=ref:NAME`, `make compare`
of the two runs, the figures-only command, `make status`, `make plan`,
`make remeasure-failed`.

A machine too busy to decide anything between the two runs is said (a
skip with the reason), never passed."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from rocrate.rocrate import ROCrate

from conftest import REPO, copy_make_parts, copy_workflow, seed_binaries
from membench.plan import grammar

SMALL = "config/small.yaml"  # the default config, small; config/config.yaml stays the shipped one
AFTER = "runs/after"  # the README's second run, `make run RESULTS=runs/after`
# make's own prerequisites stand as they are: the venv of the tests, the compiler there.
AS_IS = ["-o", ".venv/.installed", "-o", "system-deps"]
# Sizes per family: every one inside this guest's caches but the chase's
# sweep, so a measurement takes milliseconds.
SIZES = {"stream": "4MiB", "readonly": "4MiB", "xor": "4MiB", "daxpy": "4MiB", "mix": "2MiB", "loaded": "4MiB",
         "chase": "1MiB", "c2c": "1MiB"}  # fmt: skip


def small_config() -> dict:
    """config/config.yaml with its budget, repeats and sizes cut: the same
    experiments, kernels, threads, affinities, pages and c2c pair classes.
    Three repeats over two fixed rounds, so the budget's planned rounds
    are there to be said."""
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    config.update(budget="2m", min_repeats=2, repeats=3, ntimes=3)
    for experiment in config["experiments"].values():
        experiment.update(size=[SIZES[experiment["kernel"]]], repeats=3)
        if experiment["kernel"] == "readonly":
            experiment["variants"] = experiment["variants"][:1] + experiment["variants"][-1:]
        if experiment["kernel"] == "chase":
            experiment.update(sweep_from="512KiB", ntimes=2)
        if experiment["kernel"] == "loaded":
            experiment.update(load_delay=experiment["load_delay"][:1] + experiment["load_delay"][-1:], ntimes=2)
        if experiment["kernel"] == "c2c":
            experiment.update(c2c_samples=5)
    return config


def make(workdir: Path, *args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    """make as a user types it: not a sub-make of `make test` (CI), whose
    MAKELEVEL would add make's "Entering directory" lines to the output."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    return subprocess.run(["make", *AS_IS, *args], cwd=workdir, capture_output=True, text=True, timeout=timeout, env=env)


def said(out: subprocess.CompletedProcess) -> str:
    return out.stdout + out.stderr


@pytest.fixture(scope="module")
def checkout(tmp_path_factory, venv_bin, variant_builds) -> Path:
    """A private checkout (its own git repository, the Makefile, the atlas)
    with config/small.yaml committed; `make run CONFIG=config/small.yaml`
    there (results/), then `make run CONFIG=config/small.yaml
    RESULTS=runs/after`. The binaries come from the session's builds,
    where the build rules put them."""
    workdir = copy_workflow(tmp_path_factory.mktemp("default_verbs") / "membench")
    copy_make_parts(workdir)
    shutil.copytree(REPO / "references", workdir / "references")
    (workdir / ".venv").symlink_to(venv_bin.parent)
    config = small_config()
    (workdir / SMALL).write_text(yaml.safe_dump(config, sort_keys=False))
    git = ["git", "-C", str(workdir), "-c", "user.name=membench-test", "-c", "user.email=test@localhost"]
    subprocess.run([*git, "add", "-A", "Makefile", "requirements*", "references", SMALL], check=True)
    subprocess.run([*git, "commit", "-qm", "the Makefile, the atlas and the small default config"], check=True)
    system = grammar.resolve_system_name(config["system"])
    here = {**config, "system": system}
    seed_binaries(workdir, here, variant_builds)
    seed_binaries(workdir / AFTER, here, variant_builds)
    for where in ([], [f"RESULTS={AFTER}"]):
        run = make(workdir, "run", f"CONFIG={SMALL}", *where, timeout=600)
        assert run.returncode == 0, said(run)[-4000:]
    return workdir


def system_of(workdir: Path) -> str:
    (system,) = [p.parent.name for p in (workdir / "results").glob("*/runs")]
    return system


def test_the_small_config_keeps_every_family_and_experiment_of_the_default():
    default = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    small = small_config()
    assert {name: e["kernel"] for name, e in small["experiments"].items()} == {
        name: e["kernel"] for name, e in default["experiments"].items()
    }
    assert {"c2c", "chase", "loaded", "mix", "stream", "readonly", "xor", "daxpy"} <= {
        e["kernel"] for e in small["experiments"].values()
    }


def test_make_run_measured_every_family_c2c_cells_named_with_an_equals_sign(checkout):
    runs = checkout / "results" / system_of(checkout) / "runs"
    measured = {p.parent.parent.parent.name for p in runs.glob("*/*/*/r*.jsonl")}
    assert measured == set(small_config()["experiments"])
    c2c = [p for p in runs.glob("cache_to_cache/*/*/r*.jsonl")]
    assert c2c and all("=" in p.parent.name for p in c2c)
    assert (checkout / "results" / "report.html").is_file()
    assert (checkout / AFTER / "results" / "report.html").is_file()


def test_make_findings_prints_the_summary_and_the_report(checkout):
    out = make(checkout, "findings")
    assert out.returncode == 0, said(out)
    lines = out.stdout.splitlines()
    assert any(line.startswith(f"membench findings for {system_of(checkout)}:") for line in lines), out.stdout
    for experiment in small_config()["experiments"]:
        assert any(line.lstrip().startswith(f"{experiment}:") for line in lines), (experiment, out.stdout)
    assert lines[-1] == f"Report: {checkout / 'results' / 'report.html'}"


@pytest.fixture(scope="module")
def made_bundle(checkout) -> Path:
    """`make bundle BUNDLE=verbs.crate.zip` (the Makefile's and
    docs/bundle.md's form), so that what reads a bundle is tested whatever
    the plain form does; that one has a test of its own."""
    out = make(checkout, "bundle", "BUNDLE=verbs.crate.zip")
    assert out.returncode == 0, said(out)
    assert "Bundle: verbs.crate.zip (checked)" in out.stdout
    return checkout / "verbs.crate.zip"


def test_make_bundle_as_the_readme_writes_it(checkout):
    out = make(checkout, "bundle")
    assert out.returncode == 0, said(out)
    assert "Bundle: results/run.crate.zip (checked)" in out.stdout, said(out)
    assert (checkout / "results" / "run.crate.zip").is_file()


def test_make_bundle_checks_opens_and_loads_with_every_listed_file(checkout, made_bundle, tmp_path):
    run_bundle = [str(checkout / ".venv" / "bin" / "python"), "workflow/scripts/run_bundle.py"]
    checked = subprocess.run([*run_bundle, "check", "verbs.crate.zip"], cwd=checkout, capture_output=True, text=True)
    assert checked.returncode == 0 and checked.stdout == "verbs.crate.zip: valid\n", said(checked)
    dest = tmp_path / "opened"
    opened = subprocess.run([*run_bundle, "open", "verbs.crate.zip", "--dest", str(dest)], cwd=checkout,
                            capture_output=True, text=True)  # fmt: skip
    assert opened.returncode == 0, said(opened)
    stored = sorted(p.relative_to(checkout).as_posix() for p in (checkout / "results").glob("*/runs/**/r*.jsonl"))
    assert [name for name in stored if "=" in name], "no c2c record named with '='"
    for name in stored:  # every record under its own name, the same bytes
        assert (dest / name).read_bytes() == (checkout / name).read_bytes(), name
    from membench.store import bundle as bundle_names  # here: the bundle's module is not the other verbs' concern

    loaded = ROCrate(made_bundle)
    files = [e.id for e in loaded.get_entities() if "File" in e.type and not e.id.startswith("#")]
    assert [i for i in files if not (dest / bundle_names.member_name(i)).is_file()] == []


def test_make_bundle_carries_the_config_the_runs_were_measured_with(checkout, made_bundle, tmp_path):
    """`make run CONFIG=config/small.yaml` then `make bundle`: the bundle's
    config.yaml is what figures-only draws from it (docs/bundle.md), so it
    must be the config the runs were measured with (results/measured-with.yaml),
    not the Makefile's default CONFIG."""
    dest = tmp_path / "inputs"
    out = subprocess.run([str(checkout / ".venv" / "bin" / "python"), "workflow/scripts/run_bundle.py", "open",
                          "verbs.crate.zip", "--dest", str(dest), "--inputs-only"], cwd=checkout,
                         capture_output=True, text=True)  # fmt: skip
    assert out.returncode == 0, said(out)
    measured = yaml.safe_load((checkout / "results" / "measured-with.yaml").read_text())
    bundled = yaml.safe_load((dest / "config.yaml").read_text())
    assert bundled == measured["config"], "the bundle's config.yaml is not the config the runs were measured with"


def compared(out: subprocess.CompletedProcess) -> None:
    """make compare's exit: 0 (nothing worse) or 1 (a gate row worse) both
    compared; nothing decided is a machine too busy, said as a skip."""
    if out.returncode != 0 and "nothing decided" in said(out):
        pytest.skip(f"this machine was too busy to decide anything between two runs: {said(out).strip()[-300:]}")
    assert out.returncode in (0, 1), said(out)[-3000:]


def test_make_compare_of_the_two_runs(checkout, tmp_path):
    out = make(checkout, "compare", "BASE=results", f"NEW={AFTER}", f"OUT={tmp_path / 'cmp'}")
    compared(out)
    text = (tmp_path / "cmp" / "compare.txt").read_text()
    assert "disturbed records" in text
    rows = json.loads((tmp_path / "cmp" / "compare.json").read_text())["rows"]
    assert any("=" in row["cell"] for row in rows), "no c2c row"
    assert {row["cell"].split("/")[0] for row in rows} == set(small_config()["experiments"])
    for name in ("compare.csv", "compare.html"):
        assert (tmp_path / "cmp" / name).is_file(), name


def test_make_compare_reads_the_bundle_as_a_side(checkout, made_bundle, tmp_path):
    out = make(checkout, "compare", "BASE=verbs.crate.zip", f"NEW={AFTER}", f"OUT={tmp_path / 'cmp'}")
    compared(out)
    assert (tmp_path / "cmp" / "base-bundle" / "results" / system_of(checkout) / "runs" / "cache_to_cache").is_dir()


def test_make_reference_then_make_compare_base_ref(checkout, made_bundle, tmp_path):
    made = make(checkout, "reference", "BUNDLE=verbs.crate.zip", "NAME=this_guest",
                "ADDRESS=https://example.org/this_guest.crate.zip")  # fmt: skip
    assert made.returncode == 0, said(made)
    entry = yaml.safe_load((checkout / "references" / "machines" / "this_guest.yaml").read_text())
    assert entry["numbers"], entry
    for number in entry["numbers"]:  # a median of no run is not a median (docs/bundle.md: "each a median with its n")
        runs = re.search(r"\(n=(\d+)", number["note"])
        assert not runs or int(runs.group(1)) > 0, (number["quantity"], number["statistic"], number["note"])
    out = make(checkout, "compare", "BASE=ref:this_guest", f"NEW={AFTER}", f"OUT={tmp_path / 'ref'}")
    assert out.returncode == 0, said(out)
    assert "Published machine this_guest" in said(out)
    # every published number is held, or said not held because every run of this run's counterpart was disturbed
    lost = re.findall(r"not held: (.*)", said(out))
    assert all("was disturbed" in line or "never reached" in line for line in lost), lost
    total = len(entry["numbers"])
    assert re.search(rf"{total - len(lost)} of {total} published numbers held", said(out)), said(out)
    assert (tmp_path / "ref" / "reference.txt").is_file() and (tmp_path / "ref" / "reference.json").is_file()


def test_figures_only_draws_the_config_the_runs_were_measured_with(checkout):
    """The README's figures-only command, as written, in the checkout: the
    runs were measured with config/small.yaml, the profile names
    config/config.yaml, so the config the runs were measured with is drawn
    (said in one line). The report and one experiment's figures, removed
    first, come back; nothing is measured."""
    results = checkout / "results"
    runs_before = {p: p.stat().st_mtime_ns for p in results.glob("*/runs/**/*.jsonl")}
    drawn_before = sorted(p.name for p in (results / "figures").glob("*.svg"))
    gone = [p for p in (results / "figures").glob("cache_to_cache-*") if p.suffix in (".svg", ".png")]
    assert gone, drawn_before
    for path in [results / "report.html", *gone]:
        path.unlink()
    out = subprocess.run([".venv/bin/snakemake", "--cores", "1", "--config", "figures_only=True"], cwd=checkout,
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    assert out.returncode == 0, said(out)[-4000:]
    assert "measured-with.yaml" in said(out), said(out)[-4000:]
    html = (results / "report.html").read_text()
    for experiment in small_config()["experiments"]:
        assert f'id="experiment-{experiment}"' in html, experiment
    assert all(path.is_file() for path in gone), [p.name for p in gone if not p.is_file()]
    assert sorted(p.name for p in (results / "figures").glob("*.svg")) == drawn_before
    assert {p: p.stat().st_mtime_ns for p in results.glob("*/runs/**/*.jsonl")} == runs_before


def test_make_status_says_every_repetition_stored_and_no_time_left(checkout):
    """After the run: every repetition stored, the planned rounds said, and
    no time left (README: "repetitions stored out of the total, time left")."""
    out = make(checkout, "status", f"CONFIG={SMALL}")
    assert out.returncode == 0, said(out)
    lines = out.stdout.splitlines()
    system = system_of(checkout)
    assert lines[0].startswith(f"{system}: ") and "complete" in lines[0], out.stdout
    assert any(line.startswith(f"{system}: planned rounds: ") for line in lines), out.stdout
    left = [line for line in lines if re.search(r"about \d+ (s|min|h) in all", line)]
    assert all(re.search(r"about 0 s in all", line) for line in left), f"a finished run with time left:\n{out.stdout}"


def test_make_plan_after_the_run_has_nothing_to_measure(checkout):
    out = make(checkout, "plan", f"CONFIG={SMALL}")
    assert out.returncode == 0, said(out)
    assert f"{system_of(checkout)}: nothing to measure" in out.stdout, out.stdout


def test_make_remeasure_failed_moves_nothing_when_nothing_failed(checkout):
    out = make(checkout, "remeasure-failed")
    assert out.returncode == 0, said(out)
    assert out.stdout == "no failed repetition stored under results: nothing moved\n", said(out)


def test_make_remeasure_failed_moves_a_failed_repetition_aside_and_plan_measures_it_again(checkout):
    """A repetition of the second run stored as failed (a killed harness),
    in a copy: moved aside, kept, and `make plan` then measures it again."""
    copy = checkout / "runs" / "failed"
    shutil.copytree(checkout / AFTER / "results", copy / "results", ignore=shutil.ignore_patterns("run.crate.zip"))
    system = system_of(checkout)
    victim = sorted((copy / "results" / system / "runs" / "xor_scaling").glob("*/*/r0.jsonl"))[0]
    records = [json.loads(line) for line in victim.read_text().splitlines()]
    for record in records:
        record.update(status="failed", reason="killed by signal 9 (planted by the test)")
    victim.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = make(checkout, "remeasure-failed", "RESULTS=runs/failed")
    assert out.returncode == 0, said(out)
    assert f"{system}: 1 failed repetition(s) moved aside" in out.stdout, out.stdout
    assert not victim.exists()
    assert len(list((copy / "results" / system / "superseded" / "failed").glob("**/r0.jsonl*"))) == 1
    plan = make(checkout, "plan", f"CONFIG={SMALL}", "RESULTS=runs/failed")
    assert plan.returncode == 0, said(plan)
    assert "nothing to measure" not in plan.stdout and "xor_scaling" in plan.stdout, plan.stdout


def test_make_test_prints_every_skip_with_its_reason():
    """`make test`: both pytest lines report skips with their reasons (-rs)."""
    text = (REPO / "Makefile").read_text()
    recipe = text.split("\ntest:", 1)[1].split("\n\n", 1)[0]
    lines = [line for line in recipe.splitlines() if "pytest" in line]
    assert len(lines) == 2 and all(re.search(r"\s-r\w*s", line) for line in lines), lines



QUIET_SET = """
import pytest

pytestmark = pytest.mark.quiet


def test_passes():
    pass


def test_busy():
    pytest.skip("no quiet run alone on CPU 1 in 4 tries (the machine is busy)")


@pytest.mark.parametrize("delay", [1, 2])
def test_neighbour(delay):
    if delay <= SKIPPED_NEIGHBOURS:
        pytest.skip(f"the planted {delay} ms neighbour never showed")
"""
NOT_QUIET = """
import pytest


@pytest.mark.skip(reason="not a quiet test: never counted")
def test_loud():
    pass
"""


@pytest.mark.parametrize("neighbours, required, rc", [(2, "1", 1), (2, "", 0), (1, "1", 0)])
def test_the_quiet_set_says_how_many_skipped_and_ci_fails_past_half(tmp_path, neighbours, required, rc):
    """Four quiet tests (and a skipped one that is not quiet): 3 skipped
    fails under MEMBENCH_REQUIRE_QUIET=1 (CI, .ci/run) and is said either
    way; 2 of 4 (half) passes. Every reason is listed."""
    (tmp_path / "test_set.py").write_text(QUIET_SET.replace("SKIPPED_NEIGHBOURS", str(neighbours)))
    (tmp_path / "test_other.py").write_text(NOT_QUIET)
    env = {**os.environ, "PYTHONPATH": str(REPO / "tests"), "MEMBENCH_REQUIRE_QUIET": required}
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "quiet_summary", "-p", "no:cacheprovider",
                          "test_set.py", "test_other.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=120)  # fmt: skip
    text = out.stdout + out.stderr
    assert out.returncode == rc, text
    skipped = 1 + neighbours
    assert f"quiet tests: {skipped} of 4 skipped" in text, text
    assert "test_set.py::test_busy: no quiet run alone on CPU 1 in 4 tries (the machine is busy)" in text
    assert "test_set.py::test_neighbour[1]: the planted 1 ms neighbour never showed" in text
    assert ("more than half of the quiet tests skipped: this machine was too busy to test them" in text) == (skipped > 2)


def test_ci_requires_the_quiet_set_to_have_run():
    assert "export MEMBENCH_REQUIRE_QUIET=1" in (REPO / ".ci" / "run").read_text()
