"""Where membench's own files are, from the package's place in its checkout
(or in a deployed copy of the workflow): nothing assumes the working
directory is the checkout, so membench also runs as a Snakemake module."""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]
REPO = PACKAGE.parents[2]
SCHEMA_DIR = REPO / "workflow" / "schemas"
RECORD_SCHEMA = SCHEMA_DIR / "record.schema.yaml"
CONFIG_SCHEMA = SCHEMA_DIR / "config.schema.yaml"
TEMPLATE_DIR = REPO / "reports"
VARIANTS_FILE = REPO / "kernels" / "families" / "variants.yaml"
