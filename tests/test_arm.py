"""membench on aarch64, checked from x86: a representative set of variants
(every family; NEON and SVE-256) cross-built with the pipeline's own command
for aarch64 (membench.plan.variants.harness_commands and compile_argv,
arch="aarch64": the cross compiler, archiver and arch flags of
variants.yaml's toolchains; the harness archived once), run under
qemu-aarch64 (user-mode emulation: correctness, features, records, never
numbers), and disassembled (what ran is what the variant declares).

CPUs QEMU models: max,sve256=on (SVE at 256 bits, LSE), max,sve128=on (SVE
at 128 bits, as Grace and Graviton4), cortex-a72 (no SVE, no LSE: the
Graviton1 generation). The set is built once per session (ARM_SET, two
compilers at a time); see docs/arm.md for what emulation cannot show.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from membench.plan import variants

REPO = Path(__file__).resolve().parents[1]
KERNELS = REPO / "kernels"
TABLE = variants.load_variants(KERNELS / "families" / "variants.yaml")
CROSS_CC = TABLE["common"]["toolchains"]["aarch64"]["cross_cc"]
QEMU = shutil.which("qemu-aarch64") or shutil.which("qemu-aarch64-static")
OBJDUMP = shutil.which("aarch64-linux-gnu-objdump")
SYSROOT = "/usr/aarch64-linux-gnu"  # libc6-dev-arm64-cross: the dynamic loader and libgomp

pytestmark = [
    pytest.mark.skipif(variants.host_arch() == "aarch64", reason="a native Arm host runs test_variants.py itself"),
    pytest.mark.skipif(not shutil.which(CROSS_CC) or not QEMU,
                       reason=f"needs {CROSS_CC} and qemu-aarch64 (make test-deps installs them)"),
]  # fmt: skip

# Every family once, every explicit Arm ISA (NEON, SVE-256), NT stores and
# software prefetch at both widths, McCalpin's page-structured loop.
ARM_SET = [("stream", "ntpf-neon"), ("stream", "nt-sve256"), ("readonly", "v006"), ("readonly", "v009-sve256"),
           ("mix", "nt-neon"), ("mix", "nt-sve256"), ("xor", "default"), ("daxpy", "default"),
           ("chase", "default"), ("loaded", "default"), ("c2c", "default")]  # fmt: skip
BANDWIDTH = [(f, v) for f, v in ARM_SET if f in ("stream", "readonly", "mix", "xor", "daxpy")]
TINY = ["--size", str(256 * 1024 + 3 * 8), "--ntimes", "3", "--threads", "2"]
SVE256, SVE128, NO_SVE = "max,sve256=on", "max,sve128=on", "cortex-a72"


@pytest.fixture(scope="session")
def arm_harness(variant_builds) -> Path:
    """The harness archive of the aarch64 cross toolchain, built once."""
    return variant_builds.harness("aarch64")


@pytest.fixture(scope="session")
def arm_binaries(tmp_path_factory, arm_harness):
    """(family, variant) -> (path, returncode, compiler stderr)."""
    out = tmp_path_factory.mktemp("arm")

    def build(fv):
        family, variant = fv
        path = out / f"{family}-{variant}"
        argv = variants.compile_argv(TABLE, family, variant, KERNELS, path, harness=arm_harness, arch="aarch64")
        proc = subprocess.run(argv, capture_output=True, text=True)
        return fv, (path, proc.returncode, proc.stderr)

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(build, ARM_SET))


def built(arm_binaries, family, variant) -> Path:
    path, rc, err = arm_binaries[(family, variant)]
    assert rc == 0 and err == "", f"{family}-{variant} did not cross-build cleanly:\n{err}"
    return path


def qemu(path, *args, cpu=SVE256, env=None, timeout=240):
    proc = subprocess.run([QEMU, "-L", SYSROOT, "-cpu", cpu, str(path), *args], capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, **(env or {})})  # fmt: skip
    return proc.returncode, [json.loads(line) for line in proc.stdout.splitlines()], proc.stderr


# ------------------------------------------------------------- the build


def test_cross_build_uses_the_toolchains_table():
    argv = variants.compile_argv(TABLE, "stream", "default", KERNELS, Path("x"), harness=Path("h.a"), arch="aarch64")
    assert argv[0] == "aarch64-linux-gnu-gcc" and "-march=armv8-a" in argv and "-march=native" not in argv
    assert "{arch}" not in " ".join(argv)
    *compiles, archive, _ = variants.harness_commands(TABLE, KERNELS, Path("h.a"), arch="aarch64")[1:]
    assert all(argv[0] == "aarch64-linux-gnu-gcc" and "-march=armv8-a" in argv for argv in compiles)
    assert archive[0] == "aarch64-linux-gnu-gcc-ar"
    # a variant of another architecture builds as plain C that skips every op
    foreign = variants.compile_flags(TABLE, "stream", "nt-avx512", arch="aarch64")
    assert '-DMB_FOREIGN_FEATURE="avx512f"' in foreign and "-DMB_VBITS=512" not in foreign
    assert "nt-sve256" not in variants.variant_names(TABLE, "stream", "x86_64")
    assert "nt-avx512" not in variants.variant_names(TABLE, "stream", "aarch64")


@pytest.mark.parametrize("family,variant", ARM_SET, ids=[f"{f}-{v}" for f, v in ARM_SET])
def test_cross_builds_warning_free(arm_binaries, family, variant):
    built(arm_binaries, family, variant)


# Every aarch64 variant of every family (40), cross-built and, for the bandwidth
# families, validated and corrupted under qemu: 48 s on a quiet 2-CPU machine,
# more than the suite's budget has left, so asked for by name (docs/arm.md).
FULL_SET = os.environ.get("MEMBENCH_ARM_ALL") == "1"


@pytest.mark.skipif(not FULL_SET, reason="the full aarch64 variant set: set MEMBENCH_ARM_ALL=1 (about a minute)")
def test_every_aarch64_variant_cross_builds_and_validates(tmp_path, arm_harness):
    every = [(f, v) for f in TABLE["families"] for v in variants.variant_names(TABLE, f, "aarch64")]
    assert len(every) >= 40 and set(ARM_SET) <= set(every)

    def build_and_run(fv):
        family, variant = fv
        path = tmp_path / f"{family}-{variant}"
        argv = variants.compile_argv(TABLE, family, variant, KERNELS, path, harness=arm_harness, arch="aarch64")
        proc = subprocess.run(argv, capture_output=True, text=True)
        if proc.returncode or proc.stderr:
            return fv, f"did not cross-build cleanly: {proc.stderr[-400:]}"
        if family not in ("stream", "readonly", "mix", "xor", "daxpy"):
            return fv, None  # chase, loaded, c2c: one variant each, run by the tests above
        rc, recs, err = qemu(path, *TINY, "--variant", variant)
        if rc != 0 or not recs or not all(r["status"] == "ok" and r["valid"] for r in recs):
            return fv, f"did not validate (exit {rc}): {err[-300:]}"
        rc, recs, err = qemu(path, *TINY, "--test-corrupt")
        if rc != 1 or not recs or any(r["valid"] for r in recs):
            return fv, f"--test-corrupt was not caught (exit {rc})"
        return fv, None

    with ThreadPoolExecutor(max_workers=2) as pool:
        problems = {fv: why for fv, why in pool.map(build_and_run, every) if why}
    assert problems == {}


# ----------------------------------------------------- under qemu-aarch64


@pytest.mark.parametrize("family,variant", BANDWIDTH, ids=[f"{f}-{v}" for f, v in BANDWIDTH])
def test_validates_and_catches_corruption_under_qemu(arm_binaries, family, variant):
    path = built(arm_binaries, family, variant)
    rc, recs, err = qemu(path, *TINY, "--variant", variant)
    assert rc == 0, err
    assert [r["op"] for r in recs] == TABLE["families"][family]["ops"]
    bits = variants.features(TABLE, family, variant)["vector_bits"]
    for r in recs:
        assert r["status"] == "ok" and r["valid"] is True, r["reason"]
        assert r["arch"] == "aarch64" and r["sve_vector_bits"] == 256 and r["base_page_bytes"] == 4096
        assert r["cpu_feature"] == {128: "asimd", 256: "sve256"}.get(bits)
    rc, recs, err = qemu(path, *TINY, "--test-corrupt")
    assert rc == 1, err
    assert recs and all(r["status"] == "failed" and "validation failed" in r["reason"] for r in recs)


@pytest.mark.parametrize("cpu,why", [(NO_SVE, "no SVE"), (SVE128, "SVE at 128 bits")])
def test_sve256_is_skipped_where_the_cpu_cannot_run_it(arm_binaries, cpu, why):
    """Only the kernels carry +sve: the harness runs on a CPU without SVE
    (no SIGILL) and every record is skipped, naming sve256."""
    for family, variant in (("stream", "nt-sve256"), ("readonly", "v009-sve256"), ("mix", "nt-sve256")):
        rc, recs, err = qemu(built(arm_binaries, family, variant), *TINY, cpu=cpu)
        assert rc == 3, (why, err)
        assert recs and all(r["status"] == "skipped" and "'sve256'" in r["reason"] for r in recs), why
        assert all(r["sve_vector_bits"] == (0 if cpu == NO_SVE else 128) for r in recs)


def test_neon_runs_on_a_core_without_sve_and_names_it(arm_binaries):
    rc, recs, err = qemu(built(arm_binaries, "stream", "ntpf-neon"), *TINY, cpu=NO_SVE)
    assert rc == 0, err
    assert all(r["valid"] and r["nontemporal"] for r in recs)
    assert {(r["cpu_implementer"], r["cpu_part"], r["cpu_name"]) for r in recs} == {("0x41", "0xd08", "Cortex-A72")}


def test_a_64k_page_kernel_sizes_pages_from_the_system(arm_binaries):
    """MEMBENCH_TEST_BASE_PAGE stands for a 64 KiB-page kernel (Grace, RHEL
    arm64): the records say so, THP is 512 MiB, and the kernels still
    validate (nothing assumes 4 KiB)."""
    for family, variant in (("stream", "nt-sve256"), ("readonly", "v009-sve256")):
        rc, recs, err = qemu(built(arm_binaries, family, variant), *TINY, env={"MEMBENCH_TEST_BASE_PAGE": "65536"})
        assert rc == 0, err
        assert all(r["valid"] and r["base_page_bytes"] == 65536 and r["thp_bytes"] == 512 << 20 for r in recs)


def test_chase_and_loaded_validate_under_qemu(arm_binaries):
    rc, recs, err = qemu(built(arm_binaries, "chase", "default"), "--size", str(64 * 1024), "--ntimes", "3",
                         "--chunk-ms", "2")  # fmt: skip
    assert rc == 0 and recs and all(r["status"] == "ok" and r["valid"] for r in recs), err
    rc, recs, err = qemu(built(arm_binaries, "loaded", "default"), "--size", str(1 << 20), "--threads", "2",
                         "--op", "triad,r2w1nt", "--ntimes", "3", "--chunk-ms", "2")  # fmt: skip
    assert rc == 0 and [r["op"] for r in recs] == ["triad", "r2w1nt"], err
    assert all(r["status"] == "ok" and r["valid"] for r in recs)


@pytest.mark.parametrize("cpu,atomics", [(SVE256, "lse"), (NO_SVE, "llsc")])
def test_c2c_records_which_compare_and_swap_ran(arm_binaries, cpu, atomics):
    rc, recs, err = qemu(built(arm_binaries, "c2c", "default"), "--threads", "2", "--size", str(1 << 20),
                         "--samples", "3", "--roundtrips", "2000", "--op", "cas,clean", cpu=cpu)  # fmt: skip
    assert rc == 0, err
    by_op = {r["op"]: r for r in recs}
    assert by_op["cas"]["valid"] and by_op["cas"]["cas_atomics"] == atomics
    assert by_op["clean"]["valid"] and by_op["clean"]["clean_flushed"] is True  # dc civac
    rc, recs, _ = qemu(built(arm_binaries, "c2c", "default"), "--threads", "2", "--size", str(1 << 20),
                       "--samples", "3", "--roundtrips", "2000", "--op", "cas", "--test-corrupt", cpu=cpu)  # fmt: skip
    assert rc == 1 and recs and not any(r["valid"] for r in recs)


# ------------------------------------------------------------ disassembly

FUNC = re.compile(r"^[0-9a-f]+ <([^>]+)>:$")
INSN = re.compile(r"^\s*[0-9a-f]+:\s+(\S+)\s*(.*)$")


def functions(path) -> dict[str, list[tuple[str, str]]]:
    out = subprocess.run([OBJDUMP, "-d", "--no-show-raw-insn", str(path)], capture_output=True, text=True,
                         check=True).stdout  # fmt: skip
    funcs, cur = {}, None
    for line in out.splitlines():
        if m := FUNC.match(line):
            cur = funcs.setdefault(m.group(1), [])
        elif (m := INSN.match(line)) and cur is not None:
            cur.append((m.group(1), m.group(2).split("//")[0].strip()))
    return funcs


def kernel_insns(funcs, family, op):
    pattern = re.compile(rf"^mb_kern_{family}_{op}(\.(constprop|isra|part)\.\d+)*$")
    return [insn for name, insns in funcs.items() if pattern.match(name) for insn in insns]


def uses_sve(insn) -> bool:
    return bool(re.search(r"\bz\d+\.|\bp\d+(/[zm])?\b", insn[1])) or insn[0] in ("ptrue", "whilelo")


needs_objdump = pytest.mark.skipif(not OBJDUMP, reason="aarch64-linux-gnu-objdump (binutils) not installed")


@needs_objdump
@pytest.mark.parametrize("family,variant", BANDWIDTH, ids=[f"{f}-{v}" for f, v in BANDWIDTH])
def test_disassembly_matches_the_variant(arm_binaries, family, variant):
    """Vector width (q/v registers for NEON, z registers for SVE), NT stores
    (stnp / stnt1d) and prefetch (prfm) in the kernels iff the variant says
    so; SVE nowhere outside the kernels (the target attribute is theirs)."""
    funcs = functions(built(arm_binaries, family, variant))
    feat = variants.features(TABLE, family, variant)
    for op in TABLE["families"][family]["ops"]:
        insns = kernel_insns(funcs, family, op)
        assert insns, (family, op)
        names = {m for m, _ in insns}
        sve = any(uses_sve(i) for i in insns)
        nt = bool(names & {"stnp", "stnt1d"})
        if feat["vector_bits"] == 256:
            assert sve and any(m == "ld1d" for m in names), (op, "SVE loads")
        elif feat["vector_bits"] == 128:
            assert not sve and any(re.search(r"\bq\d+\b|\bv\d+\.2d\b", o) for _, o in insns), (op, "NEON")
        if family in ("stream", "mix") and op != "r1w0":
            assert nt == (feat["nt_stores"] or op == "r2w1nt"), (op, names)
        assert ("prfm" in names) == feat["sw_prefetch"], (op, "prefetch")
    outside = [name for name, insns in funcs.items()
               if not name.startswith("mb_kern_") and any(uses_sve(i) for i in insns)]  # fmt: skip
    assert not outside, f"SVE outside the kernels: {outside[:5]}"


@needs_objdump
def test_c2c_compare_and_swap_is_inline(arm_binaries):
    """casal inline where LSE is there, ldaxr/stlxr where not, and never the
    out-of-line helper (a call inside the timed hand-off)."""
    funcs = functions(built(arm_binaries, "c2c", "default"))
    for name, want in (("mb_kern_c2c_cas_lse", {"casal"}), ("mb_kern_c2c_cas_llsc", {"ldaxr", "stlxr"})):
        insns = funcs[name]
        assert want <= {m for m, _ in insns}, name
        # the one call is the timeout's clock read, every 2^20 spins
        assert not [o for m, o in insns if m == "bl" and "__aarch64_" in o], name
    flush = [o for m, o in funcs["mb_c2c_flush_window"] if m == "dc"]
    assert flush and all(o.startswith("civac") for o in flush)
