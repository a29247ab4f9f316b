"""The house's rules, read from the source itself (README, "The package
by stage"): stage folders in the order the data flows, imports only
downward, no circles, no folder over 16 modules, no source file over 500
lines, and planning that never loads measurement, analysis or plotting."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "workflow" / "scripts" / "membench"
# The order the data flows; a module imports its own stage and those before it.
STAGES = ["core", "plan", "probe", "measure", "store", "analyse", "findings", "figures", "report", "compare"]


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def imports_of(path: Path, known: set[str]) -> set[str]:
    """The membench modules a file imports (at any depth of its code)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("membench"):
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                found.add(full if full in known else node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("membench")}
    return {name for name in found if name in known}


def stage(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in STAGES else None


def test_every_module_is_in_a_stage_folder():
    loose = [name for name in modules() if name != "membench" and stage(name) is None]
    assert loose == [], f"modules outside a stage folder: {loose}"
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders == set(STAGES)


def test_no_folder_holds_more_than_16_modules():
    for folder in [PACKAGE, *(PACKAGE / s for s in STAGES)]:
        count = len([p for p in folder.glob("*.py") if p.name != "__init__.py"])
        assert count <= 16, f"{folder.relative_to(REPO)} holds {count} modules"


def test_imports_only_downward():
    mods = modules()
    upward = []
    for name, path in mods.items():
        own = stage(name)
        if own is None:
            continue
        for dep in imports_of(path, set(mods)):
            dep_stage = stage(dep)
            if dep_stage and STAGES.index(dep_stage) > STAGES.index(own):
                upward.append(f"{name} imports {dep}")
    assert upward == [], "imports against the stages:\n" + "\n".join(upward)


def test_no_private_name_crosses_a_module():
    crossing = []
    for name, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("membench"):
                crossing += [f"{name} takes {node.module}.{a.name}" for a in node.names
                             if a.name.startswith("_") and a.name not in ("__version__",)]
    assert crossing == []


def test_report_formats_only():
    """The report and the terminal format the findings stage's files:
    report/ imports nothing that computes (analyse, findings, figures),
    only core's formatters and files (README, "Findings")."""
    mods = modules()
    computing = []
    for name, path in mods.items():
        if stage(name) != "report":
            continue
        computing += [f"{name} imports {dep}" for dep in imports_of(path, set(mods)) if stage(dep) not in ("core", "report")]
    assert computing == []


def test_no_circles():
    mods = modules()
    graph = {name: imports_of(path, set(mods)) - {name} for name, path in mods.items()}
    # a package's __init__ is not an edge: it holds a docstring only
    graph = {n: {d for d in deps if mods[d].name != "__init__.py"} for n, deps in graph.items()}
    state: dict[str, int] = {}
    circles = []

    def visit(node, trail):
        state[node] = 1
        for dep in sorted(graph[node]):
            if state.get(dep) == 1:
                circles.append(" -> ".join(trail[trail.index(dep):] + [dep]))
            elif dep not in state:
                visit(dep, trail + [dep])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert circles == []


def test_stage_packages_hold_no_code():
    """A stage's __init__ is a docstring: importing one module of a stage
    never loads the rest of it (planning imports plan.* alone)."""
    for s in STAGES:
        tree = ast.parse((PACKAGE / s / "__init__.py").read_text())
        body = [n for n in tree.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
        assert body == [], f"membench/{s}/__init__.py holds code"


SOURCE_SUFFIXES = {".py", ".smk", ".c", ".h"}


def test_no_source_file_over_500_lines():
    too_long = []
    for top in ("kernels", "workflow"):
        for path in (REPO / top).rglob("*"):
            if path.is_file() and (path.suffix in SOURCE_SUFFIXES or path.name == "Snakefile"):
                lines = len(path.read_text().splitlines())
                if lines > 500:
                    too_long.append(f"{path.relative_to(REPO)}: {lines}")
    assert too_long == []


RULES = REPO / "workflow" / "rules"
# Read by a figures-only plan alone (common.smk includes it then): it may load store/.
FIGURES_ONLY_RULES = {"stored.smk"}
# The one call that says what planning has to say (start_run).
SAYS = {"run_start.smk"}
# Run after Snakemake parsed the workflow, never while it parses.
HANDLERS = ("onstart:", "onerror:", "onsuccess:")


def snakemake_files() -> list[Path]:
    return [REPO / "Snakefile", REPO / "workflow" / "Snakefile", *sorted(RULES.glob("*.smk"))]


def loaded_by(paths: list[Path]) -> list[str]:
    """What the membench imports of these .smk files load, imported alone
    in a fresh interpreter."""
    statements = [s for path in paths
                  for s in re.findall(r"^from membench[.\w]* import \(?[^)\n]*\)?", path.read_text(), flags=re.M)]
    assert statements, f"{[p.name for p in paths]} import nothing of membench?"
    probe = "\n".join(["import sys", f"sys.path.insert(0, {str(PACKAGE.parent)!r})", *statements,
                       "print('\\n'.join(sorted(sys.modules)))"])
    return subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split()


def heavy(module: str, stages: tuple[str, ...]) -> bool:
    return module.split(".")[0] in ("pandas", "numpy", "matplotlib", "seaborn", "scipy") or stage(module) in stages


def test_planning_loads_no_measurement_analysis_or_plotting():
    """What common.smk and every .smk file a measuring plan reads import."""
    planning = [p for p in RULES.glob("*.smk") if p.name not in FIGURES_ONLY_RULES]
    assert RULES / "common.smk" in planning
    loaded = loaded_by(planning)
    forbidden = [m for m in loaded if heavy(m, ("measure", "store", "analyse", "findings", "figures", "report", "compare"))]
    assert forbidden == [], f"planning loads {forbidden}"


def test_a_figures_only_plan_loads_the_stored_runs_and_no_analysis_or_plotting():
    loaded = loaded_by([RULES / "common.smk", *(RULES / name for name in sorted(FIGURES_ONLY_RULES))])
    forbidden = [m for m in loaded if heavy(m, ("measure", "analyse", "findings", "figures", "report", "compare"))]
    assert forbidden == [], f"a figures-only plan loads {forbidden}"


def parse_time_lines(path: Path):
    """(line number, line, the top-level statement it belongs to) of every
    line Snakemake runs while it parses (or, in a function, when it plans):
    all but the handlers' bodies, which run after."""
    block = ""
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if line.strip() and not line[0].isspace() and not line.startswith("#"):
            block = line
        if not block.startswith(HANDLERS):
            yield number, line, block


def test_no_import_in_a_function_or_block_and_no_print_while_snakemake_parses():
    """A .smk file imports at its top only: an import inside a function or
    an if escapes the planning tests above. Nothing prints while Snakemake
    parses but start_run, which says what planning has to say (SAYS)."""
    found = []
    for path in snakemake_files():
        for number, line, block in parse_time_lines(path):
            where = f"{path.relative_to(REPO)}:{number}: {line.strip()}"
            if re.match(r"\s+(import\s|from\s+\S+\s+import\s)", line):
                found.append(f"{where} (inside {block.split()[0]})")
            if re.search(r"\bprint\(", line) and path.name not in SAYS:
                found.append(where)
    assert found == []


@pytest.mark.parametrize("stage_name", STAGES)
def test_design_map_names_every_stage(stage_name):
    design = (REPO / "docs" / "design.md").read_text()
    assert f"membench/{stage_name}/" in design, f"docs/design.md's map lacks membench/{stage_name}/"
