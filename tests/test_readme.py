"""The README is a page to act on (issue 42): short, and every command,
file and page it names exists."""

import re

from conftest import REPO

README = (REPO / "README.md").read_text()
MAKEFILE = (REPO / "Makefile").read_text()


def make_targets() -> set[str]:
    return {m.group(1) for m in re.finditer(r"^([A-Za-z][\w.-]*):", MAKEFILE, re.M)}


def test_the_readme_is_short_and_keeps_the_two_commands():
    assert len(README.splitlines()) <= 200
    assert "make run" in README and "make test" in README


def test_every_make_target_the_readme_names_exists():
    named = set(re.findall(r"\bmake ([a-z][\w-]*)", README))
    assert {"run", "test", "plan", "status", "compare"} <= named
    assert not named - make_targets(), f"no such make target: {named - make_targets()}"


def test_every_make_variable_the_readme_uses_is_read_by_the_makefile():
    for variable in set(re.findall(r"\bmake [a-z]+(?: [A-Z_]+=\S+)*? ([A-Z_]+)=", README)) | {"CONFIG", "RESULTS", "VERBOSE"}:
        assert re.search(rf"\$\((?:value )?{variable}\)", MAKEFILE), variable


def test_every_file_and_page_the_readme_names_exists():
    named = set(re.findall(r"`((?:config|docs|workflow|kernels|tests|bench|tools)/[\w./-]+\.\w+)`", README))
    named |= set(re.findall(r"\]\(((?:docs|config)/[\w./-]+)\)", README))
    assert {"config/config.yaml", "docs/running.md"} <= named
    missing = sorted(path for path in named if not (REPO / path).exists())
    assert not missing, f"named in the README, not in the checkout: {missing}"


def test_the_readme_commands_run_what_exists():
    """The venv commands name programs the venv has after `make run`."""
    for program in set(re.findall(r"\.venv/bin/(\w+)", README)):
        assert program in {"snakemake", "python", "pytest"}, program
    assert re.search(r"^\.venv/bin/snakemake --cores 1 --config figures_only=True", README, re.M)


def test_docs_pages_link_only_to_pages_that_exist():
    for page in (REPO / "docs").glob("*.md"):
        for target in re.findall(r"\]\(([\w.-]+\.md)(?:#[\w-]+)?\)", page.read_text()):
            assert (page.parent / target).exists(), (page.name, target)
