"""The variant table (kernels/families/variants.yaml): what to compile, and how."""

from __future__ import annotations

import platform
import re
import shlex
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


def host_arch() -> str:
    """This machine's architecture as the toolchains table names it."""
    machine = platform.machine()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(machine.lower(), machine)


def variant_arch(table: dict, family: str, variant: str) -> str | None:
    """The one architecture a variant is written for (its ISA: nt-avx512 is
    x86_64's, nt-sve256 aarch64's), None = every architecture (plain C)."""
    return table["families"][family]["variants"][variant].get("arch")


def all_variant_names(table: dict, family: str) -> list[str]:
    """Every variant of the family, of any architecture (what a config may name)."""
    return list(table["families"][family]["variants"])


def variant_names(table: dict, family: str, arch: str | None = None) -> list[str]:
    """The variants of the family that are native to arch (default: this
    machine): what "all" means in a config, and what the tests build. A
    variant of another architecture still builds here, into a binary whose
    every record is skipped (compile_flags)."""
    arch = arch or host_arch()
    return [name for name in all_variant_names(table, family)
            if variant_arch(table, family, name) in (None, arch)]  # fmt: skip


def family_pattern(table: dict) -> str:
    """A regex matching exactly the family names (a wildcard constraint)."""
    return "|".join(re.escape(name) for name in sorted(families(table), key=len, reverse=True))


def variant_pattern(table: dict) -> str:
    """A regex matching exactly the variant names of any family."""
    names = {v for family in families(table) for v in all_variant_names(table, family)}
    return "|".join(re.escape(name) for name in sorted(names, key=len, reverse=True))


def common_sources(table: dict) -> list[str]:
    """Every C file a binary may compile besides the harness: the common
    sources that no family claims (the kernel table), then each family's
    own (its `sources:`), each file once, in table order. A family's files
    are written once, in its entry; this list is derived from them."""
    names = [*table["common"]["sources"]]
    for entry in families(table).values():
        names += [name for name in entry.get("sources", []) if name not in names]
    return names


def source_paths(table: dict, kernel_dir: Path, family: str | None = None) -> list[str]:
    """The C files compiled into a family's binary with its variant's flags:
    the common sources that no family claims as its own (the kernel table),
    then the family's own (its `sources:` in variants.yaml). So an edit to
    one family's file rebuilds, and re-measures, only the families that
    compile it. A family that claims no sources, or no family given: every
    source (common_sources). The harness is linked from its archive
    (harness_paths)."""
    names = common_sources(table)
    own = families(table)[family].get("sources") if family is not None else None
    if own:
        claimed = {name for entry in families(table).values() for name in entry.get("sources", [])}
        names = [name for name in names if name not in claimed or name in own]
    return [str(kernel_dir / name) for name in names]


def harness_paths(table: dict, kernel_dir: Path) -> list[str]:
    """The harness's C files: compiled once per toolchain into the archive
    that every binary links (harness_commands), at a level of their own."""
    return [str(kernel_dir / name) for name in table["common"]["harness"]["sources"]]


def harness_header_paths(table: dict, kernel_dir: Path) -> list[str]:
    return [str(kernel_dir / name) for name in table["common"]["harness"]["headers"]]


def header_paths(table: dict, kernel_dir: Path) -> list[str]:
    """Every header a binary's own files include: the harness's and the families'."""
    names = [*table["common"]["harness"]["headers"], *table["common"]["headers"]]
    return [str(kernel_dir / name) for name in names]


def toolchain(table: dict, arch: str | None = None) -> dict:
    """The compiler, archiver and arch flags for a target architecture
    (default this machine's): the native ones on that machine, the cross
    ones elsewhere (no -march=native to ask a CPU that is not there)."""
    arch = arch or host_arch()
    entry = table["common"]["toolchains"][arch]
    if arch == host_arch():
        return {"cc": entry["cc"], "ar": entry["ar"], "arch": list(entry["arch"])}
    return {"cc": entry["cross_cc"], "ar": entry["cross_ar"], "arch": list(entry["cross_arch"])}


def foreign_feature(table: dict, family: str, variant: str) -> str:
    """The CPU feature a variant of another architecture stands for (its
    vector width's, on its own architecture): the reason of its records."""
    arch = variant_arch(table, family, variant)
    bits = features(table, family, variant).get("vector_bits", 0)
    by_width = table["common"]["toolchains"][arch]["vector_features"]
    return by_width.get(bits) or by_width.get(str(bits)) or arch


def own_flags(table: dict, family: str, variant: str, arch: str | None = None) -> list[str]:
    """The variant's own cflags for arch, "{arch}" replaced by its arch
    flags (-march=native on x86_64, -mcpu=native on aarch64, or the cross
    build's). A variant of another architecture is built as plain C at its
    own optimisation level, its ISA named in MB_FOREIGN_FEATURE: every op of
    that binary gives a skipped record saying which feature it needs."""
    arch = arch or host_arch()
    own = table["families"][family]["variants"][variant]["cflags"]
    if variant_arch(table, family, variant) not in (None, arch):
        level = [flag for flag in own if re.fullmatch(r"-O\w*", flag)]
        return [*level, f'-DMB_FOREIGN_FEATURE="{foreign_feature(table, family, variant)}"']
    arch_flags = toolchain(table, arch)["arch"]
    return [expanded for flag in own for expanded in (arch_flags if flag == "{arch}" else [flag])]


def compile_flags(table: dict, family: str, variant: str, arch: str | None = None) -> list[str]:
    """Compiler flags for one binary's own files: common flags, the
    variant's own, and the defines that tell the kernel table which family
    and variant it is (mb_build, which the harness reads)."""
    common = table["common"]
    own = own_flags(table, family, variant, arch)
    return [
        *common["cflags"],
        *own,
        f'-DMB_FAMILY="{family}"',
        f'-DMB_VARIANT="{variant}"',
        f'-DMB_CFLAGS="{" ".join(own).replace(chr(34), chr(92) + chr(34))}"',
    ]


def harness_flags(table: dict, arch: str | None = None) -> list[str]:
    """Compiler flags for the harness: common flags, the harness's own (a
    fixed optimisation level: it times the kernels but runs no timed loop of
    its own) and the toolchain's arch flags; no variant's."""
    common = table["common"]
    return [*common["cflags"], *common["harness"]["cflags"], *toolchain(table, arch)["arch"]]


def compiler(table: dict, arch: str | None = None) -> str:
    return toolchain(table, arch)["cc"]


def archiver(table: dict, arch: str | None = None) -> str:
    return toolchain(table, arch)["ar"]


def link_flags(table: dict) -> list[str]:
    return list(table["common"]["ldflags"])


def harness_commands(table: dict, kernel_dir: Path, archive: Path, arch: str | None = None) -> list[list[str]]:
    """The commands that build the harness archive, as the build_harness
    rule runs them (into a temporary name, then renamed): each harness file
    compiled into a folder "objects" beside the archive, the objects
    archived (deterministic: no dates), the folder removed. One archive per
    toolchain: arch other than this machine's = a cross build."""
    objects = Path(archive).parent / "objects"
    sources = harness_paths(table, kernel_dir)
    members = [str(objects / (Path(source).stem + ".o")) for source in sources]
    cc, flags = compiler(table, arch), harness_flags(table, arch)
    return [
        ["mkdir", "-p", str(objects)],
        *([cc, *flags, "-c", source, "-o", member] for source, member in zip(sources, members)),
        [archiver(table, arch), "rcsD", str(archive), *members],
        ["rm", "-r", str(objects)],
    ]


def compile_argv(
    table: dict, family: str, variant: str, kernel_dir: Path, output: Path, *, harness: Path, arch: str | None = None
) -> list[str]:
    """The full compiler command line of one binary, as the build_kernel
    rule runs it (the rule links to a temporary name beside the output and
    renames it): its own files with the variant's flags, linked with the
    harness archive of the same toolchain (harness_commands); arch other
    than this machine's = a cross build."""
    return [
        compiler(table, arch),
        *compile_flags(table, family, variant, arch),
        *source_paths(table, kernel_dir, family),
        str(harness),
        *link_flags(table),
        "-o",
        str(output),
    ]


def standalone_commands(
    table: dict, family: str, variant: str, kernel_dir: Path, output: Path, arch: str | None = None
) -> list[list[str]]:
    """One binary built on its own, outside the workflow (the benches, the
    NUMA guest's image): a harness archive of its own beside it
    (<output>.harness/), then the binary, with the rules' commands."""
    archive = Path(f"{output}.harness") / "libmbharness.a"
    return [
        *harness_commands(table, kernel_dir, archive, arch),
        compile_argv(table, family, variant, kernel_dir, output, harness=archive, arch=arch),
    ]


def command_line(commands: list[list[str]]) -> str:
    """Commands as one shell line, each quoted, run in order until one fails."""
    return " && ".join(shlex.join(argv) for argv in commands)


def features(table: dict, family: str, variant: str) -> dict:
    return dict(table["families"][family]["variants"][variant].get("features", {}))


def declared_pages(table: dict, family: str, variant: str) -> str:
    """The page size a variant declares (McCalpin's large-page versions), 4k
    when it declares none; the pages axis value "variant" resolves to it."""
    return table["families"][family]["variants"][variant].get("pages", "4k")
