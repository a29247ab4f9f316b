"""Cache-to-cache results by locality class and by CPU pair (pure
functions over the measurement table; the report's class table is
membench.findings.locality_tables').

results/summary/c2c_classes.csv holds, per system, experiment, variant, op
and class: the median hand-off (ns, half the round trip for cas and
two_line; for clean and dirty one dependent load of a line clean or
modified in the other core) over every ok record of the class (one record = one pair in one
repetition, itself a median over samples), its p10 / p90 across those
records, the median within-record p10 / p90 (sample spread), how many
distinct pairs and records, and the failed / skipped counts. These are the
numbers a hierarchy table reuses (hierarchy_rows: one row per op and class,
each named by the quantity its op measures).

results/summary/c2c_pairs.csv holds one row per pair (median over
repetitions), with where both CPUs sit: the heat map's data.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from membench.plan.c2c_pairs import CLASSES
from membench.analyse.stats import disturbed_mask
from membench.plan import families, knobs

GROUP = ["system", "experiment", "variant", "op", "pair_class"]
PAIR = ["system", "experiment", "variant", "op", "cpu_a", "cpu_b"]
PLACE = [f"cpu_{side}_{key}" for side in "ab" for key in ("core", "l2", "l3", "package", "node")]
COLUMNS = [
    *GROUP, "pairs", "records", "handoff_ns_median", "handoff_ns_p10", "handoff_ns_p90",
    "sample_p10_ns_median", "sample_p90_ns_median", "n_failed", "n_skipped", "n_disturbed",
    "samples", "samples_switched", "modes_unexplained",
]  # fmt: skip
# Repetitions of one pair whose hand-offs differ by this factor or more sit
# in different modes: on a quiet 2-vCPU guest one pair read 20-27 ns in
# some repetitions and 114-125 ns in others (cas; two_line 51-59 against
# 240-260), core-to-core-latency beside it read the same two modes, and no
# switch, steal or clock change told them apart: the host had placed the
# vCPUs elsewhere. Within a mode repetitions stayed within 1.4x.
MODE_GAP = 2.0
# what the class and pair tables read from measurements.csv
READ_COLUMNS = [
    *GROUP, "kernel", "status", "reason", "cpu_a", "cpu_b", "handoff_ns", "handoff_p10_ns", "handoff_p90_ns",
    knobs.asked("pair"), "disturbed", "samples", "samples_switched", *PLACE,
]  # fmt: skip
CLASS_ORDER = {name: i for i, name in enumerate(CLASSES)}


def c2c_records(table: pd.DataFrame) -> pd.DataFrame:
    if table.empty or "kernel" not in table or "pair_class" not in table:
        return pd.DataFrame(columns=READ_COLUMNS)
    records = table[table["kernel"].isin(families.named(lambda f: f.pairs))]
    # every c2c cell skipped (a class this host lacks): no measured column at all
    return records.reindex(columns=list(dict.fromkeys([*records.columns, *READ_COLUMNS])))


def class_table(table: pd.DataFrame) -> pd.DataFrame:
    """One row per (system, experiment, variant, op, class), nearest class
    first."""
    records = c2c_records(table)
    rows = []
    for key, group in records.groupby(GROUP, dropna=False, sort=False):
        ok = group[(group["status"] == "ok") & group["handoff_ns"].notna()]
        marked = disturbed_mask(ok)  # counted, left out of the class's numbers
        ok = ok[~marked]
        values = ok["handoff_ns"].astype(float)
        rows.append(
            {
                **dict(zip(GROUP, key)),
                "pairs": int(ok[["cpu_a", "cpu_b"]].drop_duplicates().shape[0]),
                "records": len(ok),
                "handoff_ns_median": values.median() if len(ok) else float("nan"),
                "handoff_ns_p10": values.quantile(0.1) if len(ok) else float("nan"),
                "handoff_ns_p90": values.quantile(0.9) if len(ok) else float("nan"),
                "sample_p10_ns_median": ok["handoff_p10_ns"].astype(float).median() if len(ok) else float("nan"),
                "sample_p90_ns_median": ok["handoff_p90_ns"].astype(float).median() if len(ok) else float("nan"),
                "n_failed": int((group["status"] == "failed").sum()),
                "n_skipped": int((group["status"] == "skipped").sum()),
                "n_disturbed": int(marked.sum()),
                # the samples a thread was switched out in, left out of
                # their records' statistics (handoff_basis "undisturbed")
                **{key: _total(ok, key) for key in ("samples", "samples_switched")},
                "modes_unexplained": _pair_modes(ok),
            }
        )
    out = pd.DataFrame(rows, columns=COLUMNS)
    if out.empty:
        return out
    order = out["pair_class"].map(lambda c: CLASS_ORDER.get(c, len(CLASSES)))
    return out.assign(_o=order).sort_values(["system", "experiment", "variant", "_o", "op"], kind="stable").drop(columns="_o")


def _pair_modes(records: pd.DataFrame) -> str | None:
    """What splits the repetitions of one pair into modes MODE_GAP apart,
    said as text ("21.9 ns x1, 124.3 ns x2 (pair 0-1)"); None when no pair
    split. Different pairs of a class may differ (that is the pair); one
    pair's repetitions differing so far is explained by nothing recorded."""
    said = []
    for (a, b), pair in records.groupby(["cpu_a", "cpu_b"], sort=True):
        values = pair["handoff_ns"].astype(float).sort_values().to_numpy()
        if len(values) < 2:
            continue
        cuts = [i + 1 for i in range(len(values) - 1) if values[i + 1] >= MODE_GAP * values[i]]
        if not cuts:
            continue
        bounds = [0, *cuts, len(values)]
        modes = [values[lo:hi] for lo, hi in zip(bounds, bounds[1:])]
        text = ", ".join(f"{float(np.median(m)):.1f} ns x{len(m)}" for m in modes)
        said.append(f"{text} (pair {int(a)}-{int(b)})")
    return "; ".join(said) if said else None


def _total(records: pd.DataFrame, key: str) -> float:
    """A count summed over records; NaN when none of them recorded it."""
    if key not in records:
        return float("nan")
    values = pd.to_numeric(records[key], errors="coerce")
    return float(values.sum()) if values.notna().any() else float("nan")


def pair_table(table: pd.DataFrame) -> pd.DataFrame:
    """One row per measured pair: the median hand-off over its ok
    repetitions, its class and where both CPUs sit."""
    records = c2c_records(table)
    ok = records[(records["status"] == "ok") & records["handoff_ns"].notna()]
    columns = [*PAIR, "pair_class", *PLACE, "repetitions", "handoff_ns_median", "full_matrix"]
    if ok.empty:
        return pd.DataFrame(columns=columns)
    ok = ok.assign(full_matrix=ok[knobs.asked("pair")] == "all")
    agg = ok.groupby([*PAIR, "pair_class", *PLACE, "full_matrix"], dropna=False, sort=False).agg(
        repetitions=("handoff_ns", "size"), handoff_ns_median=("handoff_ns", "median")
    )
    out = agg.reset_index()[columns]
    ints = ["cpu_a", "cpu_b", *PLACE]
    return out.astype({c: "Int64" for c in ints})




# The hierarchy table's cache-to-cache rows, each named by the quantity
# its op measures (issue 38: a half round trip is not one load, and a line
# only B read after the flush is Exclusive in B, not shared), in the order
# shown: the AWS paper's "modified in another core" is dirty (MLC's HITM).
HIERARCHY_QUANTITIES = {
    "dirty": "c2c load, line modified in another core (dirty, MLC's HITM)",
    "clean": "c2c load, clean line Exclusive in another core (clean, MLC's HIT)",
    "two_line": "c2c half round trip, modified line (two_line, c2clat's)",
    "cas": "c2c half round trip, atomic compare-and-swap (cas)",
}
HIERARCHY_CLASSES = {
    "same_l3": "same L3",
    "same_package": "same package, other L3",
    "other_package": "other package",
}
HIERARCHY_OPS = ("dirty", "clean", "two_line")
# Cache-line transfers in one hand-off as each op reports it: clean, dirty
# and cas move the line once; two_line's half round trip moves two lines.
# Ops of different counts are never one range.
TRANSFERS = {"clean": 1, "dirty": 1, "cas": 1, "two_line": 2}
# Classes whose two CPUs share a cache by the topology (-> what they share):
# a hand-off between them is a hit in it plus a snoop, well under memory.
SHARED_CACHE_CLASSES = {"smt": "core", "same_l2": "L2", "same_l3": "L3"}
# A transfer costing this share of the idle memory latency or more is "about
# the memory latency". A 2-vCPU Zen 2 guest whose sysfs said one L3 read
# clean / dirty hand-offs of 0.9-1.2 x its memory latency (the host had
# put the vCPUs on different dies); the margin leaves room for noise on
# both numbers.
MEMORY_LIKE_SHARE = 0.8


def memory_by_system(latencies: pd.DataFrame | None) -> dict[str, float]:
    """system -> its idle memory latency (ns) as the analyse stage's idle
    latency table has it (membench.analyse.concurrency.idle_latencies):
    local placement and the smallest pages first, the first row otherwise."""
    if latencies is None or latencies.empty or "ns" not in latencies:
        return {}
    out = {}
    for system, mine in latencies[latencies["ns"].notna()].groupby("system", sort=False):
        local = mine[mine["placement"] == "local"] if "placement" in mine else mine
        out[system] = float((local if not local.empty else mine)["ns"].iloc[0])
    return out


def memory_like(op: str, pair_class: str, handoff_ns, memory_ns) -> str | None:
    """The flag of a hand-off between CPUs that share a cache by the
    topology yet cost about the memory latency per transfer: the guest's
    topology and the latency disagree. None when it does not, or when
    either number is missing."""
    if pair_class not in SHARED_CACHE_CLASSES or op not in TRANSFERS or not memory_ns or handoff_ns is None:
        return None
    if pd.isna(handoff_ns):
        return None
    per_transfer = float(handoff_ns) / TRANSFERS[op]
    if per_transfer < MEMORY_LIKE_SHARE * float(memory_ns):
        return None
    each = f"{per_transfer:.1f} ns per transfer" if TRANSFERS[op] > 1 else f"{per_transfer:.1f} ns"
    return (f"{pair_class} {op} {each} against a memory latency of {float(memory_ns):.1f} ns: the topology says "
            f"these CPUs share a cache, the latency says the line came from about as far as memory (a host may "
            f"have put the vCPUs on different dies or sockets while the guest's sysfs shows one {SHARED_CACHE_CLASSES[pair_class]}; "
            f"or this chip's hand-off inside one {SHARED_CACHE_CLASSES[pair_class]} is itself about as slow as memory)")


def hierarchy_label(op: str, pair_class: str) -> str | None:
    """"c2c load, line modified in another core (dirty, MLC's HITM): same
    L3"; None for an op or class the hierarchy table has no row for."""
    if op not in HIERARCHY_QUANTITIES or pair_class not in HIERARCHY_CLASSES:
        return None
    return f"{HIERARCHY_QUANTITIES[op]}: {HIERARCHY_CLASSES[pair_class]}"


def _modes_said(modes) -> str:
    if not isinstance(modes, str) or not modes:
        return ""
    return (f"; UNEXPLAINED: repetitions split into modes {modes}, with no switch, steal or clock change "
            "recorded (on a VM the host may have moved the vCPUs; the median is in whichever mode most "
            "repetitions caught)")


def hierarchy_rows(classes: pd.DataFrame, op: str | None = None, memory_ns: dict[str, float] | None = None) -> dict[str, dict[str, dict]]:
    """system -> row label -> {"ns", "derivation"[, "flag"]} from
    c2c_classes.csv (membench.analyse.hierarchy.hierarchy's extra_rows): one
    row per op of HIERARCHY_OPS (or only `op`) and class, labelled by
    hierarchy_label with the quantity it measures; a class or op not
    measured on a system gives no row. memory_ns: system -> idle memory
    latency (memory_by_system); a row costing about it is flagged
    (memory_like)."""
    out: dict[str, dict[str, dict]] = {}
    if classes is None or classes.empty:
        return out
    disturbed = classes["n_disturbed"].fillna(0) if "n_disturbed" in classes else 0
    ops = (op,) if op is not None else HIERARCHY_OPS
    mine = classes[classes["op"].isin(ops) & ((classes["records"] > 0) | (disturbed > 0))]
    mine = mine.assign(_op=mine["op"].map(ops.index)).sort_values("_op", kind="stable")
    for row in mine.itertuples():
        label = hierarchy_label(row.op, row.pair_class)
        if label is None or label in out.get(row.system, {}):
            continue  # the first experiment measuring a class gives its row
        left_out = int(getattr(row, "n_disturbed", 0) or 0)
        if row.records == 0:
            out.setdefault(row.system, {})[label] = {
                "ns": None,
                "disturbed": True,
                "derivation": f"c2c {row.op}, experiment {row.experiment}: all {left_out} records disturbed "
                f"(membench.core.disturbance), none left to conclude from",
            }
            continue
        flag = memory_like(row.op, row.pair_class, row.handoff_ns_median, (memory_ns or {}).get(row.system))
        out.setdefault(row.system, {})[label] = {
            **({"flag": flag} if flag else {}),
            "ns": float(row.handoff_ns_median),
            "derivation": (
                f"c2c {row.op}, experiment {row.experiment}: median hand-off over {row.records} records of "
                f"{row.pairs} {row.pair_class} pair(s), p10–p90 {row.handoff_ns_p10:.1f}–{row.handoff_ns_p90:.1f} ns"
                + (f"; {left_out} disturbed records left out" if left_out else "")
                + (_modes_said(getattr(row, "modes_unexplained", None)))
            ),
        }
    return out
