"""`refresh_offsets --every` keeps refreshing until SIGTERM, then stops cleanly."""

import signal
import subprocess
import time

import pytest

from tests.support.child_cluster import child_cluster

pytestmark = pytest.mark.integration


def test_every_refreshes_periodically_and_stops_on_sigterm(fresh_kafka, tmp_path):
    child = child_cluster(fresh_kafka, tmp_path)
    env, manage = child.env, child.manage
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
