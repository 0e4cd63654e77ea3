"""Waiting for a Spark standalone master (tests/support/spark_cluster.py) while its web UI starts.

While the master's web UI starts, `/json/` can answer the HTML of its page at "/" (seen in a
whole run on the loaded machine: Jetty listened 2 s before the UI said it was bound). The
wait takes that for "not up yet", as it takes a refused connection.
"""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.support.spark_cluster import MasterStarting, StandaloneCluster, _wait_for_workers


class _Starting(BaseHTTPRequestHandler):
    """The master's answers while it starts: its HTML page twice, then its status."""

    answers: list[tuple[str, bytes]] = []

    def do_GET(self):
        kind, body = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def master(tmp_path):
    html = ("text/html;charset=utf-8", b"<!DOCTYPE html><html><body>Spark Master</body></html>")
    status = ("text/json;charset=utf-8", json.dumps({"aliveworkers": 2}).encode())
    _Starting.answers = [html, html, status]
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Starting)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield StandaloneCluster(
        "spark://127.0.0.1:7077",
        f"http://127.0.0.1:{server.server_port}/json/",
        tmp_path,
        tmp_path / "executor-python",
    )
    server.shutdown()
    server.server_close()


def test_an_html_answer_is_not_taken_for_the_status(master):
    with pytest.raises(MasterStarting, match="text/html"):
        master.status()


def test_the_wait_goes_on_past_html_answers_until_the_workers_registered(master):
    _wait_for_workers(master, 2, [])

    assert master.status() == {"aliveworkers": 2}
