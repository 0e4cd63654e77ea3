"""A demo cluster registered in a database of its own, for a `manage.py` process a test starts.

The refresh loop and scheduler tests run the real command in a child process: it gets its own
SQLite file, history and run folders, the cluster `loop` on the given broker, and a small demo
written there.
"""

import contextlib
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from devkit.demo import DemoOptions, build_demo
from devkit.demo_writer import write_demo

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class ChildCluster:
    env: dict[str, str]
    manage: list[str]  # the command line up to the manage.py command's name
    database: Path


def child_cluster(bootstrap_servers: str, tmp_path: Path) -> ChildCluster:
    write_demo(
        {"bootstrap.servers": bootstrap_servers},
        build_demo(DemoOptions(end_ms=int(time.time() * 1000), hours=0.5)),
    )
    database = tmp_path / "db.sqlite3"
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{database}",
        "OFFSETS_HISTORY_PATH": str(tmp_path / "history"),
        "RUN_DIR": str(tmp_path / "run"),
        "DJANGO_SETTINGS_MODULE": "dashboard.settings",
    }
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "-v", "0"], env=env, check=True)
    subprocess.run(
        [*manage, "add_cluster", "loop", "--bootstrap-servers", bootstrap_servers],
        env=env,
        check=True,
    )
    return ChildCluster(env, manage, database)


def paused_at(point: str, marker: Path) -> dict[str, str]:
    """The environment that holds a child's work at a pause point (offsets/faults.py): the
    process that reaches it writes its pid to `marker` and waits there until killed."""
    return {"OFFSETS_FAULT_PAUSE": point, "OFFSETS_FAULT_PAUSE_FILE": str(marker)}


def end_paused(marker: Path) -> None:
    """End the process a pause point holds, if it still runs: a Spark Python worker held
    there belongs to a JVM that may outlive its killed driver for a moment."""
    with contextlib.suppress(FileNotFoundError, ValueError, ProcessLookupError):
        os.kill(int(marker.read_text()), signal.SIGKILL)
