"""`make reference BUNDLE=run.crate.zip NAME=slug ADDRESS=https://...`: a
checked bundle becomes references/machines/NAME.yaml, one published machine
of the atlas (workflow/schemas/references.schema.yaml).

The machine (model, sockets, cores, CPUs, memory, ISA) and the conditions
(a virtual machine or not, threads, pages, compiler, kernel) come from the
bundle's topology.json and environment.json; the date from findings.json
(the last run's end) or, without it, the day the crate was written; the
numbers are this run's quantities as `make compare BASE=ref:NAME` reads a
run (membench.compare.reference.run_quantities), so a later run held
against the entry is held quantity for quantity. ADDRESS is where the
bundle is published: a reference names its source.

A damaged bundle, a NAME already in the atlas (as a file or as a machine)
or an entry the schema refuses is refused in one line; nothing is written
then."""

from __future__ import annotations

import math
import re
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import urlsplit

import jsonschema
import yaml

from membench.compare import reference
from membench.compare.match import systems_in
from membench.core import layout, paths
from membench.store import bundle_check
from membench.core.text import gib_text

REFERENCES_SCHEMA = paths.SCHEMA_DIR / "references.schema.yaml"
# A slug, matched whole (\Z: no trailing newline), of at most 64 characters;
# references.schema.yaml says the same.
NAME = re.compile(r"\A[a-z][a-z0-9_]{0,63}\Z")
MAX_ADDRESS = 2000
# The latest date a run can have ended (the end of year 9999): a later
# last_end (1e300) is no date.
LAST_MOMENT = 253402300799


def name_problem(name: str) -> str | None:
    if NAME.match(name or ""):
        return None
    shown = repr(name[:70]) + (f" ({len(name)} characters)" if len(name) > 70 else "")
    return f"NAME={shown}: a slug of at most 64 lower-case letters, digits and _ (starting with a letter)"


def address_problem(address: str) -> str | None:
    """An https URL with a host, no whitespace or control character."""
    try:
        parts = urlsplit(address or "")
        host = parts.hostname
    except ValueError:
        parts, host = None, None
    if len(address or "") > MAX_ADDRESS or not address.isprintable() or any(c.isspace() for c in address) \
            or parts is None or parts.scheme != "https" or not host:  # fmt: skip
        return (f"ADDRESS={(address or '')[:80]!r}: the https:// address where the bundle is published, "
                "with a host and no spaces (a reference names its source)")  # fmt: skip
    return None


def _vendor_and_isa(topology: dict) -> tuple[str | None, str | None]:
    model, flags = topology.get("cpu_model", ""), set(topology.get("cpu_flags", []))
    vendor = "intel" if "Intel" in model else "amd" if "AMD" in model else None
    isa = "x86_64" if "sse2" in flags else "aarch64" if "asimd" in flags else None
    return vendor, isa


def _date(findings: dict | None, crate_date: str | None) -> str:
    last_end = ((findings or {}).get("records") or {}).get("last_end")
    if type(last_end) in (int, float) and math.isfinite(last_end) and 0 < last_end <= LAST_MOMENT:
        return datetime.fromtimestamp(last_end, timezone.utc).strftime("%Y-%m-%d")
    return str(crate_date or datetime.now(timezone.utc).isoformat())[:10]


def system_entry(name: str, topology: dict, environment: dict, findings_system: dict | None) -> dict:
    vendor, isa = _vendor_and_isa(topology)
    nodes = topology.get("nodes", [])
    memory = sum(n.get("memory_bytes") or 0 for n in nodes)
    peak = next((r["value"] for r in (findings_system or {}).get("headline", [])
                 if r["group"] == "theoretical peak" and r["value"]), None)  # fmt: skip
    guest = " virtual machine" if environment.get("virtualized") else ""
    return {
        "id": name, "description": f"{topology.get('cpu_model', 'CPU model unknown')}, a {len(topology.get('cpus', []))}-CPU"
        f"{guest or ' machine'} measured with membench (host {environment.get('hostname', '?')})",
        "sockets": topology.get("packages") or None, "cores": topology.get("cores") or None,
        "memory": f"{gib_text(memory)} over {len(nodes)} NUMA node(s); type not probed" if memory else None,
        "peak_gbps": peak, "cpu_model": topology.get("cpu_model") or None, "vendor": vendor, "isa": isa,
        "threads": len(topology.get("cpus", [])) or None,
    }  # fmt: skip


def number_fields(key: tuple | str) -> dict:
    """The atlas fields of a run quantity (references/quantities.yaml):
    quantity, kernel, and the op or level that picks it out."""
    if isinstance(key, tuple):
        per_op = reference.quantities()["stream op"]
        return {"quantity": per_op["quantity"], "kernel": per_op["kernel"], "op": key[1]}
    wanted = reference.quantities()[key]
    return {k: wanted[k] for k in ("quantity", "kernel", "op", "level") if k in wanted}


def number_entries(name: str, quantities: dict, topology: dict, environment: dict, address: str, date: str) -> list[dict]:
    """One atlas number per run quantity that a reference can state."""
    _, isa = _vendor_and_isa(topology)
    cpus = len(topology.get("cpus", []))
    scope = f"{cpus} CPUs{' of a virtual machine' if environment.get('virtualized') else ''}, " \
            f"{topology.get('packages') or '?'} socket(s), {len(topology.get('nodes', []))} NUMA node(s)"  # fmt: skip
    common = {"address": address, "date": date}
    numbers = []
    for key, mine in quantities.items():
        if mine.get("label") == reference.STAND_IN:
            continue  # the highest bandwidth stands in for a missing mix on the first screen; it is no all-read number
        if mine.get("unusable") or not mine.get("n"):
            continue  # every run disturbed (a bound, "at most 1.5 ns") or a sweep in the caches: no median to publish
        cell = number_fields(key)
        spread = f", range {mine['interval'][0]:.1f}-{mine['interval'][1]:.1f}" if mine.get("interval") else ""
        conditions = {"scope": scope, "benchmark": f"membench {' '.join(str(v) for v in cell.values() if v != cell['quantity'])}",
                      "threads": mine.get("threads"), "page_size": mine.get("pages"), "isa": isa,
                      "compiler": environment.get("compiler"),
                      "os": f"Linux {environment['kernel']}" if environment.get("kernel") else None}  # fmt: skip
        if isinstance(key, str):
            conditions.update(reference.quantities()[key].get("conditions", {}))
        threads = {"threads": mine["threads"]} if mine.get("threads") else {}
        numbers.append({
            "system": name, **cell, "unit": mine["unit"], "value": round(float(mine["value"]), 1), **threads,
            "statistic": "median",
            "note": f"{mine['how']} (n={mine['n']}{spread})", **common,
            "conditions": {k: v for k, v in conditions.items() if v is not None},
        })  # fmt: skip
    return numbers


def schema_problems(document: dict) -> list[str]:
    schema = yaml.safe_load(REFERENCES_SCHEMA.read_text())
    return [f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}"
            for e in jsonschema.Draft7Validator(schema).iter_errors(document)]  # fmt: skip


def refuse(what: str) -> bundle_check.BundleRefused:
    return bundle_check.BundleRefused(f"reference: refused: {what}")


def entry_from_bundle(bundle: Path, name: str, address: str, findings_schema: Path, atlas_dir: Path,
                      system: str | None = None) -> dict:  # fmt: skip
    """The atlas document for the bundle (checked first), or BundleRefused."""
    problem = name_problem(name) or address_problem(address)
    if problem:
        raise refuse(problem)
    if (atlas_dir / f"{name}.yaml").exists():
        raise refuse(f"{atlas_dir / f'{name}.yaml'}: already exists; choose another NAME")
    taken = reference.known_names(reference.load_atlas(atlas_dir))
    if name in taken:
        raise refuse(f"NAME={name}: already a machine of the atlas (ref:{name}); choose another NAME")
    with tempfile.TemporaryDirectory(prefix="membench-reference-") as unpacked:
        opened = bundle_check.open_bundle(bundle, Path(unpacked) / "run", findings_schema)
        results, metadata = opened / "results", _object(bundle, opened / bundle_check.METADATA) or {}
        if system is not None and system not in systems_in(results):
            raise refuse(f"SYSTEM={system[:70]!r}: not a system of {bundle} ({', '.join(systems_in(results)) or 'none'})")
        systems = [system] if system else systems_in(results)
        if len(systems) != 1 or not layout.holds_runs(layout.system_dir(results, systems[0])):
            raise refuse(f"{bundle}: holds systems {', '.join(systems_in(results)) or 'none'}; pick one with SYSTEM=")
        picked = systems[0]
        topology = _object(bundle, layout.topology_path(results, picked), required=True)
        environment = _object(bundle, layout.environment_path(results, picked)) or {}
        findings = _object(bundle, layout.findings_path(results))
        quantities = reference.run_quantities(results, picked)
    root = next((e for e in metadata.get("@graph", []) if e.get("@id") == "./"), {})
    date = _date(findings, root.get("datePublished"))
    numbers = number_entries(name, quantities, topology, environment, address, date)
    unusable = next((n for n in numbers if not reference.positive(n["value"])), None)
    if unusable:
        raise refuse(f"{bundle}: {unusable['kernel']} {unusable['quantity']} is {unusable['value']} {unusable['unit']}, "
                     "not a positive finite number: an atlas value must be one")  # fmt: skip
    if not numbers:
        raise refuse(f"{bundle}: no quantity a reference states (STREAM, an all-reads mix, idle or loaded latency) "
                     "with an undisturbed run")  # fmt: skip
    findings_system = next((s for s in (findings or {}).get("systems", []) if s["system"] == picked), None)
    document = {
        "reference": name, "title": f"membench run of {picked}: {topology.get('cpu_model', '?')}",
        "publisher": "membench bundle (make reference)", "address": address, "date": date,
        "note": f"Made by make reference from {bundle.name} (system {picked}); each number is a median of "
                "undisturbed runs, its range and n in its note.",
        "systems": [system_entry(name, topology, environment, findings_system)], "numbers": numbers,
    }  # fmt: skip
    problems = schema_problems(document)
    if problems:
        raise refuse(f"the entry breaks references.schema.yaml: {problems[0]}")
    return document


def _object(bundle: Path, path: Path, required: bool = False) -> dict | None:
    """A system file or findings.json of the unpacked bundle: a JSON object
    (bundle_check.strict_json), None where it is absent and not required."""
    if required and not path.is_file():
        raise refuse(f"{bundle}: {path.name} missing for the system taken")
    try:
        return reference.json_object(path)
    except bundle_check.Unusable as error:
        raise refuse(f"{bundle}: {path.name}: {error}") from None


def write_entry(document: dict, atlas_dir: Path) -> Path:
    path = atlas_dir / f"{document['reference']}.yaml"
    header = "# A membench run made a reference by `make reference` (docs/bundle.md).\n"
    with open(path, "x") as out:  # "x": never over a file written meanwhile
        out.write(header + yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=120))
    return path
