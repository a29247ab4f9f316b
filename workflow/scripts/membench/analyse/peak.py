"""Theoretical peak bandwidth per system, where it comes from, and every
bandwidth as a share of it.

Sources, the first that says something wins, and the source is always
named: the config (`systems.<name>.peak`: channels x MT/s x bytes per
transfer per socket, or `socket_gbps` directly; optionally the interconnect
per link and direction), then the probe (environment.json `memory_peak`:
`dmidecode -t memory`, membench.probe.dmidecode; on Arm, or the SoC's row
of references/soc_memory.yaml, membench.probe.soc_memory). Neither: the
peak is unknown, and no line is drawn nor share invented.

The rule of a cell's peak: local and interleaved traffic against the memory
peak of the NUMA nodes holding its pages, which is bound by the node that
carries the largest share: with the system's peak split evenly over its
nodes with CPUs, node_gbps / share of that node (the minimum over nodes of
node_gbps_i / share_i), in the median run. Pages split 94/6 over two nodes
give node_gbps / 0.94, not two nodes' peak: node 0 carries 94 % of the
traffic and saturates first. Remote traffic against the interconnect
(links x GB/s per link and direction) when the config gives it, else the
memory peak of the pages' nodes. The traffic compared is what the memory
moved: GB/s with write-allocate reads where the kernel has them.
"""

from __future__ import annotations

import json
import math

import pandas as pd

from membench.analyse.caches import past_caches
from membench.analyse.concurrency import placement_class
from membench.plan import families, knobs
from membench.core.text import percent

PAGE_SHARE = 0.05  # a node holds a cell's pages from this share of the sample on (said beside the bound)


def _cpu_nodes(topology: dict) -> int:
    return max(1, sum(1 for node in topology.get("nodes", []) if node.get("cpus")))


def _soc_derivation(found: dict) -> str:
    """How a per-SoC table peak was reached (membench.probe.soc_memory), with its sources."""
    sockets, per_socket = len(found["socket_gbps"]), found["socket_gbps"][0]
    if "stated" in found:
        how = f"{found['stated']}: {per_socket:g} GB/s per socket"
    else:
        how = (f"{found['channels_per_socket'][0]} channels × {found['mts'][0]} MT/s × "
               f"{found['bytes_per_transfer'][0]} B = {per_socket:.1f} GB/s per socket")  # fmt: skip
    return (f"{found['soc']} ({found['matched']}; {found['memory']}): {how}, {sockets} socket{'s' * (sockets != 1)}; "
            f"sources: {', '.join(found.get('sources', []))}")  # fmt: skip


def system_peak(name: str, settings: dict | None, topology: dict, environment: dict) -> dict:
    """One system's peak: config first, then the probe; or unknown, and why."""
    nodes = _cpu_nodes(topology)
    stated = (settings or {}).get("peak") or {}
    out = {"system": name, "nodes": nodes, "interconnect_gbps": None, "interconnect": None}
    if stated.get("interconnect_gbps"):
        links = stated.get("interconnect_links", 1)
        out["interconnect_gbps"] = links * stated["interconnect_gbps"]
        out["interconnect"] = f"{links} link{'s' * (links != 1)} × {stated['interconnect_gbps']:g} GB/s per direction"
    if "socket_gbps" in stated or "channels" in stated:
        sockets = stated.get("sockets", topology.get("packages", 1))
        if "socket_gbps" in stated:
            per_socket, how = float(stated["socket_gbps"]), f"{stated['socket_gbps']:g} GB/s per socket"
        else:
            width = stated.get("bytes_per_transfer", 8)
            per_socket = stated["channels"] * stated["mts"] * width / 1000
            how = f"{stated['channels']} channels × {stated['mts']} MT/s × {width} B = {per_socket:.1f} GB/s per socket"
        return {**out, "known": True, "source": f"config (systems.{name}.peak)", "socket_gbps": per_socket,
                "sockets": sockets, "total_gbps": per_socket * sockets, "node_gbps": per_socket * sockets / nodes,
                "derivation": f"{how}, {sockets} socket{'s' * (sockets != 1)}", "caveats": []}  # fmt: skip
    probed = environment.get("memory_peak")
    if probed is None:
        return {**out, "known": False, "source": None,
                "reason": "not probed (environment.json predates the peak probe) and not stated in the config"}  # fmt: skip
    if not probed.get("known"):
        return {**out, "known": False, "source": None, "reason": f"{probed['reason']}; not stated in the config"}
    sockets = len(probed["socket_gbps"])
    per_socket = probed["socket_gbps"][0] if sockets == 1 else max(probed["socket_gbps"])
    if probed.get("soc"):  # Arm: the SoC's row of references/soc_memory.yaml
        return {**out, "known": True, "source": f"probe (per-SoC table: {probed['soc']})", "socket_gbps": per_socket,
                "sockets": sockets, "total_gbps": probed["total_gbps"], "node_gbps": probed["total_gbps"] / nodes,
                "derivation": _soc_derivation(probed), "caveats": probed.get("caveats", [])}  # fmt: skip
    rates = "/".join(map(str, probed["mts"]))
    return {**out, "known": True, "source": "probe (dmidecode -t memory)", "socket_gbps": per_socket,
            "sockets": sockets, "total_gbps": probed["total_gbps"], "node_gbps": probed["total_gbps"] / nodes,
            "derivation": f"{probed['channels']} populated channels ({'+'.join(map(str, probed['channels_per_socket']))} per socket) × "
                          f"{rates} MT/s × {'/'.join(map(str, probed['bytes_per_transfer']))} B = {probed['total_gbps']:.1f} GB/s, "
                          f"{probed['dimms']} {'/'.join(probed['dimm_types'])} DIMMs",
            "caveats": probed.get("caveats", [])}  # fmt: skip


def system_peaks(systems: dict[str, dict], settings: dict | None) -> dict[str, dict]:
    """system -> its peak, from {"topology", "environment"} per system and
    the config's `systems:` map."""
    settings = settings or {}
    return {
        name: system_peak(name, settings.get(name), files.get("topology", {}), files.get("environment", {}))
        for name, files in systems.items()
    }


def nodes_holding_pages(page_nodes: pd.Series) -> float:
    """The median over runs of how many nodes hold >= PAGE_SHARE of the
    sampled pages (page_nodes: JSON text or dicts, node -> share)."""
    counts = []
    for value in page_nodes.dropna():
        shares = json.loads(value) if isinstance(value, str) else value
        if isinstance(shares, dict) and shares:
            counts.append(sum(1 for share in shares.values() if share >= PAGE_SHARE))
    return float(pd.Series(counts).median()) if counts else math.nan


def page_node_bound(page_nodes: pd.Series) -> float:
    """The median over runs of 1 / the largest node's share of the sampled
    pages: how many nodes' worth of memory peak the traffic can draw on
    before its busiest node saturates (1 for one node, 2 for an even split
    over two, 1.06 for 94/6). NaN when no run sampled its pages."""
    bounds = []
    for value in page_nodes.dropna():
        shares = json.loads(value) if isinstance(value, str) else value
        total = sum(float(v) for v in shares.values()) if isinstance(shares, dict) else 0.0
        if total > 0:
            bounds.append(total / max(float(v) for v in shares.values()))
    return float(pd.Series(bounds).median()) if bounds else math.nan


def _traffic(cells: pd.DataFrame, stat: str) -> pd.Series:
    wa = cells.get(f"gbps_wa_{stat}", pd.Series(math.nan, index=cells.index))
    return wa.where(wa.notna(), cells[f"gbps_{stat}"])


def _nodes_said(used: int, bound: float, nodes: int) -> str:
    """"1 of 2 nodes", or for an uneven split "2 of 2 nodes hold pages, the
    busiest 94 %: bound 1.06 nodes' peak"."""
    plural = "s" * (nodes != 1)
    if abs(bound - round(bound)) < 0.01 and round(bound) == used:
        return f"{used} of {nodes} node{plural}"
    return f"{used} of {nodes} node{plural} hold pages, the busiest {percent(1 / bound)}: bound {bound:.2f} nodes' peak"


def cell_shares(cells: pd.DataFrame, peaks: dict[str, dict]) -> pd.DataFrame:
    """The bandwidth cells that have a peak, with peak_gbps, peak_of (what
    the peak is), traffic_gbps (mean), peak_share (mean traffic / peak)
    and peak_share_best (the fastest run / peak)."""
    chases = families.named(lambda f: f.metric in (families.LATENCY, families.LOADED))
    # in-cache cells are held against no memory peak (membench.analyse.caches)
    bandwidth = past_caches(cells[~cells["kernel"].isin(chases) & (cells["n_ok"] > 0)])
    rows = []
    for index, row in bandwidth.iterrows():
        peak = peaks.get(row["system"])
        if not peak or not peak["known"]:
            continue
        used = row.get("page_nodes_used", math.nan)
        bound = row.get("page_node_bound", math.nan)
        if pd.isna(used):
            if peak["nodes"] != 1:
                continue  # which nodes' memory served the cell is not recorded
            used = 1
        used = int(min(max(used, 1), peak["nodes"]))
        if pd.isna(bound):
            bound = used  # stored summaries from before the bound: the node count
        bound = min(max(float(bound), 1.0), float(peak["nodes"]))
        if placement_class(str(row[knobs.asked("policy")])) == "remote" and peak["interconnect_gbps"]:
            rows.append((index, peak["interconnect_gbps"], f"interconnect, {peak['interconnect']}"))
        else:
            kind = "memory" if placement_class(str(row[knobs.asked("policy")])) != "remote" else "memory (interconnect not stated)"
            rows.append((index, peak["node_gbps"] * bound, f"{kind}, {_nodes_said(used, bound, peak['nodes'])}"))
    if not rows:
        return bandwidth.iloc[0:0].assign(peak_gbps=[], peak_of=[], traffic_gbps=[], peak_share=[], peak_share_best=[])
    index, values, names = zip(*rows)
    out = bandwidth.loc[list(index)].copy()
    out["peak_gbps"], out["peak_of"] = list(values), list(names)
    out["traffic_gbps"] = _traffic(out, "mean")
    out["peak_share"] = out["traffic_gbps"] / out["peak_gbps"]
    out["peak_share_best"] = _traffic(out, "max") / out["peak_gbps"]
    return out


def best_shares(shares: pd.DataFrame) -> list[dict]:
    """Per system and kernel family, the cell whose mean traffic came
    closest to its peak: the summary's "best share per family"."""
    shares = shares[shares["peak_share"].notna()] if not shares.empty else shares  # every run disturbed
    if shares.empty:
        return []
    best = shares.loc[shares.groupby(["system", "kernel"], sort=False)["peak_share"].idxmax()]
    return [
        {"system": r.system, "family": r.kernel, "share": r.peak_share, "traffic_gbps": r.traffic_gbps, "peak_gbps": r.peak_gbps,
         "peak_of": r.peak_of, "experiment": r.experiment, "variant": r.variant, "op": r.op, "threads": int(r.threads)}
        for r in best.itertuples()
    ]  # fmt: skip


def concurrency_needed(ec: pd.DataFrame, shares: pd.DataFrame, line_bytes: dict[str, int]) -> pd.DataFrame:
    """Effective concurrency rows with lines_for_peak (peak x idle latency /
    line size: what reaching the peak would keep in flight) and
    lines_share (the lines measured as a share of it); NaN without a peak
    or a latency."""
    if ec.empty:
        return ec
    keys = ["system", "cell", "op"]
    peak = shares[keys + ["peak_gbps"]] if not shares.empty else pd.DataFrame(columns=keys + ["peak_gbps"])
    out = ec.merge(peak, on=keys, how="left")
    lines = out["system"].map(line_bytes).astype(float)
    out["lines_for_peak"] = out["peak_gbps"].astype(float) * out["latency_ns"] / lines
    out["lines_share"] = out["lines_in_flight"] / out["lines_for_peak"]
    return out
