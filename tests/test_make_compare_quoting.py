"""make compare takes BASE, NEW and OUT as written (issue 40, case 9): a
`$` in them is never expanded by make (nor by the shell), and make -n
compare runs nothing and writes nothing."""

import shutil
import subprocess
import sys

import pytest

from helpers_run import compare_folder


@pytest.fixture
def work(tmp_path, repo):
    sys.path.insert(0, str(repo / "tools"))
    import synthetic_runs

    work = compare_folder(tmp_path / "w", repo)
    (tmp_path / "base").mkdir()
    synthetic_runs.write_affinity_study(tmp_path / "base", "aff", [1], 4, machine="2x4x2", system="s")
    return work


def make(work, venv_bin, *args):
    return subprocess.run(["make", "-s", *args, f"BIN={venv_bin}", "STAMP=stamp"],
                          cwd=work, capture_output=True, text=True, timeout=300)  # fmt: skip


def test_a_dollar_in_base_runs_nothing(work, venv_bin, tmp_path):
    out = make(work, venv_bin, "compare", f"BASE={tmp_path}/r$(shell touch PLANTED)", f"NEW={tmp_path}/base",
               f"OUT={tmp_path}/out")  # fmt: skip
    assert not (work / "PLANTED").exists()
    assert out.returncode == 2 and "r$(shell touch PLANTED)" in out.stdout + out.stderr, out.stdout + out.stderr


def test_a_folder_with_a_dollar_in_its_name_is_read_by_that_name(work, venv_bin, tmp_path):
    shutil.copytree(tmp_path / "base", tmp_path / "d$x")
    out = make(work, venv_bin, "compare", f"BASE={tmp_path}/d$x", f"NEW={tmp_path}/base", f"OUT={tmp_path}/o$ut")
    assert out.returncode == 0, out.stdout + out.stderr
    assert (tmp_path / "o$ut" / "compare.txt").is_file()


def test_make_n_compare_writes_nothing(work, venv_bin, tmp_path):
    out = make(work, venv_bin, "-n", "compare", f"BASE={tmp_path}/base", f"NEW={tmp_path}/base", f"OUT={tmp_path}/out")
    assert out.returncode == 0, out.stdout + out.stderr
    assert not (tmp_path / "out").exists()
    assert "dry run" in out.stdout + out.stderr
