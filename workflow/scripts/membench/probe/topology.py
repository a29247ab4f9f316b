"""What the machine is: CPUs, NUMA nodes, caches (topology.json) and the
kernel settings that change memory results (environment.json).

Read from sysfs/procfs under an injectable root, so tests can feed captured
trees. Only facts of the machine go here: nothing that changes with a commit
or a config edit, or every such change would re-measure everything.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
from pathlib import Path

from membench.probe.arm_cpu import page_sizes, read_arm_cpu, sve_vector_bits
from membench.probe.prefetchers import prefetcher_state
from membench.probe.dmidecode import probe_peak
from membench.probe.soc_memory import choose_peak
from membench.core.atomic_files import write_text_atomic


# Arm's Features that change memory results (vector width, atomics)
ARM_FLAGS = {"asimd", "sve", "sve2", "atomics", "lrcpc", "dcpop"}


def parse_cpulist(text: str) -> list[int]:
    """"0-3,8,10-11" -> [0, 1, 2, 3, 8, 10, 11]."""
    cpus: list[int] = []
    for part in text.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        cpus.extend(range(int(lo), int(hi or lo) + 1))
    return cpus


def parse_size_text(text: str) -> int:
    """sysfs cache sizes: "48K", "2048K", "105M" -> bytes."""
    match = re.fullmatch(r"([0-9]+)([KMG]?)", text.strip())
    if not match:
        raise ValueError(f"not a sysfs size: {text!r}")
    return int(match.group(1)) * {"": 1, "K": 2**10, "M": 2**20, "G": 2**30}[match.group(2)]


def _read(path: Path, default: str | None = None) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return default


def _bracketed(text: str | None) -> str | None:
    """The selected value of a sysfs choice such as "always [madvise] never"."""
    if text is None:
        return None
    match = re.search(r"\[([^\]]+)\]", text)
    return match.group(1) if match else text


def thp_mode(root: Path = Path("/")) -> str | None:
    """The selected transparent-huge-page mode (always, madvise, never), or
    None where the kernel has no THP."""
    return _bracketed(_read(root / "sys/kernel/mm/transparent_hugepage/enabled"))


def read_cpus(root: Path) -> list[dict]:
    base = root / "sys/devices/system/cpu"
    cpus = []
    for cpu in parse_cpulist(_read(base / "online", "0")):
        cpu_dir = base / f"cpu{cpu}"
        nodes = sorted(int(p.name[4:]) for p in cpu_dir.glob("node[0-9]*"))
        topo = cpu_dir / "topology"
        cpus.append(
            {
                "cpu": cpu,
                "core": int(_read(topo / "core_id", "0")),
                "package": int(_read(topo / "physical_package_id", "0")),
                "node": nodes[0] if nodes else 0,
                "siblings": parse_cpulist(_read(topo / "thread_siblings_list", str(cpu))),
                **cache_ids(cpu_dir, cpu),
            }
        )
    return cpus


def cache_ids(cpu_dir: Path, cpu: int) -> dict:
    """l2_id, l3_id: which L2 and L3 this CPU uses (the cache-to-cache
    classes compare them): sysfs's cache id, else the first CPU of the
    cache's shared_cpu_list; None where sysfs shows no such cache."""
    ids: dict = {"l2_id": None, "l3_id": None}
    for index in sorted(cpu_dir.glob("cache/index[0-9]*")):
        level = _read(index / "level")
        if level not in ("2", "3") or _read(index / "type") == "Instruction":
            continue
        cache_id = _read(index / "id")
        if cache_id is None:
            shared = parse_cpulist(_read(index / "shared_cpu_list", str(cpu)))
            cache_id = str(min(shared)) if shared else str(cpu)
        ids[f"l{level}_id"] = int(cache_id)
    return ids


def _by_node_id(row: list[int], columns: list[int]) -> list[int | None]:
    """A node's distance file lists one distance per online node, in node
    order; index it by node id (None for ids that are not online), so that
    distances[m] is the distance to node m also when node ids have gaps
    (POWER's nodes 0 and 8). Contiguous ids 0..n-1 leave the row as it is."""
    if len(row) != len(columns) or columns == list(range(len(columns))):
        return list(row)
    aligned: list[int | None] = [None] * (max(columns) + 1)
    for node, distance in zip(columns, row):
        aligned[node] = distance
    return aligned


def read_nodes(root: Path) -> list[dict]:
    """One entry per node: CPUs, MemTotal, and distances indexed by node id."""
    base = root / "sys/devices/system/node"
    node_dirs = sorted(base.glob("node[0-9]*"), key=lambda p: int(p.name[4:]))
    online = _read(base / "online")
    columns = parse_cpulist(online) if online else [int(d.name[4:]) for d in node_dirs]
    nodes = []
    for node_dir in node_dirs:
        meminfo = _read(node_dir / "meminfo", "")
        total = re.search(r"MemTotal:\s+([0-9]+) kB", meminfo)
        row = [int(d) for d in _read(node_dir / "distance", "10").split()]
        nodes.append(
            {
                "node": int(node_dir.name[4:]),
                "cpus": parse_cpulist(_read(node_dir / "cpulist", "")),
                "memory_bytes": int(total.group(1)) * 1024 if total else 0,
                "distances": _by_node_id(row, columns),
            }
        )
    return nodes or [{"node": 0, "cpus": [], "memory_bytes": 0, "distances": [10]}]


def read_caches(root: Path, cpu: int = 0) -> list[dict]:
    """The caches seen by one CPU, with how many CPUs share each."""
    base = root / f"sys/devices/system/cpu/cpu{cpu}/cache"
    caches = []
    for index in sorted(base.glob("index[0-9]*")):
        size = _read(index / "size")
        if size is None:
            continue
        caches.append(
            {
                "level": int(_read(index / "level", "0")),
                "type": _read(index / "type", "Unknown"),
                "size_bytes": parse_size_text(size),
                "line_bytes": int(_read(index / "coherency_line_size", "64")),
                "shared_cpus": parse_cpulist(_read(index / "shared_cpu_list", str(cpu))),
            }
        )
    return caches


def read_cache_instances(root: Path, cpus: list[int]) -> list[dict]:
    """Every cache instance of the machine, over all CPUs: level, type,
    size, line and the CPUs that share it (an EPYC Genoa socket lists 12
    L3s, a 2-socket Xeon two). One instance per (level, type, sysfs id),
    or per (level, type, shared CPUs) where sysfs has no id file."""
    base = root / "sys/devices/system/cpu"
    instances: dict[tuple, dict] = {}
    for cpu in cpus:
        for index in sorted((base / f"cpu{cpu}/cache").glob("index[0-9]*")):
            size = _read(index / "size")
            if size is None:
                continue
            level, kind = int(_read(index / "level", "0")), _read(index / "type", "Unknown")
            shared = parse_cpulist(_read(index / "shared_cpu_list", str(cpu))) or [cpu]
            cache_id = _read(index / "id")
            key = (level, kind, int(cache_id) if cache_id is not None else None, None if cache_id is not None else tuple(shared))
            if key in instances:
                continue
            instances[key] = {
                "level": level,
                "type": kind,
                "id": int(cache_id) if cache_id is not None else min(shared),
                "size_bytes": parse_size_text(size),
                "line_bytes": int(_read(index / "coherency_line_size", "64")),
                "cpus": shared,
            }
    return sorted(instances.values(), key=lambda c: (c["level"], c["type"], min(c["cpus"]), c["id"]))


def llc_instances(topology: dict) -> list[dict]:
    """The last-level cache instances (the highest level of data or unified
    cache). A topology.json from before instances were recorded gives its
    one `llc_bytes` cache, shared by the CPUs cpu0's view lists."""
    data = [c for c in topology.get("cache_instances") or [] if c["type"] in ("Data", "Unified")]
    if data:
        top = max(c["level"] for c in data)
        return [c for c in data if c["level"] == top]
    if not topology.get("llc_bytes"):
        return []
    seen = [c for c in topology.get("caches", []) if c.get("size_bytes") == topology["llc_bytes"]]
    cpus = seen[0]["shared_cpus"] if seen else [c["cpu"] for c in topology.get("cpus", [])]
    return [{"level": seen[0]["level"] if seen else None, "type": "Unified", "size_bytes": topology["llc_bytes"], "cpus": cpus}]


def llc_total_bytes(topology: dict) -> int:
    """The sum of every last-level cache instance (STREAM's rule sizes
    arrays against it); 0 when the topology names no cache."""
    return sum(c["size_bytes"] for c in llc_instances(topology))


def llc_capacity(topology: dict, cpus) -> int:
    """The LLC capacity a team on `cpus` can use: the instances any of its
    CPUs shares. Unknown CPUs (none recorded): every instance."""
    cpus = set(cpus or [])
    instances = llc_instances(topology)
    used = [c for c in instances if cpus & set(c["cpus"])] if cpus else instances
    return sum(c["size_bytes"] for c in (used or instances))


def read_cpu_model(root: Path) -> tuple[str, list[str]]:
    """The CPU's name and feature flags: x86's "model name" and "flags", or
    Arm's decoded implementer/part and "Features" (arm_cpu)."""
    cpuinfo = _read(root / "proc/cpuinfo", "")
    model = re.search(r"^model name\s*:\s*(.+)$", cpuinfo, re.M)
    flags = re.search(r"^flags\s*:\s*(.+)$", cpuinfo, re.M)
    arm = read_arm_cpu(cpuinfo) if not model else None
    if arm:
        return f"{arm['name']} ({arm['implementer']}/{arm['part']})", arm["features"]
    return (model.group(1).strip() if model else "unknown", flags.group(1).split() if flags else [])


def read_arch(root: Path) -> dict:
    """The architecture facts of the records: arch, the Arm implementer and
    part (null on x86), the SVE vector length and the page sizes."""
    arm = read_arm_cpu(_read(root / "proc/cpuinfo", "") or "")
    return {
        "arch": "aarch64" if arm else "x86_64",
        "cpu_implementer": arm["implementer"] if arm else None,
        "cpu_part": arm["part"] if arm else None,
        "sve_vector_bits": sve_vector_bits(root, arm["features"]) if arm else 0,
        **page_sizes(root),
    }


def read_topology(root: Path = Path("/")) -> dict:
    cpus = read_cpus(root)
    caches = read_caches(root, cpus[0]["cpu"] if cpus else 0)
    data_caches = [c for c in caches if c["type"] in ("Data", "Unified")]
    llc = max(data_caches, key=lambda c: (c["level"], c["size_bytes"]), default=None)
    model, flags = read_cpu_model(root)
    instances = read_cache_instances(root, [c["cpu"] for c in cpus])
    llc_all = llc_instances({"cache_instances": instances, "caches": caches, "llc_bytes": llc["size_bytes"] if llc else None, "cpus": cpus})
    return {
        "cpu_model": model,
        "cpu_flags": sorted(f for f in flags if f.startswith(("avx", "sse", "fma", "amx")) or f in ARM_FLAGS),
        **read_arch(root),
        "cpus": cpus,
        "cores": len({(c["package"], c["core"]) for c in cpus}),
        "packages": len({c["package"] for c in cpus}),
        "nodes": read_nodes(root),
        # cpu0's view (older readers); cache_instances has every instance
        "caches": caches,
        "cache_instances": instances,
        # one LLC instance, as before; llc_total_bytes sums them all
        "llc_bytes": llc["size_bytes"] if llc else None,
        "llc_count": len(llc_all),
        "llc_total_bytes": sum(c["size_bytes"] for c in llc_all),
        "line_bytes": data_caches[0]["line_bytes"] if data_caches else 64,
    }


def compiler_version(compiler: str = "gcc") -> str:
    try:
        out = subprocess.run([compiler, "--version"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        return f"unavailable ({exc})"
    return out.stdout.splitlines()[0]


def read_frequency(root: Path = Path("/")) -> dict:
    """The CPU clock when probed, in MHz over every CPU: cpufreq's
    scaling_cur_freq where the kernel exposes it, else /proc/cpuinfo's
    "cpu MHz" (a VM's nominal clock); with the governors seen and
    cpufreq's limits. Read, never changed."""
    cpu_base = root / "sys/devices/system/cpu"
    mhz, governors, limits = [], set(), {}
    for freq in sorted(cpu_base.glob("cpu[0-9]*/cpufreq")):
        value = _read(freq / "scaling_cur_freq")
        if value and value.isdigit():
            mhz.append(int(value) / 1000)
        governors.add(_read(freq / "scaling_governor"))
        for key in ("scaling_min_freq", "scaling_max_freq", "cpuinfo_max_freq"):
            value = _read(freq / key)
            if value and value.isdigit():
                limits[f"{key}_mhz"] = max(limits.get(f"{key}_mhz", 0), int(value) / 1000)
    source = "scaling_cur_freq"
    if not mhz:
        source = "/proc/cpuinfo cpu MHz"
        mhz = [float(v) for v in re.findall(r"^cpu MHz\s*:\s*([0-9.]+)", _read(root / "proc/cpuinfo", ""), re.M)]
    mhz.sort()
    return {
        "source": source if mhz else None,
        "cpus": len(mhz),
        "mhz_min": mhz[0] if mhz else None,
        "mhz_median": mhz[len(mhz) // 2] if mhz else None,
        "mhz_max": mhz[-1] if mhz else None,
        "governors": sorted(g for g in governors if g),
        **limits,
    }


def read_environment(root: Path = Path("/")) -> dict:
    hugepages = {}
    for size_dir in sorted((root / "sys/kernel/mm/hugepages").glob("hugepages-*kB")):
        hugepages[size_dir.name.removeprefix("hugepages-")] = {
            "nr": int(_read(size_dir / "nr_hugepages", "0")),
            "free": int(_read(size_dir / "free_hugepages", "0")),
        }
    numa_balancing = _read(root / "proc/sys/kernel/numa_balancing")
    zone_reclaim = _read(root / "proc/sys/vm/zone_reclaim_mode")
    model, flags = read_cpu_model(root)
    return {
        "hostname": socket.gethostname(),
        "kernel": _read(root / "proc/sys/kernel/osrelease", "unknown"),
        "virtualized": "hypervisor" in flags,
        "thp_enabled": thp_mode(root),
        "thp_defrag": _bracketed(_read(root / "sys/kernel/mm/transparent_hugepage/defrag")),
        "hugepages": hugepages,
        "numa_balancing": int(numa_balancing) if numa_balancing is not None else None,
        "zone_reclaim_mode": int(zone_reclaim) if zone_reclaim is not None else None,
        "governor": _read(root / "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
        "frequency": read_frequency(root),
        # Read, never written (numa_balancing, huge pages and THP above too).
        "prefetchers": prefetcher_state(root),
        "compiler": compiler_version(),
        # Which scheduler job probed (None outside SLURM): on a cluster the
        # report says which node stands for the system.
        "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
    }


def write_probe(root: str, topology_out: str, environment_out: str) -> None:
    topology = read_topology(Path(root))
    environment = read_environment(Path(root))
    # The theoretical peak the firmware states (membench.analyse.peak); a captured
    # tree has no firmware to ask. On Arm, else the SoC's row of the maker's numbers.
    smbios = (
        probe_peak(topology["packages"])
        if Path(root) == Path("/")
        else {"known": False, "reason": f"not probed: {root} is a captured tree, not this machine"}
    )
    environment["memory_peak"] = choose_peak(Path(root), topology["packages"], smbios)
    write_text_atomic(Path(topology_out), json.dumps(topology, indent=1) + "\n")
    write_text_atomic(Path(environment_out), json.dumps(environment, indent=1) + "\n")
