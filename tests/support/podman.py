"""podman for the image tests, with this machine's settings, and the checkout they deploy.

The settings are deploy/sandbox.env's, read by sourcing it as an operator's shell does: that
file is the one place they live. The tests deploy a fresh clone of the checkout's HEAD, as a
new user would: what is not committed is not tested.
"""

import subprocess
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@cache
def sandbox_env() -> dict[str, str]:
    """The environment with deploy/sandbox.env sourced."""
    done = subprocess.run(
        ["bash", "-c", ". deploy/sandbox.env && env -0"],
        cwd=ROOT,
        capture_output=True,
        check=True,
        timeout=30,
    )
    pairs = (entry.split("=", 1) for entry in done.stdout.decode().split("\0") if "=" in entry)
    return dict(pairs)


def podman(*args: str, timeout: float = 180, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(
        ["podman", *args], env=sandbox_env(), capture_output=True, text=True, timeout=timeout
    )
    if check:
        assert done.returncode == 0, f"podman {' '.join(args)}: {done.stderr[-2000:]}"
    return done


def fresh_clone(destination: Path) -> Path:
    """Clone the checkout's HEAD into `destination`: the files a new user gets, nothing else."""
    subprocess.run(
        ["git", "clone", "--quiet", str(ROOT), str(destination)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return destination
