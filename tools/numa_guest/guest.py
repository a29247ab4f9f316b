"""A small multi-node Linux guest under QEMU, to prove memory placement on a
real NUMA kernel when the host has one node.

    python tools/numa_guest/guest.py --layout 4node --case "--policy bind:3"

The kernel, the static harness and the initramfs come from image.py (each
cached). Here: QEMU (TCG) with -numa node/dist options from a Layout; the
console goes to one serial port (the boot log), the data (sysfs dump and
harness records, marker lines) to a second one, so kernel messages cannot
break a JSON line.

KVM: /dev/kvm exists on the machines this was written on (nested
virtualisation) and QEMU accepts -accel kvm, but the guest crawls (about a
second per early boot message) where TCG boots in about 5 s; so TCG only.
`numa=fake` on a one-node guest is no substitute: it does not map CPUs to
nodes. The guest proves placement, not speed.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

TOOLS = Path(__file__).resolve().parents[1]
if str(TOOLS) not in sys.path:  # run as a script: make numa_guest importable
    sys.path.insert(0, str(TOOLS))

from numa_guest.image import (  # noqa: E402
    DONE,
    QEMU,
    REPO,
    UP,
    base_initramfs,
    build_harness,
    cases_cpio,
    fetch_kernel,
    require_tools,
)

# ------------------------------------------------------------------ layout


@dataclass(frozen=True)
class Layout:
    """Nodes of the guest: CPUs and MiB of memory per node, distance matrix."""

    name: str
    node_cpus: tuple[tuple[int, ...], ...]
    node_mib: tuple[int, ...]
    distances: tuple[tuple[int, ...], ...]
    # (sockets, cores per socket, threads per core); None: one socket per CPU.
    # QEMU numbers CPUs socket by socket, core by core, siblings adjacent:
    # cpu = (socket * cores + core) * threads + thread.
    smp: tuple[int, int, int] | None = None
    # TCG's "max" CPU describes itself as AMD without the topology leaf that
    # Linux reads SMT siblings from on AMD; as GenuineIntel, Linux reads
    # CPUID leaf 0xB, which QEMU fills from -smp.
    cpu: str = "max"

    @property
    def ncpus(self) -> int:
        return sum(len(c) for c in self.node_cpus)

    @property
    def nnodes(self) -> int:
        return len(self.node_cpus)

    def node_of(self, cpu: int) -> int:
        return next(n for n, cpus in enumerate(self.node_cpus) if cpu in cpus)

    def farthest_from(self, nodes: set[int]) -> int:
        """By hand, independently of membench.measure.harness.remote_node: the node
        without threads with the largest summed distance (lowest on a tie)."""
        others = [n for n in range(self.nnodes) if n not in nodes]
        return max(others, key=lambda n: (sum(self.distances[t][n] for t in nodes), -n))

    def socket_core_thread(self, cpu: int) -> tuple[int, int, int]:
        sockets, cores, threads = self.smp or (self.ncpus, 1, 1)
        core, thread = divmod(cpu, threads)
        socket, core = divmod(core, cores)
        return socket, core, thread

    def qemu_args(self) -> list[str]:
        sockets, cores, threads = self.smp or (self.ncpus, 1, 1)
        args = ["-smp", f"{self.ncpus},sockets={sockets},cores={cores},threads={threads}", "-m", f"{sum(self.node_mib)}M"]
        for node, (cpus, mib) in enumerate(zip(self.node_cpus, self.node_mib)):
            args += ["-object", f"memory-backend-ram,id=mem{node},size={mib}M"]
            args += ["-numa", ",".join([f"node,nodeid={node}", *(f"cpus={c}" for c in cpus), f"memdev=mem{node}"])]
        for src, row in enumerate(self.distances):
            for dst, val in enumerate(row):
                if src != dst:
                    args += ["-numa", f"dist,src={src},dst={dst},val={val}"]
        return args


# Two nodes, CPUs interleaved between them (so a CPU's node is not its
# number's half), unequal memory.
TWO_NODES = Layout(
    name="2node",
    node_cpus=((0, 2), (1, 3)),
    node_mib=(224, 160),
    distances=((10, 21), (21, 10)),
)
# Four nodes with unequal distances, chosen so that every "farthest node"
# question has one answer: from 0 it is 2 (not the last node), from 1 it is
# 3, from {0, 1} it is 2 (54 vs 50), from {1, 2} it is 0 (48 vs 44).
FOUR_NODES = Layout(
    name="4node",
    node_cpus=((0,), (1,), (2,), (3,)),
    node_mib=(224, 128, 128, 128),
    distances=(
        (10, 16, 32, 22),
        (16, 10, 22, 28),
        (32, 22, 10, 16),
        (22, 28, 16, 10),
    ),
)
# Two sockets of two cores with two SMT threads each, a node per socket:
# CPUs 0-3 on node 0 (core 0: CPUs 0, 1; core 1: CPUs 2, 3), 4-7 on node 1.
# The smallest machine where close, spread and node:N differ.
TWO_SOCKETS_SMT = Layout(
    name="2socket-smt",
    node_cpus=((0, 1, 2, 3), (4, 5, 6, 7)),
    node_mib=(192, 160),
    distances=((10, 21), (21, 10)),
    smp=(2, 2, 2),
    cpu="max,vendor=GenuineIntel",
)
# The four nodes above plus node 4: memory only, no CPUs (as a CXL expander
# or HBM shows up), farther from every CPU node than any of them.
FOUR_NODES_MEMORY_ONLY = Layout(
    name="4node-memonly",
    node_cpus=((0,), (1,), (2,), (3,), ()),
    node_mib=(224, 128, 128, 128, 96),
    distances=(
        (10, 16, 32, 22, 40),
        (16, 10, 22, 28, 40),
        (32, 22, 10, 16, 40),
        (22, 28, 16, 10, 40),
        (40, 40, 40, 40, 10),
    ),
)
LAYOUTS = {layout.name: layout for layout in (TWO_NODES, FOUR_NODES, TWO_SOCKETS_SMT, FOUR_NODES_MEMORY_ONLY)}


# ------------------------------------------------------------------- boot


@dataclass
class GuestRun:
    layout: Layout
    returncode: int | None
    seconds: float
    console: str
    data: str
    qemu_stderr: str
    up_seconds: float | None = None
    records: dict[int, list[dict]] = field(default_factory=dict)
    stderr: dict[int, list[str]] = field(default_factory=dict)
    exit_codes: dict[int, int] = field(default_factory=dict)
    cases: dict[int, str] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    dirs: list[str] = field(default_factory=list)
    done: bool = False

    def explain(self) -> str:
        return (
            f"guest {self.layout.name}: qemu rc={self.returncode} after {self.seconds:.1f}s, done={self.done}\n"
            f"--- qemu stderr ---\n{self.qemu_stderr[-2000:]}\n"
            f"--- console (tail) ---\n{self.console[-3000:]}\n"
            f"--- data (tail) ---\n{self.data[-3000:]}"
        )

    def write_root(self, root: Path) -> Path:
        """The guest's sysfs/procfs files as a tree membench.probe.topology reads."""
        for rel, text in self.files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        for rel in self.dirs:
            (root / rel).mkdir(parents=True, exist_ok=True)
        return root


def parse_data(run: GuestRun) -> GuestRun:
    current: str | None = None
    buf: list[str] = []
    for raw in run.data.splitlines():
        line = raw.rstrip("\r")
        if current is not None:
            if line == "@@EOF":
                run.files[current] = "\n".join(buf) + "\n"
                current, buf = None, []
            else:
                buf.append(line)
            continue
        tag, _, rest = line.partition(" ")
        if tag == "@@FILE":
            current = rest
        elif tag == "@@DIR":
            run.dirs.append(rest)
        elif tag == "@@CASE":
            num, _, argv = rest.partition(" ")
            run.cases[int(num)] = argv
        elif tag == "@@RECORD":
            num, _, rec = rest.partition(" ")
            run.records.setdefault(int(num), []).append(json.loads(rec))
        elif tag == "@@STDERR":
            num, _, msg = rest.partition(" ")
            run.stderr.setdefault(int(num), []).append(msg)
        elif tag == "@@CASE-END":
            num, _, rc = rest.partition(" ")
            run.exit_codes[int(num)] = int(rc.removeprefix("rc="))
        elif tag == DONE:
            run.done = True
    return run


def qemu_argv(layout: Layout, kernel: Path, initrd: Path, console: Path, data: Path) -> list[str]:
    append = "console=ttyS0 panic=-1 quiet loglevel=4 numa_balancing=disable mitigations=off nokaslr"
    return [
        QEMU,
        "-machine", "pc", "-accel", "tcg,thread=multi", "-cpu", layout.cpu,
        *layout.qemu_args(),
        "-kernel", str(kernel), "-initrd", str(initrd), "-append", append,
        "-nodefaults", "-display", "none", "-no-reboot", "-monitor", "none",
        "-serial", f"file:{console}", "-serial", f"file:{data}",
    ]  # fmt: skip


class GuestHung(RuntimeError):
    """The guest was still running at the timeout (its whole story in the message)."""


def boot(layout: Layout, cases: list[list[str]], *, hang_retries: int = 1, **options) -> GuestRun:
    """boot_once, booted again (at most hang_retries times) when the guest
    hangs: under TCG on a busy 2-core host an emulated kernel has stalled in
    a soft lockup of a kworker (CPU#2 stuck for 209 s, the guest's own
    watchdog said) before running any case, which is no verdict on what
    the cases test. Each hang is said on stderr; any other failure is not
    retried."""
    for attempt in range(hang_retries + 1):
        try:
            return boot_once(layout, cases, **options)
        except GuestHung as hung:
            if attempt == hang_retries:
                raise
            print(f"guest {layout.name} hung (attempt {attempt + 1}), booting again:\n{str(hung)[-1500:]}", file=sys.stderr)
    raise AssertionError("unreachable")


def boot_once(
    layout: Layout,
    cases: list[list[str]],
    *,
    kernel: Path,
    base_initrd: Path,
    workdir: Path,
    dump_sysfs: bool = False,
    timeout: float = 240,
    binaries: dict[str, Path] | None = None,
) -> GuestRun:
    """Boot the guest once, run each case (harness argv) inside, power off.
    QEMU is killed (its whole process group) on timeout or any error. The
    timeout is generous: an emulated guest on a busy 2-core host boots in
    tens of seconds, and a probe boot once ran past 90 s under load."""
    workdir.mkdir(parents=True, exist_ok=True)
    initrd = workdir / f"initrd-{layout.name}.cpio"
    base = base_initrd.read_bytes()
    # The kernel unpacks concatenated archives; an uncompressed one must start
    # on a 4-byte boundary (zero padding between archives is skipped).
    initrd.write_bytes(base + b"\0" * (-len(base) % 4) + cases_cpio(cases, dump_sysfs, binaries))
    console, data = workdir / f"console-{layout.name}.log", workdir / f"data-{layout.name}.log"
    for path in (console, data):
        path.write_text("")
    argv = qemu_argv(layout, kernel, initrd, console, data)
    (workdir / f"qemu-{layout.name}.cmd").write_text(shlex.join(argv) + "\n")
    start = time.monotonic()
    proc = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, start_new_session=True,
    )  # fmt: skip
    up_seconds = None
    try:
        deadline = start + timeout
        while proc.poll() is None and time.monotonic() < deadline:
            if up_seconds is None and UP in data.read_text(errors="replace"):
                up_seconds = time.monotonic() - start
            time.sleep(0.1)
        if proc.poll() is None:
            raise TimeoutError(f"guest {layout.name} still running after {timeout:.0f}s")
        out, err = proc.communicate(timeout=10)
    except BaseException as exc:
        _kill(proc)
        if not isinstance(exc, Exception):  # KeyboardInterrupt and the like: QEMU is gone, go on
            raise
        run = GuestRun(layout, proc.returncode, time.monotonic() - start,
                       console.read_text(errors="replace"), data.read_text(errors="replace"), "")  # fmt: skip
        raise (GuestHung if isinstance(exc, TimeoutError) else RuntimeError)(f"{exc}\n{run.explain()}") from exc
    run = GuestRun(
        layout, proc.returncode, time.monotonic() - start,
        console.read_text(errors="replace"), data.read_text(errors="replace"), (out or "") + (err or ""),
        up_seconds=up_seconds,
    )  # fmt: skip
    return parse_data(run)


def _kill(proc: subprocess.Popen) -> None:
    """SIGKILL QEMU's process group (it was started in its own session)."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        proc.communicate(timeout=10)
    except (subprocess.TimeoutExpired, ValueError):
        pass


# -------------------------------------------------------------------- CLI


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--layout", choices=sorted(LAYOUTS), default="2node")
    parser.add_argument("--case", action="append", default=[], help="harness arguments (repeatable)")
    parser.add_argument("--dump-sysfs", action="store_true")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--kernel-dir", type=Path, default=REPO / "kernels", help="harness sources")
    args = parser.parse_args(argv)
    tools = require_tools()
    kernel = fetch_kernel()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="numa-guest-"))
    harness = build_harness(workdir / "harness", args.kernel_dir)
    base = base_initramfs(harness, tools["busybox"])
    cases = [shlex.split(c) for c in args.case] or [["--size", "1048576", "--ntimes", "2"]]
    run = boot(LAYOUTS[args.layout], cases, kernel=kernel, base_initrd=base, workdir=workdir, dump_sysfs=args.dump_sysfs)
    print(run.data)
    print(f"# qemu rc={run.returncode}, {run.seconds:.1f}s, up after {run.up_seconds}s, done={run.done}", file=sys.stderr)
    return 0 if run.done else 1


if __name__ == "__main__":
    sys.exit(main())
