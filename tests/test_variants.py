"""Every (family, variant) of kernels/families/variants.yaml: it builds warning-free with
the pipeline's own build command (membench.plan.variants.compile_argv), runs on
tiny arrays, validates, and fails with exit 1 under --test-corrupt.  Plus the
variant table itself: McCalpin's ladder as in his post, the AVX2 / AVX-512
ladders as copies of it, the optimisation level really being the variant's.

All binaries are built once per session, in parallel, into a temporary folder
(conftest.VariantBuilds, shared with every test file that runs a binary).
"""

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from membench.probe.topology import thp_mode

from membench.plan import variants

REPO = Path(__file__).resolve().parents[1]
KERNELS = REPO / "kernels"
TABLE = variants.load_variants(KERNELS / "families" / "variants.yaml")
ALL = [(f, v) for f in variants.families(TABLE) for v in variants.variant_names(TABLE, f)]
# The bandwidth families (one record per op, gbps, validation of the arrays)
# are run here; the latency families (chase, loaded) have their own tests.
BANDWIDTH = ("stream", "readonly", "xor", "daxpy", "mix")
OWN = [(f, v) for f, v in ALL if f in BANDWIDTH]
# not a whole number of pages, vectors or page groups: tails are exercised
TINY = ["--size", str(256 * 1024 + 3 * 8), "--ntimes", "3"]
THREADS = ["--threads", str(min(2, len(os.sched_getaffinity(0))))]

@pytest.fixture(scope="session")
def binaries(variant_builds):
    """(family, variant) -> (binary path, returncode, compiler stderr) of
    every variant, built once per session with the build rule's command."""
    return variant_builds.build(ALL)


def binary(binaries, family, variant):
    path, rc, err = binaries[(family, variant)]
    assert rc == 0 and err == "", f"{family}-{variant} did not build cleanly:\n{err}"
    return path


def run(path, *args, timeout=120):
    proc = subprocess.run([str(path), *args], capture_output=True, text=True, timeout=timeout)
    records = [json.loads(line) for line in proc.stdout.splitlines()]
    return proc.returncode, records, proc.stderr


def cpu_flags():
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    m = re.search(r"^flags\s*:(.*)$", text, re.M)
    return set(m.group(1).split()) if m else set()


def required_feature(family, variant):
    bits = variants.features(TABLE, family, variant).get("vector_bits", 0)
    return {256: "avx2", 512: "avx512f"}.get(bits)


def op_nontemporal(family, variant, op):
    """Does op store non-temporally in this variant? The variant's nt_stores,
    unless the family's op_stores says the op's stores do not follow it
    (mix: r1w0 stores nothing, r2w1nt streams in every variant)."""
    stores = TABLE["families"][family].get("op_stores", {}).get(op, "variant")
    if stores == "variant":
        return bool(variants.features(TABLE, family, variant).get("nt_stores", False))
    return stores == "nt"


def spec(family, variant):
    return TABLE["families"][family]["variants"][variant]


# ------------------------------------------------------------- the table

def test_common_flags_leave_the_optimisation_level_to_the_variant():
    assert not [f for f in TABLE["common"]["cflags"] if f.startswith("-O")]
    for family, variant in ALL:
        levels = [f for f in spec(family, variant)["cflags"] if re.fullmatch(r"-O\w*", f)]
        assert len(levels) == 1, (family, variant, levels)
        assert levels == [variants.features(TABLE, family, variant)["opt_level"]]
        argv = variants.compile_argv(TABLE, family, variant, KERNELS, Path("x"), harness=Path("h.a"))
        assert [f for f in argv if re.fullmatch(r"-O\w*", f)] == levels


def test_the_harness_is_built_at_its_own_level_with_no_variants_flags():
    """The variant's level applies to its own files; the harness (no timed
    loop: the timed kernels are the families') is built once, at -O2, with
    the toolchain's arch flags and MB_HARNESS, which keeps variant.h out."""
    flags = variants.harness_flags(TABLE)
    assert [f for f in flags if re.fullmatch(r"-O\w*", f)] == ["-O2"]
    assert "-DMB_HARNESS" in flags and variants.toolchain(TABLE)["arch"][0] in flags
    assert not [f for f in flags if f.startswith(("-DMB_FAMILY", "-DMB_VARIANT", "-DMB_CFLAGS", "-DMB_VBITS"))]
    *compiles, archive, cleanup = variants.harness_commands(TABLE, Path("kernels"), Path("bin/s/h.a"))[1:]
    assert [argv[argv.index("-c") + 1] for argv in compiles] == variants.harness_paths(TABLE, Path("kernels"))
    assert sorted(variants.harness_paths(TABLE, KERNELS)) == sorted(str(p) for p in (KERNELS / "harness").glob("*.c"))
    assert all(argv[1:-4] == flags for argv in compiles)
    assert archive[2] == "bin/s/h.a" and archive[3:] == [argv[-1] for argv in compiles]
    # no binary compiles a harness file itself; each links the archive
    for family in variants.families(TABLE):
        assert not [p for p in variants.source_paths(TABLE, Path("kernels"), family) if "/harness/" in p]
    argv = variants.compile_argv(TABLE, "stream", "default", Path("kernels"), Path("x"), harness=Path("bin/s/h.a"))
    assert "bin/s/h.a" in argv and argv.index("bin/s/h.a") > argv.index("kernels/families/stream.c")


def test_every_common_source_exists():
    harness = TABLE["common"]["harness"]
    for name in TABLE["common"]["sources"] + TABLE["common"]["headers"] + harness["sources"] + harness["headers"]:
        assert (KERNELS / name).is_file(), name


def test_every_header_is_a_build_input():
    """A header the build rules do not list would not rebuild the binaries
    that include it when it changes (mix_vec.h, vec_arm.h, c2c_cas.h ...);
    the harness's are inputs of the harness archive too."""
    on_disk = sorted(str(p.relative_to(KERNELS)) for p in KERNELS.rglob("*.h"))
    assert sorted(Path(p).relative_to(KERNELS).as_posix() for p in variants.header_paths(TABLE, KERNELS)) == on_disk
    harness = sorted(str(p.relative_to(KERNELS)) for p in (KERNELS / "harness").glob("*.h"))
    assert sorted(Path(p).relative_to(KERNELS).as_posix() for p in variants.harness_header_paths(TABLE, KERNELS)) == harness


# McCalpin's table (part 5): version -> (vector SSE, large page, SW prefetch,
# 4 KiB pages accessed per loop; 0 = not page-structured), partial sums, -O
MCCALPIN = {
    1: (False, False, False, 0, 1, "-O1"),
    2: (False, False, False, 0, 1, "-O2"),
    3: (False, False, False, 0, 8, "-O2"),
    4: (False, False, True, 0, 8, "-O2"),
    5: (True, False, True, 0, 8, "-O2"),
    6: (True, False, False, 0, 8, "-O2"),
    7: (True, True, False, 0, 8, "-O2"),
    8: (True, True, False, 1, 8, "-O2"),
    9: (True, True, True, 1, 8, "-O2"),
    10: (True, True, True, 2, 8, "-O2"),
    11: (True, True, True, 4, 8, "-O2"),
    12: (True, True, True, 8, 8, "-O2"),
    13: (True, True, False, 2, 8, "-O2"),
    14: (True, True, False, 4, 8, "-O2"),
    15: (True, True, False, 8, 8, "-O2"),
}


def test_readonly_ladder_is_mccalpins():
    for version, (sse, large, pf, ppl, psums, opt) in MCCALPIN.items():
        name = f"v{version:03d}"
        feat = variants.features(TABLE, "readonly", name)
        assert feat == {
            "vector_bits": 128 if sse else 64, "large_pages": large, "sw_prefetch": pf,
            "pages_per_loop": ppl, "partial_sums": psums, "opt_level": opt,
        }, name
        assert variants.declared_pages(TABLE, "readonly", name) == ("thp" if large else "4k")
        assert spec("readonly", name)["description"].startswith(f"Version{version:03d}")


def test_wider_ladders_copy_the_vector_versions():
    names = variants.variant_names(TABLE, "readonly")
    for isa, bits in (("avx2", 256), ("avx512", 512)):
        for version in range(5, 16):
            base, wide = f"v{version:03d}", f"v{version:03d}-{isa}"
            assert wide in names
            want = dict(variants.features(TABLE, "readonly", base), vector_bits=bits)
            assert variants.features(TABLE, "readonly", wide) == want
            assert variants.declared_pages(TABLE, "readonly", wide) == \
                variants.declared_pages(TABLE, "readonly", base)
            flags = [f.replace("-DMB_VBITS=128", f"-DMB_VBITS={bits}")
                     for f in spec("readonly", base)["cflags"]]
            assert spec("readonly", wide)["cflags"] == flags
    grammar = re.compile(r"v0(0[1-9]|1[0-5])(-(avx2|avx512))?")
    assert all(grammar.fullmatch(n) for n in names)


def test_every_family_has_its_ops_and_features():
    assert set(BANDWIDTH) <= set(variants.families(TABLE))
    for family in BANDWIDTH:
        body = variants.families(TABLE)[family]
        assert body["ops"], family
        for variant in body["variants"]:
            feat = variants.features(TABLE, family, variant)
            assert {"vector_bits", "sw_prefetch", "opt_level"} <= set(feat), (family, variant)
            assert spec(family, variant)["description"]


# ----------------------------------------------------------- the binaries

@pytest.mark.parametrize("family,variant", ALL, ids=[f"{f}-{v}" for f, v in ALL])
def test_builds_warning_free(binaries, family, variant):
    binary(binaries, family, variant)


@pytest.mark.parametrize("family,variant", OWN, ids=[f"{f}-{v}" for f, v in OWN])
def test_runs_tiny_and_validates(binaries, family, variant):
    path = binary(binaries, family, variant)
    feat = variants.features(TABLE, family, variant)
    ops = TABLE["families"][family]["ops"]
    rc, recs, err = run(path, *TINY, *THREADS, "--variant", variant)
    need = required_feature(family, variant)
    if need and need not in cpu_flags():
        assert rc == 3, err
        assert all(r["status"] == "skipped" and need in r["reason"] for r in recs)
        return
    assert rc == 0, err
    assert [r["op"] for r in recs] == ops
    for r in recs:
        assert r["kernel"] == family and r["variant"] == variant
        assert r["status"] == "ok" and r["valid"] is True, r["reason"]
        assert r["gbps"] > 0 and len(r["seconds"]) == 2
        assert r["cpu_feature"] == need
        assert r["nontemporal"] is op_nontemporal(family, variant, r["op"])
        if feat.get("sw_prefetch"):
            assert isinstance(r["prefetch_distance"], int) and r["prefetch_distance"] > 0
        else:
            assert r["prefetch_distance"] is None
        assert r["cflags"] == " ".join(variants.own_flags(TABLE, family, variant))


@pytest.mark.parametrize("family,variant", OWN, ids=[f"{f}-{v}" for f, v in OWN])
def test_corruption_is_caught(binaries, family, variant):
    path = binary(binaries, family, variant)
    need = required_feature(family, variant)
    if need and need not in cpu_flags():
        pytest.skip(f"CPU lacks {need}")
    rc, recs, err = run(path, *TINY, *THREADS, "--test-corrupt")
    assert rc == 1, err
    assert recs and all(r["status"] == "failed" and r["valid"] is False for r in recs)
    assert all("validation failed" in r["reason"] for r in recs)


def first_runnable(family):
    for variant in variants.variant_names(TABLE, family):
        need = required_feature(family, variant)
        if not need or need in cpu_flags():
            return variant
    pytest.skip(f"no variant of {family} runs on this CPU")


def prefetching(family):
    return [v for v in variants.variant_names(TABLE, family)
            if variants.features(TABLE, family, v).get("sw_prefetch")]


def test_prefetch_distance_is_used_and_recorded(binaries):
    pf = [v for v in prefetching("readonly")
          if not required_feature("readonly", v) or required_feature("readonly", v) in cpu_flags()]
    assert pf, "no software-prefetch variant"
    for variant in (pf[0], pf[-1]):
        path = binary(binaries, "readonly", variant)
        for dist in ("0", "64", "5000", "65536"):
            rc, recs, err = run(path, *TINY, *THREADS, "--prefetch-distance", dist)
            assert rc == 0, err
            assert recs[0]["prefetch_distance"] == int(dist) and recs[0]["valid"] is True
        assert "(--prefetch-distance)" in err
    plain = binary(binaries, "readonly", "v003")
    rc, recs, err = run(plain, *TINY, "--prefetch-distance", "4096")
    assert rc == 0 and recs[0]["prefetch_distance"] is None
    assert "ignored" in err
    for bad in ("-1", "x", "1.5", ""):
        rc, recs, err = run(plain, *TINY, "--prefetch-distance", bad)
        assert rc == 2 and recs == [] and "--prefetch-distance" in err


def test_one_harness_archive_and_each_binary_names_its_own_variant(binaries):
    """The harness is compiled once for every variant (one archive): what it
    says of the variant (--list-options, --help, the records' variant,
    cflags and prefetch distance, stderr) comes from the binary's kernel
    table, compiled with that variant's flags (mb_build)."""
    pairs = [("readonly", "v003"), ("readonly", "v009"), ("stream", "default"), ("stream", "ntpf")]
    for family, variant in [pair for pair in pairs if pair in ALL]:  # ntpf: x86_64 only
        path, prefetches = binary(binaries, family, variant), "-DMB_SWPF=1" in spec(family, variant)["cflags"]
        listed = json.loads(subprocess.run([str(path), "--list-options"], capture_output=True, text=True).stdout)
        defaults = {o["name"]: o["default"] for o in listed["harness_options"]}
        assert (listed["family"], listed["variant"], defaults["variant"]) == (family, variant, variant)
        assert defaults["prefetch-distance"] == "2048"
        usage = " ".join(subprocess.run([str(path), "--help"], capture_output=True, text=True).stdout.split())
        assert f"kernel family '{family}', variant '{variant}'" in usage
        assert ("this variant: prefetches" if prefetches else "no software prefetch, ignored") in usage
        rc, recs, err = run(path, *TINY, "--threads", "1")
        assert rc == 0, err
        for r in recs:
            assert (r["kernel"], r["variant"]) == (family, variant)
            assert r["cflags"] == " ".join(variants.own_flags(TABLE, family, variant))
            assert r["prefetch_distance"] == (2048 if prefetches else None)
        assert ("Software prefetch 2048 bytes ahead (built-in)" in err) is prefetches


def test_byte_conventions(binaries):
    """STREAM counting in bytes_per_iter; bytes_per_iter_wa adds a read per
    written array except for non-temporal stores and read-modify-write."""
    size = ["--size", str(1 << 20), "--ntimes", "2"]
    n = (1 << 20) // 8
    expect = {  # (family, variant): (STREAM bytes, with write-allocate) per op
        ("readonly", "v001"): {"sum": (8 * n, 8 * n)},
        ("xor", "default"): {"xor": (16 * n, 16 * n)},
        ("daxpy", "default"): {"daxpy": (24 * n, 24 * n)},
        ("stream", "default"): {"copy": (16 * n, 24 * n), "scale": (16 * n, 24 * n),
                                "add": (24 * n, 32 * n), "triad": (24 * n, 32 * n)},
        ("stream", "nt"): {"copy": (16 * n, 16 * n), "scale": (16 * n, 16 * n),
                           "add": (24 * n, 24 * n), "triad": (24 * n, 24 * n)},
        # MLC's five mixes: reads:writes streams x 8 B; write-allocate adds a
        # read per written line, except non-temporal stores
        ("mix", "default"): {"r1w0": (8 * n, 8 * n), "r3w1": (32 * n, 40 * n),
                             "r2w1": (24 * n, 32 * n), "r1w1": (16 * n, 24 * n),
                             "r2w1nt": (24 * n, 24 * n)},
        ("mix", "nt"): {"r1w0": (8 * n, 8 * n), "r3w1": (32 * n, 32 * n),
                        "r2w1": (24 * n, 24 * n), "r1w1": (16 * n, 16 * n),
                        "r2w1nt": (24 * n, 24 * n)},
    }
    for (family, variant), ops in expect.items():
        rc, recs, err = run(binary(binaries, family, variant), *size)
        assert rc == 0, err
        got = {r["op"]: (r["bytes_per_iter"], r["bytes_per_iter_wa"]) for r in recs}
        assert got == ops, (family, variant)


@pytest.mark.skipif(thp_mode() in ("never", None), reason="THP disabled")
@pytest.mark.parametrize("family", BANDWIDTH)
def test_thp_gives_huge_pages_for_every_family(binaries, family):
    variant = first_runnable(family)
    rc, recs, err = run(binary(binaries, family, variant), "--size", str(64 << 20),
                        "--ntimes", "2", "--threads", "1", "--pages", "thp")
    assert rc == 0, err
    assert all(r["pages"] == "thp" and r["hugepage_fraction"] > 0.0 for r in recs), \
        [r["hugepage_fraction"] for r in recs]
    rc, recs, err = run(binary(binaries, family, variant), *TINY, "--pages", "4k")
    assert rc == 0 and all(r["hugepage_fraction"] == 0.0 for r in recs), err


def test_list_shows_the_required_feature(binaries):
    for family, variant in (("readonly", "v005-avx512"), ("readonly", "v005-avx2"),
                            ("stream", "nt-avx512"), ("readonly", "v005")):
        listing = subprocess.run([str(binary(binaries, family, variant)), "--list"],
                                 capture_output=True, text=True).stdout
        want = required_feature(family, variant) or "-"
        row = next(line for line in listing.splitlines()
                   if line.split()[:2] == [family, "sum" if family == "readonly" else "triad"])
        assert row.split()[6] == want, row


def test_missing_cpu_feature_gives_a_skipped_record(binaries):
    """Checked at run time from the table row: the binary starts (the wide
    kernels are target-attributed, not the whole binary) and says why."""
    env = dict(os.environ, MEMBENCH_TEST_CPU_LACKS="avx2,avx512f")
    for family, variant in (("readonly", "v005-avx512"), ("readonly", "v012-avx2"),
                            ("stream", "nt-avx512")):
        need = required_feature(family, variant)
        proc = subprocess.run([str(binary(binaries, family, variant)), *TINY], env=env,
                              capture_output=True, text=True, timeout=60)
        recs = [json.loads(line) for line in proc.stdout.splitlines()]
        assert proc.returncode == 3, proc.stderr
        assert [r["op"] for r in recs] == TABLE["families"][family]["ops"]
        for r in recs:
            assert r["status"] == "skipped" and r["gbps"] is None and r["valid"] is None
            assert f"'{need}'" in r["reason"] and "lacks" in r["reason"]
    proc = subprocess.run([str(binary(binaries, "readonly", "v005")), *TINY], env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
