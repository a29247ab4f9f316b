"""make bundle / make reference (docs/bundle.md).

  run_bundle.py write --results results --config config/config.yaml --out run.crate.zip
  run_bundle.py check run.crate.zip
  run_bundle.py open run.crate.zip --dest DIR [--inputs-only]   (DIR/config.yaml, DIR/results/...)
  run_bundle.py reference run.crate.zip --name SLUG --address https://... [--system S]
                                                   (references/machines/SLUG.yaml)

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
ATLAS = REPO / "references" / "machines"


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
    unpack.add_argument("--inputs-only", action="store_true",
                        help="config, records, topology and environment only: figures-only there rebuilds the rest")
    made = verbs.add_parser("reference", help="turn a checked bundle into references/machines/NAME.yaml")
    made.add_argument("bundle", type=Path)
    made.add_argument("--name", required=True)
    made.add_argument("--address", required=True, help="the https:// address where the bundle is published")
    made.add_argument("--system", help="the system to take, where the bundle holds several")
    made.add_argument("--atlas", type=Path, default=ATLAS)
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
        elif args.verb == "reference":
            # imported here: write, check and open need none of the analysis it pulls in
            from membench.compare import reference_entry

            document = reference_entry.entry_from_bundle(args.bundle, args.name, args.address, FINDINGS_SCHEMA,
                                                         args.atlas, args.system)  # fmt: skip
            path = reference_entry.write_entry(document, args.atlas)
            print(f"Reference: {path} ({len(document['numbers'])} numbers); make compare BASE=ref:{args.name} NEW=...")
        else:
            print(bundle_check.open_bundle(args.bundle, args.dest, FINDINGS_SCHEMA, args.inputs_only))
    except bundle_check.BundleRefused as refused:
        print(refused)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
