"""The demo's web server (`scripts/demo-processes serve`, what `make demo` ends with) shows what
a deployment shows: DEBUG off, so a page that is not there is the product's 404, never Django's
debug page; static files and the icon still served."""

import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _get(url: str) -> tuple[int, str, dict]:
    request = urllib.request.Request(url)
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(request, timeout=10) as response:
            return response.status, response.read().decode(), dict(response.headers)
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(), dict(error.headers)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


@pytest.fixture
def demo_server(tmp_path):
    port = _free_port()
    env = {
        **os.environ,
        "RUN_DIR": str(tmp_path / "run"),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'demo.sqlite3'}",
        "PY": str(ROOT / ".venv" / "bin" / "python"),
    }
    for name in ("DEBUG", "SECRET_KEY", "SECRET_KEY_FILE", "ALLOWED_HOSTS"):
        env.pop(name, None)
    log = tmp_path / "server.log"
    with log.open("wb") as output:
        server = subprocess.Popen(
            [str(ROOT / "scripts" / "demo-processes"), "serve", str(port)],
            cwd=ROOT,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        # Until it answers (Django's checks take a few seconds on a busy machine), or it died.
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and server.poll() is None:
            try:
                _get(url + "/login/")
                break
            except OSError:
                time.sleep(0.2)
        if server.poll() is not None:
            pytest.fail(f"the demo server ended: {log.read_text()}")
        yield url, tmp_path / "run"
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)


def test_a_missing_page_is_the_product_s_404_and_static_files_are_served(demo_server):
    url, run_dir = demo_server
    status, body, _ = _get(url + "/no/such/page/")
    assert status == 404
    assert "<h1>Not found</h1>" in body and "There is nothing at" in body
    assert "Django tried these URL patterns" not in body and "DEBUG = True" not in body
    assert _get(url + "/static/img/favicon.svg")[0] == 200
    assert _get(url + "/static/css/app.css")[0] == 200
    status, _, headers = _get(url + "/favicon.ico")
    assert status == 302 and headers["Location"] == "/static/img/favicon.svg"
    # Its key is its own, kept for the next start, readable by its owner only.
    key = run_dir / "demo-secret-key"
    assert len(key.read_text().strip()) >= 50 and key.stat().st_mode & 0o077 == 0


def test_its_cookies_work_over_plain_http(demo_server):
    url, _ = demo_server
    _, _, headers = _get(url + "/login/")
    assert "csrftoken=" in headers["Set-Cookie"] and "Secure" not in headers["Set-Cookie"]
    assert "Strict-Transport-Security" not in headers
