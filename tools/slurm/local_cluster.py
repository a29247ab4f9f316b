"""A real single-node SLURM on this machine, for the SLURM test and for trying
profiles/slurm by hand.

Everything lives in one private directory: the munge key and socket, the
slurm.conf, the controller's state, the spool, the logs and the pid files.
Daemons read that slurm.conf through -f, clients through $SLURM_CONF, and
ports are picked free, so a system munged is left alone. One exception: the
SLURM executor plugin's job step drops $SLURM_CONF before its srun, so srun
inside a job only finds the cluster at the default path; /etc/slurm/slurm.conf
becomes a symlink to the private one while the cluster is up (only when no
slurm.conf is there: a configured SLURM is never touched), removed on tear-down.
Needs root (slurmd runs the jobs) and Debian's slurmctld, slurmd,
slurm-client and munge packages.

    python3 tools/slurm/local_cluster.py up /tmp/slurm     # prints the export line
    python3 tools/slurm/local_cluster.py down /tmp/slurm   # cancels jobs, stops, removes

From Python: ``with LocalSlurm(path) as cluster: subprocess.run(..., env=cluster.env)``.
Tear-down cancels every job first, then stops slurmd, slurmctld and munged by
their pid files (only if the pid still names the daemon we started), then
removes the directory; it also runs on an exception or on SIGTERM.
"""

from __future__ import annotations

import argparse
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

PACKAGES = {"slurmctld": "slurmctld", "slurmd": "slurmd", "sbatch": "slurm-client", "munged": "munge"}
TOOLS = ["slurmctld", "slurmd", "munged", "mungekey", "sbatch", "srun", "squeue", "scontrol", "scancel", "sinfo", "runuser"]
SYSTEM_CONF = Path("/etc/slurm/slurm.conf")  # where srun looks without $SLURM_CONF
MIN_JOB_AGE = 300  # s; the plugin's squeue status checks need finished jobs to stay visible (>= 120)


class SlurmUnavailable(RuntimeError):
    """This machine cannot run a local SLURM (the message says why)."""


def unavailable_reason() -> str | None:
    """Why a local SLURM cannot be brought up here, or None if it can."""
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        packages = sorted({PACKAGES.get(t, "slurm-client") for t in missing if t != "runuser"})
        return f"not installed: {', '.join(missing)} (apt-get install {' '.join(packages)}; `make test-deps` does it)"
    if os.geteuid() != 0:
        return "not root: slurmd and munged must be started as root"
    try:
        pwd.getpwnam("munge")
    except KeyError:
        return "no 'munge' user (the munge package creates it)"
    if SYSTEM_CONF.is_symlink() and not SYSTEM_CONF.exists():
        SYSTEM_CONF.unlink()  # left behind by a local cluster that was killed
    if SYSTEM_CONF.exists() or SYSTEM_CONF.is_symlink():
        return f"{SYSTEM_CONF} exists: this machine has a SLURM of its own, which a test must not replace"
    return None


def free_port() -> int:
    with closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def node_hardware() -> dict[str, int]:
    """What `slurmd -C` reports for this machine (CPUs, sockets, cores, threads, memory)."""
    out = subprocess.run(["slurmd", "-C"], capture_output=True, text=True, check=True, timeout=30).stdout
    first = out.splitlines()[0]
    fields = dict(re.findall(r"(\w+)=(\S+)", first))
    keys = ["CPUs", "Boards", "SocketsPerBoard", "CoresPerSocket", "ThreadsPerCore", "RealMemory"]
    return {key: int(fields[key]) for key in keys}


class LocalSlurm:
    """One controller, one compute node (this machine), one or more partitions
    over it. `features` become the node's Features (for `--constraint`)."""

    def __init__(self, root: Path, partitions: tuple[str, ...] = ("debug",), features: tuple[str, ...] = ()):
        self.root = Path(root)
        self.partitions = partitions
        self.features = features
        self.node = socket.gethostname().split(".")[0]
        self.conf = self.root / "etc" / "slurm.conf"
        self.munge_dir = self.root / "munge"
        self.socket = self.munge_dir / "munge.socket"
        self.pid_files = {
            "slurmd": self.root / "run" / "slurmd.pid",
            "slurmctld": self.root / "run" / "slurmctld.pid",
            "munged": self.munge_dir / "munged.pid",
        }
        self.hardware: dict[str, int] = {}
        self._previous_sigterm = None

    @property
    def env(self) -> dict[str, str]:
        """The environment under which SLURM's clients (sbatch, squeue, srun in
        the jobs) talk to this cluster."""
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    @property
    def cpus(self) -> int:
        return self.hardware["CPUs"]

    # -- bring-up ---------------------------------------------------------

    def start(self) -> "LocalSlurm":
        reason = unavailable_reason()
        if reason:
            raise SlurmUnavailable(reason)
        if self.root.exists() and any(self.root.iterdir()):
            raise RuntimeError(f"{self.root} is not empty: a local SLURM starts from fresh state")
        for sub in ("etc", "state", "spool", "log", "run"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        self.root.chmod(0o755)  # munged (user munge) must reach its directory
        self.hardware = node_hardware()
        self._start_munged()
        self._write_conf()
        SYSTEM_CONF.parent.mkdir(parents=True, exist_ok=True)
        SYSTEM_CONF.symlink_to(self.conf)
        self._run(["slurmctld", "-f", str(self.conf)])
        self._run(["slurmd", "-f", str(self.conf), "-N", self.node])
        self._wait_for_idle_node()
        return self

    def _run(self, argv: list[str], **kwargs) -> subprocess.CompletedProcess:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=self.env, **kwargs)
        if out.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed ({out.returncode}): {out.stderr}{self._logs()}")
        return out

    def _start_munged(self):
        munge = pwd.getpwnam("munge")
        # The socket's directory must be world-searchable, the key's private.
        private = self.munge_dir / "private"
        for folder, mode in ((self.munge_dir, 0o755), (private, 0o700)):
            folder.mkdir()
            folder.chmod(mode)
            os.chown(folder, munge.pw_uid, munge.pw_gid)
        as_munge = ["runuser", "-u", "munge", "--"]
        key = private / "munge.key"
        self._run([*as_munge, "mungekey", "--create", f"--keyfile={key}"])
        self._run([
            *as_munge, "munged", f"--socket={self.socket}", f"--key-file={key}",
            f"--pid-file={self.pid_files['munged']}", f"--log-file={self.munge_dir / 'munged.log'}",
            f"--seed-file={private / 'munged.seed'}",
        ])  # fmt: skip
        self._wait(lambda: self.socket.exists(), 10, "munged's socket")

    def _write_conf(self):
        hw = self.hardware
        real_memory = hw["RealMemory"] * 9 // 10
        def_mem_per_cpu = max(100, min(2048, real_memory // hw["CPUs"] // 2))
        features = f" Features={','.join(self.features)}" if self.features else ""
        partitions = "\n".join(
            f"PartitionName={name} Nodes={self.node} Default={'YES' if i == 0 else 'NO'} MaxTime=INFINITE State=UP"
            for i, name in enumerate(self.partitions)
        )
        r = self.root
        self.conf.write_text(f"""\
# A single-node SLURM written by tools/slurm/local_cluster.py; everything under {r}.
ClusterName=membench
SlurmctldHost={self.node}(127.0.0.1)
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={self.socket}
CredType=cred/munge
StateSaveLocation={r / "state"}
SlurmdSpoolDir={r / "spool"}
SlurmctldPidFile={self.pid_files["slurmctld"]}
SlurmdPidFile={self.pid_files["slurmd"]}
SlurmctldLogFile={r / "log" / "slurmctld.log"}
SlurmdLogFile={r / "log" / "slurmd.log"}
# No cgroups needed: plain /proc process tracking, affinity binding.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
# Finished jobs stay visible to squeue this long (the plugin's status checks).
MinJobAge={MIN_JOB_AGE}
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
DefMemPerCPU={def_mem_per_cpu}
NodeName={self.node} NodeAddr=127.0.0.1 CPUs={hw["CPUs"]} Boards={hw["Boards"]} \
SocketsPerBoard={hw["SocketsPerBoard"]} CoresPerSocket={hw["CoresPerSocket"]} \
ThreadsPerCore={hw["ThreadsPerCore"]} RealMemory={real_memory}{features} State=UNKNOWN
{partitions}
""")

    def _wait_for_idle_node(self):
        def idle():
            out = subprocess.run(["sinfo", "-h", "-N", "-o", "%T"], capture_output=True, text=True, env=self.env, timeout=10)
            return out.returncode == 0 and out.stdout.split() and all(s == "idle" for s in out.stdout.split())

        self._wait(idle, 30, "the node to become idle")

    def _wait(self, condition, seconds: float, what: str):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if condition():
                return
            time.sleep(0.2)
        raise RuntimeError(f"timed out after {seconds} s waiting for {what}{self._logs()}")

    def _logs(self) -> str:
        parts = []
        for log in [*sorted((self.root / "log").glob("*.log")), self.munge_dir / "munged.log"]:
            if log.exists():
                parts.append(f"\n--- {log.name} (tail) ---\n" + "\n".join(log.read_text(errors="replace").splitlines()[-15:]))
        return "".join(parts)

    # -- scheduler facts ---------------------------------------------------

    def jobs(self) -> list[str]:
        out = subprocess.run(["squeue", "-h", "-o", "%i"], capture_output=True, text=True, env=self.env, timeout=10)
        return out.stdout.split() if out.returncode == 0 else []

    def job_info(self, job_id: str) -> dict[str, str]:
        """`scontrol show job` of a job still known to the controller (for
        MinJobAge after it ended), as key -> value."""
        out = self._run(["scontrol", "show", "job", "--oneliner", str(job_id)]).stdout
        return dict(re.findall(r"(\w[\w:/]*)=(\S*)", out))

    # -- tear-down ---------------------------------------------------------

    def stop(self):
        """Cancel every job, stop the daemons by their pid files, remove the
        directory. Safe to call twice, and after a failed start."""
        try:
            if self.conf.exists() and self.pid_files["slurmctld"].exists():
                self._cancel_all_jobs()
            for daemon in ("slurmd", "slurmctld", "munged"):
                self._stop_daemon(daemon)
        finally:
            if SYSTEM_CONF.is_symlink() and SYSTEM_CONF.readlink() == self.conf:
                SYSTEM_CONF.unlink()
            shutil.rmtree(self.root, ignore_errors=True)

    def _cancel_all_jobs(self):
        ids = self.jobs()
        if ids:
            subprocess.run(["scancel", *ids], capture_output=True, env=self.env, timeout=30)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            out = subprocess.run(["squeue", "-h", "-t", "PD,R,CG,S,CF", "-o", "%i"], capture_output=True, text=True, env=self.env, timeout=10)
            if out.returncode != 0 or not out.stdout.strip():
                return
            time.sleep(0.5)

    def _stop_daemon(self, name: str):
        pid_file = self.pid_files[name]
        try:
            pid = int(pid_file.read_text().strip())
            comm = Path(f"/proc/{pid}/comm").read_text().strip()
        except (OSError, ValueError):
            return  # never started, or already gone
        if comm != name:
            return  # the pid was reused by something that is not ours
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and Path(f"/proc/{pid}").exists():
            time.sleep(0.1)
        if Path(f"/proc/{pid}").exists():
            os.kill(pid, signal.SIGKILL)

    # -- context manager: tear down also on errors and on SIGTERM ----------

    def __enter__(self) -> "LocalSlurm":
        self._previous_sigterm = signal.signal(signal.SIGTERM, _sigterm_to_interrupt)
        try:
            return self.start()
        except BaseException:
            self.__exit__(*sys.exc_info())
            raise

    def __exit__(self, *exc):
        try:
            self.stop()
        finally:
            if self._previous_sigterm is not None:
                signal.signal(signal.SIGTERM, self._previous_sigterm)
                self._previous_sigterm = None


def _sigterm_to_interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}: tearing the local SLURM down")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=["up", "down"])
    parser.add_argument("root", type=Path, help="private directory for all of the cluster's state")
    parser.add_argument("--partition", action="append", help="partition name (repeatable; default: debug)")
    parser.add_argument("--feature", action="append", default=[], help="node feature (repeatable)")
    args = parser.parse_args(argv)
    cluster = LocalSlurm(args.root, tuple(args.partition or ["debug"]), tuple(args.feature))
    if args.action == "down":
        cluster.stop()
        return 0
    try:
        cluster.start()
    except BaseException:
        cluster.stop()
        raise
    print(f"export SLURM_CONF={cluster.conf}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
