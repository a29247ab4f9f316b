"""The memory a machine states about itself: `dmidecode -t memory`
(SMBIOS type 17, one "Memory Device" per DIMM slot), and the theoretical
peak bandwidth it implies where it can be told.

Peak = sum over populated channels of the channel's transfer rate (MT/s,
the slowest configured speed of its DIMMs) x bytes per transfer (the data
width, ECC bits left out: 64 bits = 8 bytes, also for DDR5's two 32-bit
subchannels). The channel of a DIMM is read from the text only where it is
named: a bank locator such as "P0_Node0_Channel0_Dimm0" or "P0 CHANNEL A",
or a locator such as "CPU1_DIMM_A1" / "P1-DIMMA1" (channel letter, slot
digit) or "Controller1-ChannelA-DIMM0" (a channel of a controller). Tested on
real dumps of many vendors (tests/fixtures/dmidecode/real). Locators that name no channel ("A1", "DIMM 0"), DIMMs without a
configured speed or data width, and tables that are missing give no peak:
the reason is returned, never a guess.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections import defaultdict

# What the parser cannot know from SMBIOS, said with every probed peak.
CAVEATS = (
    "SMBIOS does not say how channels are interleaved: a NUMA node of a socket split into sub-NUMA clusters "
    "reaches only its own channels",
    "the configured speed is what the firmware reports, not a measurement of the memory controller",
)


def parse_devices(text: str) -> list[dict]:
    """Every "Memory Device" block as a dict of its "Key: value" lines."""
    devices = []
    for block in re.split(r"\n(?=Handle 0x)", text):
        lines = block.strip().splitlines()
        if len(lines) < 2 or lines[1].strip() != "Memory Device":
            continue
        fields = {}
        for line in lines[2:]:
            key, sep, value = line.strip().partition(":")
            if sep and line.startswith(("\t", " ")):
                fields[key.strip()] = value.strip()
        devices.append(fields)
    return devices


def _number(text: str | None, units: tuple[str, ...]) -> int | None:
    match = re.fullmatch(r"([0-9]+)\s*(" + "|".join(map(re.escape, units)) + ")", (text or "").strip())
    return int(match.group(1)) if match else None


def populated(device: dict) -> bool:
    size = device.get("Size", "")
    return bool(re.match(r"[0-9]+\s*[KMGT]?B", size)) and not size.startswith("0 ")


# Tokens naming where a DIMM sits (case-insensitive).
SOCKET = re.compile(r"(?:^|[^A-Z])(?:CPU|PROC|SOCKET|P)[ _-]?([0-9]+)(?![0-9])", re.I)
# Intel client boards name the memory controller: "Controller0-ChannelA-DIMM1"
# and "Controller1-ChannelA-DIMM1" are two channels, not one (issue 38).
CONTROLLER = re.compile(r"(?:CONTROLLER|NODE|IMC|MC)[ _]?([0-9]+)", re.I)
CHANNEL_WORD = re.compile(r"CHANNEL[ _]?([A-Z0-9]+?)(?:[ _-]|DIMM|$)", re.I)
CHANNEL_LETTER = re.compile(r"DIMM[ _-]?([A-Z])[0-9]+$", re.I)


def channel_of(device: dict) -> tuple | None:
    """(socket, controller, channel) named by the bank locator, else by the
    locator; None when neither names a channel. Each key comes from one
    string: boards number sockets from 0 in one and from 1 in the other."""
    for field in ("Bank Locator", "Locator"):
        text = device.get(field, "")
        channel = CHANNEL_WORD.search(text) or CHANNEL_LETTER.search(text)
        if channel:
            socket = SOCKET.search(text[: channel.start()] or text)
            controller = CONTROLLER.search(text)
            return (
                socket.group(1) if socket else None,
                controller.group(1) if controller else None,
                channel.group(1).upper(),
            )
    return None


def _speed(device: dict) -> int | None:
    """The configured speed in MT/s (dmidecode before 3.0 wrote "Configured
    Clock Speed: 2666 MHz" for the same number)."""
    for key in ("Configured Memory Speed", "Configured Clock Speed"):
        value = _number(device.get(key), ("MT/s", "MHz"))
        if value:
            return value
    return None


def peak_from_dmidecode(text: str, packages: int) -> dict:
    """The theoretical peak the DIMM table implies, per socket and in all,
    with the facts it rests on; or known=False and why not. `packages`:
    the sockets the topology found (a table naming no socket is one
    socket's only when there is one)."""
    devices = [d for d in parse_devices(text) if populated(d)]
    if not devices:
        reason = "no SMBIOS memory table" if "Memory Device" not in text else "SMBIOS lists no populated DIMM"
        return {"known": False, "reason": f"dmidecode -t memory: {reason}"}
    facts = {"dimms": len(devices), "dimm_types": sorted({d.get("Type", "?") for d in devices})}
    unnamed = [d.get("Locator", "?") for d in devices if channel_of(d) is None]
    slow = [d.get("Locator", "?") for d in devices if _speed(d) is None]
    narrow = [d.get("Locator", "?") for d in devices if _number(d.get("Data Width"), ("bits",)) is None]
    why = []
    if unnamed:
        why.append(f"the locators of {len(unnamed)} DIMMs name no channel (e.g. {unnamed[0]!r})")
    if slow:
        why.append(f"{len(slow)} DIMMs state no configured speed (e.g. {slow[0]!r})")
    if narrow:
        why.append(f"{len(narrow)} DIMMs state no data width (e.g. {narrow[0]!r})")
    keys = {channel_of(d)[0] for d in devices} if not unnamed else set()
    if not why and None in keys and packages > 1:
        why.append(f"the locators name no socket and the machine has {packages}")
    if why:
        return {"known": False, "reason": "dmidecode -t memory: " + "; ".join(why), **facts}
    channels: dict[tuple, list[tuple[int, int]]] = defaultdict(list)
    for d in devices:
        channels[channel_of(d)].append((_speed(d), _number(d.get("Data Width"), ("bits",)) // 8))
    sockets: dict[str, float] = defaultdict(float)
    for (socket, _, _), dimms in channels.items():
        sockets[socket or "0"] += min(s for s, _ in dimms) * min(b for _, b in dimms) / 1000  # MT/s x B = MB/s
    rates = sorted({s for dimms in channels.values() for s, _ in dimms})
    widths = sorted({b for dimms in channels.values() for _, b in dimms})
    per_socket = [round(sockets[s], 3) for s in sorted(sockets, key=lambda s: int(s))]
    return {
        "known": True,
        "socket_gbps": per_socket,
        "total_gbps": round(sum(per_socket), 3),
        "channels": len(channels),
        "channels_per_socket": [sum(1 for k in channels if (k[0] or "0") == s) for s in sorted(sockets, key=int)],
        "mts": rates,
        "bytes_per_transfer": widths,
        **facts,
    }


def run_dmidecode(command: str = "dmidecode") -> tuple[str | None, str | None]:
    """(stdout, None), or (None, why it could not be read). A user's PATH
    often lacks the sbin folders where dmidecode lives."""
    path = shutil.which(command) or shutil.which(command, path="/usr/sbin:/sbin")
    if path is None:
        return None, f"{command} is not installed (Debian: apt-get install dmidecode)"
    try:
        done = subprocess.run([path, "-t", "memory"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"{command} -t memory failed: {exc}"
    if done.returncode != 0 and "Memory Device" not in done.stdout:
        said = (done.stderr.strip() or done.stdout.strip()).splitlines()
        return None, f"{command} -t memory could not read the DMI tables ({said[-1] if said else 'exit ' + str(done.returncode)})"
    return done.stdout, None


def probe_peak(packages: int) -> dict:
    """What this machine states (environment.json `memory_peak`)."""
    text, why = run_dmidecode()
    if text is None:
        return {"known": False, "reason": why}
    found = peak_from_dmidecode(text, packages)
    return {**found, "source": "dmidecode -t memory", "caveats": list(CAVEATS) if found["known"] else []}
