"""make bundle / make reference (docs/bundle.md).

  run_bundle.py write --results results [--config FILE] --out run.crate.zip
                                   (default: the config the runs were measured with)
  run_bundle.py check run.crate.zip
  run_bundle.py open run.crate.zip --dest DIR [--inputs-only]   (DIR/config.yaml, DIR/results/...)
  run_bundle.py reference run.crate.zip --name SLUG --address https://... [--system S]
                                                   (references/machines/SLUG.yaml)

A refused bundle prints one line naming what failed and exits 2; nothing
is written then (write: the archive is made under a temporary name and
renamed only once it is checked). Any failure while reading a bundle is
such a refusal, never a traceback; no verb touches the network."""

from __future__ import annotations

import argparse
import functools
import sys
import tempfile
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "workflow" / "scripts"))

from membench.core import measured_with  # noqa: E402
from membench.store import bundle, bundle_check  # noqa: E402

FINDINGS_SCHEMA = REPO / "workflow" / "schemas" / "findings.schema.yaml"
ATLAS = REPO / "references" / "machines"


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    verbs = parser.add_subparsers(dest="verb", required=True)
    write = verbs.add_parser("write", help="bundle a results folder")
    write.add_argument("--results", type=Path, default=Path("results"))
    write.add_argument("--config", type=Path,
                       help="the config to bundle; default: the one the runs were measured with (results/measured-with.yaml)")
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
    return parser


def measured_config(results: Path, scratch: Path) -> Path:
    """The config the runs in `results` were measured with, as a file to
    bundle (membench.core.measured_with), else the default config: the
    bundle's config.yaml is what figures-only draws its runs with."""
    said = measured_with.read(results)
    if said is None:
        return REPO / measured_with.PROFILE_CONFIG
    path = scratch / "config.yaml"
    path.write_text(yaml.safe_dump(said["config"], sort_keys=False))
    return path


def run(args: argparse.Namespace) -> str:
    """What the verb did, in one line; BundleRefused when it did not."""
    if args.verb == "write":
        with tempfile.TemporaryDirectory(prefix="membench-bundle-config-") as scratch:
            config = args.config or measured_config(args.results, Path(scratch))
            if not config.is_file() or not args.results.is_dir():
                raise bundle_check.BundleRefused(f"bundle: needs a config file and a results folder ({config}, {args.results})")
            if args.out.is_dir() or not args.out.name:
                raise bundle_check.refuse(args.out, "a folder; name the bundle's file (BUNDLE=run.crate.zip)")
            check = functools.partial(bundle_check.check_bundle, findings_schema=FINDINGS_SCHEMA)
            out = bundle.write_bundle(args.results, config, args.out, REPO, args.binaries, check=check)
        return f"Bundle: {out} (checked)"
    if args.verb == "check":
        bundle_check.check_bundle(args.bundle, FINDINGS_SCHEMA)
        return f"{args.bundle}: valid"
    if args.verb == "reference":
        # imported here: write, check and open need none of the analysis it pulls in
        from membench.compare import reference_entry

        document = reference_entry.entry_from_bundle(args.bundle, args.name, args.address, FINDINGS_SCHEMA,
                                                     args.atlas, args.system)  # fmt: skip
        path = reference_entry.write_entry(document, args.atlas)
        return f"Reference: {path} ({len(document['numbers'])} numbers); make compare BASE=ref:{args.name} NEW=..."
    return str(bundle_check.open_bundle(args.bundle, args.dest, FINDINGS_SCHEMA, args.inputs_only))


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        print(run(args))
    except bundle_check.BundleRefused as refused:
        print(refused)
        return 2
    except Exception as error:  # noqa: BLE001 - a bundle is someone else's file: any failure is a refusal, never a traceback
        print(bundle_check.refuse(getattr(args, "bundle", None) or args.out, f"{type(error).__name__}: {error}"))
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
