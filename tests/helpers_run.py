"""What several tests do to get something to run: a copy of the workflow
changed by a few files and nothing more, a C driver compiled against the
kernels, Snakemake run as a user runs it, a measured study copied as a
user copies it (cp -a), a folder where `make compare` runs. A helper of the tests, not a test itself."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Callable

from conftest import copy_make_parts, copy_workflow


def edit_once(path: Path, old: str, new: str) -> None:
    """`old`, standing exactly once in the file, replaced by `new`."""
    text = path.read_text()
    assert text.count(old) == 1, f"{path.name}: {old!r} is not there once"
    path.write_text(text.replace(old, new))


def changed_copy(folder: Path, change: Callable[[Path], None], files: set[str]) -> Path:
    """A copy of the workflow in `folder` that `change` edits; the files it
    changed or added (git's view of the copy) must be `files` exactly."""
    workdir = copy_workflow(folder)
    change(workdir)
    status = subprocess.run(["git", "-C", str(workdir), "status", "--porcelain", "--untracked-files=all"],
                            capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert {line[3:] for line in status.splitlines()} == files
    return workdir


def compiled(folder: Path, source: str, include: Path, *sources: Path) -> Path:
    """`source` (a driver's C text) compiled with `sources` into
    folder/driver, warnings refused."""
    (folder / "driver.c").write_text(source)
    exe = folder / "driver"
    cc = subprocess.run(["gcc", "-std=gnu11", "-O2", "-Wall", "-Wextra", f"-I{include}", str(folder / "driver.c"),
                         *map(str, sources), "-lm", "-o", str(exe)], capture_output=True, text=True)  # fmt: skip
    assert cc.returncode == 0 and cc.stderr == "", cc.stderr
    return exe


def snakemake(workdir: Path, venv_bin: Path, *args: str, config: str = "tiny.yaml") -> subprocess.CompletedProcess:
    """Snakemake on 2 cores in `workdir` with that config file, as a user runs it."""
    return subprocess.run(
        [str(venv_bin / "snakemake"), "--cores", "2", "--configfile", config, *args],
        cwd=workdir, capture_output=True, text=True, timeout=600,
    )  # fmt: skip


def measured_change(folder: Path, change: Callable[[Path], None], files: set[str], venv_bin: Path, config: dict) -> Path:
    """changed_copy, then the study `config` measured there by Snakemake
    (which must succeed)."""
    import yaml

    workdir = changed_copy(folder, change, files)
    (workdir / "study.yaml").write_text(yaml.safe_dump(config))
    out = snakemake(workdir, venv_bin, config="study.yaml")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return workdir


def copied(measured: Path, target: Path) -> Path:
    """A copy of a measured study, files with their times (cp -a), as a user makes one."""
    subprocess.run(["cp", "-a", str(measured), str(target)], check=True)
    return target


def compare_folder(folder: Path, repo: Path) -> Path:
    """A folder where `make compare` runs: the workflow, the report
    templates and what make reads, an environment stamp (make installs
    nothing)."""
    folder.mkdir()
    for part in ("workflow", "reports"):
        shutil.copytree(repo / part, folder / part)
    copy_make_parts(folder)
    (folder / "stamp").touch()
    return folder
