"""A fake Connect worker: a real HTTP server on loopback whose answers a test chooses.

Besides well-formed answers it sends hostile ones: raw bytes as they are (bad status lines,
broken framing, answers cut short), dripped a byte at a time, or a body that never ends.
"""

import contextlib
import json
import socket
import ssl
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# A route answers with (status, body bytes, content type), or writes to the socket itself.
Writer = Callable[[BaseHTTPRequestHandler], None]


class FakeWorker:
    """Answers `routes[(method, path)]` = (status, body bytes, content type); records requests.

    A stop or resume also changes what GET .../status answers, as a worker does. `host` may be
    another loopback address (127.0.0.2) to stand for another host.
    """

    def __init__(self, host: str = "127.0.0.1", *, tls: tuple[str, str] | None = None) -> None:
        self.routes: dict[tuple[str, str], tuple[int, bytes, str] | Writer] = {}
        self.requests: list[dict] = []
        self.stopping = threading.Event()
        self.sent: dict[tuple[str, str], int] = {}
        self.server = ThreadingHTTPServer((host, 0), self._handler())
        scheme = "http"
        if tls:
            # (certificate file, key file): the worker answers HTTPS.
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
            scheme = "https"
        self.url = f"{scheme}://{host}:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)

    def __enter__(self) -> "FakeWorker":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()

    def answer(self, method: str, path: str, status: int, body, content_type="application/json"):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.routes[(method, path)] = (status, data, content_type)

    def raw(self, method: str, path: str, data: bytes, *, drip: float = 0.0) -> None:
        """Answer exactly `data` (status line, headers, body), then close the connection.

        With `drip`, one byte every `drip` seconds.
        """

        def write(handler: BaseHTTPRequestHandler) -> None:
            pieces = [data[i : i + 1] for i in range(len(data))] if drip else [data]
            for piece in pieces:
                if self.stopping.is_set():
                    return
                handler.wfile.write(piece)
                self.sent[(method, path)] = self.sent.get((method, path), 0) + len(piece)
                if drip:
                    time.sleep(drip)

        self.routes[(method, path)] = write

    def endless(self, method: str, path: str, *, chunked: bool = False) -> None:
        """A 200 whose JSON body never ends (one MiB at a time, until the client leaves)."""
        head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
        head += b"Transfer-Encoding: chunked\r\n\r\n" if chunked else b"\r\n"
        block = b"[" + b"0," * (2**19 - 1)

        def write(handler: BaseHTTPRequestHandler) -> None:
            handler.wfile.write(head)
            while not self.stopping.is_set():
                handler.wfile.write(b"%x\r\n%s\r\n" % (len(block), block) if chunked else block)
                self.sent[(method, path)] = self.sent.get((method, path), 0) + len(block)

        self.routes[(method, path)] = write

    def redirect(self, method: str, path: str, location: str, status: int = 302) -> None:
        self.raw(
            method,
            path,
            f"HTTP/1.1 {status} Found\r\nLocation: {location}\r\nContent-Length: 0\r\n\r\n".encode(),
        )

    def connector(self, name: str, path_name: str, state: str = "RUNNING") -> None:
        """A connector whose status follows stop, pause and resume."""

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
            f"/connectors/{path_name}/pause": lambda: status("PAUSED", ["PAUSED"]),
            f"/connectors/{path_name}/resume": lambda: status("RUNNING", ["RUNNING"]),
        }
        for action in ("stop", "pause", "resume"):
            self.answer("PUT", f"/connectors/{path_name}/{action}", 202, b"")

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
                route = worker.routes.get(
                    key, (404, b'{"error_code":404,"message":"Unknown path"}', "application/json")
                )
                if callable(route):
                    self.close_connection = True
                    # The client leaving mid-answer is what a hostile answer should cause.
                    with contextlib.suppress(OSError):
                        route(self)
                    return
                status, body, content_type = route
                if key in worker.routes and self.command == "PUT":
                    getattr(worker, "on_put", {}).get(self.path, lambda: None)()
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                # A client that refuses an answer too large closes before its end: expected.
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
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
