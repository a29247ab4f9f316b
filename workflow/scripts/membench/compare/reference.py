"""`make compare BASE=ref:NAME NEW=results` (either side): a run held
against one published machine of the reference atlas (references/machines,
membench.findings.atlas), NAME being a system id there.

A published number is one value with no run-to-run spread, so no verdict
(worse, better, same) can be decided against it: each row gives the ratio
and, beside it, the conditions each side was measured under and where the
number was published. Only the quantities the reference states are held:
a number whose quantity this run has no counterpart for is listed as such.

This run's quantities (run_quantities) are the ones a reference made from a
bundle also states (membench.compare.reference_entry), so the two read alike;
references/quantities.yaml names each with the published fields (quantity,
unit, the family's `kernel`, op or level) it stands beside:
  ("stream", op)   the best STREAM cell of that op: the median STREAM count
                   (gbps; STREAM's own bytes, no write-allocate) of its
                   undisturbed ok runs;
  "all-read"       the best all-reads mix cell (mix r1w0), likewise; where
                   the run has none, the highest bandwidth of
                   findings.json, said as such (as the first screen does);
  "idle latency"   findings.json's first idle latency (its headline);
  "loaded latency" findings.json's loaded-latency finding (the latency under
                   the heaviest load).
"""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path

import pandas as pd
import yaml

from membench.analyse.stats import undisturbed
from membench.compare import match
from membench.core import layout, paths
from membench.core.text import number
from membench.findings.atlas import load_atlas
from membench.store import bundle_check, collect
from membench.store.stored import StoredRunsError

QUANTITIES_FILE = paths.REPO / "references" / "quantities.yaml"
# Held against an all-reads number where the run has no all-reads mix, as the
# first screen does (membench.findings.atlas): said as such on every row.
STAND_IN = "highest bandwidth (against all reads)"
# The first screen's bandwidth group, by its name now and before issue 50
# (a bundle from an earlier membench says "highest memory traffic").
BANDWIDTH_GROUPS = ("highest bandwidth", "highest memory traffic")
TO_GBPS = {"GB/s": 1.0, "MB/s": 1e-3}  # STREAM's MB/s are 10^6 bytes a second
NO_VERDICT = (
    "A published number is one value with no run-to-run spread: no significance verdict is possible. "
    "Each row gives the ratio NEW/BASE and the conditions of both sides; read the ratio with them."
)


class ReferenceError(ValueError):
    """A ref:NAME that cannot be used; str() is the one line to print."""


def positive(value) -> bool:
    """A number a ratio can be taken of: a real, finite, above 0."""
    return type(value) in (int, float) and math.isfinite(value) and value > 0


def json_object(path: Path) -> dict | None:
    """A system file or findings.json as a JSON object
    (bundle_check.strict_json); None where absent; bundle_check.Unusable,
    saying why, where it is something else (the caller names the file)."""
    if not path.is_file():
        return None
    document = bundle_check.strict_json(path.read_bytes())
    if type(document) is not dict:
        raise bundle_check.Unusable(f"a JSON {type(document).__name__}, not an object")
    return document


def _json_object(path: Path) -> dict | None:
    """A results folder's system file or findings.json (json_object);
    ReferenceError where it is not a JSON object."""
    try:
        return json_object(path)
    except bundle_check.Unusable as error:
        raise ReferenceError(f"{path}: refused: {error}") from None


@functools.cache
def quantities() -> dict:
    """{key: the published fields it stands beside} (references/quantities.yaml):
    "stream op" (one quantity per op), "all-read", "idle latency", "loaded
    latency". Read when first asked, as the atlas is: a copy of the workflow
    without references/ still imports this module."""
    return yaml.safe_load(QUANTITIES_FILE.read_text())


def known_names(atlas: list[dict]) -> list[str]:
    return sorted({system["id"] for source in atlas for system in source.get("systems", [])})


def find_reference(name: str, atlas: list[dict] | None = None) -> dict:
    """{"id", "system", "numbers": [(source file's document, number)]}: every
    number the atlas holds for that system, from every source naming it."""
    atlas = load_atlas() if atlas is None else atlas
    system, numbers = None, []
    for source in atlas:
        for entry in source.get("systems", []):
            if entry["id"] == name:
                system = system or entry
                numbers += [(source, n) for n in source.get("numbers", []) if n["system"] == name]
    if system is None:
        raise ReferenceError(f"ref:{name}: no such published machine; known: {', '.join(known_names(atlas))}")
    return {"id": name, "system": system, "numbers": numbers}


def counterpart(reference_number: dict) -> tuple | str | None:
    """The run quantity a published number stands beside (by
    references/quantities.yaml), or None."""
    for key, wanted in quantities().items():
        if (reference_number["quantity"], reference_number.get("kernel")) != (wanted["quantity"], wanted["kernel"]) \
                or reference_number["unit"] not in wanted["units"]:  # fmt: skip
            continue
        if "ops" in wanted:
            op = reference_number.get("op")
            return (wanted["name"], op) if op in wanted["ops"] else None
        if reference_number.get("level") == wanted.get("level", reference_number.get("level")):
            return key
    return None


def _findings(results: Path) -> dict | None:
    return _json_object(layout.findings_path(results))


def _best_cell(ok: pd.DataFrame, column: str) -> dict | None:
    """The cell of highest median, with its n, range, threads and pages."""
    ok = ok[ok[column].notna()] if column in ok else ok.iloc[:0]
    if ok.empty:
        return None
    medians = ok.groupby("cell")[column].median()
    cell = medians.idxmax()
    runs = ok[ok["cell"] == cell]
    return {"value": float(medians[cell]), "unit": "GB/s", "n": int(len(runs)),
            "interval": [float(runs[column].min()), float(runs[column].max())], "cell": str(cell),
            "threads": int(runs["threads"].iloc[0]), "pages": str(runs["pages"].iloc[0])}  # fmt: skip


def run_quantities(results: Path, system: str) -> dict:
    """This run's quantities (the module's docstring) for one system:
    key -> {value, unit, n, interval, how, threads, pages}."""
    files = [str(p) for p in layout.run_files(results, system)]
    table = collect.records_table(collect.read_records(files)) if files else pd.DataFrame()
    ok = undisturbed(table[table["status"] == "ok"]) if "status" in table else table
    found, per_op, all_read = {}, quantities()["stream op"], quantities()["all-read"]
    for op in per_op["ops"]:
        best = _best_cell(ok[(ok["kernel"] == per_op["kernel"]) & (ok["op"] == op)], "gbps") if not ok.empty else None
        if best:
            found[(per_op["name"], op)] = {**best, "how": f"STREAM count of the best {op} cell, median of its undisturbed runs"}
    mix = _best_cell(ok[(ok["kernel"] == all_read["kernel"]) & (ok["op"] == all_read["op"])], "gbps") if not ok.empty else None
    if mix:
        found["all-read"] = {**mix, "label": "all-read bandwidth",
                             "how": f"all-reads mix ({all_read['op']}) of the best cell, median of its undisturbed runs"}
    findings = _findings(results) or {}
    mine = next((s for s in findings.get("systems", []) if s["system"] == system), {"headline": []})
    for row in mine["headline"]:
        # a bound (every run disturbed: "at most ...") or a sweep that never left the caches is no memory
        # latency to publish or compare against: said as such
        if row["group"] == "idle latency" and row["value"] is not None and "idle latency" not in found:
            how = f"findings.json: idle latency, {row['what']}, {row['how']}"
            found["idle latency"] = (unusable("every run of this run's counterpart was disturbed", how) if row.get("bound")
                                     else unusable("this run's chase never reached 8 x the last-level cache", how)
                                     if "short of" in row["how"] else {**_evidence(row), "how": how})  # fmt: skip
        if row["group"] in BANDWIDTH_GROUPS and row["value"] is not None and not row.get("bound") and "all-read" not in found:
            found["all-read"] = {**_evidence(row), "label": STAND_IN,
                                 "how": f"findings.json: {row['group']} ({row['what']}, "
                                 f"{row['how'].split(';')[0]}), not an all-reads mix: this run has none"}  # fmt: skip
    loaded = next((f for f in findings.get("findings", []) if f["system"] == system and f["kernel"] == quantities()["loaded latency"]["kernel"]), None)
    if loaded and loaded["value"] is not None and loaded["unit"] == "ns":
        found["loaded latency"] = {**_evidence(loaded), "how": f"findings.json: {loaded['text']}"}
    elif loaded and "disturbed" in loaded["text"]:
        found["loaded latency"] = unusable("every run of this run's counterpart was disturbed", f"findings.json: {loaded['text']}")
    return found


def unusable(why: str, how: str) -> dict:
    """A quantity this run measured that gives no median to stand for it
    (every run disturbed, a sweep that stayed in the caches): neither
    published (make reference) nor compared (said not held, with why)."""
    return {"value": None, "unit": None, "n": 0, "interval": None, "unusable": why, "how": how}


def _evidence(row: dict) -> dict:
    return {"value": float(row["value"]), "unit": row["unit"], "n": row["n"], "interval": row["interval"]}


def _conditions_text(conditions: dict) -> str:
    shown = [f"{k} {v}" for k, v in conditions.items() if v is not None and k != "scope"]
    return "; ".join([conditions.get("scope", "?"), *shown])


def _system_file(path: Path) -> dict:
    return _json_object(path) or {}


def _run_conditions(results: Path, system: str, mine: dict) -> str:
    topology = _system_file(layout.topology_path(results, system))
    environment = _system_file(layout.environment_path(results, system))
    where = f"{len(topology.get('cpus', []))} CPUs{' of a virtual machine' if environment.get('virtualized') else ''}"
    ran = f", {mine['threads']} threads, {mine['pages']} pages" if "threads" in mine else ""
    return f"{where} ({topology.get('cpu_model', 'model unknown')}){ran}; {mine['how']}"


def _rows(reference: dict, quantities: dict, results: Path, system: str, run_is_new: bool) -> tuple[list, list]:
    """(rows held, reference numbers this run has no counterpart for)."""
    rows, unheld = [], []
    for source, published in reference["numbers"]:
        key = counterpart(published)
        mine = quantities.get(key) if key else None
        what = " ".join(str(published.get(k)) for k in ("kernel", "op") if published.get(k)) + f" {published['quantity']}"
        if (mine or {}).get("unusable"):
            unheld.append(f"{what} {published['value']} {published['unit']} ({published.get('statistic')}): "
                          f"{mine['unusable']}, no median to set beside it")  # fmt: skip
            continue
        if not positive(published.get("value")) or not positive((mine or {}).get("value", 1.0)):
            which = f"published {published.get('value')!r}" if not positive(published.get("value")) else f"this run's {mine['value']!r}"
            unheld.append(f"{what} {published.get('value')!r} {published['unit']}: {which} is not a positive finite number; no ratio")
            continue
        if mine is None:
            why = "this run has no counterpart measured" if key else "membench has no counterpart quantity"
            unheld.append(f"{what} {published['value']} {published['unit']} ({published.get('statistic')}): {why}")
            continue
        theirs = published["value"] * TO_GBPS.get(published["unit"], 1.0)
        unit = "GB/s" if published["unit"] in TO_GBPS else published["unit"]
        base_value, new_value = (theirs, mine["value"]) if run_is_new else (mine["value"], theirs)
        rows.append({
            "quantity": mine.get("label") or (key if isinstance(key, str) else " ".join(key)), "unit": unit,
            "reference_value": theirs, "reference_statistic": published.get("statistic"),
            "reference_note": published.get("note"), "run_value": mine["value"], "run_n": mine["n"],
            "run_interval": mine["interval"], "ratio": new_value / base_value,
            "reference_conditions": _conditions_text(published.get("conditions") or {}),
            "run_conditions": _run_conditions(results, system, mine),
            "source": published.get("address") or source.get("address"), "date": published.get("date") or source.get("date"),
            "reference_file": source.get("reference"),
        })  # fmt: skip
    return rows, unheld


def compare_with_reference(base: str, new: str, out: Path, atlas: list[dict] | None = None) -> dict:
    """One side ref:NAME, the other a results folder (or dir:system); writes
    OUT/reference.json and OUT/reference.txt; returns the result. Any
    failure is a ReferenceError (a bad input, exit 2), never a crash that
    would read as a row got worse (exit 1)."""
    if out.exists() and not out.is_dir():
        raise ReferenceError(f"{out}: refused: a file, not a folder; OUT names the folder the comparison is written to")
    try:
        return _compare(base, new, out, atlas)
    except (ReferenceError, match.SideError, StoredRunsError):
        raise
    except Exception as error:  # noqa: BLE001 - a published machine or a run that cannot be held: bad input
        raise ReferenceError(f"{base} against {new}: refused: {type(error).__name__}: {' '.join(str(error).split())}") from None


def _compare(base: str, new: str, out: Path, atlas: list[dict] | None) -> dict:
    if base.startswith("ref:") and new.startswith("ref:"):
        raise ReferenceError(f"{base} and {new}: two published machines; one side must be a run (a results folder or a bundle)")
    run_is_new = base.startswith("ref:")
    name, run_spec = (base, new) if run_is_new else (new, base)
    reference = find_reference(name.removeprefix("ref:"), atlas)
    results, picked = match.parse_side(run_spec)
    systems = [picked] if picked else match.systems_in(results)
    if not systems:
        raise match.SideError(f"{run_spec}: no results/<system>/runs/ under {results}")
    result = {"reference": reference["id"], "description": reference["system"]["description"],
              "run": run_spec, "run_side": "NEW" if run_is_new else "BASE", "method": NO_VERDICT, "systems": []}  # fmt: skip
    for system in systems:
        rows, unheld = _rows(reference, run_quantities(results, system), results, system, run_is_new)
        result["systems"].append({"system": system, "rows": rows, "not_held": unheld})
    text = reference_text(result)
    out.mkdir(parents=True, exist_ok=True)
    (out / "reference.json").write_text(json.dumps(result, indent=1) + "\n")
    (out / "reference.txt").write_text(text)
    return result


def reference_text(result: dict) -> str:
    """What the terminal shows (and OUT/reference.txt holds)."""
    base, new = ("ref:" + result["reference"], result["run"])
    if result["run_side"] == "BASE":
        base, new = new, base
    lines = [f"BASE {base}  NEW {new}", f"Published machine {result['reference']}: {result['description']}", NO_VERDICT]
    for system in result["systems"]:
        lines.append("")
        lines.append(f"{system['system']}: {len(system['rows'])} of {len(system['rows']) + len(system['not_held'])} "
                     "published numbers held against this run")  # fmt: skip
        for row in system["rows"]:
            spread = f", range {number(row['run_interval'][0], 1)}-{number(row['run_interval'][1], 1)}" if row["run_interval"] else ""
            lines += [
                f"  {row['quantity']}: ratio NEW/BASE {row['ratio']:.2f}; published {number(row['reference_value'], 1)} "
                f"{row['unit']} ({row['reference_statistic']}), this run {number(row['run_value'], 1)} {row['unit']} "
                f"(median, n={row['run_n']}{spread})",
                f"    published under: {row['reference_conditions']}",
                f"    this run: {row['run_conditions']}",
                f"    source: {row['source']} ({row['date']}, references/machines/{row['reference_file']}.yaml)",
            ]  # fmt: skip
        lines += [f"  not held: {text}" for text in system["not_held"]]
    return "\n".join(lines) + "\n"
