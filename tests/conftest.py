import fcntl
import json
import os
import shutil
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "workflow" / "scripts"))

from membench.core import layout  # noqa: E402
from membench.plan import checks, variants  # noqa: E402

import quiet_summary  # noqa: E402  (tests/, beside this file)

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


def built_once(target: Path, commands: list[list[str]]) -> tuple[int, str]:
    """(exit code, stderr) of the commands that build target, run by the
    first caller only: the others, other xdist workers too, wait on one lock
    file beside the target and read the outcome it left (written last: the
    build is whole)."""
    outcome = target.with_name(target.name + ".outcome.json")
    with open(target.with_name(target.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not outcome.is_file():
            proc = subprocess.run(variants.command_line(commands), shell=True, capture_output=True, text=True)
            outcome.with_suffix(".part").write_text(json.dumps([proc.returncode, proc.stderr]))
            outcome.with_suffix(".part").rename(outcome)
        return tuple(json.loads(outcome.read_text()))


class VariantBuilds:
    """Binaries of kernels/families/variants.yaml, each (family, variant)
    built at most once per test run, with exactly the build rules' commands
    (membench.plan.variants.harness_commands, compile_argv): the harness
    archive once per toolchain, then each binary linking it; what is asked
    together is built in parallel. Every test file takes its binaries from
    here, so a whole run compiles the harness once and each variant once:
    the folder is shared by the xdist workers (built_once)."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.table = variants.load_variants(REPO / "kernels" / "families" / "variants.yaml")
        self.built: dict[tuple[str, str], tuple[Path, int, str]] = {}
        self.lock = threading.Lock()

    def harness(self, arch: str | None = None) -> Path:
        """The harness archive of arch's toolchain (default this machine's),
        where the build rule puts it beside binaries; it must build cleanly."""
        archive = Path(layout.harness_archive(str(self.folder / (arch or variants.host_arch()))))
        archive.parent.mkdir(parents=True, exist_ok=True)
        commands = variants.harness_commands(self.table, REPO / "kernels", archive, arch)
        returncode, stderr = built_once(archive, commands)
        assert returncode == 0 and stderr == "", f"the harness ({arch or 'native'}) did not build cleanly:\n{stderr}"
        return archive

    def _compile(self, pair: tuple[str, str]) -> tuple[tuple[str, str], tuple[Path, int, str]]:
        family, variant = pair
        binary = self.folder / f"{family}-{variant}"
        argv = variants.compile_argv(self.table, family, variant, REPO / "kernels", binary, harness=self.harness())
        return pair, (binary, *built_once(binary, [argv]))

    def build(self, pairs) -> dict[tuple[str, str], tuple[Path, int, str]]:
        """(family, variant) -> (binary, compiler exit code, compiler stderr)."""
        pairs = list(pairs)
        with self.lock:
            missing = [pair for pair in dict.fromkeys(pairs) if pair not in self.built]
            if missing:
                self.harness()  # once, before the binaries that link it
            with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
                self.built.update(pool.map(self._compile, missing))
            return {pair: self.built[pair] for pair in pairs}

    def binary(self, family: str, variant: str = "default") -> Path:
        """One binary, which must have built cleanly (no compiler output)."""
        ((path, returncode, stderr),) = self.build([(family, variant)]).values()
        assert returncode == 0 and stderr == "", f"{family}-{variant}: compiler said:\n{stderr}"
        return path


@pytest.fixture(scope="session")
def variant_builds(tmp_path_factory, worker_id) -> VariantBuilds:
    # under xdist each worker's temp folder sits in one shared by all of them
    shared = tmp_path_factory.getbasetemp() if worker_id == "master" else tmp_path_factory.getbasetemp().parent
    folder = shared / "variants"
    folder.mkdir(exist_ok=True)
    return VariantBuilds(folder)


@pytest.fixture(scope="session")
def stream_binary(variant_builds) -> Path:
    """The default STREAM binary, built exactly as the build rule builds it."""
    return variant_builds.binary("stream")


# What `make` reads besides the workflow: its targets and the pins.
MAKE_PARTS = ["Makefile", "requirements.txt", "requirements-dev.txt", "requirements-install.txt", "requirements.lock"]


def copy_make_parts(dest: Path) -> Path:
    """The Makefile and the pins beside a copied workflow, so `make` runs there."""
    for part in MAKE_PARTS:
        shutil.copy2(REPO / part, dest / part)
    return dest


def copy_workflow(dest: Path) -> Path:
    """A private copy of the workflow in its own git repository, so tests can
    commit and edit without touching the checkout."""
    dest.mkdir(parents=True, exist_ok=True)
    for part in WORKFLOW_PARTS:
        src = REPO / part
        if src.is_dir():
            shutil.copytree(src, dest / part)  # bytecode too (make test compiles it): valid, times kept
        else:
            shutil.copy2(src, dest / part)
    git = ["git", "-C", str(dest), "-c", "user.name=membench-test", "-c", "user.email=test@localhost"]
    subprocess.run([*git, "init", "-q"], check=True)
    (dest / ".git" / "info").mkdir(exist_ok=True)
    (dest / ".git" / "info" / "exclude").write_text("__pycache__/\n")
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "copy of the workflow"], check=True)
    return dest


def seed_binaries(workdir: Path, config: dict, builds: VariantBuilds) -> Path:
    """The binaries a config's cells need, from the session's builds, where
    the build rules put them (bin/SYSTEM/, the harness archive they link
    first, so no older than it) and newer than their sources: Snakemake
    finds them up to date and compiles nothing. The bytes are the rules'
    own (the same commands; the build is reproducible), so records name the
    same binary_sha256. For tests about something else: the build's own
    tests (test_variant_dag, test_identity_workflow's rebuilds, the module,
    make run, SLURM, a new family) still compile."""
    _, cells = checks.load(config, REPO / "workflow" / "schemas" / "config.schema.yaml", builds.table)
    archive = workdir / layout.harness_archive(f"bin/{config['system']}")
    archive.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(builds.harness(), archive)
    for family, variant in dict.fromkeys((cell.kernel, cell.variant) for cell in cells):
        target = workdir / "bin" / config["system"] / f"{family}-{variant}"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(builds.binary(family, variant), target)
        target.chmod(0o755)
    return workdir


@pytest.fixture(scope="session")
def option_listings(variant_builds) -> dict[str, dict]:
    """Every family's option tables (--list-options) from one binary per
    family (its first variant), built in parallel as the build rule builds
    them."""
    table = variant_builds.table
    firsts = [(family, variants.variant_names(table, family)[0]) for family in variants.families(table)]
    listings = {}
    for (family, _), (binary, returncode, stderr) in variant_builds.build(firsts).items():
        assert returncode == 0, f"{family}: {stderr}"
        listed = subprocess.run([binary, "--list-options"], capture_output=True, text=True, check=True)
        listings[family] = json.loads(listed.stdout)
    return listings


@pytest.fixture(scope="session")
def lists_options(tmp_path_factory, stream_binary) -> str:
    """The first line of a fake stream harness (sh): it answers
    --list-options as the real one does (membench reads the flags there)."""
    path = tmp_path_factory.mktemp("listing") / "stream.json"
    path.write_text(subprocess.run([stream_binary, "--list-options"], capture_output=True, text=True, check=True).stdout)
    return f'[ "$1" = --list-options ] && exec cat {path}\n'


# Parallel runs (make test: pytest-xdist, --dist loadfile): a test file is
# one unit of work, so its module fixture (a measured study) is made once.
# Tests marked `quiet` need the machine to themselves: make test runs them
# afterwards, alone.
# At the end, how many of the quiet tests skipped and why; CI
# (MEMBENCH_REQUIRE_QUIET=1) fails when more than half did (tests/quiet_summary.py).
def pytest_configure(config):
    config.addinivalue_line("markers", "quiet: measures and needs the machine to itself (run after the parallel part)")
    quiet_summary.register(config)


# The longest files first (seconds in a parallel run on the 2-vCPU guest),
# so that no worker is left with one at the end while the other idles. The
# variant builds come first and the disassembly, which waits on them, later.
LONGEST_FIRST = [
    "test_variants", "test_default_verbs", "test_arm", "test_failures", "test_stop", "test_slurm", "test_identity_workflow",
    "test_workflow", "test_one_report", "test_numa_guest", "test_numa_guest_matrix", "test_disassembly",
    "test_retry_bound", "test_record_schema", "test_failed_steps", "test_module", "test_make_run",
    "test_recovery", "test_new_family", "test_bundle_rebuild", "test_compare", "test_findings",
]  # fmt: skip


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.module.__name__, len(rank)))  # stable: file order kept within
