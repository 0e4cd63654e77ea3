"""The image installs deploy/requirements.lock (`make lock` writes it from pyproject.toml): a
dependency added to pyproject.toml without `make lock` is missing from the image alone. The
Spark Connect client's were: SPARK_REMOTE failed in the image's scheduler with "grpcio >=
1.48.1 must be installed" while every test outside the image passed."""

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def normalized(name: str) -> str:
    """A distribution's name as pip compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def test_every_pinned_dependency_is_in_the_images_lock_at_its_version():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pinned = {}
    for requirement in project["dependencies"]:
        name, version = re.fullmatch(
            r"([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?==(\S+)", requirement
        ).groups()
        pinned[normalized(name)] = version
    lines = (ROOT / "deploy" / "requirements.lock").read_text().splitlines()
    locked = dict(
        (normalized(name), version)
        for name, version in (line.split("==", 1) for line in lines if "==" in line)
    )
    assert {name: locked.get(name) for name in pinned} == pinned
