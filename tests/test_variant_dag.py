"""Every variant of every family through Snakemake, not only through the
harness: the binary path bin/<system>/<kernel>-<variant> must split at the
right hyphen for names that hold hyphens themselves (nt-avx512, v012-avx2)."""

import os
import re
import shlex
from pathlib import Path

import yaml

from conftest import REPO, copy_workflow
from membench.plan import variants
from membench.core import layout
from membench.core.atomic_files import contract_problems, read_jsonl
from test_workflow import snakemake

TABLE = variants.load_variants(REPO / "kernels" / "families" / "variants.yaml")
FAMILIES = list(variants.families(TABLE))


def test_every_variant_of_every_family_plans(tmp_path, venv_bin):
    """variants: [all] for each family: the dry run plans one build per
    variant, each with the family and variant the table names, and one
    build of the harness archive that all of them link. The rules run
    exactly plan/variants.py's commands (what the tests build with)."""
    workdir = copy_workflow(tmp_path / "plan")
    config = {
        "system": "testbox",
        "repeats": 1,
        "experiments": {
            f"all_{family}": {
                "kernel": family,
                "variants": ["all"],
                # c2c: the pairs set the threads (a threads key is a config error)
                **({} if family == "c2c" else {"threads": [2] if family == "loaded" else [1]}),
                "size": ["1MiB"],
            }
            for family in FAMILIES
        },
    }
    (workdir / "tiny.yaml").write_text(yaml.safe_dump(config))
    plan = snakemake(workdir, venv_bin, "--dry-run", "--printshellcmds")
    text = plan.stdout + plan.stderr
    built = set(re.findall(r"""'-DMB_FAMILY="(\S+)"' '-DMB_VARIANT="(\S+)"'""", text))
    expected = {(f, v) for f in FAMILIES for v in variants.variant_names(TABLE, f)}
    assert built == expected, f"missing {sorted(expected - built)}, unexpected {sorted(built - expected)}"
    split = set(re.findall(r"wildcards: system=testbox, kernel=(\S+), variant=(\S+)", text))
    assert split == expected
    archive = layout.harness_archive("bin/testbox")
    binaries = {f"bin/testbox/{f}-{v}" for f, v in expected}
    assert set(re.findall(r"output: (bin/testbox/\S+)", text)) == binaries | {archive}
    assert re.search(r"^build_harness +1$", text, re.M) and text.count("rule build_harness:") == 1
    kernels = Path("kernels")
    assert variants.command_line(variants.harness_commands(TABLE, kernels, f"{archive}.part")) in text
    for family, variant in expected:
        argv = variants.compile_argv(TABLE, family, variant, kernels, Path(f"bin/testbox/{family}-{variant}.part"),
                                     harness=Path(archive))  # fmt: skip
        assert shlex.join(argv) in text, (family, variant)


def test_hyphenated_variants_run_for_real(tmp_path, venv_bin):
    """A few hyphenated variants built and measured by Snakemake at a tiny
    size; a CPU without AVX-512 gives skipped records, never a crash. Under
    umask 022 the run files are readable by all (0644)."""
    workdir = copy_workflow(tmp_path / "run")
    config = {
        "system": "testbox",
        "repeats": 1,
        "ntimes": 2,
        "experiments": {
            "st": {"kernel": "stream", "variants": ["nt-avx2", "ntpf-avx512"], "size": ["256KiB"]},
            "ro": {"kernel": "readonly", "variants": ["v012-avx2"], "size": ["256KiB"]},
        },
    }
    (workdir / "tiny.yaml").write_text(yaml.safe_dump(config))
    runs = [
        f"results/testbox/runs/{e}/{k}-{v}/t1_none_default_variant_parallel_s262144/r0.jsonl"
        for e, k, vs in (("st", "stream", ("nt-avx2", "ntpf-avx512")), ("ro", "readonly", ("v012-avx2",)))
        for v in vs
    ]
    previous = os.umask(0o022)  # the common default: results must come out 0644
    try:
        out = snakemake(workdir, venv_bin, "--until", "measure_round")  # no report: only the runs matter here
    finally:
        os.umask(previous)
    assert "Rule: render_report" not in out.stdout + out.stderr
    for run in runs:
        records = read_jsonl(workdir / run)
        assert records and all(contract_problems(r) == [] for r in records), run
        assert (workdir / run).stat().st_mode & 0o777 == 0o644, run
        variant = run.split("/")[4].split("-", 1)[1]
        assert {r["variant"] for r in records} == {variant}
        for r in records:
            assert r["status"] == "ok" or (r["status"] == "skipped" and "CPU feature" in r["reason"]), r
