"""`make compare`'s outputs: the terminal table, compare.csv, compare.json,
compare.txt (the terminal table) and compare.html, and the exit code: 1
when a gate row is worse (membench.compare.gate), 3 when no gate row could
be decided at all (fewer than 2 undisturbed runs a side in every one: a
comparison of nothing is no pass), else 0; 2 is bad input
(compare_results.py)."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pandas as pd

from membench.analyse.stats import disturbed_mask
from membench.compare import match
from membench.compare import conditions as compare_conditions
from membench.compare import stats as compare_stats
from membench.compare import gate as compare_gate
from membench.compare import upfront
from membench.core.atomic_files import write_text_atomic
from membench.compare.rows import interval_text, spread_text, verdict_text, what_text
from membench.core.text import DASH, percent, significant
from membench.plan import knobs

JSON_SCHEMA = 1
METHOD = (
    "ratio NEW/BASE: ratio of geometric means; interval: Welch's t on log values with Hsu's df (min n - 1), at the "
    "level Holm's procedure over the gate rows stopped at (exploratory rows: Benjamini-Hochberg's false-coverage "
    "level); p: against the nearer threshold edge"
)
NOTHING_DECIDED = 3  # exit code: no gate row had 2 runs a side
# rows shown per verdict in the terminal (match.csv has them all)
SHOWN = {"worse": 100, "better": 100, "undecided": 25, "same": 10}


def terminal_table(result: dict) -> str:
    lines = [f"membench compare  BASE={result['base']}  NEW={result['new']}",
             f"A row is worse or better when its interval lies wholly beyond ±{percent(result['threshold'], 1, spaced=False)}, same when "
             f"wholly inside, undecided otherwise.", upfront.false_alarm_line(result), result["gate_line"],
             *upfront.support_lines(result["rows"])]  # fmt: skip
    for pair in result["pairs"]:
        lines.append(f"\n[{pair['system_base']} → {pair['system_new']}] {pair['headline']}")
        for row in pair["conditions"]:
            if row["differs"]:
                lines.append(f"  {row['kind']:<8} {row['what']}: {row['base']}  →  {row['new']}")
        lines += [f"  note: {note}" for note in pair["notes"]]
    rows = result["rows"]
    counts = result["counts"]
    lines.append("\n" + ", ".join(f"{counts[v]} {v}" for v in compare_stats.VERDICTS) + f" (of {len(rows)} rows)")
    header = ["verdict", "cell / op", "metric", "n base/new", "median base", "median new", "ratio NEW/BASE [interval]", "spread"]
    table = []
    shown = {v: 0 for v in compare_stats.VERDICTS}
    hidden = {v: 0 for v in compare_stats.VERDICTS}
    for row in rows:
        if shown[row["verdict"]] >= SHOWN[row["verdict"]]:
            hidden[row["verdict"]] += 1
            continue
        shown[row["verdict"]] += 1
        table.append([verdict_text(row) + ("" if row.get("role") != "exploratory" else " (exploratory)"), what_text(row), row["unit"], f"{row['n_base']}/{row['n_new']}",
                      significant(row["median_base"]), significant(row["median_new"]), interval_text(row), spread_text(row)])  # fmt: skip
    if table:
        widths = [max(len(str(r[i])) for r in [header, *table]) for i in range(len(header))]
        for r in [header, *table]:
            lines.append("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip())
    more = [f"{n} more {v}" for v, n in hidden.items() if n]
    if more:
        lines.append("… and " + ", ".join(more) + " rows: every row is in match.csv")
    flagged = [r for r in rows if r["confounded"]]
    if flagged:
        lines.append(f"! {len(flagged)} row(s): placement confounds the comparison (see notes in match.csv)")
    marked = sum(1 for r in rows if r["placement_differs"])
    if marked:
        lines.append(f"≠ {marked} row(s): verified placement differs between the sides (placement_differs; notes say how)")
    unmatched = [u for pair in result["pairs"] for u in pair["unmatched"]]
    if unmatched:
        lines.append(f"\n{len(unmatched)} unmatched cell(s):")
        for u in unmatched[:30]:
            lines.append(f"  only on {u['only_on']}: {u['cell']} ({u['knobs']}); other side: {u['other_side']}")
        if len(unmatched) > 30:
            lines.append(f"  … and {len(unmatched) - 30} more (match.json lists every one)")
    if not result.get("decidable_gate_rows"):
        lines.append(f"\nNothing decided: no gate row had 2 undisturbed runs a side (exit code {NOTHING_DECIDED}).")
    edit = upfront.config_edit(rows)
    if edit:
        lines += ["", *edit]
    if result.get("written"):
        lines.append(f"\nwritten: {result['written']}")
    return "\n".join(lines) + "\n"


def _clean(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if hasattr(value, "item"):
        return _clean(value.item())
    return value


def all_disturbed_cells(side: match.Side) -> dict[str, tuple[str, int]]:
    """cell -> (its experiment, runs) for the cells of a side whose every ok
    run the disturbed rule marks."""
    table = side.table
    if table.empty or "cell" not in table or "status" not in table:
        return {}
    ok = table[table["status"] == "ok"]
    marked = disturbed_mask(ok)
    out = {}
    for cell, flags in marked.groupby(ok["cell"]):
        if len(flags) and flags.all():
            experiment = ok.loc[flags.index, "experiment"].iloc[0] if "experiment" in ok else DASH
            out[str(cell)] = (str(experiment), int(len(flags)))
    return out


def disturbed_cell_row(cell: str, experiment: str, sides: dict[str, int], system: str) -> dict:
    """One row for a cell whose every run on a side was disturbed: said so,
    never two "only on" cells."""
    said = " and ".join(f"all {n} runs on {label}" for label, n in sides.items())
    return {**{k: None for k in match.ROW_KEYS}, "system": system, "experiment": experiment, "cell": cell,
            "metric": DASH, "unit": DASH, "placement_class": "all", "n_base": 0,
            "n_new": 0, "ratio": math.nan, "ratio_low": math.nan,
            "ratio_high": math.nan, "verdict": "undecided", "role": "gate", "placement_differs": False,
            "confounded": False, "multimodal": "no",
            "notes": f"not compared: the disturbed rule marked {said} (KEEP_DISTURBED=1 compares them anyway)"}  # fmt: skip


def without_disturbed(side: match.Side) -> tuple[match.Side, int]:
    """The side less its repetitions the disturbed rule marks
    (membench.core.disturbance), and how many those were."""
    marked = disturbed_mask(side.table)
    if not marked.any():
        return side, 0
    kept = side.table[~marked]
    levels = side.levels[side.levels.index.isin(kept.index)]
    return dataclasses.replace(side, table=kept, levels=levels), int(marked.sum())


def disturbed_note(counts: dict[str, int], kept: bool) -> str:
    """The line `make compare` says of disturbed repetitions, per side."""
    sides = ", ".join(f"{label} {n}" for label, n in counts.items())
    if kept:
        return f"disturbed records kept in the comparison (KEEP_DISTURBED=1): {sides}"
    return f"disturbed records left out (KEEP_DISTURBED=1 keeps them): {sides}"


def _write_outputs(result: dict, out: Path, html: bool) -> None:
    """compare.csv, .json, .html (when drawn) and .txt under `out`; the
    result says which it wrote."""
    frame = pd.DataFrame(result["rows"], columns=match.ROW_KEYS)
    write_text_atomic(out / "compare.csv", frame.to_csv(index=False))
    rows_json = [{k: _clean(r[k]) for k in match.ROW_KEYS} for r in result["rows"]]
    write_text_atomic(out / "compare.json", json.dumps({**result, "rows": rows_json}, indent=1, default=_clean) + "\n")
    if html:
        from membench.compare.html import write_html  # matplotlib only when drawn

        write_html(result, out / "compare.html")
    result["written"] = ", ".join(str(out / f) for f in ("compare.txt", "compare.csv", "compare.json")) + (
        f", {out / 'compare.html'}" if html else "")  # fmt: skip
    write_text_atomic(out / "compare.txt", terminal_table(result))


def run_compare(base: str, new: str, out: Path, *, threshold: float = 0.02, confidence: float = 0.95,
                ignore: list[str] = (), html: bool = True, keep_disturbed: bool = False) -> tuple[dict, int]:
    """Compare, write every output under `out`; (result, exit code).
    Records the disturbed rule marks are left out unless keep_disturbed;
    each pair's notes say how many on each side."""
    pairs, system_notes = match.pair_systems(base, new)
    gate_cells, findings_read = compare_gate.named_cells(list(dict.fromkeys(d for _, b, _, n in pairs for d in (b, n))))
    groups, lost_cells = [], []
    result = {"schema": JSON_SCHEMA, "base": base, "new": new, "threshold": threshold, "confidence": confidence,
              "method": METHOD, "ignored_knobs": list(ignore), "pairs": [], "rows": []}  # fmt: skip
    for b_system, b_dir, n_system, n_dir in pairs:
        b_side, n_side = match.read_sides(("BASE", base, b_dir, b_system), ("NEW", new, n_dir, n_system))
        lost = {} if keep_disturbed else {s.label: all_disturbed_cells(s) for s in (b_side, n_side)}
        if keep_disturbed:
            disturbed = {s.label: int(disturbed_mask(s.table).sum()) for s in (b_side, n_side)}
        else:
            (b_side, b_n), (n_side, n_n) = without_disturbed(b_side), without_disturbed(n_side)
            disturbed = {b_side.label: b_n, n_side.label: n_n}
        system_notes_here = [*system_notes, disturbed_note(disturbed, keep_disturbed)]
        found = match.compare_sides(b_side, n_side, ignore=[knobs.column_named(word) for word in ignore])
        gone = {cell for cells in lost.values() for cell in cells}
        unmatched = [u for u in found["unmatched"] if u["cell"] not in gone]
        for cell in sorted(gone):
            sides = {label: cells[cell][1] for label, cells in lost.items() if cell in cells}
            experiment = next(cells[cell][0] for cells in lost.values() if cell in cells)
            lost_cells.append(disturbed_cell_row(cell, experiment, sides, b_system))
        rows = compare_conditions.conditions(b_side, n_side)
        result["pairs"].append({
            "system_base": b_system, "system_new": n_system, "headline": compare_conditions.headline(rows),
            "conditions": rows, "knobs": found["knobs"], "notes": found["notes"] + system_notes_here,
            "unmatched": unmatched,
        })  # fmt: skip
        groups += found["groups"]
    for group in groups:
        for row in group:
            row["_gate"] = compare_gate.is_gate(row, gate_cells)
    result["rows"] = match.decide(groups, threshold=threshold, confidence=confidence)
    for row in lost_cells:
        row.update(threshold=threshold, confidence=confidence, role="gate" if compare_gate.is_gate(row, gate_cells) else "exploratory")
    result["rows"] += lost_cells
    gate_rows = [r for r in result["rows"] if r.get("role") == "gate"]
    result["row_confidence"] = min((r["row_confidence"] for r in gate_rows if r.get("row_confidence")), default=confidence)
    result["gate_line"] = compare_gate.gate_line(gate_cells, findings_read, result["rows"])
    result["counts"] = {v: sum(1 for r in result["rows"] if r["verdict"] == v) for v in compare_stats.VERDICTS}
    decidable = [r for r in gate_rows if (r["n_base"] or 0) >= 2 and (r["n_new"] or 0) >= 2]
    result["decidable_gate_rows"] = len(decidable)
    _write_outputs(result, Path(out), html)
    if any(r["verdict"] == "worse" for r in gate_rows):
        return result, 1
    return result, 0 if decidable else NOTHING_DECIDED
