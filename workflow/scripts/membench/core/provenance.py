"""Where a report comes from (membench's version, the checkout's commit,
the config's hash): fed to the report only, never to the measurements (a
new commit must not re-measure anything)."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

from membench import __version__


def provenance(repo: Path, config: dict) -> dict:
    try:
        commit = subprocess.run(
            ["git", "-C", str(repo), "describe", "--always", "--dirty", "--abbrev=12"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown (not a git checkout)"
    config_text = json.dumps(config, sort_keys=True)
    return {
        "membench_version": __version__,
        "commit": commit,
        "config_hash": hashlib.sha256(config_text.encode()).hexdigest()[:16],
    }
