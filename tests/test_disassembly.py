"""Proof that what ran is what was declared: objdump -d of every built binary
(the same binaries as test_variants.py), the kernel functions of its family,
and the claims of its entry in kernels/families/variants.yaml:

- software prefetch instructions present iff features.sw_prefetch;
- non-temporal stores (movntpd / vmovntpd ...) present iff features.nt_stores;
- packed memory operations at exactly features.vector_bits in the hot loop
  and never wider anywhere in the kernel (64 = scalar: none packed at all;
  0 = the compiler's choice: not checked);
- mix: the hot loop loads from exactly as many streams as the op's name
  says it reads and stores to as many as it writes (no read elided);
- readonly: the hot loop adds into exactly features.partial_sums distinct
  registers, and (when the loop addresses all streams from one base
  register) its loads span features.pages_per_loop 4 KiB pages.

Kernel functions are found by name: mb_kern_<family>_<op> (kept out of line
by the sources) and gcc's outlined OpenMP bodies mb_<family>_<op>._omp_fn.N.
Everything expected comes from the table, nothing is listed here, so a
variant whose code does not match its entry fails.
"""

import re
import subprocess
from functools import lru_cache

import pytest

from membench.plan import variants
from test_variants import ALL, OWN, TABLE, binary, op_nontemporal

pytestmark = pytest.mark.skipif(
    subprocess.run(["which", "objdump"], capture_output=True).returncode != 0,
    reason="objdump not installed (binutils)")

FUNC = re.compile(r"^([0-9a-f]+) <([^>]+)>:$")
INSN = re.compile(r"^\s*([0-9a-f]+):\s+(\S+)\s*(.*)$")
VREG = re.compile(r"%([xyz])mm\d+")
WIDTH = {"x": 128, "y": 256, "z": 512}
NT_STORES = {"movntpd", "movntps", "movntdq", "movnti", "vmovntpd", "vmovntps", "vmovntdq"}
FP_ADDS = {"addsd", "addpd", "vaddsd", "vaddpd"}
# memory forms that move or use one scalar element although they name an
# xmm register
SCALAR = re.compile(r"^v?(.*s[sd]|movq|movd|pinsr.|pextr.|cvt.*|u?comis[sd]|vbroadcasts[sd]|"
                    r"vpbroadcast.)$")


@pytest.fixture(scope="module")
def binaries(variant_builds):
    return variant_builds.build(ALL)


@lru_cache(maxsize=None)
def functions(path):
    """name -> list of (address, mnemonic, operands) from objdump -d."""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(path)],
                         capture_output=True, text=True, check=True).stdout
    funcs, cur = {}, None
    for line in out.splitlines():
        m = FUNC.match(line)
        if m:
            cur = funcs.setdefault(m.group(2), [])
            continue
        m = INSN.match(line)
        if m and cur is not None:
            operands = m.group(3).split("#")[0].strip()
            cur.append((int(m.group(1), 16), m.group(2), operands))
    return funcs


def kernel_functions(path, family, op):
    pattern = re.compile(rf"^mb_(kern_)?{family}_{op}(\._omp_fn\.\d+|\.(constprop|isra|part|cold)\.\d+)*$")
    found = {name: insns for name, insns in functions(path).items() if pattern.match(name)}
    # a plain mb_<family>_<op> only forks the team; its body is the _omp_fn
    return {n: i for n, i in found.items() if "kern_" in n or "_omp_fn" in n}


def loops(insns):
    """Bodies of the innermost loops (conditional backward branches, as gcc
    closes its loops, with no other one inside), as lists of instructions.
    A backward jmp is not a loop end: gcc uses it to re-enter code from a
    block placed after the return."""
    ranges = set()
    for addr, mnem, ops in insns:
        if mnem.startswith("j") and mnem != "jmp":
            m = re.match(r"^([0-9a-f]+)\b", ops)
            if m and int(m.group(1), 16) <= addr:
                ranges.add((int(m.group(1), 16), addr))
    inner = [(lo, hi) for lo, hi in ranges
             if not any((lo2, hi2) != (lo, hi) and lo <= lo2 and hi2 <= hi
                        for lo2, hi2 in ranges)]
    return [[i for i in insns if lo <= i[0] <= hi] for lo, hi in sorted(inner)]


def is_memory(ops):
    return "(" in ops


def packed_width(mnem, ops):
    """Width of a packed vector operation with a memory operand, else None."""
    if not is_memory(ops) or mnem.startswith("prefetch") or SCALAR.match(mnem):
        return None
    regs = VREG.findall(ops)
    return max(WIDTH[r] for r in regs) if regs else None


def hot_loop(insns):
    """The innermost loop with the most memory-operand vector/FP work."""
    best, score = None, 0
    for body in loops(insns):
        s = sum(1 for _, m, o in body if is_memory(o) and VREG.search(o))
        if s > score:
            best, score = body, s
    return best


def cases():
    for family, variant in OWN:
        for op in TABLE["families"][family]["ops"]:
            yield pytest.param(family, variant, op, id=f"{family}-{variant}-{op}")


@pytest.mark.parametrize("family,variant,op", list(cases()))
def test_kernel_code_matches_its_table_entry(binaries, family, variant, op):
    path = binary(binaries, family, variant)
    feat = variants.features(TABLE, family, variant)
    funcs = kernel_functions(path, family, op)
    assert funcs, f"no kernel function for {family}.{op} in {path.name}"
    insns = [i for body in funcs.values() for i in body]
    mnems = {m for _, m, _ in insns}

    has_prefetch = any(m.startswith("prefetch") for m in mnems)
    assert has_prefetch is bool(feat.get("sw_prefetch", False)), \
        f"prefetch instructions {'present' if has_prefetch else 'absent'}, table says " \
        f"sw_prefetch={feat.get('sw_prefetch')}"

    has_nt = bool(mnems & NT_STORES)
    want_nt = op_nontemporal(family, variant, op)
    assert has_nt is want_nt, \
        f"non-temporal stores {sorted(mnems & NT_STORES)}, table says {want_nt} for {op}"

    loop = hot_loop(insns)
    assert loop, f"no loop with vector/FP memory operations in {sorted(funcs)}"
    bits = feat.get("vector_bits", 0)
    widths_all = {w for _, m, o in insns if (w := packed_width(m, o))}
    widths_hot = {w for _, m, o in loop if (w := packed_width(m, o))}
    if bits == 64:
        assert not widths_all, f"scalar variant has packed memory operations {widths_all}"
    elif bits:
        assert widths_hot == {bits}, f"hot loop packed widths {widths_hot}, table says {bits}"
        assert max(widths_all) == bits, f"wider than declared: {widths_all}"
    if has_nt:
        hot_mnems = {m for _, m, _ in loop}
        assert hot_mnems & NT_STORES, "non-temporal stores are not in the hot loop"
        nt_widths = {WIDTH[r] for _, m, o in loop if m in NT_STORES for r in VREG.findall(o)}
        if bits:
            assert nt_widths == {bits}, f"non-temporal stores at {nt_widths}, table says {bits}"

    if family == "mix":
        loads, stores = streams(loop)
        want = tuple(int(x) for x in re.fullmatch(r"r(\d)w(\d)(nt)?", op).groups()[:2])
        assert (len(loads), len(stores)) == want, \
            f"hot loop loads from {sorted(loads)} and stores to {sorted(stores)}: " \
            f"{len(loads)} read and {len(stores)} write streams, {op} says {want}"

    if family == "readonly":
        adds = [(m, o) for _, m, o in loop if m in FP_ADDS]
        dests = {o.split(",")[-1] for _, o in adds}
        assert len(dests) == feat["partial_sums"], \
            f"hot loop accumulates into {sorted(dests)}, table says {feat['partial_sums']}"
        span = load_span(loop)
        if span is not None:
            pages = span // 4096 + 1
            assert pages == max(1, feat["pages_per_loop"]), \
                f"hot loop loads span {pages} pages, table says {feat['pages_per_loop']} per loop"


MEM = re.compile(r"(-?0x[0-9a-f]+)?\((%\w+)?(?:,(%\w+))?(?:,\d)?\)")


def streams(loop):
    """The base registers of the vector memory operands of a loop (one per
    stream: gcc may step one stream through two index registers when it
    unrolls), split into loads (the memory operand is a source) and stores
    (it is the destination, the last operand in AT&T syntax)."""
    loads, stores = set(), set()
    for _, mnem, ops in loop:
        m = MEM.search(ops)
        if not m or mnem.startswith("prefetch") or not VREG.search(ops):
            continue
        (stores if ops.endswith(")") else loads).add(m.group(2))
    return loads, stores


def _imm(text):
    v = int(text, 16)
    return v - (1 << 64) if v >= 1 << 63 else v


def load_span(loop):
    """Bytes between the lowest and the highest address the FP adds of one
    loop iteration load from, when they all use one base register (its
    add/sub inside the loop are followed); None when not visible."""
    delta, addrs, bases = {}, [], set()
    for _, mnem, ops in loop:
        m = re.fullmatch(r"\$(0x[0-9a-f]+),(%\w+)", ops)
        if m and mnem in ("add", "sub"):
            step = _imm(m.group(1))
            delta[m.group(2)] = delta.get(m.group(2), 0) + (step if mnem == "add" else -step)
            continue
        if mnem in FP_ADDS and is_memory(ops):
            m = re.match(r"^(-?0x[0-9a-f]+)?\((%\w+)\)", ops)
            if not m:
                return None  # indexed addressing: not followed
            disp = m.group(1) or "0x0"
            value = -int(disp[1:], 16) if disp.startswith("-") else int(disp, 16)
            bases.add(m.group(2))
            addrs.append(value + delta.get(m.group(2), 0))
    if not addrs or len(bases) != 1:
        return None
    return max(addrs) - min(addrs)


def test_analyser_sees_the_difference(binaries):
    """The checks can fail: the same checks on a neighbouring variant give
    the other answer (prefetch v003 vs v004, width v006 vs v006-avx512)."""
    def prefetches(v):
        funcs = kernel_functions(binary(binaries, "readonly", v), "readonly", "sum")
        return any(m.startswith("prefetch") for f in funcs.values() for _, m, _ in f)

    assert prefetches("v004") and not prefetches("v003")

    def widths(v):
        funcs = kernel_functions(binary(binaries, "readonly", v), "readonly", "sum")
        loop = hot_loop([i for f in funcs.values() for i in f])
        return {w for _, m, o in loop if (w := packed_width(m, o))}

    assert widths("v006") == {128} and widths("v006-avx512") == {512}
