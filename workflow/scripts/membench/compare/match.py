"""`make compare`: two result sets, matched cell by cell on their knobs.

A side is a run directory (holding results/), a results directory (holding
<system>/runs/), or either with ":<system>" to pick one system. Its records
are read through membench.store.collect (checked against the record
contract, placement classes from topology.json), never summary CSVs.

Cells match on their knobs (KNOBS, plus any other key stating a knob as
asked, membench.plan.knobs.states_asked, that both sides' records carry),
never on file, cell or experiment names; --ignore drops knobs from the
match (4k against thp, close against spread). For each matched cell, op
(and working set) and metric the statistics of membench.compare.verdicts;
cells whose verified placement differs between the sides are marked, and a
multimodal cell is compared per placement class when recorded placement
explains its modes (membench.analyse.modes), or said confounded if not.
"""

from __future__ import annotations

import json
import math
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import chi2_contingency

from membench.core import layout
from membench.plan import knobs as knob_table
from membench.store import collect
from membench.analyse import modes
from membench.compare.stats import METRICS
from membench.compare import verdicts as row_verdicts
from membench.compare.sweeps import per_process, sweep_levels, sweep_text
from membench.store.placement_classes import FACTORS, factor_levels
from membench.core.text import DASH

# The columns of the knobs records are matched on (membench.plan.knobs),
# with the point of the cell a record measures: its op after the kernel and
# variant, its working set (and sweep level) last.
_CELL_KNOBS = [k.shown_as for k in knob_table.matched()]
_AT = _CELL_KNOBS.index("variant") + 1
KNOBS = [*_CELL_KNOBS[:_AT], "op", *_CELL_KNOBS[_AT:], "working_set_bytes", "sweep_level"]
# Record keys of matched knobs shown under another column ("variant" resolves
# pages_requested; `pages` holds what was asked of the harness).
NOT_KNOBS = tuple(k.record for k in knob_table.matched() if k.shown_as != k.record)
MIN_CLASS_RUNS = 4  # per side: the fewest runs with which a 95 % interval exists
PLACEMENT_P = 0.01  # chi-square test of the class shares, per factor
PARALLEL_CELLS = 200  # cell directories (both sides) from which the sides are read in parallel
SEP = "\x1f"  # between the knobs of a key
ROW_KEYS = [
    "system", "system_base", "system_new", "experiment", "cell", "op", "metric", "unit", "working_set_bytes",
    "sweep_level", "placement_class", "n_base", "n_new", "median_base", "median_new", "ratio", "ratio_low", "ratio_high",
    "p_value", "spread", "detectable", "verdict", "role", "threshold", "confidence", "row_confidence", "n_needed", "placement_differs", "multimodal",
    "confounded",
    "notes", "knobs",
]  # fmt: skip


class SideError(ValueError):
    pass


@dataclass
class Side:
    label: str  # BASE or NEW
    spec: str  # as given on the command line
    results: Path
    system: str
    environment: dict | None = None
    topology: dict | None = None
    table: pd.DataFrame = field(default_factory=pd.DataFrame)
    levels: pd.DataFrame = field(default_factory=pd.DataFrame)  # placement class per ok run and factor, as text


def parse_side(spec: str) -> tuple[Path, str | None]:
    """"dir" or "dir:system" -> (results directory, system or None); a
    system's own directory (results/<system>, holding runs/) picks it."""
    path, system = spec, None
    if ":" in spec and not Path(spec).exists():
        path, system = spec.rsplit(":", 1)
    root = Path(path)
    if layout.holds_runs(root) and system is None:  # one system's directory, results/<system>
        return root.parent, root.name
    results = root / "results" if (root / "results").is_dir() else root
    if not results.is_dir():
        raise SideError(f"{spec}: no such directory")
    return results, system or None


def systems_in(results: Path) -> list[str]:
    return layout.systems_with_runs(results)


def pair_systems(base_spec: str, new_spec: str) -> tuple[list[tuple[str, Path, str, Path]], list[str]]:
    """[(base system, its results, new system, its results)] and a note per
    system found on one side only. One system each (picked or alone): those
    two; otherwise the systems of the same name."""
    (b_dir, b_sys), (n_dir, n_sys) = parse_side(base_spec), parse_side(new_spec)
    found = {}
    for label, spec, directory, system in (("BASE", base_spec, b_dir, b_sys), ("NEW", new_spec, n_dir, n_sys)):
        names = systems_in(directory)
        if system is not None and system not in names:
            raise SideError(f"{label} {spec}: no system {system!r} (systems with runs: {', '.join(names) or 'none'})")
        if not names:
            raise SideError(f"{label} {spec}: no results/<system>/runs/ under {directory}")
        found[label] = [system] if system else names
    if len(found["BASE"]) == 1 and len(found["NEW"]) == 1:
        return [(found["BASE"][0], b_dir, found["NEW"][0], n_dir)], []
    common = [s for s in found["BASE"] if s in found["NEW"]]
    notes = [f"system {s} only on BASE" for s in found["BASE"] if s not in common]
    notes += [f"system {s} only on NEW" for s in found["NEW"] if s not in common]
    if not common:
        raise SideError(f"no system in common: BASE has {found['BASE']}, NEW has {found['NEW']}; pick one with dir:system")
    return [(s, b_dir, s, n_dir) for s in common], notes


def _json_or_none(path: Path):
    return json.loads(path.read_text()) if path.is_file() else None


def read_side(label: str, spec: str, results: Path, system: str) -> Side:
    """The stored records of one system as a table, with placement classes."""
    topology = _json_or_none(layout.topology_path(results, system))
    files = [str(p) for p in layout.run_files(results, system)]
    table = collect.records_table(collect.read_records(files), {system: topology} if topology else None)
    ok = table[table["status"] == "ok"] if "status" in table else table.iloc[:0]
    levels = factor_levels(ok).fillna("unknown").astype(str)
    return Side(label, spec, results, system, _json_or_none(layout.environment_path(results, system)), topology, table, levels)


def read_sides(*sides: tuple[str, str, Path, str]) -> list[Side]:
    """read_side of each, in processes of their own when the runs are many
    (reading and classifying records is most of a large comparison's time)."""
    cells = sum(len(layout.cell_dirs(results, system)) for _, _, results, system in sides)
    if cells < PARALLEL_CELLS or (os.cpu_count() or 1) < 2:
        return [read_side(*side) for side in sides]
    with ProcessPoolExecutor(max_workers=min(len(sides), os.cpu_count() or 1)) as pool:
        return list(pool.map(read_side, *zip(*sides)))


# ----------------------------------------------------------------- matching


def _norm(value):
    if hasattr(value, "item"):  # numpy scalars
        value = value.item()
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def knob_columns(base: pd.DataFrame, new: pd.DataFrame, ignore: list[str]) -> tuple[list[str], list[str]]:
    """(knobs matched on, notes on knobs recorded on one side only)."""
    extra = sorted(c for c in set(base) & set(new) if knob_table.states_asked(c) and c not in KNOBS + list(NOT_KNOBS))
    knobs, notes = [], []
    for knob in KNOBS + extra:
        if knob in ignore:
            continue
        on_base, on_new = knob in base and base[knob].notna().any(), knob in new and new[knob].notna().any()
        if on_base and on_new or (knob in base and knob in new):
            knobs.append(knob)
        elif on_base or on_new:
            notes.append(f"{knob} is recorded on {'BASE' if on_base else 'NEW'} only: not matched on")
    return knobs, notes


def _pair_keys(base: pd.DataFrame, new: pd.DataFrame, knobs: list[str]) -> tuple[pd.Series, pd.Series]:
    """One text key per row of each side (the knobs' values, JSON-encoded,
    joined by SEP); built per distinct combination, not per row."""
    both = pd.concat([base.reindex(columns=knobs), new.reindex(columns=knobs)], ignore_index=True)
    if not knobs or both.empty:
        return pd.Series("", index=base.index, dtype=object), pd.Series("", index=new.index, dtype=object)
    texts = pd.DataFrame(index=both.index)
    for knob in knobs:
        column = both[knob]
        mapping = {v: json.dumps(_norm(v)) for v in column.dropna().unique()}
        texts[knob] = column.map(mapping).astype(object).fillna("null")
    ids = texts.groupby(knobs, sort=False, dropna=False).ngroup().to_numpy()
    first = texts.groupby(ids, sort=False).head(1)
    names = np.empty(ids.max() + 1, dtype=object)
    names[ids[first.index]] = [SEP.join(row) for row in first[knobs].itertuples(index=False)]
    keys = names[ids]
    return pd.Series(keys[: len(base)], index=base.index), pd.Series(keys[len(base):], index=new.index)


def _knob_text(key: str, knobs: list[str], leave_out: tuple[str, ...] = ()) -> str:
    values = [json.loads(v) for v in key.split(SEP)] if knobs else []
    return " ".join(f"{knob_table.knob_word(k)}={v}" for k, v in zip(knobs, values)
                    if v is not None and k not in leave_out)  # fmt: skip


def differing_knobs(b_only: pd.DataFrame, n_only: pd.DataFrame, knobs: list[str]) -> list[str]:
    """Knobs whose values on BASE-only cells never occur on NEW-only cells: changed on purpose, perhaps."""
    found = []
    for knob in knobs:
        if knob in ("op", "working_set_bytes", "sweep_level") or knob not in b_only or knob not in n_only:
            continue
        b_values, n_values = set(b_only[knob].dropna().astype(str)), set(n_only[knob].dropna().astype(str))
        if b_values and n_values and not b_values & n_values:
            found.append(knob)
    return found


def _ambiguous(side: Side, keys: pd.Series, ignore: list[str]) -> list[str]:
    """Ignored knobs that take several values under one key on a side:
    ignoring them would pool different measurements."""
    problems = []
    for knob in ignore:
        if knob not in side.table:
            continue
        counts = side.table[knob].astype(str).groupby(keys).nunique()
        if (counts > 1).any():
            word = knob_table.knob_word(knob)
            problems.append(f"{side.label} has cells that differ only in {word}: ignoring {word} would pool them")
    return problems


# ---------------------------------------------------------------- placement


def placement_difference(b_levels: pd.DataFrame, n_levels: pd.DataFrame) -> list[str]:
    """The factors whose class shares differ between the sides: every run
    of each side in one class and the classes differ, or a chi-square test
    of the shares with p < PLACEMENT_P."""
    found = []
    for factor in [f for f in b_levels if f in n_levels]:
        b, n = b_levels[factor].to_numpy(), n_levels[factor].to_numpy()
        if len(b) and (b == b[0]).all() and (n == b[0]).all():
            continue  # one class, the same on both sides
        b_counts, n_counts = pd.Series(b).value_counts(), pd.Series(n).value_counts()
        if set(b_counts.index) == set(n_counts.index) and len(b_counts) == 1:
            continue
        if len(b_counts) == 1 and len(n_counts) == 1:
            differs = True
        else:
            table = pd.concat([b_counts, n_counts], axis=1).fillna(0).to_numpy()
            differs = bool(chi2_contingency(table).pvalue < PLACEMENT_P)
        if differs:
            found.append(f"{FACTORS[factor]}: BASE {_shares(b_counts)}, NEW {_shares(n_counts)}")
    return found


def _shares(counts: pd.Series, limit: int = 3) -> str:
    shown = ", ".join(f"{level} ×{n}" for level, n in counts.head(limit).items())
    return shown + (f", {len(counts) - limit} more" if len(counts) > limit else "")


def explaining_factors(ok: pd.DataFrame, metric: str) -> tuple[int | None, str | None]:
    """(modes found, the placement factor that explains them or None)."""
    found = modes.find_modes(ok[metric])
    if found is None or len(found) < 2:
        return (len(found) if found else None), None
    row = modes.cell_modes(ok, metric, METRICS[metric][0])
    return len(found), (row["best_factor"] if row["verdict"] == "explained" else None)


# --------------------------------------------------------------------- rows


def _label(side: Side, group: pd.DataFrame, column: str) -> str:
    names = list(dict.fromkeys(group[column].dropna().astype(str))) if column in group else []
    return "; ".join(names[:2]) + (f" (+{len(names) - 2})" if len(names) > 2 else "") if names else DASH


def compare_sides(base: Side, new: Side, *, ignore: list[str]) -> dict:
    """The row groups of one pair of systems (each matched cell and metric,
    then its placement-class rows; statistics not yet computed: decide()
    does), its unmatched cells and notes; `ignore` names columns."""
    for side in (base, new):  # a sweep is compared per hierarchy level, not per point (README)
        levels = sweep_levels(side.table, side.topology)
        if levels.notna().any():
            side.table = side.table.assign(sweep_level=levels)
    b_table, n_table = base.table, new.table
    knobs, notes = knob_columns(b_table, n_table, ignore)
    if "sweep_level" in b_table and "sweep_level" in n_table:  # points pooled per level, in per_process
        knobs = [k for k in knobs if k != "working_set_bytes"]
    b_keys, n_keys = _pair_keys(b_table, n_table, knobs)
    problems = _ambiguous(base, b_keys, ignore) + _ambiguous(new, n_keys, ignore)
    if problems:
        raise SideError("; ".join(problems))
    b_ok_mask = (b_table["status"] == "ok") if "status" in b_table else pd.Series(False, index=b_table.index)
    n_ok_mask = (n_table["status"] == "ok") if "status" in n_table else pd.Series(False, index=n_table.index)
    b_groups = {k: g for k, g in b_table[b_ok_mask].groupby(b_keys[b_ok_mask], sort=False)}
    n_groups = {k: g for k, g in n_table[n_ok_mask].groupby(n_keys[n_ok_mask], sort=False)}
    groups, placement_cache = [], {}
    system = base.system if base.system == new.system else f"{base.system} → {new.system}"
    for key, b_group in b_groups.items():
        n_group = n_groups.get(key)
        if n_group is None:
            continue
        level = _norm(b_group["sweep_level"].iloc[0]) if "sweep_level" in b_group else None
        sweep, sweep_notes = sweep_text(b_group, n_group, level)
        if level is not None:
            common_ws = set(b_group["working_set_bytes"]) & set(n_group["working_set_bytes"])
            b_group = b_group[b_group["working_set_bytes"].isin(common_ws)]
            n_group = n_group[n_group["working_set_bytes"].isin(common_ws)]
        one_point = "working_set_bytes" in b_group and b_group["working_set_bytes"].nunique() == 1
        common = {
            "system": system, "system_base": base.system, "system_new": new.system,
            "experiment": _label(base, b_group, "experiment"), "cell": _label(base, b_group, "cell"),
            "op": _norm(b_group["op"].iloc[0]) if "op" in b_group else None,
            "working_set_bytes": _norm(b_group["working_set_bytes"].iloc[0]) if one_point else None,
            "sweep_level": sweep, "knobs": _knob_text(key, knobs), "_notes": sweep_notes,
        }  # fmt: skip
        for metric, (unit, higher) in METRICS.items():
            if metric not in b_group or metric not in n_group or b_group.empty:
                continue
            b_ok, n_ok = b_group[b_group[metric].notna()], n_group[n_group[metric].notna()]
            if level is not None:
                b_ok, n_ok = per_process(b_ok, metric), per_process(n_ok, metric)
            if b_ok.empty or n_ok.empty:
                continue
            levels = (base.levels.reindex(b_ok.index), new.levels.reindex(n_ok.index))
            groups.append(_metric_rows(common, b_ok, n_ok, levels, metric, unit, higher, placement_cache))
    unmatched = _unmatched(base, b_table, b_keys, set(n_groups), n_table, n_keys, knobs)
    unmatched += _unmatched(new, n_table, n_keys, set(b_groups), b_table, b_keys, knobs)
    if unmatched:
        b_only = b_table[b_ok_mask & ~b_keys.isin(set(n_groups))]
        n_only = n_table[n_ok_mask & ~n_keys.isin(set(b_groups))]
        changed = [knob_table.knob_word(k) for k in differing_knobs(b_only, n_only, knobs)]
        if changed:
            notes.append(f"the unmatched cells of the two sides differ in {', '.join(changed)}: to compare them, "
                         f"leave it out of the match (IGNORE={','.join(changed)}, --ignore {','.join(changed)})")  # fmt: skip
    return {"groups": groups, "unmatched": unmatched, "notes": notes, "knobs": knobs}


def _metric_rows(common, b_ok, n_ok, levels, metric, unit, higher, placement_cache) -> list[dict]:
    common = dict(common)
    notes = list(common.pop("_notes", []))
    row = {**common, "metric": metric, "unit": unit, "placement_class": "all", "_values": (b_ok[metric], n_ok[metric]),
           "_higher": higher}  # fmt: skip
    if "cell" in n_ok and set(n_ok["cell"].dropna()) != set(b_ok["cell"].dropna()):
        notes.append(f"NEW cell: {_label(None, n_ok, 'cell')}")
    if "threads" in b_ok and "threads" in n_ok and set(b_ok["threads"]) != set(n_ok["threads"]):
        notes.append(f"threads obtained: BASE {sorted(set(b_ok['threads']))}, NEW {sorted(set(n_ok['threads']))}")
    # the ops (and working sets) of one process share its placement: tested once per cell
    cache_key = (common["cell"], tuple(b_ok["repeat"]) if "repeat" in b_ok else len(b_ok),
                 tuple(n_ok["repeat"]) if "repeat" in n_ok else len(n_ok))  # fmt: skip
    if cache_key not in placement_cache:
        placement_cache[cache_key] = placement_difference(*levels)
    differs = placement_cache[cache_key]
    if differs:
        notes.append("placement differs: " + "; ".join(differs))
    (b_modes, b_factor), (n_modes, n_factor) = explaining_factors(b_ok, metric), explaining_factors(n_ok, metric)
    multimodal = [label for label, count in (("BASE", b_modes), ("NEW", n_modes)) if count and count > 1]
    extra, confounded = [], False
    if multimodal:
        factor = b_factor or n_factor
        counts = f"BASE {b_modes or DASH} mode(s), NEW {n_modes or DASH}"
        if factor:
            notes.append(f"multimodal ({counts}), explained by {FACTORS[factor]}: compared per class below")
            extra, skipped = _class_rows(row, b_ok, n_ok, levels, metric, factor)
            if skipped:
                notes.append(f"too few runs to compare in class(es): {', '.join(skipped)}")
            confounded = bool(differs)
        else:
            notes.append(f"multimodal ({counts}) and recorded placement does not explain the modes: "
                         "something unrecorded confounds this comparison")  # fmt: skip
            confounded = True
    elif differs:
        confounded = False  # one mode each side: the placement change is part of what is compared
    row.update(placement_differs=bool(differs), multimodal="+".join(multimodal) or "no",
               confounded=confounded, notes="; ".join(notes) or None)  # fmt: skip
    return [row, *extra]


def _class_rows(row, b_ok, n_ok, levels, metric, factor) -> tuple[list[dict], list[str]]:
    """One row per class of `factor` with enough runs on both sides."""
    b_levels = levels[0][factor] if factor in levels[0] else pd.Series("unknown", index=b_ok.index)
    n_levels = levels[1][factor] if factor in levels[1] else pd.Series("unknown", index=n_ok.index)
    rows, skipped = [], []
    for level in sorted(set(b_levels) | set(n_levels)):
        b_vals, n_vals = b_ok.loc[b_levels == level, metric], n_ok.loc[n_levels == level, metric]
        name = f"{FACTORS[factor]} {level}"
        if len(b_vals) < MIN_CLASS_RUNS or len(n_vals) < MIN_CLASS_RUNS:
            skipped.append(f"{name} (BASE {len(b_vals)}, NEW {len(n_vals)} runs)")
            continue
        rows.append({**row, "placement_class": name, "_values": (b_vals, n_vals),
                     "placement_differs": False, "multimodal": "no", "confounded": False,
                     "notes": f"runs of {name} only"})  # fmt: skip
    return rows, skipped


def _unmatched(side: Side, table, keys, other_keys: set, other_table, other_keys_all, knobs) -> list[dict]:
    """Cells with ok runs on `side` and none with the same knobs on the
    other side, one entry per cell (its ops and working sets counted)."""
    if table.empty or "status" not in table:
        return []
    ok = table["status"] == "ok"
    lonely = ok & ~keys.isin(other_keys)
    out = []
    if not lonely.any():
        return out
    other_status = {}
    if "status" in other_table and len(other_table):
        for key, group in other_table.groupby(other_keys_all, sort=False):
            reasons = group["reason"].dropna().astype(str).unique() if "reason" in group else []
            other_status[key] = f"{'/'.join(sorted(group['status'].unique()))}: {'; '.join(reasons[:2])}"
    cells = table[lonely].assign(_key=keys[lonely])
    for cell, group in cells.groupby(cells["cell"] if "cell" in cells else cells["_key"], sort=False):
        first = group["_key"].iloc[0]
        why = other_status.get(first, "no cell with these knobs")
        out.append({
            "only_on": side.label, "system": side.system, "experiment": _label(side, group, "experiment"),
            "cell": str(cell), "rows": int(group["_key"].nunique()),
            "knobs": _knob_text(first, knobs, ("op", "working_set_bytes", "sweep_level")),
            "other_side": why,
        })  # fmt: skip
    return out


VERDICT_ORDER = {"worse": 0, "better": 1, "undecided": 2, "same": 3}


def _effect(row: dict) -> float:
    ratio = row["ratio"]
    return -abs(math.log(ratio)) if ratio and np.isfinite(ratio) and ratio > 0 else 0.0


def decide(groups: list[list[dict]], *, threshold: float, confidence: float) -> list[dict]:
    """The verdict of every row (membench.compare.verdicts: Welch's interval
    on log values with Hsu's df, Holm over the gate rows so that
    `confidence` holds for them as a whole, Benjamini-Hochberg over the
    exploratory rest); rows ordered changes first."""
    rows = []
    for group in groups:
        for row in group:
            b_vals, n_vals = row.pop("_values")
            row.update(row_verdicts.row_statistics(b_vals, n_vals))
            rows.append(row)
    row_verdicts.decide_rows(rows, threshold=threshold, confidence=confidence)
    for row in rows:
        row.update(threshold=threshold, confidence=confidence)
    return ordered(groups)


def ordered(groups: list[list[dict]]) -> list[dict]:
    """Rows, changes first: each cell's row and its class rows (kept under
    it) by the gravest verdict among them (worse, better, undecided, same),
    then the largest effect first."""
    def rank(group):
        return min(VERDICT_ORDER[r["verdict"]] for r in group), _effect(group[0])

    return [row for group in sorted(groups, key=rank) for row in group]
