"""The membench binaries a comparison with another tool runs, built with
the pipeline's own build commands (plan/variants.py's standalone
commands, as the build rule runs them), and the progress line every
comparison prints. Shared by bench/compare_*.py."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "workflow" / "scripts"))

from membench.plan import variants  # noqa: E402

KERNELS = REPO / "kernels"


def log(msg=""):
    print(msg, flush=True)


def load_table() -> dict:
    return variants.load_variants(KERNELS / "families" / "variants.yaml")


def build_one(table: dict, family: str, variant: str, outdir: Path) -> Path:
    """outdir/FAMILY-VARIANT; a failed build ends the script with the compiler's words."""
    out = outdir / f"{family}-{variant}"
    commands = variants.standalone_commands(table, family, variant, KERNELS, out)
    proc = subprocess.run(variants.command_line(commands), shell=True, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"build of membench {family}-{variant} failed:\n{proc.stderr}")
    return out


def build(table: dict, pairs, outdir: Path) -> dict[tuple[str, str], Path]:
    """Every (family, variant) of pairs built at once, one per CPU."""
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        return dict(zip(pairs, pool.map(lambda pair: build_one(table, *pair, outdir), pairs)))
