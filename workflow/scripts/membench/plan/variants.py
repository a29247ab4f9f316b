"""The variant table (kernels/families/variants.yaml): what to compile, and how."""

from __future__ import annotations

import re
from pathlib import Path

import yaml


# libyaml's loader where PyYAML has it: the table is read by every measure
# job, and the pure-Python loader takes a tenth of a second or more on it.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_variants(path: Path) -> dict:
    with open(path) as fh:
        return yaml.load(fh, Loader=_LOADER)


def families(table: dict) -> dict[str, dict]:
    return table["families"]


def variant_names(table: dict, family: str) -> list[str]:
    return list(table["families"][family]["variants"])


def family_pattern(table: dict) -> str:
    """A regex matching exactly the family names (a wildcard constraint)."""
    return "|".join(re.escape(name) for name in sorted(families(table), key=len, reverse=True))


def variant_pattern(table: dict) -> str:
    """A regex matching exactly the variant names of any family."""
    names = {v for family in families(table) for v in variant_names(table, family)}
    return "|".join(re.escape(name) for name in sorted(names, key=len, reverse=True))


def source_paths(table: dict, kernel_dir: Path, family: str | None = None) -> list[str]:
    """The C files of a family's binary: the common sources that no family
    claims as its own (the harness), then the family's own (its `sources:`
    in variants.yaml). So an edit to one family's file rebuilds, and
    re-measures, only the families that compile it. A family that claims no
    sources, or no family given: every common source."""
    names = table["common"]["sources"]
    own = families(table)[family].get("sources") if family is not None else None
    if own:
        claimed = {name for entry in families(table).values() for name in entry.get("sources", [])}
        names = [name for name in names if name not in claimed or name in own]
    return [str(kernel_dir / name) for name in names]


def header_paths(table: dict, kernel_dir: Path) -> list[str]:
    return [str(kernel_dir / name) for name in table["common"]["headers"]]


def compile_flags(table: dict, family: str, variant: str) -> list[str]:
    """Compiler flags for one binary: common flags, the variant's own, and
    the defines that tell the harness which family and variant it is."""
    common = table["common"]
    own = table["families"][family]["variants"][variant]["cflags"]
    return [
        *common["cflags"],
        *own,
        f'-DMB_FAMILY="{family}"',
        f'-DMB_VARIANT="{variant}"',
        f'-DMB_CFLAGS="{" ".join(own)}"',
    ]


def link_flags(table: dict) -> list[str]:
    return list(table["common"]["ldflags"])


def compile_argv(
    table: dict, family: str, variant: str, kernel_dir: Path, output: Path
) -> list[str]:
    """The full gcc command line, as the build rule runs it (the rule links
    to a temporary name beside the output and renames it)."""
    return [
        "gcc",
        *compile_flags(table, family, variant),
        *source_paths(table, kernel_dir, family),
        *link_flags(table),
        "-o",
        str(output),
    ]


def features(table: dict, family: str, variant: str) -> dict:
    return dict(table["families"][family]["variants"][variant].get("features", {}))


def declared_pages(table: dict, family: str, variant: str) -> str:
    """The page size a variant declares (McCalpin's large-page versions), 4k
    when it declares none; the pages axis value "variant" resolves to it."""
    return table["families"][family]["variants"][variant].get("pages", "4k")
