"""membench: memory bandwidth and latency experiments, one concern per module.

The Snakemake rules are thin; everything they do is a function here, tested
without Snakemake.
"""

__version__ = "0.1.0"
SCHEMA_VERSION = 4
