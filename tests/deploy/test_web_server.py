"""The image's `web` process as an orchestrator runs it: deploy/entrypoint with gunicorn.

The real entrypoint migrates a fresh database and creates the role groups, collectstatic
writes the hashed and compressed files, and `entrypoint web` serves with DEBUG off: probes,
pages, static files under hashed names, one JSON log line per request that never carries a
query string, and an end within 10 s of SIGTERM.
"""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from devkit.embedded import free_port
from tests.support.production_env import loopback_production_env

ROOT = Path(__file__).resolve().parents[2]
ENTRYPOINT = ROOT / "deploy" / "entrypoint"
SECRET = "Zq7PlantedXk4"


def test_the_web_process_serves_probes_pages_and_static_files_and_logs_json_lines(tmp_path):
    port = free_port()
    env = {
        **os.environ,
        **loopback_production_env(),
        "DJANGO_SETTINGS_MODULE": "dashboard.settings",
        # The image puts its virtualenv first on PATH; here it is this interpreter's.
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "STATIC_ROOT": str(tmp_path / "static"),
        "STATIC_COLLECTED": "true",
        "LOG_FORMAT": "json",
        "WEB_BIND": f"127.0.0.1:{port}",
        "WEB_WORKERS": "1",
    }
    migrated = subprocess.run(
        [ENTRYPOINT, "migrate", "-v", "0"], env=env, capture_output=True, text=True, timeout=120
    )
    assert migrated.returncode == 0, migrated.stderr
    assert "Group 'Offset approvers': approver on every cluster, connectors *" in migrated.stdout
    collected = subprocess.run(
        [ENTRYPOINT, "collectstatic", "--no-input", "-v", "0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert collected.returncode == 0, collected.stderr

    log = tmp_path / "web.log"
    with log.open("w") as output:
        server = subprocess.Popen(
            [ENTRYPOINT, "web"], env=env, stdout=output, stderr=subprocess.STDOUT
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert server.poll() is None, log.read_text()
            try:
                health = httpx.get(f"{base}/healthz", timeout=5)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.2)
        assert (health.status_code, health.json()) == (200, {"status": "ok"})
        ready = httpx.get(f"{base}/readyz", timeout=10)
        # No scheduler runs beside it: not ready, and it says why.
        assert ready.status_code == 503
        assert ready.json()["checks"]["scheduler"] == "no recent round"
        assert ready.json()["checks"]["migrations"] == "ok"

        login = httpx.get(f"{base}/login/", timeout=10)
        assert login.status_code == 200
        stylesheet = re.search(r'href="(/static/[^"]+\.[0-9a-f]{12}\.css)"', login.text)
        assert stylesheet, "the login page links a stylesheet under its hashed name"
        css = httpx.get(base + stylesheet[1], headers={"Accept-Encoding": "gzip"}, timeout=10)
        assert css.status_code == 200 and css.headers["Content-Encoding"] == "gzip"
        assert "immutable" in css.headers["Cache-Control"]

        hostile = httpx.get(f"{base}/clusters/%22%0Aevil/connectors/?password={SECRET}", timeout=10)
        assert hostile.status_code == 302  # to the login page
    finally:
        server.send_signal(signal.SIGTERM)
        started = time.monotonic()
        server.wait(30)
        stopped_in = time.monotonic() - started
    assert server.returncode == 0, log.read_text()
    assert stopped_in < 10

    text = log.read_text()
    assert SECRET not in text
    lines = [json.loads(line) for line in text.splitlines()]  # every line is one JSON object
    requests = [line for line in lines if line["logger"] == "request"]
    assert {(line["method"], line["path"], line["status"]) for line in requests} >= {
        ("GET", "/healthz", 200),
        ("GET", "/readyz", 503),
        ("GET", "/login/", 200),
        ("GET", '/clusters/"\nevil/connectors/', 302),
    }
    assert any(line["logger"] == "gunicorn.error" for line in lines)
