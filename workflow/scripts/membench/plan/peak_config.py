"""The config's stated peaks (`systems.<name>.peak`): what the schema
cannot say about them, checked with the config (membench.analyse.peak
computes with them)."""

from __future__ import annotations


def config_problems(systems) -> list[str]:
    """What the schema cannot say about `systems.<name>.peak`: a peak
    given both ways, or half a memory configuration."""
    problems = []
    for name, settings in (systems or {}).items() if isinstance(systems, dict) else ():
        peak = settings.get("peak") if isinstance(settings, dict) else None
        if not isinstance(peak, dict):
            continue
        where = f"systems.{name}.peak"
        if "socket_gbps" in peak and ({"channels", "mts", "bytes_per_transfer"} & set(peak)):
            problems.append(
                f"{where}: {peak!r} gives the peak twice; allowed: socket_gbps, or channels and mts "
                "(and bytes_per_transfer), not both"
            )
        elif "socket_gbps" not in peak and {"channels", "mts", "bytes_per_transfer"} & set(peak):
            missing = [k for k in ("channels", "mts") if k not in peak]
            if missing:
                problems.append(
                    f"{where}: {peak!r} lacks {' and '.join(missing)}; allowed: channels and mts together "
                    "(bytes_per_transfer defaults to 8), or socket_gbps"
                )
        if "interconnect_links" in peak and "interconnect_gbps" not in peak:
            problems.append(f"{where}.interconnect_links: {peak['interconnect_links']!r} without interconnect_gbps; "
                            "allowed: with interconnect_gbps (GB/s per link and direction)")  # fmt: skip
    return problems


def stated_peaks(config: dict) -> dict:
    """Each system's stated peak (systems.<name>.peak), as the figures and
    the report take it through params (never a probe or a measurement)."""
    systems = config.get("systems") or {}
    return {name: {"peak": settings["peak"]} for name, settings in systems.items() if (settings or {}).get("peak")}
