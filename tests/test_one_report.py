"""One set of records makes one report, however it was built (issue 42).

A run of a non-default config, then the README's figures-only command word
for word in a copy: it draws the config the runs were measured with, and
its tables and figures are the run's, byte for byte. A config that claims
none of the stored runs stops with one line naming the config to use, and
leaves no report that looks current."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import REPO, copy_workflow, seed_binaries
from membench.figures.bandwidth import version_order
from membench.plan import checks, grammar, variants

# Axes written out of their order on purpose: versions, threads and delays
# come out in version, thread and delay order, not as written or measured.
MINE = {
    "system": "testbox",
    "repeats": 2,
    "ntimes": 3,
    "experiments": {
        "versions": {"kernel": "readonly", "variants": ["v012", "v004", "v001"], "affinity": ["close"], "size": ["2MiB"]},
        "scaling": {"kernel": "stream", "threads": ["all", 1], "affinity": ["close"], "size": ["2MiB"]},
        "load": {"kernel": "loaded", "threads": ["all"], "affinity": ["close"], "size": ["2MiB"], "load_delay": [10, 0],
                 "ntimes": 2, "repeats": 1},  # fmt: skip
    },
}
RENDERED_AT = re.compile(r"rendered[_ ]at[^<\n]*", re.I)


def readme_figures_only_command() -> list[str]:
    """The README's figures-only command, as a user would copy it."""
    for line in (REPO / "README.md").read_text().splitlines():
        if "figures_only=True" in line and "snakemake" in line:
            command = line.split("#")[0].strip().strip("`")
            return command.split()
    raise AssertionError("the README names no figures-only command")


def run_readme_command(workdir: Path, venv_bin: Path, *extra: str) -> subprocess.CompletedProcess:
    argv = readme_figures_only_command()
    argv[0] = str(venv_bin / Path(argv[0]).name)
    return subprocess.run([*argv, *extra], cwd=workdir, capture_output=True, text=True, timeout=600)


def copy_of(workdir: Path, dest: Path) -> Path:
    """The workflow and the run's results/, as `cp -a` copies them."""
    copy = copy_workflow(dest)
    shutil.copytree(workdir / "results", copy / "results", symlinks=True)
    return copy


@pytest.fixture(scope="module")
def measured(tmp_path_factory, venv_bin, variant_builds):
    workdir = seed_binaries(copy_workflow(tmp_path_factory.mktemp("measured")), MINE, variant_builds)
    (workdir / "my.yaml").write_text(yaml.safe_dump(MINE))
    out = subprocess.run([str(venv_bin / "snakemake"), "--cores", "2", "--configfile", "my.yaml"],
                         cwd=workdir, capture_output=True, text=True, timeout=600)  # fmt: skip
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return workdir


def built_files(results: Path) -> dict[str, bytes]:
    """Tables and figures (every CSV and figure), and the report without the
    time it was rendered at."""
    found = {str(p.relative_to(results)): p.read_bytes() for pattern in ("**/*.csv", "figures/*")
             for p in sorted(results.glob(pattern)) if p.is_file()}  # fmt: skip
    found["report.html"] = RENDERED_AT.sub("", (results / "report.html").read_text()).encode()
    return found


def test_readme_figures_only_rebuilds_the_same_report_byte_for_byte(measured, venv_bin):
    """In the run's own checkout (the report names its commit), the built
    files removed, then the README's command word for word."""
    normal = built_files(measured / "results")
    for built in ("summary", "figures", "testbox/measurements.csv", "report.html"):
        target = measured / "results" / built
        shutil.rmtree(target) if target.is_dir() else target.unlink()
    out = run_readme_command(measured, venv_bin)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "was measured with my.yaml" in out.stderr
    assert "(Rule: measure_round)" not in out.stdout + out.stderr
    rebuilt = built_files(measured / "results")
    assert sorted(normal) == sorted(rebuilt)
    differ = {name: first_difference(normal[name], rebuilt[name]) for name in normal if normal[name] != rebuilt[name]}
    assert not differ, f"built differently: {differ}"
    for svg in (measured / "results" / "figures").glob("*.svg"):
        png = svg.with_suffix(".png").read_bytes()
        width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
        assert png.startswith(b"\x89PNG") and (width >= 1500 or height >= 900), (svg.name, width, height)


def first_difference(a: bytes, b: bytes) -> str:
    at = next(k for k in range(min(len(a), len(b)) + 1) if k == min(len(a), len(b)) or a[k] != b[k])
    return f"at byte {at}: {a[max(0, at - 80):at + 80]!r} / {b[max(0, at - 80):at + 80]!r}"


def test_canonical_order_in_the_tables(measured):
    cells = (measured / "results" / "summary" / "cells.csv").read_text().splitlines()
    variants_in_order = [v for line in cells for v in ("v001", "v004", "v012") if f",readonly,{v}," in line]
    assert variants_in_order == ["v001", "v004", "v012"]
    delays = [int(m.group(1)) for line in cells if (m := re.search(r"/loaded-default/.*_d(\d+)", line))]
    assert delays == sorted(delays) and set(delays) == {0, 10}
    threads = [m.group(1) for line in cells if (m := re.search(r"scaling/stream-default/t([^_]+)_", line))]
    assert threads.index("1") < threads.index("all")


def test_a_config_that_claims_nothing_names_the_one_to_use(measured, tmp_path, venv_bin):
    copy = copy_of(measured, tmp_path / "other")
    shutil.copy2(measured / "results" / "report.html", copy / "results" / "report.html")
    other = {"system": "testbox", "experiments": {"xor": {"kernel": "xor", "threads": [1], "size": ["2MiB"]}}}
    (copy / "other.yaml").write_text(yaml.safe_dump(other))
    out = run_readme_command(copy, venv_bin, "--configfile", "other.yaml")
    assert out.returncode != 0
    said = [line for line in out.stderr.splitlines() if "claims none of the" in line]
    assert len(said) == 1 and "--configfile my.yaml" in said[0], out.stderr[-3000:]
    assert "Traceback" not in out.stderr
    assert not (copy / "results" / "report.html").exists()
    assert "STALE" in (copy / "results" / "report-stale.html").read_text()


def test_canonical_order_is_version_thread_and_delay_order():
    table = variants.load_variants(REPO / "kernels" / "families" / "variants.yaml")
    _, cells = checks.load(MINE, REPO / "workflow" / "schemas" / "config.schema.yaml", table)
    ordered = grammar.canonical_order(cells, table)
    assert [c.variant for c in ordered if c.kernel == "readonly"] == ["v001", "v004", "v012"]
    assert [c.threads for c in ordered if c.kernel == "stream"] == [1, "all"]
    assert [c.load_delay for c in ordered if c.kernel == "loaded"] == [0, 10]
    assert version_order("readonly", ["v015", "v005-avx2", "v010", "v001"]) == ["v001", "v010", "v015", "v005-avx2"]
