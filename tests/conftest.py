import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "workflow" / "scripts"))

from membench.plan import variants  # noqa: E402

# What a copy of the workflow needs to run somewhere else.
WORKFLOW_PARTS = ["Snakefile", "workflow", "kernels", "reports", "profiles", "config", "envs"]


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def venv_bin() -> Path:
    """The bin folder of the environment running the tests (snakemake,
    snakefmt live there)."""
    return Path(sys.executable).parent


@pytest.fixture(scope="session")
def stream_binary(tmp_path_factory) -> Path:
    """The default STREAM binary, built exactly as the build rule builds it."""
    table = variants.load_variants(REPO / "kernels" / "families" / "variants.yaml")
    out = tmp_path_factory.mktemp("bin") / "stream-default"
    built = subprocess.run(
        variants.compile_argv(table, "stream", "default", REPO / "kernels", out),
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0 and built.stderr == "", f"compiler said:\n{built.stderr}"
    return out


def copy_workflow(dest: Path) -> Path:
    """A private copy of the workflow in its own git repository, so tests can
    commit and edit without touching the checkout."""
    dest.mkdir(parents=True, exist_ok=True)
    for part in WORKFLOW_PARTS:
        src = REPO / part
        if src.is_dir():
            shutil.copytree(src, dest / part, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, dest / part)
    git = ["git", "-C", str(dest), "-c", "user.name=membench-test", "-c", "user.email=test@localhost"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "copy of the workflow"], check=True)
    return dest


@pytest.fixture(scope="session")
def option_listings(tmp_path_factory) -> dict[str, dict]:
    """Every family's option tables (--list-options) from one binary per
    family (its first variant), built in parallel as the build rule builds
    them."""
    table = variants.load_variants(REPO / "kernels" / "families" / "variants.yaml")
    out = tmp_path_factory.mktemp("listings")
    builds = {
        family: subprocess.Popen(
            variants.compile_argv(table, family, variants.variant_names(table, family)[0], REPO / "kernels", out / family),
            stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        for family in variants.families(table)
    }
    listings = {}
    for family, build in builds.items():
        _, err = build.communicate()
        assert build.returncode == 0, f"{family}: {err}"
        listed = subprocess.run([out / family, "--list-options"], capture_output=True, text=True, check=True)
        listings[family] = json.loads(listed.stdout)
    return listings


@pytest.fixture(scope="session")
def lists_options(tmp_path_factory, stream_binary) -> str:
    """The first line of a fake stream harness (sh): it answers
    --list-options as the real one does (membench reads the flags there)."""
    path = tmp_path_factory.mktemp("listing") / "stream.json"
    path.write_text(subprocess.run([stream_binary, "--list-options"], capture_output=True, text=True, check=True).stdout)
    return f'[ "$1" = --list-options ] && exec cat {path}\n'
