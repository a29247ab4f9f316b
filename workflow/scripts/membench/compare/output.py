"""`make compare`'s outputs: the terminal table, match.csv, match.json,
match.txt (the terminal table) and match.html, and the exit code
(1 when any row is worse, else 0)."""

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
from membench.compare import upfront
from membench.core.atomic_files import write_text_atomic
from membench.compare.rows import fmt, interval_text, spread_text, verdict_text, what_text

JSON_SCHEMA = 1
METHOD = (
    "ratio NEW/BASE: ratio of geometric means; interval: Welch's t on log values, at the level Holm's procedure "
    "over all rows stopped at; p: against the nearer threshold edge"
)
# rows shown per verdict in the terminal (match.csv has them all)
SHOWN = {"worse": 100, "better": 100, "undecided": 25, "same": 10}


def terminal_table(result: dict) -> str:
    lines = [f"membench compare  BASE={result['base']}  NEW={result['new']}",
             f"A row is worse or better when its interval lies wholly beyond ±{result['threshold']:.1%}, same when "
             f"wholly inside, undecided otherwise.", upfront.false_alarm_line(result),
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
        table.append([verdict_text(row), what_text(row), row["unit"], f"{row['n_base']}/{row['n_new']}",
                      fmt(row["median_base"]), fmt(row["median_new"]), interval_text(row), spread_text(row)])  # fmt: skip
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


def run_compare(base: str, new: str, out: Path, *, threshold: float = 0.02, confidence: float = 0.95,
                ignore: list[str] = (), html: bool = True, keep_disturbed: bool = False) -> tuple[dict, int]:
    """Compare, write every output under `out`; (result, exit code).
    Records the disturbed rule marks are left out unless keep_disturbed;
    each pair's notes say how many on each side."""
    pairs, system_notes = match.pair_systems(base, new)
    groups = []
    result = {"schema": JSON_SCHEMA, "base": base, "new": new, "threshold": threshold, "confidence": confidence,
              "method": METHOD, "ignored_knobs": list(ignore), "pairs": [], "rows": []}  # fmt: skip
    for b_system, b_dir, n_system, n_dir in pairs:
        b_side, n_side = match.read_sides(("BASE", base, b_dir, b_system), ("NEW", new, n_dir, n_system))
        if keep_disturbed:
            disturbed = {s.label: int(disturbed_mask(s.table).sum()) for s in (b_side, n_side)}
        else:
            (b_side, b_n), (n_side, n_n) = without_disturbed(b_side), without_disturbed(n_side)
            disturbed = {b_side.label: b_n, n_side.label: n_n}
        system_notes_here = [*system_notes, disturbed_note(disturbed, keep_disturbed)]
        found = match.compare_sides(b_side, n_side, ignore=list(ignore))
        rows = compare_conditions.conditions(b_side, n_side)
        result["pairs"].append({
            "system_base": b_system, "system_new": n_system, "headline": compare_conditions.headline(rows),
            "conditions": rows, "knobs": found["knobs"], "notes": found["notes"] + system_notes_here,
            "unmatched": found["unmatched"],
        })  # fmt: skip
        groups += found["groups"]
    result["rows"] = match.decide(groups, threshold=threshold, confidence=confidence)
    result["row_confidence"] = result["rows"][0]["row_confidence"] if result["rows"] else confidence
    result["counts"] = {v: sum(1 for r in result["rows"] if r["verdict"] == v) for v in compare_stats.VERDICTS}
    out = Path(out)
    frame = pd.DataFrame(result["rows"], columns=match.ROW_KEYS)
    write_text_atomic(out / "compare.csv", frame.to_csv(index=False))
    rows_json = [{k: _clean(r[k]) for k in match.ROW_KEYS} for r in result["rows"]]
    write_text_atomic(out / "compare.json", json.dumps({**result, "rows": rows_json}, indent=1, default=_clean) + "\n")
    if html:
        from membench.compare.html import write_html  # matplotlib only when drawn

        write_html(result, out / "compare.html")
    result["written"] = ", ".join(str(out / f) for f in ("compare.txt", "compare.csv", "compare.json")) + (
        f", {out / 'compare.html'}" if html else "")  # fmt: skip
    text = terminal_table(result)
    write_text_atomic(out / "compare.txt", text)
    return result, 1 if result["counts"]["worse"] else 0
