"""`refresh_offsets --every` keeps refreshing until SIGTERM, then stops cleanly."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from offsets.demo import DemoOptions, build_demo
from offsets.demo_writer import write_demo

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def test_every_refreshes_periodically_and_stops_on_sigterm(fresh_kafka, tmp_path):
    write_demo(
        {"bootstrap.servers": fresh_kafka},
        build_demo(DemoOptions(end_ms=int(time.time() * 1000), hours=0.5)),
    )
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "OFFSETS_HISTORY_PATH": str(tmp_path / "history"),
        "DJANGO_SETTINGS_MODULE": "dashboard.settings",
    }
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "-v", "0"], env=env, check=True)
    subprocess.run(
        [*manage, "add_cluster", "loop", "--bootstrap-servers", fresh_kafka], env=env, check=True
    )
    process = subprocess.Popen(
        [*manage, "refresh_offsets", "--cluster", "loop", "--every", "1"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    lines = []
    try:
        deadline = time.monotonic() + 180
        while sum("succeeded in" in line for line in lines) < 2 and time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                break
            lines.append(line)
        assert sum("succeeded in" in line for line in lines) == 2, "".join(lines)
        refreshing = [line.strip() for line in lines if line.startswith("Refreshing loop")]
        assert refreshing[:2] == [
            "Refreshing loop (first refresh: reading the topics from the beginning)",
            "Refreshing loop (incremental)",
        ]
        process.send_signal(signal.SIGTERM)
        out, _ = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 0
    assert "Received SIGTERM" in out and "Stopped." in out
