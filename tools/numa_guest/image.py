"""Building the NUMA guest's boot image (guest.py boots and runs it):

  1. the kernel: `apt-get download linux-image-amd64` (a metapackage), then
     the linux-image-<abi> package it depends on; only ./boot/vmlinuz-* is
     extracted with dpkg-deb (nothing is installed, the host's /boot is not
     touched). The xz/gzip payload of the bzImage is decompressed in Python
     to the vmlinux ELF (the Debian kernel has CONFIG_PVH, so QEMU boots it
     directly and the guest skips decompressing itself under TCG, which
     is slow); the bzImage is the fallback.
  2. the harness: kernels/ compiled with the pipeline's own commands
     (membench.plan.variants.standalone_commands: the harness archive, then
     the binary) but portable (-march=x86-64-v2: the emulated CPU has no
     AVX-512) and -static.
  3. the initramfs: a newc cpio written here (no cpio tool, no root needed)
     with busybox-static, the harness, /init and the cases to run.

Each product is cached; see cache_dir().
"""

from __future__ import annotations

import contextlib
import fcntl
import gzip
import hashlib
import io
import lzma
import os
import shlex
import shutil
import struct
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "workflow" / "scripts"
if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))

from membench.plan import variants  # noqa: E402

QEMU = "qemu-system-x86_64"
BUSYBOX_CANDIDATES = ("/bin/busybox", "/usr/bin/busybox")
GUEST_MARCH = "-march=x86-64-v2"
# Marker lines /init writes on the data port (guest.py waits for and parses them).
UP = "@@MEMBENCH-GUEST-UP"
DONE = "@@MEMBENCH-GUEST-DONE"


class Unavailable(RuntimeError):
    """A tool the guest needs is missing on this host (skip, with the reason)."""


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


@contextlib.contextmanager
def _cache_lock(cache: Path):
    """One filler of the cache at a time (parallel test workers, two users):
    the others wait, then find what the first one made."""
    with open(cache / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def fetch_kernel(cache: Path | None = None) -> Path:
    """The guest kernel: cached vmlinux (or bzImage), fetched on first use."""
    cache = cache or cache_dir()
    with _cache_lock(cache):
        return _fetch_kernel_unlocked(cache)


def _fetch_kernel_unlocked(cache: Path) -> Path:
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
    return _fetch_kernel_unlocked(cache)


# ----------------------------------------------------------------- harness


def guest_build_commands(
    output: Path, kernel_dir: Path = REPO / "kernels", family: str = "stream", variant: str = "default"
) -> list[list[str]]:
    """The build rules' commands (the harness archive, then the binary),
    made portable for the guest, the link static."""
    table = variants.load_variants(kernel_dir / "families" / "variants.yaml")
    commands = [[a.replace("-march=native", GUEST_MARCH) for a in argv]
                for argv in variants.standalone_commands(table, family, variant, kernel_dir, output)]  # fmt: skip
    *harness, link = commands
    link = [a.replace('-DMB_CFLAGS="', '-DMB_CFLAGS="-static ') if a.startswith("-DMB_CFLAGS=") else a for a in link]
    return [*harness, [*link, "-static"]]


def build_harness(
    output: Path, kernel_dir: Path = REPO / "kernels", family: str = "stream", variant: str = "default"
) -> Path:
    output.parent.mkdir(parents=True, exist_ok=True)
    built = _run(["sh", "-c", variants.command_line(guest_build_commands(output, kernel_dir, family, variant))])
    if built.returncode != 0:
        raise RuntimeError(f"guest harness build failed:\n{built.stderr}")
    return output


# -------------------------------------------------------------- initramfs

# Files copied out of the guest so membench.probe.topology can read the guest's
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
for i in sys/devices/system/cpu/cpu[0-9]*/cache/index[0-9]*; do
  dump $i/level $i/type $i/size $i/coherency_line_size $i/shared_cpu_list $i/id
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
  bin=/bin/harness
  case "$1" in /bin/harness-*) bin=$1; shift;; esac
  $bin "$@" >/tmp/out 2>/tmp/err
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
    with _cache_lock(cache):
        return _base_initramfs_unlocked(harness, busybox, cache)


def _base_initramfs_unlocked(harness: Path, busybox: str, cache: Path) -> Path:
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


def cases_cpio(cases: list[list[str]], dump_sysfs: bool, binaries: dict[str, Path] | None = None) -> bytes:
    """An uncompressed cpio appended to the base initramfs (the kernel unpacks
    concatenated archives): the harness argument lists, one per line. A case
    whose first word is /bin/harness-<name> runs that binary, one of
    `binaries` ({"harness-c2c": path}), instead of /bin/harness."""
    text = "".join(shlex.join(argv) + "\n" for argv in cases)
    entries = [("cases/list", 0o100644, text.encode())]
    entries += [(f"bin/{name}", 0o100755, Path(path).read_bytes()) for name, path in (binaries or {}).items()]
    if dump_sysfs:
        entries.append(("cases/dump_sysfs", 0o100644, b"1\n"))
    return cpio_newc(entries)
