#!/usr/bin/env python3
"""Figures-only at scale (`make bench`; not a test): how long Snakemake
takes to rebuild the report from stored runs, its peak memory, and the
sizes of what it writes, beside the targets.

Studies (each in its own temporary directory, generated first, untimed):
  dev16      the real 16-CPU runs in ../shared/data/dev16 (skipped if absent);
  64cpu      a 2-socket, 64-CPU node (2 x 16 cores x 2 SMT), threads 1-64 x
             none/close/spread, 60 runs per cell (bench/two_socket_64.yaml,
             tools/synthetic_runs.py, modes planted);
  colfax     config/colfax_stream.yaml at repeats: 1000 (27,000 repetitions)
             on a 4-socket, 120-CPU node (4 x 15 cores x 2 SMT): the Colfax
             paper's study size.
Timed: `snakemake --cores 1 --configfile <study config> --config
figures_only=True` in the study's directory (collect, analyse, figures,
report), wall time, CPU time (user + system of every process: less
sensitive than wall time to other load on a shared machine) and the peak
RSS of the largest process (Snakemake or one of its jobs: getrusage of the
waited-for children).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))

import synthetic_runs  # noqa: E402

TARGETS = {"wall_s": 60.0, "peak_rss_mb": 1536.0, "report_mb": 3.0, "figure_mb": 1.0}
DEV16 = REPO.parent / "shared" / "data" / "dev16"

# Runs a command, then prints its wall time and the largest RSS of it and
# its descendants (ru_maxrss of RUSAGE_CHILDREN, KiB on Linux).
MEASURE = """
import json, resource, subprocess, sys, time
start = time.monotonic()
rc = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=open("bench.log", "w"))
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"rc": rc, "wall_s": time.monotonic() - start, "cpu_s": usage.ru_utime + usage.ru_stime,
                  "peak_rss_mb": usage.ru_maxrss / 1024}))
"""


def prepare_dev16(work: Path) -> Path | None:
    if not (DEV16 / "runs").is_dir():
        return None
    target = work / "results" / "dev16"
    target.mkdir(parents=True)
    for part in ("runs", "topology.json", "environment.json"):
        source = DEV16 / part
        (shutil.copytree if source.is_dir() else shutil.copy)(source, target / part)
    subprocess.run(["chmod", "-R", "u+w", str(work)], check=True)
    shutil.copy(DEV16 / "config.yaml", work / "config.yaml")
    return work / "config.yaml"


def prepare_synthetic(work: Path, config: Path, machine: str, repeats: int | None) -> Path:
    synthetic_runs.write_study(config, synthetic_runs.MACHINES[machine], work, f"synthetic-{machine}", repeats)
    return work / "config.yaml"


def figures_only(work: Path, config: Path) -> dict:
    argv = [
        sys.executable, "-c", MEASURE, str(Path(sys.executable).parent / "snakemake"), "-s", str(REPO / "Snakefile"),
        "--directory", str(work), "--cores", "1", "--configfile", str(config), "--config", "figures_only=True",
    ]  # fmt: skip
    result = json.loads(subprocess.run(argv, cwd=work, capture_output=True, text=True, check=True).stdout)
    report = work / "results" / "report.html"
    figures = sorted((work / "results" / "figures").glob("*.svg"), key=lambda p: p.stat().st_size)
    runs = sum(1 for _ in (work / "results").glob("*/runs/**/r*.jsonl"))
    result.update(
        runs=runs,
        report_mb=report.stat().st_size / 1e6 if report.exists() else float("nan"),
        figure_mb=figures[-1].stat().st_size / 1e6 if figures else float("nan"),
        largest_figure=figures[-1].name if figures else "-",
    )
    if result["rc"] != 0:
        result["log_tail"] = (work / "bench.log").read_text()[-3000:]
    return result


def verdict(value: float, target: float) -> str:
    return "ok" if value <= target else "OVER"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--studies", nargs="+", default=["dev16", "64cpu", "colfax"], choices=["dev16", "64cpu", "colfax"])
    parser.add_argument("--colfax-repeats", type=int, default=1000)
    parser.add_argument("--keep", action="store_true", help="keep the study directories (printed)")
    args = parser.parse_args(argv)
    print("figures-only at scale: snakemake --cores 1 --config figures_only=True, on stored runs")
    print(f"targets: wall <= {TARGETS['wall_s']:.0f} s, peak RSS <= {TARGETS['peak_rss_mb'] / 1024:.1f} GB, "
          f"report <= {TARGETS['report_mb']:.0f} MB, every figure <= {TARGETS['figure_mb']:.0f} MB")  # fmt: skip
    failed = False
    for study in args.studies:
        work = Path(tempfile.mkdtemp(prefix=f"membench-bench-{study}-"))
        if study == "dev16":
            config = prepare_dev16(work)
            if config is None:
                print(f"dev16: skipped ({DEV16} not found)")
                continue
        elif study == "64cpu":
            config = prepare_synthetic(work, REPO / "bench" / "two_socket_64.yaml", "2x16x2", None)
        else:
            config = prepare_synthetic(work, REPO / "config" / "colfax_stream.yaml", "4x15x2", args.colfax_repeats)
        r = figures_only(work, config)
        if r["rc"] != 0:
            print(f"{study}: snakemake failed (rc {r['rc']}):\n{r['log_tail']}")
            failed = True
        else:
            print(
                f"{study:>7}: {r['runs']:>6} runs | wall {r['wall_s']:6.1f} s (<= {TARGETS['wall_s']:.0f}: "
                f"{verdict(r['wall_s'], TARGETS['wall_s'])}), CPU {r['cpu_s']:6.1f} s | peak RSS {r['peak_rss_mb']:6.0f} MB "
                f"(<= {TARGETS['peak_rss_mb']:.0f}: {verdict(r['peak_rss_mb'], TARGETS['peak_rss_mb'])}) | "
                f"report {r['report_mb']:.2f} MB ({verdict(r['report_mb'], TARGETS['report_mb'])}) | "
                f"largest figure {r['figure_mb']:.2f} MB {r['largest_figure']} ({verdict(r['figure_mb'], TARGETS['figure_mb'])})"
            )  # fmt: skip
        if args.keep:
            print(f"         kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
