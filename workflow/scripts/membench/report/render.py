"""The self-contained HTML report: Jinja2 template + inline SVG figures.

It only formats: every number comes from the findings stage's files
(results/summary/findings.json, sections.json; membench.findings), the
figures from the figures stage. Markup lives in reports/*.j2. One
Environment, autoescape on, StrictUndefined (a missing value is an error,
not an empty cell).
"""

from __future__ import annotations

import datetime
import importlib.metadata
import json
from pathlib import Path

import jinja2
from markupsafe import Markup

from membench.core import paths
from membench.core.atomic_files import write_text_atomic
from membench.core.text import number, percent, size_text


TEMPLATE_DIR = paths.TEMPLATE_DIR


def cpu_ranges(cpus) -> str:
    """[0, 1, 2, 3, 8] -> "0-3,8": node CPU lists stay short at 256 CPUs."""
    cpus = sorted(int(c) for c in cpus)
    parts, start = [], None
    for i, cpu in enumerate(cpus):
        if start is None:
            start = cpu
        if i + 1 == len(cpus) or cpus[i + 1] != cpu + 1:
            parts.append(str(start) if start == cpu else f"{start}-{cpu}")
            start = None
    return ",".join(parts)


def utc_text(seconds: float) -> str:
    """Unix seconds as "2026-11-26 10:24:32 UTC"."""
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def make_environment(template_dir: Path) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(template_dir),
        autoescape=jinja2.select_autoescape(["html", "j2"]),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["number"] = number
    env.filters["bytes"] = size_text
    env.filters["cpu_ranges"] = cpu_ranges
    env.filters["percent"] = percent
    env.filters["utc"] = utc_text
    return env


def build_context(derived: dict, figures: dict[str, dict[str, str]], provenance: dict) -> dict:
    """The template's context: the findings stage's sections and findings
    (membench.findings.document.derive, or their files read back), each
    experiment's figures beside its section. A modes table stands beside a
    placement figure only, whose runs and ticks it explains."""
    context = {**derived["sections"], "findings": derived["findings"], "provenance": provenance}
    context["experiments"] = [
        {
            **experiment,
            "figures": {kind: Markup(svg) for kind, svg in figures.get(experiment["name"], {}).items()},
            "modes": experiment["modes"] if "placement" in figures.get(experiment["name"], {}) else [],
        }
        for experiment in derived["sections"]["experiments"]
    ]
    return context


def read_figures(figures: list[str]) -> dict[str, dict[str, str]]:
    """SVG paths named <experiment>-<kind>.svg, as experiment -> kind -> text."""
    svgs: dict[str, dict[str, str]] = {}
    for path in map(Path, figures):
        experiment, kind = path.stem.rsplit("-", 1)
        svgs.setdefault(experiment, {})[kind] = path.read_text()
    return svgs


def render_report(
    *,
    template: str,
    stylesheet: str,
    findings_json: str,
    sections_json: str,
    figures: list[str],
    provenance: dict,
    output: str,
) -> None:
    """The report from the findings stage's two files and the figures."""
    derived = {
        "findings": json.loads(Path(findings_json).read_text()),
        "sections": json.loads(Path(sections_json).read_text()),
    }
    context = build_context(
        derived,
        read_figures(figures),
        {**provenance, "snakemake_version": importlib.metadata.version("snakemake")},
    )
    env = make_environment(Path(template).parent)
    context["stylesheet"] = Markup(Path(stylesheet).read_text())
    html = env.get_template(Path(template).name).render(**context)
    write_text_atomic(Path(output), html)
