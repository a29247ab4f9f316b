#!/usr/bin/env python3
"""What checking every stored record costs collect (`make bench`; not a
test): collect_runs of the Colfax study (config/colfax_stream.yaml at
repeats: 1000, 27,000 repetitions, ~108,000 records, synthetic runs of a
4-socket 120-CPU node; tools/synthetic_runs.py, generated first, untimed)
with every check (record schema, path, request: membench.store.stored) against
the same collect without them (the plain reader), in interleaved pairs in
one sitting. Reported: the median time of each and their ratio, against
the target: validation adds at most 20 % (ratio <= 1.20).

    .venv/bin/python bench/record_validation.py [--pairs 3] [--repeats 1000]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))
sys.path.insert(0, str(REPO / "workflow" / "scripts"))

import synthetic_runs  # noqa: E402
import yaml  # noqa: E402

from membench.plan import variants  # noqa: E402
from membench.store import collect
from membench.plan import checks as config_checks
from membench.core.atomic_files import read_jsonl, write_text_atomic  # noqa: E402
from membench.store.stored import Expected  # noqa: E402

TARGET = 1.20
MACHINE = "4x15x2"


def cpu_seconds() -> float:
    """User + system time of this process and its waited-for children."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def plain_collect(paths: list[str], output: Path, topology: Path) -> None:
    """collect_runs as it was before the checks: json.loads of every line."""
    import json

    topologies = {topology.parent.name: json.loads(topology.read_text())}
    records = (record for path in paths for record in read_jsonl(Path(path)))
    write_text_atomic(output, collect.records_table(records, topologies).to_csv(index=False))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=1000)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="membench-validation-") as tmp:
        work = Path(tmp)
        system = f"synthetic-{MACHINE}"
        synthetic_runs.write_study(REPO / "config" / "colfax_stream.yaml", synthetic_runs.MACHINES[MACHINE], work,
                                   system, args.repeats)  # fmt: skip
        table = variants.load_variants(REPO / "kernels" / "families" / "variants.yaml")
        config = yaml.safe_load((work / "config.yaml").read_text())
        _, cells = config_checks.load(config, REPO / "workflow" / "schemas" / "config.schema.yaml", table)
        results = work / "results" / system
        paths = sorted(str(p) for p in results.glob("runs/**/r*.jsonl"))
        topology = results / "topology.json"
        times: dict[str, list[float]] = {"checked": [], "plain": []}
        cpu: dict[str, list[float]] = {"checked": [], "plain": []}
        for pair in range(args.pairs):
            order = ("checked", "plain") if pair % 2 == 0 else ("plain", "checked")
            for kind in order:
                start, cpu_start = time.perf_counter(), cpu_seconds()
                if kind == "checked":
                    collect.collect_runs(paths, str(work / "checked.csv"), str(topology), Expected(cells, table))
                else:
                    plain_collect(paths, work / "plain.csv", topology)
                times[kind].append(time.perf_counter() - start)
                cpu[kind].append(cpu_seconds() - cpu_start)
                print(f"pair {pair + 1}: {kind:8s} {times[kind][-1]:7.2f} s wall, {cpu[kind][-1]:7.2f} s CPU", flush=True)
        same = (work / "checked.csv").read_text() == (work / "plain.csv").read_text()
    checked, plain = statistics.median(times["checked"]), statistics.median(times["plain"])
    ratio = checked / plain
    cpu_ratio = statistics.median(cpu["checked"]) / statistics.median(cpu["plain"])
    print(f"{len(paths)} repetition files; collect with checks {checked:.2f} s, without {plain:.2f} s "
          f"(medians of {args.pairs}); ratio {ratio:.3f} (target <= {TARGET:.2f}); same table: {same}")  # fmt: skip
    print(f"CPU time (this process and the checking one) with/without: {cpu_ratio:.2f} (the check runs in a second "
          f"process while the table is built; {len(os.sched_getaffinity(0))} CPUs available)")  # fmt: skip
    return 0 if ratio <= TARGET and same else 1


if __name__ == "__main__":
    sys.exit(main())
