"""A failure is said on the terminal and never forgotten (issue 33), replayed
through the real Snakemake on a tiny study, as a user does it: the report
from before is kept in place, files are copied with their times (cp -a),
and what each run prints, exits with and leaves stored is checked."""

import errno
import fcntl
import hashlib
import json
import re
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from conftest import REPO, copy_workflow, seed_binaries
from helpers_run import compare_folder, copied, snakemake
from membench.core import disturbance
from membench.core.atomic_files import read_jsonl

sys.path.insert(0, str(REPO / "tools"))
import synthetic_runs  # noqa: E402

SYSTEM = "t"
TINY = {
    "system": SYSTEM,
    "repeats": 2,
    "ntimes": 3,
    # disturbed_retries left at its default (2), as users run it: a try
    # again after a disturbance (a busy test machine) adds files under
    # superseded/disturbed/, which the counts below tell apart
    "experiments": {"s": {"kernel": "stream", "threads": [1], "affinity": ["close"], "size": ["2MiB"]}},
}
CELL = "s/stream-default/t1_close_default_variant_parallel_s2097152"


def stored(workdir: Path, retries: bool = True) -> dict[str, str]:
    """md5 of every run file and superseded file; retries=False leaves out
    the tries a disturbance had measured again (superseded/disturbed/)."""
    return {
        str(p.relative_to(workdir)): hashlib.md5(p.read_bytes()).hexdigest()
        for p in sorted((workdir / "results").glob(f"{SYSTEM}/*/**/r*.jsonl*"))
        if retries or "/superseded/disturbed/" not in str(p)
    }


def tail(out: subprocess.CompletedProcess, lines: int = 12) -> str:
    return "\n".join((out.stdout + out.stderr).splitlines()[-lines:])


@pytest.fixture(scope="module")
def measured(tmp_path_factory, venv_bin, variant_builds):
    """One measured tiny study; each test works on a cp -a copy of it."""
    workdir = seed_binaries(copy_workflow(tmp_path_factory.mktemp("failures") / "membench"), TINY, variant_builds)
    (workdir / "tiny.yaml").write_text(yaml.safe_dump(TINY))
    first = snakemake(workdir, venv_bin)
    assert first.returncode == 0, tail(first, 40)
    return workdir


@pytest.fixture
def copy(measured, tmp_path):
    return copied(measured, tmp_path / "membench")


def test_a_deleted_measurements_csv_is_rebuilt(copy, venv_bin):
    (copy / "results" / SYSTEM / "measurements.csv").unlink()
    out = snakemake(copy, venv_bin)
    assert out.returncode == 0, tail(out, 40)
    assert "Nothing to be done" not in out.stdout + out.stderr
    assert (copy / "results" / SYSTEM / "measurements.csv").exists()


def test_measure_again_as_readme_says_measures_the_cell(copy, venv_bin):
    before = stored(copy, retries=False)
    # README, "Measure again", verbatim
    subprocess.run(f"rm -r results/{SYSTEM}/runs/{CELL} results/{SYSTEM}/rounds", shell=True, cwd=copy, check=True)
    out = snakemake(copy, venv_bin)
    assert out.returncode == 0, tail(out, 40)
    assert "1 measured" in out.stdout + out.stderr
    after = stored(copy, retries=False)
    assert set(after) == set(before) and all(after[f] != before[f] for f in before), "both repetitions measured again"
    retried = [f for f in stored(copy) if f not in after]
    assert all("/superseded/disturbed/" in f and CELL in f for f in retried), retried
    report = copy / "results" / "report.html"
    assert report.stat().st_mtime > (copy / "results" / SYSTEM / "runs" / CELL / "r0.jsonl").stat().st_mtime


def test_a_disturbed_repetition_is_measured_again_with_the_default_retries(copy, venv_bin, variant_builds):
    """The default config's retry path through the real Snakemake and the
    real harness: a busy loop pinned to the measuring thread's CPU disturbs
    every try (about half of the CPU), so the repetition is measured 3
    times (disturbed_retries 2, the default), the first two kept aside
    under superseded/disturbed/, the last kept, marked, and said."""
    cpu = sorted(os.sched_getaffinity(0))[-1]
    # iterations of 15-40 ms, longer than the scheduler's slices: the spinner is in each
    config = {"system": "d", "repeats": 1, "ntimes": 5,
              "experiments": {"d": {"kernel": "stream", "threads": [1], "affinity": [f"cpus:{cpu}"], "size": ["128MiB"]}}}  # fmt: skip
    (seed_binaries(copy, config, variant_builds) / "retried.yaml").write_text(yaml.safe_dump(config))
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"], preexec_fn=lambda: os.sched_setaffinity(0, {cpu}))
    try:
        out = snakemake(copy, venv_bin, config="retried.yaml")
    finally:
        spinner.kill()
        spinner.wait()
    assert out.returncode == 0, tail(out, 40)
    (kept,) = (copy / "results" / "d" / "runs").glob("d/*/*/r0.jsonl")
    tries = sorted(p.name for p in (copy / "results" / "d" / "superseded" / "disturbed").rglob("r0.jsonl*"))
    assert tries == ["r0.jsonl", "r0.jsonl.1"], tries
    records = read_jsonl(kept)
    assert {r["measure_try"] for r in records} == {3}
    causes = [disturbance.verdict(r)[1] for r in records]
    assert any(any(c.startswith("switched out") for c in said) for said in causes), causes
    assert "disturbed 1 kept, 2 measured again" in out.stdout + out.stderr, tail(out, 40)
    assert (copy / "results" / "report.html").exists()


def test_a_new_venv_path_measures_nothing(copy, venv_bin, tmp_path):
    """docs/measurement-rules.md: after a new venv path the rounds run again
    (their command names the interpreter) and keep every stored repetition.
    The new venv is a real one elsewhere, its packages those of the running
    one (a .pth line), so that only the path changes."""
    venv = tmp_path / "elsewhere" / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    here = subprocess.run([str(venv_bin / "python"), "-c", "import site; print(site.getsitepackages()[0])"],
                          capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    (site_packages,) = venv.glob("lib/python3*/site-packages")
    (site_packages / "membench_test_packages.pth").write_text(here + "\n")
    before = stored(copy)
    out = subprocess.run([str(venv / "bin" / "python"), "-m", "snakemake", "--cores", "2", "--configfile", "tiny.yaml"],
                         cwd=copy, capture_output=True, text=True, timeout=600)  # fmt: skip
    text = out.stdout + out.stderr
    assert out.returncode == 0, tail(out, 40)
    rounds = re.findall(r"round \d+ done: (\d+) measured, (\d+) kept", text)
    assert rounds and all(measured == "0" for measured, _ in rounds) and sum(int(k) for _, k in rounds) == 2, rounds
    assert stored(copy) == before, "no stored repetition touched"


def test_undoing_an_edit_brings_the_earlier_files_back(copy, venv_bin):
    before = stored(copy)
    six = json.loads(json.dumps(TINY))
    six["experiments"]["s"]["ntimes"] = 6
    (copy / "six.yaml").write_text(yaml.safe_dump(six))
    edited = snakemake(copy, venv_bin, config="six.yaml")
    assert edited.returncode == 0, tail(edited, 40)
    with_six = stored(copy)
    undone = snakemake(copy, venv_bin)  # the line removed again
    assert undone.returncode == 0, tail(undone, 40)
    text = undone.stdout + undone.stderr
    assert "runs again" in text and "brought back" in text
    after = stored(copy)
    for f, digest in before.items():
        assert after[f] == digest, f"{f}: the earlier repetition is back"
    six_files = {digest for f, digest in with_six.items() if "/runs/" in f}
    assert six_files <= {d for f, d in after.items() if "/superseded/" in f}, "the ntimes-6 repetitions are kept aside"
    # one edit, one folder: both repetitions of the ntimes-6 edit (and of
    # its undoing) share it, named by the knobs that changed
    folders = sorted(p.name for p in (copy / "results" / SYSTEM / "superseded").iterdir() if p.name != "disturbed")
    assert len(folders) == 2 and all(f.startswith("request-") for f in folders), folders


def test_figures_only_damage_is_said_last_and_the_report_is_set_aside(copy, venv_bin):
    run = copy / "results" / SYSTEM / "runs" / CELL / "r1.jsonl"
    backup = copy / "r1.jsonl.backup"
    shutil.copy2(run, backup)
    lines = run.read_text().splitlines()
    lines[1] = lines[1].replace('"gbps": ', '"gbps": NaN, "was": ', 1)
    run.write_text("\n".join(lines) + "\n")
    before = stored(copy)
    status = subprocess.run([str(venv_bin / "python"), "workflow/scripts/study_status.py", "--configfile", "tiny.yaml"],
                            cwd=copy, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert status.stdout.startswith(f"{SYSTEM}: 1 of 2 repetitions (50.0 %), 1 stored file(s) damaged"), status.stdout
    for attempt in (1, 2):  # the second run is not "Nothing to be done"
        out = snakemake(copy, venv_bin, "--config", "figures_only=True")
        assert out.returncode == 1
        last = tail(out, 10)
        assert f"{run.relative_to(copy)}:2: key gbps: NaN is not a JSON number" in last, last
        assert f"mv results/{SYSTEM}/runs/{CELL}/r1.jsonl results/{SYSTEM}/runs/{CELL}/r1.jsonl.damaged" in last
        assert "report-stale.html" in last and "Traceback" not in out.stdout + out.stderr
        # Snakemake's error box lists collect's inputs: one index of the
        # stored files and one of the package's sources, not every path
        boxed = [line for line in (out.stdout + out.stderr).splitlines() if line.startswith("    input: ")]
        assert boxed and all(len(line) < 200 for line in boxed), boxed
        assert all(f".snakemake/membench/stored/{SYSTEM}.txt" in line and ".jsonl" not in line for line in boxed)
        assert not (copy / "results" / "report.html").exists()
        assert "STALE" in (copy / "results" / "report-stale.html").read_text()[:5000]
        assert stored(copy) == before, "collect changed nothing"
    # the file restored as the message advises, with its old time (cp -a)
    subprocess.run(["cp", "-a", str(backup), str(run)], check=True)
    out = snakemake(copy, venv_bin, "--config", "figures_only=True")
    assert out.returncode == 0, tail(out, 40)
    assert (copy / "results" / "report.html").exists() and not (copy / "results" / "report-stale.html").exists()


def test_files_copied_in_with_older_times_are_collected(copy, venv_bin, tmp_path):
    """Stored runs brought from elsewhere (cp -a keeps their older times)."""
    table = copy / "results" / SYSTEM / "measurements.csv"
    out = snakemake(copy, venv_bin, "--config", "figures_only=True")
    assert out.returncode == 0, tail(out, 40)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    run = copy / "results" / SYSTEM / "runs" / CELL / "r0.jsonl"
    records = [json.loads(line) for line in run.read_text().splitlines()]
    for record in records:
        if record.get("gbps"):
            record["gbps"] = record["gbps_wa"] = 12345.0
    (elsewhere / "r0.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    os.utime(elsewhere / "r0.jsonl", ns=(10**18, 10**18))  # older than every output
    subprocess.run(["cp", "-a", str(elsewhere / "r0.jsonl"), str(run)], check=True)
    out = snakemake(copy, venv_bin, "--config", "figures_only=True")
    assert out.returncode == 0, tail(out, 40)
    assert "Nothing to be done" not in out.stdout + out.stderr
    assert "12345" in table.read_text()


def test_a_live_run_is_never_unlocked(copy, venv_bin):
    lock = copy / "results" / ".membench.lock"
    with open(lock, "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        held.write("pid 4242, config other.yaml, since now\n")
        held.flush()
        for args in ((), ("--unlock",)):
            out = snakemake(copy, venv_bin, *args)
            assert out.returncode != 0
            text = out.stdout + out.stderr
            assert "still alive (pid 4242, config other.yaml" in text and "do not use --unlock" in text
        assert snakemake(copy, venv_bin, "-n").returncode == 0  # a dry run only says so


@pytest.mark.parametrize("garbage", ["garbage", "{}", "[]", "null"])
def test_a_damaged_topology_with_a_c2c_experiment_is_one_line(tmp_path, venv_bin, garbage):
    workdir = copy_workflow(tmp_path / "c2c")
    config = {"system": SYSTEM, "experiments": {"c": {"kernel": "c2c", "pairs": "sample"}}}
    (workdir / "c.yaml").write_text(yaml.safe_dump(config))
    (workdir / "results" / SYSTEM).mkdir(parents=True)
    (workdir / "results" / SYSTEM / "topology.json").write_text(garbage)
    out = snakemake(workdir, venv_bin, "-n", config="c.yaml")
    text = out.stdout + out.stderr
    assert out.returncode == 1 and "Traceback" not in text and "KeyError" not in text.replace("(KeyError", "")
    assert f"results/{SYSTEM}/topology.json is damaged" in text and "delete it and rerun" in text, text


def test_make_run_with_a_config_that_is_not_there_is_one_line(tmp_path, repo):
    shutil.copy2(repo / "Makefile", tmp_path / "Makefile")
    (tmp_path / "config").mkdir()
    out = subprocess.run(["make", "run", "CONFIG=nope.yaml"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    text = out.stdout + out.stderr
    assert out.returncode == 2 and "Traceback" not in text
    assert "make: CONFIG=nope.yaml: no such file" in text and "venv" not in text, text


def test_make_compare_exit_codes_reach_make(tmp_path, repo, venv_bin):
    """0 no cell worse, 1 a cell worse, 2 bad input: make's own exit code."""
    work = compare_folder(tmp_path / "w", repo)
    base = tmp_path / "base"
    base.mkdir()
    synthetic_runs.write_affinity_study(base, "aff", [1], 12, machine="2x4x2", system="s")
    slow = tmp_path / "slow"
    shutil.copytree(base, slow)
    for path in (slow / "results" / "s" / "runs").glob("**/r*.jsonl"):
        records = [json.loads(line) for line in path.read_text().splitlines()]
        for r in records:
            if r.get("gbps"):
                r["gbps"] *= 0.5
                r["gbps_wa"] *= 0.5
        path.write_text("".join(json.dumps(r) + "\n" for r in records))

    def make(*args):
        return subprocess.run(["make", "-s", "compare", f"BIN={venv_bin}", "STAMP=stamp", *args],
                              cwd=work, capture_output=True, text=True, timeout=300)  # fmt: skip

    assert make(f"BASE={base}", f"NEW={base}").returncode == 0
    worse = make(f"BASE={base}", f"NEW={slow}")
    assert worse.returncode == 1 and "worse" in worse.stdout + worse.stderr
    bogus = make(f"BASE={base}", f"NEW={slow}", "IGNORE=bogus")
    assert bogus.returncode == 2 and "IGNORE bogus: no such knob" in bogus.stderr
    (slow / "results" / "s" / "environment.json").write_text("garbage")
    garbage = make(f"BASE={base}", f"NEW={slow}")
    assert garbage.returncode == 2 and "environment.json: not JSON" in garbage.stderr
    assert "Traceback" not in garbage.stderr


DEV16 = Path(__file__).resolve().parents[2] / "shared" / "data" / "dev16"


@pytest.mark.skipif(not (DEV16 / "runs").is_dir(), reason="no ../shared/data/dev16")
def test_dev16_runs_of_an_earlier_membench_are_shown_or_said(tmp_path, venv_bin):
    """README's figures-only command on a copy of dev16: its chase and loaded
    runs (cell ids from before the chase-group axis) appear with the 64 KiB
    groups their records state; a file no cell claims is said, not dropped."""
    workdir = copy_workflow(tmp_path / "membench")
    system = workdir / "results" / "dev16"
    system.mkdir(parents=True)
    for name in ("runs", "topology.json", "environment.json"):
        subprocess.run(["cp", "-a", str(DEV16 / name), str(system / name)], check=True)
    stray = system / "runs" / "old" / "stream-default" / "t1_close_default_variant_parallel_sauto"
    stray.mkdir(parents=True)
    (stray / "r0.jsonl").write_text("{}\n")
    out = snakemake(workdir, venv_bin, "--config", "figures_only=True", config=str(DEV16 / "config.yaml"))
    assert out.returncode == 0, tail(out, 40)
    assert "membench: dev16: stored but not shown: 1 run file(s): experiment 'old' is not in the config" in out.stderr
    assert "t1_close_default_4k_parallel_s1073741824_g64KiB" in out.stderr
    report = (workdir / "results" / "report.html").read_text()
    first_screen = report[: report.index("<nav>")]
    assert "not measured (no chase experiment)" not in first_screen
    assert "4k pages, 64 KiB groups, one pointer per 64 B" in first_screen and "256 KiB groups" not in first_screen
    assert re.search(r"89\.0 ns</a> <small>n=2</small>", first_screen)  # the idle latency: the memory plateau over its 2 undisturbed runs
    assert "stored but not shown: 1 run file(s): experiment &#39;old&#39; is not in the config" in first_screen
    loaded = report[report.index('id="experiment-loaded_latency"') :]
    assert "<svg" in loaded[:200000] and "174.5" in loaded  # the loaded curve's points (delay 0: 174.5 ns)
    assert (workdir / "results" / "figures" / "readonly_ladder-ladder.svg").exists()


def test_names_too_long_for_a_path_are_said_with_the_config(tmp_path, venv_bin):
    """A 300-byte system or experiment name: every one said before anything
    runs (not `File name too long` from a job)."""
    workdir = copy_workflow(tmp_path / "membench")
    long = "x" * 300
    config = {**TINY, "system": "s" * 300,
              "experiments": {long: TINY["experiments"]["s"], "ok": TINY["experiments"]["s"]}}  # fmt: skip
    (workdir / "long.yaml").write_text(yaml.safe_dump(config))
    out = snakemake(workdir, venv_bin, "-n", config="long.yaml")
    said = out.stdout + out.stderr
    assert out.returncode == 1 and "Traceback" not in said
    assert "invalid membench config (2 problems)" in said, tail(out, 20)
    assert "system: 'sssssssssssssssssssssssssssssssssssss...' is 300 bytes; allowed: at most 241 bytes" in said
    assert "experiments.'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...': the name is 300 bytes; allowed: at most 227" in said
    assert not (workdir / "results").exists()


@pytest.fixture
def full_filesystem(copy):
    """results/t on a small tmpfs of its own, its files copied in (cp -a)
    and the rest of its space taken: a write there fails with ENOSPC, the
    kernel's own, through the real write path. Needs mounting (root, or a
    user namespace that allows it); skipped where mounting is refused."""
    system = copy / "results" / SYSTEM
    disk = copy / "results" / "t.disk"
    system.rename(disk)
    system.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(system)], capture_output=True, text=True)
    if mounted.returncode != 0:
        system.rmdir()
        disk.rename(system)
        pytest.skip(f"cannot mount a small tmpfs here: {mounted.stderr.strip() or mounted.returncode}")
    try:
        subprocess.run(["cp", "-a", f"{disk}/.", str(system)], check=True)
        (system / "measurements.csv").unlink()  # a missing intermediate: collect runs
        with open(system / ".filler", "wb", buffering=0) as filler:  # take every free block
            try:
                while True:
                    filler.write(b"\0" * 4096)
            except OSError as error:
                assert error.errno == errno.ENOSPC, error
        yield system
    finally:
        subprocess.run(["umount", "-l", str(system)], check=False)


def test_a_full_filesystem_in_collect_is_one_line_said_last(copy, full_filesystem, venv_bin):
    """Collect writing measurements.csv onto a full filesystem (ENOSPC from
    the kernel, not a simulated error): exit 1, the cause said as collect's
    last words on the terminal, no traceback, the stored runs unchanged."""
    system = full_filesystem
    before = stored(copy)
    out = snakemake(copy, venv_bin, "--config", "figures_only=True")
    text = out.stdout + out.stderr
    assert out.returncode == 1, tail(out, 40)
    assert "Traceback" not in text and "OSError" not in text, text
    said = f"collect_runs ({SYSTEM}): cannot write results/{SYSTEM}/measurements.csv (No space left on device"
    last = tail(out, 10)
    assert said in last and "the filesystem is full: free space there (df -h" in last, last
    # the message is the last thing membench says: only Snakemake's own
    # closing lines (log path, elapsed time, its summary) follow it
    after = text.splitlines()[[i for i, line in enumerate(text.splitlines()) if said in line][-1] + 1 :]
    assert all(not line.startswith(("membench", "collect_runs", "  results/")) for line in after), after
    assert not (system / "measurements.csv").exists()
    assert not [p.name for p in system.iterdir() if p.name.endswith(".tmp")], "no temporary file left"
    assert stored(copy) == before, "the stored runs are untouched"
