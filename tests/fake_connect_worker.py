"""A fake Connect worker: a real HTTP server on loopback whose answers a test chooses."""

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeWorker:
    """Answers `routes[(method, path)]` = (status, body bytes, content type); records requests.

    A stop or resume also changes what GET .../status answers, as a worker does.
    """

    def __init__(self) -> None:
        self.routes: dict[tuple[str, str], tuple[int, bytes, str]] = {}
        self.requests: list[dict] = []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "FakeWorker":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def answer(self, method: str, path: str, status: int, body, content_type="application/json"):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.routes[(method, path)] = (status, data, content_type)

    def connector(self, name: str, path_name: str, state: str = "RUNNING") -> None:
        """A connector whose status follows stop and resume."""

        def status(state: str, tasks: list[str]) -> None:
            body = {
                "name": name,
                "connector": {"state": state, "worker_id": "w:8083"},
                "tasks": [{"id": i, "state": s, "worker_id": "w"} for i, s in enumerate(tasks)],
                "type": "source",
            }
            self.answer("GET", f"/connectors/{path_name}/status", 200, body)

        status(state, [state])
        self.on_put = {
            f"/connectors/{path_name}/stop": lambda: status("STOPPED", []),
            f"/connectors/{path_name}/resume": lambda: status("RUNNING", ["RUNNING"]),
        }
        self.answer("PUT", f"/connectors/{path_name}/stop", 202, b"")
        self.answer("PUT", f"/connectors/{path_name}/resume", 202, b"")

    def _handler(self):
        worker = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                worker.requests.append(
                    {
                        "method": self.command,
                        "path": self.path,
                        "headers": dict(self.headers),
                        "body": self.rfile.read(length),
                    }
                )
                key = (self.command, self.path)
                status, body, content_type = worker.routes.get(
                    key, (404, b'{"error_code":404,"message":"Unknown path"}', "application/json")
                )
                if key in worker.routes and self.command == "PUT":
                    getattr(worker, "on_put", {}).get(self.path, lambda: None)()
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_PUT = do_POST = do_DELETE = do_PATCH = _serve

            def log_message(self, *args: object) -> None:
                pass

        return Handler


def closed_port_url() -> str:
    """A loopback URL nothing listens on (the port was bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"
