"""envs/*.yaml mirror the pinned requirements; the lock agrees with both."""

import re

import yaml


def pins(path):
    found = {}
    for line in path.read_text().splitlines():
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)==([^\s#]+)", line.strip())
        if match:
            found[match.group(1).lower()] = match.group(2)
    return found


def conda_pip_pins(path):
    env = yaml.safe_load(path.read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    return dict((name.lower(), version) for name, version in (p.split("==") for p in pip))


def test_python_env_mirrors_requirements(repo):
    assert conda_pip_pins(repo / "envs" / "python.yaml") == pins(repo / "requirements.txt")


def test_every_pin_matches_the_lock(repo):
    lock = pins(repo / "requirements.lock")
    for req in ("requirements.txt", "requirements-dev.txt", "requirements-install.txt"):
        for name, version in pins(repo / req).items():
            assert lock.get(name) == version, f"{req}: {name}=={version}, lock has {lock.get(name)}"


def test_every_rule_env_exists(repo):
    rules = "\n".join(p.read_text() for p in (repo / "workflow" / "rules").glob("*.smk"))
    for env in set(re.findall(r'"\.\./\.\./(envs/[^"]+)"', rules)):
        assert (repo / env).is_file(), env
