"""make bundle / make unbundle (docs/bundle.md).

  run_bundle.py write --results results --config config/config.yaml --out run.crate.zip
  run_bundle.py check run.crate.zip
  run_bundle.py open run.crate.zip --dest DIR     (DIR/config.yaml, DIR/results/...)

A refused bundle prints one line naming what failed and exits 2; nothing
is written then."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "workflow" / "scripts"))

from membench.store import bundle, bundle_check  # noqa: E402

FINDINGS_SCHEMA = REPO / "workflow" / "schemas" / "findings.schema.yaml"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    verbs = parser.add_subparsers(dest="verb", required=True)
    write = verbs.add_parser("write", help="bundle a results folder")
    write.add_argument("--results", type=Path, default=Path("results"))
    write.add_argument("--config", type=Path, required=True)
    write.add_argument("--out", type=Path, required=True)
    write.add_argument("--binaries", type=Path, default=Path("bin"))
    check = verbs.add_parser("check", help="validate a bundle offline")
    check.add_argument("bundle", type=Path)
    unpack = verbs.add_parser("open", help="validate, then unpack into a new folder")
    unpack.add_argument("bundle", type=Path)
    unpack.add_argument("--dest", type=Path, required=True)
    args = parser.parse_args(argv)
    try:
        if args.verb == "write":
            if not args.config.is_file() or not args.results.is_dir():
                print(f"bundle: needs a config file and a results folder ({args.config}, {args.results})")
                return 2
            out = bundle.write_bundle(args.results, args.config, args.out, REPO, args.binaries)
            bundle_check.check_bundle(out, FINDINGS_SCHEMA)
            print(f"Bundle: {out} (checked)")
        elif args.verb == "check":
            bundle_check.check_bundle(args.bundle, FINDINGS_SCHEMA)
            print(f"{args.bundle}: valid")
        else:
            print(bundle_check.open_bundle(args.bundle, args.dest, FINDINGS_SCHEMA))
    except bundle_check.BundleRefused as refused:
        print(refused)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
