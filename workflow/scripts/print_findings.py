"""`make findings`: the findings summary of stored results, then the report's path."""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from membench.core import layout  # noqa: E402
from membench.report.terminal import print_summary  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("findings", nargs="?", default=str(layout.findings_path("results")))
parser.add_argument("--report", default=None, help="the report's path, printed last")
args = parser.parse_args()
sys.exit(print_summary(args.findings, args.report))
