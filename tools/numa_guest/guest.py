"""A small multi-node Linux guest under QEMU, to prove memory placement on a
real NUMA kernel when the host has one node.

    python tools/numa_guest/guest.py --layout 4node --case "--policy bind:3"

What it does, step by step (each product is cached; see cache_dir()):
  1. the kernel: `apt-get download linux-image-amd64` (a metapackage), then
     the linux-image-<abi> package it depends on; only ./boot/vmlinuz-* is
     extracted with dpkg-deb (nothing is installed, the host's /boot is not
     touched). The xz/gzip payload of the bzImage is decompressed in Python
     to the vmlinux ELF (the Debian kernel has CONFIG_PVH, so QEMU boots it
     directly and the guest skips decompressing itself under TCG, which
     is slow); the bzImage is the fallback.
  2. the harness: kernels/ compiled with the pipeline's own command
     (membench.variants.compile_argv) but portable (-march=x86-64-v2: the
     emulated CPU has no AVX-512) and -static.
  3. the initramfs: a newc cpio written here (no cpio tool, no root needed)
     with busybox-static, the harness, /init and the cases to run.
  4. QEMU (TCG) with -numa node/dist options from a Layout; the console goes
     to one serial port (the boot log), the data (sysfs dump and harness
     records, marker lines) to a second one, so kernel messages cannot
     break a JSON line.

KVM: /dev/kvm exists on the machines this was written on (nested
virtualisation) and QEMU accepts -accel kvm, but the guest crawls (about a
second per early boot message) where TCG boots in about 5 s; so TCG only.
`numa=fake` on a one-node guest is no substitute: it does not map CPUs to
nodes. The guest proves placement, not speed.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import lzma
import os
import shlex
import shutil
import signal
import struct
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "workflow" / "scripts"
if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))

from membench import variants  # noqa: E402

QEMU = "qemu-system-x86_64"
BUSYBOX_CANDIDATES = ("/bin/busybox", "/usr/bin/busybox")
GUEST_MARCH = "-march=x86-64-v2"
# Marker lines on the data port.
UP = "@@MEMBENCH-GUEST-UP"
DONE = "@@MEMBENCH-GUEST-DONE"


class Unavailable(RuntimeError):
    """A tool the guest needs is missing on this host (skip, with the reason)."""


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
        """By hand, independently of membench.measure.remote_node: the node
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
LAYOUTS = {layout.name: layout for layout in (TWO_NODES, FOUR_NODES, TWO_SOCKETS_SMT)}


# ------------------------------------------------------------------- cache


def cache_dir() -> Path:
    """$MEMBENCH_CACHE, else $XDG_CACHE_HOME/membench, else ~/.cache/membench."""
    if os.environ.get("MEMBENCH_CACHE"):
        base = Path(os.environ["MEMBENCH_CACHE"])
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "membench"
    path = base / "numa_guest"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _run(argv: list[str], cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def require_tools() -> dict[str, str]:
    """The host tools the guest needs, or Unavailable naming what is missing."""
    found = {
        "qemu": shutil.which(QEMU),
        "busybox": next((p for p in BUSYBOX_CANDIDATES if _is_static(p)), None),
        "gcc": shutil.which("gcc"),
    }
    missing = [name for name, path in found.items() if not path]
    if missing:
        raise Unavailable(
            f"missing {', '.join(missing)} (apt packages: qemu-system-x86 busybox-static gcc; "
            f"`make test-deps` installs them)"
        )
    return found  # type: ignore[return-value]


def _is_static(path: str) -> bool:
    """A statically linked ELF (busybox-static, not the dynamic busybox)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(64)
            if head[:4] != b"\x7fELF" or head[4] != 2:
                return False
            phoff, = struct.unpack_from("<Q", head, 0x20)
            phentsize, phnum = struct.unpack_from("<HH", head, 0x36)
            fh.seek(phoff)
            table = fh.read(phentsize * phnum)
    except OSError:
        return False
    return all(struct.unpack_from("<I", table, i * phentsize)[0] != 3 for i in range(phnum))  # no PT_INTERP


# ------------------------------------------------------------------ kernel


def _apt_download(package: str, dest: Path) -> Path:
    argv = ["apt-get", "download", package]
    if os.geteuid() == 0:  # root: apt's _apt sandbox user cannot write to dest
        argv[1:1] = ["-o", "APT::Sandbox::User=root"]
    got = _run(argv, cwd=dest)
    if got.returncode != 0 and os.geteuid() == 0:
        # A fresh machine may have no package lists yet.
        _run(["apt-get", "update"], timeout=300)
        got = _run(argv, cwd=dest)
    if got.returncode != 0:
        raise Unavailable(f"apt-get download {package} failed: {got.stderr.strip()[-500:]}")
    debs = sorted(dest.glob(f"{package}_*.deb"))
    if not debs:
        raise Unavailable(f"apt-get download {package} produced no .deb in {dest}")
    return debs[-1]


def _decompress_bzimage(bzimage: bytes) -> bytes | None:
    """The vmlinux ELF inside a bzImage (x86 boot protocol >= 2.08), or None
    when its compression is not one Python reads (then boot the bzImage)."""
    if bzimage[0x202:0x206] != b"HdrS":
        return None
    setup_sects = bzimage[0x1F1] or 4
    payload_offset, payload_length = struct.unpack_from("<II", bzimage, 0x248)
    start = (setup_sects + 1) * 512 + payload_offset
    payload = bzimage[start : start + payload_length]
    try:
        if payload.startswith(b"\xfd7zXZ\x00"):
            elf = lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(payload)
        elif payload.startswith(b"\x1f\x8b"):
            elf = gzip.GzipFile(fileobj=io.BytesIO(payload)).read()
        else:
            return None
    except (lzma.LZMAError, OSError, EOFError):
        return None
    return elf if elf.startswith(b"\x7fELF") else None


def fetch_kernel(cache: Path | None = None) -> Path:
    """The guest kernel: cached vmlinux (or bzImage), fetched on first use."""
    cache = cache or cache_dir()
    kdir = cache / "kernel"
    for name in ("vmlinux", "vmlinuz"):
        if (kdir / name).is_file():
            return kdir / name
    if not shutil.which("apt-get") or not shutil.which("dpkg-deb"):
        raise Unavailable("apt-get/dpkg-deb not found: cannot fetch a Debian kernel")
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        tmpdir = Path(tmp)
        os.chmod(tmpdir, 0o755)
        meta = _apt_download("linux-image-amd64", tmpdir)
        depends = _run(["dpkg-deb", "-f", str(meta), "Depends"]).stdout
        image = next((d.split()[0] for d in depends.split(",") if d.strip().startswith("linux-image-")), None)
        deb = _apt_download(image, tmpdir) if image else meta
        # Only the kernel file leaves the package: stream its data tar and
        # pick ./boot/vmlinuz-* (it comes first; dpkg-deb then gets a broken
        # pipe, which is expected, so its stderr is only shown on failure).
        tar_proc = subprocess.Popen(
            ["dpkg-deb", "--fsys-tarfile", str(deb)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        bzimage = None
        with tarfile.open(fileobj=tar_proc.stdout, mode="r|") as tar:
            for member in tar:
                if member.isfile() and Path(member.name).name.startswith("vmlinuz-"):
                    bzimage = tar.extractfile(member).read()
                    version = Path(member.name).name.removeprefix("vmlinuz-")
                    break
        tar_proc.stdout.close()
        dpkg_err = tar_proc.stderr.read().decode(errors="replace")
        tar_proc.wait()
        if bzimage is None:
            raise Unavailable(f"no boot/vmlinuz-* in {deb.name}: {dpkg_err.strip()}")
        staging = tmpdir / "kernel"
        staging.mkdir()
        (staging / "vmlinuz").write_bytes(bzimage)
        elf = _decompress_bzimage(bzimage)
        if elf is not None:
            (staging / "vmlinux").write_bytes(elf)
        (staging / "SOURCE").write_text(f"{deb.name}\nkernel {version}\n")
        if kdir.exists():
            shutil.rmtree(kdir)
        staging.rename(kdir)
    return fetch_kernel(cache)


# ----------------------------------------------------------------- harness


def guest_compile_argv(
    output: Path, kernel_dir: Path = REPO / "kernels", family: str = "stream", variant: str = "default"
) -> list[str]:
    """The build rule's gcc command, made portable and static for the guest."""
    table = variants.load_variants(kernel_dir / "variants.yaml")
    argv = variants.compile_argv(table, family, variant, kernel_dir, output)
    argv = [a.replace("-march=native", GUEST_MARCH) for a in argv]
    argv = [a.replace('-DMB_CFLAGS="', '-DMB_CFLAGS="-static ') if a.startswith("-DMB_CFLAGS=") else a for a in argv]
    return [*argv, "-static"]


def build_harness(output: Path, kernel_dir: Path = REPO / "kernels") -> Path:
    output.parent.mkdir(parents=True, exist_ok=True)
    built = _run(guest_compile_argv(output, kernel_dir))
    if built.returncode != 0:
        raise RuntimeError(f"guest harness build failed:\n{built.stderr}")
    return output


# -------------------------------------------------------------- initramfs

# Files copied out of the guest so membench.topology can read the guest's
# own tree on the host (read_topology / read_environment on a fake root).
SYSFS_DUMP = r"""
dump() { for f in "$@"; do [ -f "$f" ] || continue; echo "@@FILE $f"; cat "$f"; echo "@@EOF"; done; }
cd /
dump proc/cpuinfo proc/sys/kernel/osrelease proc/sys/kernel/numa_balancing proc/sys/vm/zone_reclaim_mode
dump sys/kernel/mm/transparent_hugepage/enabled sys/kernel/mm/transparent_hugepage/defrag
dump sys/devices/system/cpu/online sys/devices/system/node/online sys/devices/system/node/possible
dump sys/devices/system/node/has_memory sys/devices/system/node/has_cpu
for c in sys/devices/system/cpu/cpu[0-9]*; do
  dump $c/topology/core_id $c/topology/physical_package_id $c/topology/die_id $c/topology/thread_siblings_list
  for n in $c/node[0-9]*; do [ -e "$n" ] && echo "@@DIR $n"; done
done
for i in sys/devices/system/cpu/cpu0/cache/index[0-9]*; do
  dump $i/level $i/type $i/size $i/coherency_line_size $i/shared_cpu_list
done
for n in sys/devices/system/node/node[0-9]*; do
  dump $n/cpulist $n/distance $n/meminfo
done
"""

INIT = r"""#!/bin/busybox sh
/bin/busybox mkdir -p /proc /sys /dev /tmp /bin /sbin
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t tmpfs tmpfs /tmp
stty -F /dev/ttyS1 raw -echo 2>/dev/null
exec 3>/dev/ttyS1
echo "@@MEMBENCH-GUEST-UP $(uname -r) cpus=$(cat /sys/devices/system/cpu/online) nodes=$(cat /sys/devices/system/node/online)" >&3
echo "membench guest: up" >/dev/console
if [ -f /cases/dump_sysfs ]; then
  ( %(dump)s ) >&3
fi
i=0
while IFS= read -r line; do
  [ -n "$line" ] || continue
  i=$((i+1))
  echo "@@CASE $i $line" >&3
  eval "set -- $line"
  /bin/harness "$@" >/tmp/out 2>/tmp/err
  rc=$?
  while IFS= read -r rec; do echo "@@RECORD $i $rec"; done </tmp/out >&3
  while IFS= read -r msg; do echo "@@STDERR $i $msg"; done </tmp/err >&3
  echo "@@CASE-END $i rc=$rc" >&3
done </cases/list
echo "@@MEMBENCH-GUEST-DONE cases=$i" >&3
sync
poweroff -f
""".replace("%(dump)s", SYSFS_DUMP)


def _cpio_entry(name: str, mode: int, data: bytes = b"", rdev: tuple[int, int] = (0, 0), ino: int = 0) -> bytes:
    name_b = name.encode() + b"\0"
    header = (
        "070701"
        + "".join(
            f"{v:08X}"
            for v in (ino, mode, 0, 0, 1, 0, len(data), 0, 0, rdev[0], rdev[1], len(name_b), 0)
        )
    ).encode()
    out = header + name_b
    out += b"\0" * (-len(out) % 4)
    out += data
    out += b"\0" * (-len(out) % 4)
    return out


def cpio_newc(entries: list[tuple]) -> bytes:
    """A newc archive of (name, mode[, data[, rdev]]) entries, with trailer."""
    blob = b"".join(_cpio_entry(*entry, ino=i + 1) for i, entry in enumerate(entries))
    return blob + _cpio_entry("TRAILER!!!", 0)


def base_initramfs(harness: Path, busybox: str, cache: Path | None = None) -> Path:
    """busybox + harness + /init, gzipped; cached by content."""
    cache = cache or cache_dir()
    bb = Path(busybox).read_bytes()
    hb = harness.read_bytes()
    key = hashlib.sha256(bb + hb + INIT.encode()).hexdigest()[:16]
    out = cache / f"initramfs-{key}.cpio.gz"
    if out.is_file():
        return out
    entries = [
        ("bin", 0o040755), ("sbin", 0o040755), ("dev", 0o040755), ("proc", 0o040755),
        ("sys", 0o040755), ("tmp", 0o041777), ("cases", 0o040755),
        ("dev/console", 0o020600, b"", (5, 1)),
        ("bin/busybox", 0o100755, bb),
        ("bin/harness", 0o100755, hb),
        ("init", 0o100755, INIT.encode()),
    ]  # fmt: skip
    tmp = out.with_suffix(".tmp")
    tmp.write_bytes(gzip.compress(cpio_newc(entries), compresslevel=6))
    tmp.rename(out)
    for old in cache.glob("initramfs-*.cpio.gz"):
        if old != out and time.time() - old.stat().st_mtime > 7 * 86400:
            old.unlink(missing_ok=True)
    return out


def cases_cpio(cases: list[list[str]], dump_sysfs: bool) -> bytes:
    """An uncompressed cpio appended to the base initramfs (the kernel unpacks
    concatenated archives): the harness argument lists, one per line."""
    text = "".join(shlex.join(argv) + "\n" for argv in cases)
    entries = [("cases/list", 0o100644, text.encode())]
    if dump_sysfs:
        entries.append(("cases/dump_sysfs", 0o100644, b"1\n"))
    return cpio_newc(entries)


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
        """The guest's sysfs/procfs files as a tree membench.topology reads."""
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


def boot(
    layout: Layout,
    cases: list[list[str]],
    *,
    kernel: Path,
    base_initrd: Path,
    workdir: Path,
    dump_sysfs: bool = False,
    timeout: float = 90,
) -> GuestRun:
    """Boot the guest once, run each case (harness argv) inside, power off.
    QEMU is killed (its whole process group) on timeout or any error."""
    workdir.mkdir(parents=True, exist_ok=True)
    initrd = workdir / f"initrd-{layout.name}.cpio"
    base = base_initrd.read_bytes()
    # The kernel unpacks concatenated archives; an uncompressed one must start
    # on a 4-byte boundary (zero padding between archives is skipped).
    initrd.write_bytes(base + b"\0" * (-len(base) % 4) + cases_cpio(cases, dump_sysfs))
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
        raise RuntimeError(f"{exc}\n{run.explain()}") from exc
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
