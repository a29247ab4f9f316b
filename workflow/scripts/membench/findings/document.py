"""findings.json, findings.csv and sections.json: the findings stage's files.

findings.json is the stable interface (schema workflow/schemas/
findings.schema.yaml, `version` below): per system, every number the
report's first screen and the terminal show (`headline`), and one finding
per experiment with its evidence, the cells it comes from, one sentence,
its details, and the paper's own numbers beside it. findings.csv is the
same, flat: one row per headline number, finding and detail.
sections.json holds the rest of the report's tables; the report and the
terminal format these files and compute nothing.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import jsonschema
import numpy as np
import pandas as pd
import yaml

from membench.analyse.stats import undisturbed
from membench.core import paths
from membench.core.atomic_files import write_text_atomic
from membench.core.layout import superseded_counts
from membench.findings import answers, latency_answers, papers as paper_numbers
from membench.findings import atlas, evidence, first_screen
from membench.findings.first_screen import headline_rows
from membench.findings.headline import STANDINGS, best_cell, row_runs
from membench.analyse.c2c_summary import memory_by_system
from membench.findings.sections import build_sections, derived_tables
from membench.plan import budget, families, knobs
from membench.store.collect import read_measurements

VERSION = 1
SCHEMA = paths.SCHEMA_DIR / "findings.schema.yaml"


def plain(value):
    """JSON's own types: numpy scalars as Python numbers, NaN and NA as
    null, tuples as lists, keys as strings."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return None if math.isnan(value) or math.isinf(value) else float(value)
    if value is pd.NA or value is pd.NaT:
        return None
    return value


# The columns of a repetition the answers read (absent ones read as missing).
RUN_COLUMNS = ["system", "experiment", "cell", "kernel", "op", "threads", *knobs.columns("affinity", "policy", "pages"),
               "working_set_bytes", "gbps", "gbps_wa", "ns_per_load", "handoff_ns", "pair_class",
               "oversubscribed_cpus", "array_page_nodes"]  # fmt: skip


def _runs(measurements: pd.DataFrame | None, keep_disturbed: bool = False) -> pd.DataFrame:
    """The repetitions a conclusion may use: ok and not marked disturbed;
    keep_disturbed: every ok one, for the bounds disturbed runs give."""
    if measurements is None or measurements.empty or "status" not in measurements:
        return pd.DataFrame(columns=RUN_COLUMNS)
    ok = measurements[measurements["status"] == "ok"]
    runs = ok if keep_disturbed else undisturbed(ok)
    return runs.reindex(columns=list(runs.columns) + [c for c in RUN_COLUMNS if c not in runs])


def _idle_runs(runs: pd.DataFrame, latencies: pd.DataFrame, system: str) -> dict:
    mine = latencies[latencies["system"] == system] if not latencies.empty else latencies
    chase = runs[(runs["system"] == system) & (runs["kernel"].isin(families.named(lambda f: f.metric == families.LATENCY)))]
    return {(row["placement"], row["pages"]): latency_answers.idle_runs(chase, row) for _, row in mine.iterrows()}


def experiment_finding(name: str, spec: dict, system: str, cells, runs, modes, derived, c2c_classes, topology, idle) -> dict:
    """One experiment's finding on one system, whatever its family."""
    kernel = spec["kernel"]
    traits = families.family(kernel)
    mine = cells[(cells["experiment"] == name) & (cells["system"] == system)]
    here = runs[(runs["experiment"] == name) & (runs["system"] == system)] if not runs.empty else runs
    mine_modes = modes[(modes["experiment"] == name) & (modes["system"] == system)] if modes is not None and not modes.empty else None
    ec = derived["ec"]
    if not mine.empty and not (mine["n_ok"] > 0).any():
        found = answers.finding(traits.paper, None, [], "nothing measured: every cell skipped or failed (Skipped and failed says why)")
    elif here.empty and not mine.empty and (mine["n_ok"] > 0).any():
        ok = int(mine["n_ok"].sum())
        found = answers.finding(traits.paper, None, [], f"every one of its {ok} ok runs was disturbed: no answer from this sitting")
    elif traits.bandwidth:
        found = answers.bandwidth_answer(traits.paper, mine, here, mine_modes, ec[ec["system"] == system] if not ec.empty else ec,
                                         len(topology.get("cpus", [])), nodes=len(topology.get("nodes", [])) or None)  # fmt: skip
    elif traits.metric == families.LATENCY:
        latencies = derived["latencies"]
        level = next((h for h in derived["levels"] if h["system"] == system), None)
        found = latency_answers.latency_answer(here, latencies[latencies["system"] == system] if not latencies.empty else latencies, level)
    elif traits.metric == families.LOADED:
        first = next(iter(idle.values()), None)
        found = latency_answers.loaded_answer(mine, here, first)
    else:
        classes = c2c_classes[(c2c_classes["experiment"] == name) & (c2c_classes["system"] == system)] if c2c_classes is not None and not c2c_classes.empty else None
        found = latency_answers.c2c_answer(classes, here, memory_ns=memory_by_system(derived["latencies"]).get(system))
    return {"system": system, "experiment": name, "kernel": kernel, **found}


def _left_out_text(config: dict, experiment: str) -> str | None:
    """What a budget too small for every cell left out of this experiment
    (membench.plan.estimate, a first answer), or None."""
    out = [cell for cell in config.get(budget.LEFT_OUT) or () if cell.split("/", 1)[0] == experiment]
    if not out:
        return None
    return (f"{len(out)} cell{'s' * (len(out) != 1)} left out for the budget ({budget.seconds(config.get('budget')):.0f} s: "
            "a first answer; a larger BUDGET measures them)")


def all_disturbed(cells: pd.DataFrame) -> set[str]:
    """"bandwidth" / "latency" where cells of that kind ran but every ok run was marked disturbed."""
    out = set()
    for kind, test, column in (("bandwidth", lambda f: f.bandwidth, "gbps_median"),
                               ("latency", lambda f: f.metric == families.LATENCY, "ns_median")):  # fmt: skip
        mine = cells[cells["kernel"].isin(families.named(test)) & (cells["n_ok"] > 0)]
        if not mine.empty and (column not in mine or mine[column].isna().all()):
            out.add(kind)
    return out


def quiet(cells: pd.DataFrame) -> dict:
    """Was the machine quiet? The disturbed rule's marks over every ok
    repetition, and by what; more than QUIET_SHARE marked is not quiet.
    Runs beside other busy tasks (the rule cannot see memory) are counted
    and said, never part of the verdict."""
    ok = int(cells["n_ok"].sum()) if "n_ok" in cells else 0
    marked = int(cells["n_disturbed"].fillna(0).sum()) if "n_disturbed" in cells else 0
    causes: dict[str, int] = {}
    for text in cells["disturbed_by"].dropna() if "disturbed_by" in cells else []:
        for part in str(text).split("; "):
            kind, _, count = part.rpartition(" x")
            causes[kind] = causes.get(kind, 0) + (int(count) if count.isdigit() else 1)
    share = marked / ok if ok else 0.0
    by = ", ".join(f"{kind} ×{n}" for kind, n in sorted(causes.items(), key=lambda kv: -kv[1]))
    verdict = (f"quiet: {marked} of {ok} repetitions disturbed" if share <= QUIET_SHARE else
               f"not quiet: {marked} of {ok} repetitions disturbed ({by}); the numbers come from the {ok - marked} left")  # fmt: skip
    # what the rule cannot see: other tasks busy on other CPUs (memory side)
    beside = int(cells["n_neighbour"].fillna(0).sum()) if "n_neighbour" in cells else 0
    if beside:
        verdict += (f"; {beside} ran while other tasks kept other CPUs busy (a memory-side neighbour possible, "
                    "which the rule cannot see; kept)")  # fmt: skip
    return {"quiet": share <= QUIET_SHARE, "disturbed_share": share, "disturbed_by": by, "neighbour": beside,
            "verdict": verdict}  # fmt: skip


# More than this share of a run's repetitions marked disturbed: the machine was not quiet.
QUIET_SHARE = 0.05


def _read_bandwidth(cells: pd.DataFrame, rows: list[dict]) -> dict | None:
    """What to hold against published bandwidths: MLC's all-reads mix at
    the most threads where measured (its best cell on HEADLINE_RUNS
    undisturbed runs, else its best one-run cell, which atlas then holds
    against nothing), else the first screen's highest bandwidth."""
    mix = cells[(cells["op"] == "r1w0") & (cells["n_ok"] > 0)] if "gbps_median" in cells else cells.iloc[0:0]
    chosen = best_cell(mix) if not mix.empty else None
    if chosen is not None and chosen[1] != STANDINGS[2]:
        cell = chosen[0]
        return {"what": "all-read bandwidth (mix r1w0)", "value": float(cell["gbps_median"]), "threads": int(cell["threads"]),
                "runs": row_runs(cell)}  # fmt: skip
    if not mix.empty:  # measured, every run disturbed: nothing to hold against a published number
        return None
    top = next((r for r in rows if r["group"] == first_screen.BANDWIDTH_GROUP and r["value"] is not None and not r.get("bound")), None)
    if top is None:
        return None
    cell = cells[cells["cell"] == top["cells"][0]]
    threads = int(cell["threads"].iloc[0]) if not cell.empty else 0
    return {"what": f"highest bandwidth ({top['what']} {top.get('op', '')}, STREAM count)".replace(" ,", ","),
            "value": float(top["value"]), "threads": threads, "runs": int(top["n"] or 0)}  # fmt: skip


def _idle(rows: list[dict]) -> dict | None:
    row = next((r for r in rows if r["group"] == "idle latency" and r["value"] is not None and not r.get("bound")), None)
    return {"value": float(row["value"]), "runs": int(row["n"] or 0)} if row else None


def _versions(cells: pd.DataFrame, name: str, system: str) -> dict[str, float]:
    mine = cells[(cells["experiment"] == name) & (cells["system"] == system) & cells["gbps_median"].notna()] if "gbps_median" in cells else cells.iloc[0:0]
    return {row.variant: float(row.gbps_median) for row in mine.itertuples()}


def derive(
    *,
    config: dict,
    cells: pd.DataFrame,
    problems: pd.DataFrame,
    systems: dict[str, dict],
    measurements: pd.DataFrame | None = None,
    modes: pd.DataFrame | None = None,
    c2c_classes: pd.DataFrame | None = None,
    superseded: dict | None = None,
    stored: dict | None = None,
    papers: dict[str, dict] | None = None,
    interim: bool = False,
) -> dict:
    """{"findings": findings.json's content, "sections": sections.json's}, JSON-plain;
    in a run within a budget, each comparison's false-alarm rate spent over
    the looks its rounds take (membench.findings.evidence.looks; interim: a
    round's planner's look, not the last)."""
    with evidence.looks(budget.looks(config, evidence.MIN_RUNS), interim=interim):
        return _findings_and_sections(config, cells, problems, systems, measurements, modes, c2c_classes, superseded,
                                      stored, papers)  # fmt: skip


def _findings_and_sections(config, cells, problems, systems, measurements, modes, c2c_classes, superseded, stored,
                           papers) -> dict:
    runs, ok_runs = _runs(measurements), _runs(measurements, keep_disturbed=True)
    derived = derived_tables(config, cells, systems, c2c_classes, runs)
    sections = build_sections(config=config, cells=cells, problems=problems, systems=systems, modes=modes,
                              superseded=superseded, c2c_classes=c2c_classes, stored=stored, derived=derived)  # fmt: skip
    papers = paper_numbers.load_papers() if papers is None else papers
    out_systems, found = [], []
    # the first screen's choices become findings rows; sections.json keeps the rest
    for headline in sections.pop("headlines"):
        system = headline["system"]
        idle = _idle_runs(runs, derived["latencies"], system)
        rows = headline_rows(headline, runs, idle, all_disturbed(cells[cells["system"] == system]), ok_runs)
        verdicts = {v["experiment"]: v for v in headline["verdicts"]}
        for name, spec in config["experiments"].items():
            left_out = _left_out_text(config, name)
            if name not in verdicts:
                if left_out:
                    # no cell measured, so no section of its own: the link is the config, which holds the budget
                    found.append({"system": system, "experiment": name, "kernel": spec["kernel"], "line": left_out,
                                  **answers.finding(families.family(spec["kernel"]).paper, None, [], left_out),
                                  "beside_paper": [], "cell_count": 0, "alert": False, "link": "#config"})  # fmt: skip
                continue
            one = experiment_finding(name, spec, system, cells, runs, modes, derived, c2c_classes,
                                     systems[system].get("topology", {}), idle)  # fmt: skip
            level = next((h for h in derived["levels"] if h["system"] == system), None)
            one["beside_paper"] = paper_numbers.beside(one, papers, _versions(cells, name, system), level)
            verdict = verdicts[name]
            one.update(cell_count=verdict["cells"], alert=verdict["alert"], link=verdict["link"],
                       line="; ".join(t for t in (one["text"], verdict["text"], left_out) if t))  # fmt: skip
            found.append(one)
        references = atlas.references_beside(systems[system].get("topology", {}), systems[system].get("environment", {}),
                                             _read_bandwidth(cells[cells["system"] == system], rows), _idle(rows))  # fmt: skip
        rows += first_screen.reference_rows(references)
        out_systems.append({"system": system, "cpu_model": headline["cpu_model"], "cpus": headline["cpus"],
                            "nodes": headline["nodes"], "headline": rows, "references": references})  # fmt: skip
    totals = sections["totals"]
    span = {}
    if measurements is not None and "t_start" in measurements and measurements["t_start"].notna().any():
        span = {"first_start": float(measurements["t_start"].min()), "last_end": float(measurements["t_end"].max())}
    findings = {
        "schema": "membench-findings",
        "version": VERSION,
        "records": {**{k: totals[k] for k in ("cells", "ok", "skipped", "failed", "disturbed")}, **span, **quiet(cells)},
        "systems": out_systems,
        "findings": found,
    }
    return {"findings": plain(findings), "sections": plain(sections)}


def validate(findings: dict) -> None:
    """Against the schema; a finding that does not fit is a bug, said here."""
    jsonschema.validate(findings, yaml.safe_load(SCHEMA.read_text()))


CSV_COLUMNS = ["system", "kind", "experiment", "group", "what", "value", "unit", "n", "low", "high", "decided", "status", "text"]


def flat_rows(findings: dict) -> list[dict]:
    """findings.csv: one row per headline number, finding and detail."""
    rows = []

    def add(system, kind, experiment, group, what, item, text):
        interval = item.get("interval") or [None, None]
        n = item.get("n")
        rows.append({"system": system, "kind": kind, "experiment": experiment, "group": group, "what": what,
                     "value": item.get("value"), "unit": item.get("unit"), "n": "/".join(map(str, n)) if isinstance(n, list) else n,
                     "low": interval[0], "high": interval[1], "decided": item.get("decided"), "status": item.get("status"), "text": text})  # fmt: skip

    for system in findings["systems"]:
        for row in system["headline"]:
            add(system["system"], "headline", "", row["group"], row["what"], row, row["how"])
    for one in findings["findings"]:
        add(one["system"], "finding", one["experiment"], one["paper"], one["question"], one, one["text"])
        for item in one["details"]:
            add(one["system"], "detail", one["experiment"], one["paper"], item["label"], item, item["text"])
    return rows


def write_answers(*, config: dict, cells_csv: str, problems_csv: str, modes_csv: str | None, c2c_classes_csv: str | None,
                  measurements: list[str], system_files: dict[str, dict[str, str]], findings_out: str, findings_csv_out: str,
                  sections_out: str, stored: dict | None = None, interim: bool = False) -> dict:  # fmt: skip
    """The findings rule: read the analyse stage's files, write the three
    (interim: a round's planner drawing them, membench.findings.next_round)."""
    systems = {name: {kind: json.loads(Path(path).read_text()) for kind, path in files.items()} for name, files in system_files.items()}
    derived = derive(
        config=config,
        cells=pd.read_csv(cells_csv),
        problems=pd.read_csv(problems_csv),
        modes=pd.read_csv(modes_csv) if modes_csv else None,
        c2c_classes=pd.read_csv(c2c_classes_csv) if c2c_classes_csv else None,
        measurements=read_measurements(measurements, without=("memory_nodes",)) if measurements else None,
        systems=systems,
        stored=stored,
        superseded={name: superseded_counts(Path(files["topology"]).parent) for name, files in system_files.items()},
        interim=interim,
    )
    validate(derived["findings"])
    write_text_atomic(Path(findings_out), json.dumps(derived["findings"], indent=1, ensure_ascii=False) + "\n")
    write_text_atomic(Path(sections_out), json.dumps(derived["sections"], ensure_ascii=False) + "\n")
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(flat_rows(derived["findings"]))
    write_text_atomic(Path(findings_csv_out), text.getvalue())
    return derived
