"""Stored runs of a many-core, multi-socket node that this 2-CPU machine
cannot measure: records shaped exactly like the harness's, for the cells of
a membench config, with modes planted on purpose (some explained by the
recorded placement, some not), plus the node's topology.json and
environment.json. For tests of the analysis and for the figures-only bench.

    python tools/synthetic_runs.py --config bench/two_socket_64.yaml \\
        --machine 2x16x2 --out /tmp/study          # results/<system>/... under /tmp/study

The bandwidth model is a plain one, not a simulator: each thread streams at
the rate of its core (shared with an SMT sibling, or with a second thread
on the same CPU), of its memory node (shared by every thread whose pages
are there) and, for remote pages, of the socket link; a STREAM loop ends
with its slowest thread. Planted, per cell (see PLANTS):
- affinity none: the OS may put two threads on one CPU (oversubscribed)
  and may place threads unevenly over the nodes; threads may migrate,
  which costs nothing here (a factor that varies and explains nothing);
- close at 8 threads: some runs get their pages on the other node (remote);
- spread at 32 threads: some runs get every page on node 0 (split);
- close at 16 threads: some runs are 20 % slower with nothing recorded
  different (the host's invisible placement of a VM, as on dev16).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "workflow" / "scripts"))

from membench import SCHEMA_VERSION  # noqa: E402
from membench.core import layout
from membench.plan import variants  # noqa: E402
from membench.plan import checks
from membench.plan import grammar
from membench.plan import rounds

OPS = {"copy": (2, 3), "scale": (2, 3), "add": (3, 4), "triad": (3, 4)}  # arrays moved, with write-allocate
CORE_GBPS = 11.0  # one thread alone on a core
SMT_CORE_GBPS = 13.0  # both siblings together
OVERSUBSCRIBED = 0.7  # a thread sharing its CPU keeps this share of its rate
NOISE = 0.015
# (affinity, threads) -> (what is planted, share of runs)
PLANTS = {
    ("close", 8): ("remote pages", 0.2),
    ("spread", 32): ("pages on node 0", 0.25),
    ("close", 16): ("hidden slowdown", 0.35),
}
HIDDEN_SLOWDOWN = 0.8
OS_OVERSUBSCRIBE = 0.15  # chance, affinity none and >= 4 threads
OS_MIGRATE = 0.3


@dataclass(frozen=True)
class Machine:
    packages: int
    cores: int  # per package
    smt: int
    node_gbps: float
    link_gbps: float

    @property
    def ncpus(self) -> int:
        return self.packages * self.cores * self.smt

    def cpu(self, package: int, core: int, thread: int) -> int:
        """Linux numbering: thread 0 of every core of every package first."""
        return thread * self.packages * self.cores + package * self.cores + core

    def where(self, cpu: int) -> tuple[int, int, int]:
        thread, rest = divmod(cpu, self.packages * self.cores)
        package, core = divmod(rest, self.cores)
        return package, core, thread

    def node(self, cpu: int) -> int:
        return self.where(cpu)[0]  # one node per package

    def topology(self) -> dict:
        cpus = []
        for cpu in range(self.ncpus):
            package, core, _ = self.where(cpu)
            siblings = [self.cpu(package, core, t) for t in range(self.smt)]
            cpus.append({"cpu": cpu, "core": core, "package": package, "node": package, "siblings": siblings})
        nodes = [
            {
                "node": n,
                "cpus": [c["cpu"] for c in cpus if c["node"] == n],
                "memory_bytes": 96 * 2**30,
                "distances": [10 if m == n else 21 for m in range(self.packages)],
            }
            for n in range(self.packages)
        ]
        llc = 32 * 2**20
        return {
            "cpu_model": f"synthetic {self.packages}-socket, {self.cores} cores x {self.smt} SMT per socket",
            "cpu_flags": ["avx", "avx2", "fma", "sse2"],
            "cpus": cpus,
            "cores": self.packages * self.cores,
            "packages": self.packages,
            "nodes": nodes,
            "caches": [
                {"level": 1, "type": "Data", "size_bytes": 48 * 2**10, "line_bytes": 64, "shared_cpus": [0]},
                {"level": 2, "type": "Unified", "size_bytes": 2**21, "line_bytes": 64, "shared_cpus": [0]},
                {"level": 3, "type": "Unified", "size_bytes": llc, "line_bytes": 64, "shared_cpus": nodes[0]["cpus"]},
            ],
            "llc_bytes": llc,
            "line_bytes": 64,
        }

    # ------------------------------------------------------------ placement

    def close_order(self) -> list[int]:
        return [self.cpu(p, c, t) for p in range(self.packages) for c in range(self.cores) for t in range(self.smt)]

    def spread_order(self) -> list[int]:
        per_node = [[self.cpu(p, c, t) for t in range(self.smt) for c in range(self.cores)] for p in range(self.packages)]
        return [per_node[p][i] for i in range(self.cores * self.smt) for p in range(self.packages)]

    def os_placement(self, threads: int, rng: random.Random) -> tuple[list[int], list[int]]:
        """(CPUs at the start, at the end) as a scheduler might: idle cores
        first, in random order; sometimes two threads on one CPU, sometimes
        threads moved."""
        first = [c for c in range(self.ncpus) if self.where(c)[2] == 0]
        rest = [c for c in range(self.ncpus) if self.where(c)[2] != 0]
        rng.shuffle(first)
        rng.shuffle(rest)
        end = (first + rest)[:threads]
        if threads >= 4 and rng.random() < OS_OVERSUBSCRIBE:
            end[rng.randrange(1, threads)] = end[0]
        start = list(end)
        if threads >= 2 and rng.random() < OS_MIGRATE:
            for i in rng.sample(range(threads), k=min(threads, 2)):
                start[i] = rng.randrange(self.ncpus)
        return start, end

    # ------------------------------------------------------------ bandwidth

    def gbps(self, cpus: list[int], page_node_of_thread: list[int]) -> float:
        """The STREAM count rate of the slowest thread, times the threads."""
        per_cpu: dict[int, int] = {}
        per_core: dict[tuple[int, int], set[int]] = {}
        for cpu in cpus:
            per_cpu[cpu] = per_cpu.get(cpu, 0) + 1
            package, core, _ = self.where(cpu)
            per_core.setdefault((package, core), set()).add(cpu)
        users: dict[int, int] = {}
        remote = 0
        for cpu, node in zip(cpus, page_node_of_thread):
            users[node] = users.get(node, 0) + 1
            remote += node != self.node(cpu)
        slowest = float("inf")
        for cpu, node in zip(cpus, page_node_of_thread):
            package, core, _ = self.where(cpu)
            rate = CORE_GBPS if len(per_core[(package, core)]) == 1 else SMT_CORE_GBPS / len(per_core[(package, core)])
            if per_cpu[cpu] > 1:
                rate *= OVERSUBSCRIBED
            rate = min(rate, self.node_gbps / users[node])
            if node != self.node(cpu):
                rate = min(rate * 0.6, self.link_gbps / remote)
            slowest = min(slowest, rate)
        return slowest * len(cpus)


MACHINES = {
    "2x16x2": Machine(packages=2, cores=16, smt=2, node_gbps=95.0, link_gbps=35.0),
    "4x15x2": Machine(packages=4, cores=15, smt=2, node_gbps=60.0, link_gbps=25.0),
    "2x4x2": Machine(packages=2, cores=4, smt=2, node_gbps=40.0, link_gbps=15.0),
}


def environment(system: str) -> dict:
    return {
        "hostname": system, "kernel": "synthetic", "virtualized": False, "thp_enabled": "madvise",
        "thp_defrag": "madvise", "hugepages": {"2048kB": {"nr": 0, "free": 0}}, "numa_balancing": 0,
        "zone_reclaim_mode": 0, "governor": "performance", "compiler": "synthetic", "slurm_job_id": None,
    }  # fmt: skip


def resolve_threads(threads, machine: Machine) -> int:
    if threads == "all":
        return machine.ncpus
    if threads == "cores":
        return machine.packages * machine.cores
    if threads == "node":
        return machine.cores
    return int(threads)


def plant_for(cell: grammar.Cell, threads: int) -> tuple[str, float] | None:
    return PLANTS.get((cell.affinity, threads))


def one_run(cell: grammar.Cell, machine: Machine, system: str, repeat: int, clock: list[float], table: dict) -> list[dict]:
    """The records of one repetition: one per op, sharing the placement,
    with every key the harness and membench write (record.schema.yaml)."""
    rng = random.Random(f"{cell.id}/{repeat}")
    threads = resolve_threads(cell.threads, machine)
    size = cell.size if isinstance(cell.size, int) else 4 * 32 * 2**20
    features = variants.features(table, cell.kernel, cell.variant)
    request = rounds.cell_request(cell, system, repeat, table)
    base = {
        "schema": SCHEMA_VERSION, "system": system, "experiment": cell.experiment, "cell": cell.id,
        "kernel": cell.kernel, "variant": cell.variant, "threads_requested": cell.threads, "threads": threads,
        "affinity": cell.affinity, "policy": cell.policy, "policy_requested": cell.policy,
        "pages": "4k" if cell.pages == "variant" else cell.pages, "pages_requested": cell.pages, "init": cell.init,
        "size_bytes": size, "size_requested": cell.size, "repeat": repeat, "load_delay_requested": 0,
        "prefetch_distance_requested": "variant", "ntimes": cell.ntimes, "features": features,
        "host": system, "node_name": system, "membench_version": "synthetic", "synthetic": True,
        "request_digest": rounds.digest(request), "affinity_requested": cell.affinity,
        "memory_nodes": list(range(machine.packages)), "chase_group_requested": None, "t_start": clock[0],
        "t_end": clock[0],
    }  # fmt: skip
    if threads > machine.ncpus:
        reason = f"{threads} threads requested but only {machine.ncpus} CPUs are available"
        return [{**base, "op": op, "status": "skipped", "reason": reason} for op in OPS]
    if cell.affinity == "none":
        start, cpus = machine.os_placement(threads, rng)
        bound = None
    else:
        order = machine.close_order() if cell.affinity == "close" else machine.spread_order()
        cpus = order[:threads]
        start, bound = list(cpus), list(cpus)
    nodes = [machine.node(c) for c in cpus]
    page_nodes_of = list(nodes)  # parallel first touch: each thread's share on its node
    plant = plant_for(cell, threads)
    planted = plant is not None and rng.random() < plant[1]
    if planted and plant[0] == "remote pages":
        page_nodes_of = [(n + 1) % machine.packages for n in nodes]
    elif planted and plant[0] == "pages on node 0":
        page_nodes_of = [0] * threads
    rate = machine.gbps(cpus, page_nodes_of)
    if planted and plant[0] == "hidden slowdown":
        rate *= HIDDEN_SLOWDOWN
    shares = {str(n): page_nodes_of.count(n) / threads for n in sorted(set(page_nodes_of))}
    records = []
    for op, (arrays, arrays_wa) in OPS.items():
        gbps = rate * (0.92 if arrays == 2 else 1.0) * rng.lognormvariate(0, NOISE)
        seconds = arrays * size / (gbps * 1e9)
        t_start = clock[0]
        clock[0] += seconds * cell.ntimes + 0.05
        records.append(
            {
                **base, "op": op, "status": "ok", "reason": None, "valid": True, "max_rel_error": 0.0,
                "gbps": gbps, "gbps_mean": gbps * 0.98, "gbps_wa": gbps * arrays_wa / arrays,
                "seconds": [seconds] * (cell.ntimes - 1), "array_elements": size // 8, "arrays": 3,
                "bytes_per_iter": arrays * size, "bytes_per_iter_wa": arrays_wa * size, "nontemporal": False,
                # every STREAM op writes one array, read first (write-allocate)
                "bytes_read_per_iter": (arrays_wa - 1) * size, "bytes_written_per_iter": size,
                "prefetch_distance": None, "cpu_feature": None, "cpus": cpus, "cpus_start": start,
                "cpus_bound": bound, "cpu_nodes": nodes, "page_nodes": shares, "pages_sampled": 768,
                "hugepage_fraction": 0.0, "migrated": start != cpus, "t_start": t_start, "t_end": clock[0],
                "timer_resolution_ns": 1, "timer_granularity_ns": 30, "min_ticks": seconds * 1e9 / 30,
                "pid": 1000 + repeat, "compiler": "synthetic", "cflags": "-O3", "harness_version": "synthetic",
                "omp_proc_bind": None, "omp_places": None,
                # not measured: nothing could be recorded of a disturbance
                "disturb_timed_s": None, "disturb_nivcsw": None, "disturb_wait_s": None, "disturb_steal_s": None,
                "disturb_steal_cpus": None, "disturb_others_running": None, "disturb_core_ghz": None,
            }
        )  # fmt: skip
    return records


def run_path(results: Path, system: str, cell: grammar.Cell, repeat: int) -> Path:
    """Where the pipeline stores a repetition (membench.core.layout.run_path)."""
    return results / system / "runs" / cell.id / f"r{repeat}.jsonl"


def study_config(config_path: Path, system: str, repeats: int | None = None) -> dict:
    """The config as written, for this system, with every experiment's
    repeats replaced when asked."""
    config = yaml.safe_load(config_path.read_text())
    config["system"] = system
    if repeats is not None:
        config["repeats"] = repeats
        for experiment in config["experiments"].values():
            experiment.pop("repeats", None)
    return config


def write_study(config_path: Path, machine: Machine, out: Path, system: str, repeats: int | None = None) -> dict:
    """Every repetition of every cell of the config under out/results/<system>/,
    the topology and environment beside them, and the config used
    (out/config.yaml). Returns what was planted: cell id -> plant."""
    config = study_config(config_path, system, repeats)
    table = variants.load_variants(REPO / "kernels" / "families" / "variants.yaml")
    _, cells = checks.load(config, REPO / "workflow" / "schemas" / "config.schema.yaml", table)
    results = out / "results"
    (results / system).mkdir(parents=True, exist_ok=True)
    (results / system / "topology.json").write_text(json.dumps(machine.topology(), indent=1))
    (results / system / "environment.json").write_text(json.dumps(environment(system), indent=1))
    (out / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    clock = [1.8e9]
    planted = {}
    for cell in cells:
        if cell.kernel != "stream":
            raise SystemExit(f"synthetic runs model the stream kernel only, not {cell.kernel} ({cell.id})")
        threads = resolve_threads(cell.threads, machine)
        if plant_for(cell, threads):
            planted[cell.id] = plant_for(cell, threads)[0]
        for repeat in range(cell.repeats):
            path = run_path(results, system, cell, repeat)
            path.parent.mkdir(parents=True, exist_ok=True)
            records = one_run(cell, machine, system, repeat, clock, table)
            path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in records))
    return planted


def write_affinity_study(out: Path, experiment: str, threads: list[int], repeats: int,
                         machine: str = "2x16x2", system: str = "two-socket") -> tuple[dict, Path]:
    """A STREAM study of threads x none/close/spread, written as write_study
    does; returns what was planted and out/results/<system>."""
    config = out / "in.yaml"
    config.write_text(yaml.safe_dump({
        "repeats": repeats, "ntimes": 3,
        "experiments": {experiment: {"kernel": "stream", "threads": threads,
                                     "affinity": ["none", "close", "spread"]}},
    }, sort_keys=False))  # fmt: skip
    planted = write_study(config, MACHINES[machine], out, system)
    return planted, out / "results" / system


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", type=Path, required=True, help="a membench config (stream experiments)")
    parser.add_argument("--machine", choices=sorted(MACHINES), default="2x16x2")
    parser.add_argument("--system", default=None, help="system name (default: synthetic-<machine>)")
    parser.add_argument("--repeats", type=int, default=None, help="override every experiment's repeats")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    system = args.system or f"synthetic-{args.machine}"
    planted = write_study(args.config, MACHINES[args.machine], args.out, system, args.repeats)
    print(json.dumps({"system": system, "out": str(args.out), "planted": planted}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
