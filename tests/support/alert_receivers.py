"""Receivers for alert tests, started on loopback: an HTTP server that records bodies."""

import contextlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Receiver:
    """An HTTP server on loopback that records each body and answers from a script."""

    def __init__(self, answers: list[int] | None = None, *, hang_seconds: float = 0, port: int = 0):
        self.bodies: list[dict] = []
        self.answers = list(answers or [])
        self.hang_seconds = hang_seconds
        self.release = threading.Event()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.bodies.append(json.loads(body))
                if receiver.hang_seconds:
                    receiver.release.wait(receiver.hang_seconds)
                status = receiver.answers.pop(0) if receiver.answers else 200
                # A sender that gave up waiting (a hanging receiver's test) has hung up:
                # expected, not a fault of the receiver to print.
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.send_response(status)
                    self.end_headers()
                    self.wfile.write(b"internal trouble" if status >= 500 else b"ok")

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks/alerts"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
