"""One repetition of one cell: resolve the request against this host, run
the harness as a separate process, and store its records atomically.

A cell the host cannot run becomes `skipped` records with the reason; a
harness that fails validation or crashes becomes `failed` records. Neither
stops the pipeline: the report shows them.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import tempfile
import time
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path

from membench import SCHEMA_VERSION, __version__
from membench.plan import c2c_pairs, families
from membench.measure import auto_size, loaded_cpus, memory, options, quiet
from membench.plan import variants
from membench.plan.request import Request
from membench.core import paths
from membench.core.atomic_files import write_jsonl_atomic
from membench.core.store_errors import store_error
from membench.measure.stopping import Stopped, run_child
from membench.probe.topology import parse_cpulist

# Binding variables a user's shell may carry; the harness binds by itself.
BINDING_ENV = ("OMP_PROC_BIND", "OMP_PLACES", "GOMP_CPU_AFFINITY", "KMP_AFFINITY", "OMP_NUM_THREADS")
HARNESS_SKIPPED = 3
VARIANTS_FILE = paths.VARIANTS_FILE
# A harness ended by one of these was stopped, not broken: no record is
# written, so that a rerun measures the repetition again. (SIGKILL is not
# among them: the OOM killer sends it, and that is the cell's failure.)
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _thread_nodes(affinity: str, threads: int, allowed: list[int], topology: dict) -> set[int]:
    node_of = {c["cpu"]: c["node"] for c in topology["cpus"]}
    if affinity.startswith("cpus:"):
        cpus = parse_cpulist(affinity.removeprefix("cpus:"))[:threads]
    else:
        cpus = allowed
    return {node_of.get(cpu, 0) for cpu in cpus}


def remote_node(thread_nodes: set[int], topology: dict) -> int | None:
    """The memory node farthest (by the distance matrix) from the nodes the
    threads run on; None when every node holds threads."""
    candidates = [n for n in topology["nodes"] if n["node"] not in thread_nodes and n["memory_bytes"]]
    if not candidates:
        return None
    return max(candidates, key=lambda n: (sum(n["distances"][t] for t in thread_nodes), -n["node"]))["node"]


def node_cpus(node: int, allowed: list[int], topology: dict) -> list[int]:
    """The allowed CPUs of one node, one per physical core first and SMT
    siblings after (so "threads: node" with "affinity: node:N" fills cores)."""
    cpus = [c for c in topology["cpus"] if c["node"] == node and c["cpu"] in allowed]

    def sibling_rank(c):
        siblings = c.get("siblings", [c["cpu"]])
        return siblings.index(c["cpu"]) if c["cpu"] in siblings else 0

    return [c["cpu"] for c in sorted(cpus, key=lambda c: (sibling_rank(c), c.get("package", 0), c.get("core", c["cpu"]), c["cpu"]))]


def physical_cores(cpus: list[int], topology: dict) -> int:
    info = {c["cpu"]: (c.get("package", 0), c.get("core", c["cpu"])) for c in topology["cpus"]}
    return len({info.get(cpu, (0, cpu)) for cpu in cpus})


def resolve_threads(threads: int | str, affinity: str, allowed: list[int], topology: dict) -> int:
    """all = every allowed CPU; cores = one per physical core; node = one per
    core of the node the affinity names (node:N), else of node 0; node-smt =
    every allowed CPU of that node, SMT siblings included."""
    if threads == "all":
        return len(allowed)
    if threads == "cores":
        return physical_cores(allowed, topology)
    if threads in ("node", "node-smt"):
        node = int(affinity.removeprefix("node:")) if affinity.startswith("node:") else 0
        cpus = node_cpus(node, allowed, topology)
        return len(cpus) if threads == "node-smt" else physical_cores(cpus, topology)
    return threads


def resolve(request: Request, topology: dict, allowed: list[int]) -> tuple[dict, str | None]:
    """Concrete harness arguments for this host, or the reason it cannot run."""
    traits = families.family(request.kernel)
    if traits.pairs:
        return c2c_resolve(request, topology, allowed)
    affinity = request.affinity
    threads = resolve_threads(request.threads, request.affinity, allowed, topology)
    size = auto_size.resolve(request, topology)
    if affinity.startswith("node:"):
        node = int(affinity.removeprefix("node:"))
        cpus = node_cpus(node, allowed, topology)
        if not cpus:
            nodes = sorted({c["node"] for c in topology["cpus"]})
            return {"threads": threads, "size": size, "policy": request.policy, "affinity": affinity}, (
                f"affinity {affinity}: no usable CPUs on node {node} (nodes with CPUs: {nodes})"
            )
        affinity = "cpus:" + ",".join(map(str, cpus))
    if request.kernel in families.named(lambda f: f.metric == families.LOADED) and threads >= 2:  # the chaser's core carries no load
        cpus, why = loaded_cpus.place(request.threads, threads, affinity, allowed, topology)
        if why:
            return {"threads": threads, "size": size, "policy": request.policy, "affinity": affinity}, why
        threads, affinity = len(cpus), "cpus:" + ",".join(map(str, cpus))
    resolved = {"threads": threads, "size": size, "policy": request.policy, "affinity": affinity}
    if threads > len(allowed):
        return resolved, f"{threads} threads requested but only {len(allowed)} CPUs are available"
    if threads < traits.min_threads:  # loaded: one thread chases, the others load
        return resolved, f"{request.kernel} latency needs one chasing and at least one loading thread; {threads} requested"
    if affinity.startswith("cpus:"):
        listed = parse_cpulist(affinity.removeprefix("cpus:"))
        missing = sorted(set(listed) - set(allowed))
        if missing:
            return resolved, f"affinity {request.affinity}: CPUs {missing} are not available (allowed: {allowed})"
        if len(listed) < threads:
            return resolved, f"affinity {request.affinity} gives {len(listed)} CPUs for {threads} threads"
    if request.policy == "remote":
        nodes = _thread_nodes(affinity, threads, allowed, topology)
        node = remote_node(nodes, topology)
        if node is None:
            return resolved, (
                f"policy remote needs a memory node without threads; the threads use "
                f"nodes {sorted(nodes)} of {len(topology['nodes'])}"
            )
        resolved["policy"] = f"bind:{node}"
    return resolved, memory_node_problem(resolved["policy"], topology)


def memory_node_problem(policy: str, topology: dict) -> str | None:
    """Why a bind or preferred policy cannot place memory on this host (a
    node it does not have, or one without memory: a node of CPUs only), as
    the harness would say it, before a process is started."""
    kind, _, nodes = policy.partition(":")
    if kind not in ("bind", "preferred"):
        return None
    memory = {n["node"]: n["memory_bytes"] for n in topology["nodes"]}
    for node in map(int, nodes.split(",")):
        if node not in memory and node not in {c["node"] for c in topology["cpus"]}:
            return f"policy {policy}: NUMA node {node} does not exist on this machine (nodes: {sorted(memory)})"
        if not memory.get(node):
            return f"policy {policy}: NUMA node {node} has no memory (a node of CPUs only)"
    return None


def c2c_resolve(request: Request, topology: dict, allowed: list[int]) -> tuple[dict, str | None]:
    """A c2c cell: its pair's CPUs (sampled from this host's topology), the
    clean pool (membench.measure.auto_size)."""
    cpus, why = c2c_pairs.resolve(request.pair, request.pairs_per_class, topology, allowed)
    size = auto_size.resolve(request, topology)
    resolved = {"threads": len(cpus) if cpus else 2, "size": size, "policy": request.policy, "affinity": "none"}
    if cpus:
        resolved["affinity"] = "cpus:" + ",".join(map(str, cpus))
    return resolved, why


def harness_argv(binary: str, request: Request, resolved: dict, listing: dict | None = None) -> list[str]:
    """The harness's command line: each request field under the flag the
    binary's option table (`listing`, else its --list-options) names, the
    family's options only where its family lists them."""
    doc = listing if listing is not None else options.listing(binary)
    values = {
        "op": ",".join(request.ops),
        "threads": resolved["threads"],
        "affinity": resolved["affinity"],
        "policy": resolved["policy"],
        "pages": request.pages,
        "init": request.init,
        "size": resolved["size"],
        "ntimes": request.ntimes,
        "repeat": request.repeat,
        "system": request.system,
        "variant": request.variant,
        # "variant": the distance the variant is built with
        "prefetch-distance": None if request.prefetch_distance == "variant" else request.prefetch_distance,
        **{name: getattr(request, field) for name, field in options.FAMILY_FIELDS.items()},
    }
    return [str(binary), *options.argv(doc, values)]


def _placeholder_records(request: Request, resolved: dict, status: str, reason: str) -> list[dict]:
    """Records for a process that produced none of its own."""
    now = time.time()
    return [
        {
            "schema": SCHEMA_VERSION,
            "system": request.system,
            "kernel": request.kernel,
            "variant": request.variant,
            "op": op,
            "threads": resolved["threads"],
            "affinity": resolved.get("affinity", request.affinity),
            "policy": resolved["policy"],
            "pages": request.pages,
            "init": request.init,
            "size_bytes": resolved["size"],
            "repeat": request.repeat,
            "status": status,
            "reason": reason,
            "t_start": now,
            "t_end": now,
        }
        for op in request.ops
    ]


def run_harness(binary: str, request: Request, resolved: dict, log, run_process: Callable | None = None,
                placement: tuple[list[int], dict] | None = None) -> list[dict]:
    """Run the harness (through `run_process`, default run_child: it dies
    with this process) and turn its output into records. `placement`
    (allowed CPUs, topology): membench's own processes are kept off the
    CPUs the cell measures on while it runs (membench.measure.quiet), and
    every record says how much CPU they took (own_cpu_s, own_cpus)."""
    env = {k: v for k, v in os.environ.items() if k not in BINDING_ENV}
    try:
        argv = harness_argv(binary, request, resolved)
    except options.OptionsError as error:
        log.write(f"failed: {error}\n")
        return _placeholder_records(request, resolved, "failed", str(error))
    log.write(f"$ {' '.join(argv)}\n")
    log.flush()
    # Output to a file, not a pipe: nothing has to drain it while the
    # runner waits on the harness and on the parent at once.
    allowed, topo = placement or (sorted(os.sched_getaffinity(0)), {})
    measuring = quiet.measured_cpus(resolved["affinity"], resolved["threads"], allowed, topo)
    with tempfile.TemporaryFile("w+") as out:
        with quiet.kept_off(measuring, allowed) as own:
            returncode = (run_process or run_child)(argv, stdout=out, stderr=log, env=env)
        out.seek(0)
        stdout = out.read()
    if returncode < 0 and -returncode in STOP_SIGNALS:
        raise Stopped(f"the harness was stopped by {signal.Signals(-returncode).name}")
    records, garbage = [], []
    for line in stdout.splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            garbage.append(line)
    if garbage or not records:
        why = _exit_text(returncode)
        if garbage:
            why += f" and printed non-JSON output: {garbage[0][:200]!r}"
        return _placeholder_records(request, resolved, "failed", why)
    if returncode not in (0, 1, HARNESS_SKIPPED):
        for record in records:
            record["status"] = "failed"
            record["reason"] = record.get("reason") or _exit_text(returncode)
    for record in records:
        record.update(own)
    return records


def _exit_text(returncode: int) -> str:
    if returncode == -signal.SIGKILL:
        return (
            "harness killed by SIGKILL: the OOM killer's signal (the harness is its first choice, "
            "oom_score_adj 1000), or a kill -9"
        )
    return f"harness exited with code {returncode}"


def measure_cell(
    binary: str,
    topology: str,
    output: str,
    log,
    *,
    request: Request,
    experiment: str,
    cell_id: str,
    host_root: Path = Path("/"),
    variants_file: Path = VARIANTS_FILE,
    extra: dict | None = None,
    run_process: Callable | None = None,
) -> list[dict]:
    """Measure one repetition of one cell and write its records atomically.
    host_root is where /proc and /sys are read for the memory check; `log`
    is a path or an open text file; `extra` keys join every record."""
    with open(topology) as fh:
        topo = json.load(fh)
    allowed = sorted(os.sched_getaffinity(0))
    resolved, skip_reason = resolve(request, topo, allowed)
    traits = families.family(request.kernel)
    # Before the harness allocates anything: a cell larger than the host
    # can give is skipped, not OOM-killed.
    fit = None if skip_reason else _memory_fit(request, resolved, host_root, variants_file)
    skip_reason = fit.skip_reason if fit else skip_reason
    with open(log, "w") if isinstance(log, (str, Path)) else nullcontext(log) as log_fh:
        if fit and fit.note:
            log_fh.write(f"note: {fit.note}\n")
        if skip_reason:
            log_fh.write(f"skipped: {skip_reason}\n")
            records = _placeholder_records(request, resolved, "skipped", skip_reason)
        else:
            records = run_harness(binary, request, resolved, log_fh, run_process, (allowed, topo))
    for record in records:
        _label(record, request, topo, fit, experiment=experiment, cell_id=cell_id, extra=extra)
        if traits.pairs:
            record.update(c2c_pairs.pair_keys(record, topo, request.pair))
    try:
        write_jsonl_atomic(Path(output), records)
    except OSError as error:  # one line naming the path and what to do
        raise store_error("store", output, error) from None
    return records


def _memory_fit(request: Request, resolved: dict, host_root: Path, variants_file: Path) -> memory.Fit:
    """The memory check of a cell the host could run, by its family's
    memory model (kernels/families/variants.yaml)."""
    model = variants.families(variants.load_variants(variants_file))[request.kernel]["memory"]
    return memory.check(
        model, size=resolved["size"], threads=resolved["threads"], ops=request.ops, pages=request.pages,
        policy=resolved["policy"], root=Path(host_root), spacing=request.chase_spacing,
    )  # fmt: skip


def _label(record: dict, request: Request, topo: dict, fit: memory.Fit | None, *,
           experiment: str, cell_id: str, extra: dict | None) -> None:
    """One record's keys beside what the harness wrote: the memory check,
    the request, the cell, where and by what it was measured, and the
    caller's `extra` keys."""
    record.update(fit.record if fit else {})
    # The knobs as asked (affinity_requested, policy_requested, ...) beside
    # the values the harness was handed, which keep their bare names.
    record.update(
        # affinity_requested, threads_requested, ..., the variant's declared
        # feature columns (kernels/families/variants.yaml): the knob table's
        **request.as_recorded(),
        experiment=experiment,
        cell=cell_id,
        # The machine's memory nodes: what interleave:all must spread over.
        memory_nodes=[n["node"] for n in topo["nodes"] if n["memory_bytes"]],
        membench_version=__version__,
        # Scheduler context: which job and node measured (None locally).
        slurm_job_id=os.environ.get("SLURM_JOB_ID"),
        node_name=socket.gethostname(),
        **(extra or {}),
    )
