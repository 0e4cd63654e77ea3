"""An embedded broker that clients reach through a TCP proxy a test can cut and restore.

Cutting the proxy looks to a client exactly like a broker that went away (connections drop,
new ones are closed at once), while the broker keeps its data, so the test can read
the topics afterwards and prove what was, or was not, written.
"""

import contextlib
import selectors
import socket
import threading
from pathlib import Path

from devkit.embedded import EmbeddedKafka, EmbeddedKafkaError, free_port


class TcpProxy:
    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self._up = threading.Event()
        self._up.set()
        self._closing = threading.Event()
        self._lock = threading.Lock()
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def cut(self) -> None:
        """Drop every connection and refuse new ones until ``restore``."""
        self._up.clear()
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for pair in pairs:
            for sock in pair:
                _close(sock)

    def restore(self) -> None:
        self._up.set()

    def close(self) -> None:
        self._closing.set()
        self.cut()
        _close(self.listener)
        self._thread.join(5)

    def _accept(self) -> None:
        self.listener.settimeout(0.2)
        while not self._closing.is_set():
            try:
                downstream, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            if not self._up.is_set():
                _close(downstream)
                continue
            try:
                upstream = socket.create_connection(self.upstream, timeout=5)
            except OSError:
                _close(downstream)
                continue
            with self._lock:
                self._pairs.append((downstream, upstream))
            threading.Thread(target=self._pump, args=(downstream, upstream), daemon=True).start()

    def _pump(self, a: socket.socket, b: socket.socket) -> None:
        selector = selectors.DefaultSelector()
        try:
            selector.register(a, selectors.EVENT_READ, b)
            selector.register(b, selectors.EVENT_READ, a)
            while self._up.is_set():
                for key, _ in selector.select(timeout=0.2):
                    data = key.fileobj.recv(65536)
                    if not data:
                        return
                    key.data.sendall(data)
        except (OSError, ValueError):
            return
        finally:
            selector.close()
            _close(a)
            _close(b)


class BrokerBehindProxy:
    """A Kafka broker advertising the proxy's address, so every client goes through it."""

    def __init__(self, run_dir: Path) -> None:
        self.broker = EmbeddedKafka(run_dir)
        self.proxy: TcpProxy | None = None

    @property
    def bootstrap_servers(self) -> str:
        assert self.proxy is not None
        return f"127.0.0.1:{self.proxy.port}"

    def start(self) -> str:
        # The broker's port is chosen before the broker binds it: any process's outgoing
        # connection can take it meanwhile (the same range serves both), so a start that
        # lost its port is tried again on another.
        attempts = 3
        while True:
            attempts -= 1
            broker_port = free_port()
            self.proxy = TcpProxy(("127.0.0.1", broker_port))
            self.proxy.start()
            try:
                self.broker.start(port=broker_port, worker=False, advertised=self.bootstrap_servers)
                return self.bootstrap_servers
            except EmbeddedKafkaError as exc:
                self.proxy.close()
                if not attempts or "Address already in use" not in str(exc):
                    raise

    def stop(self) -> None:
        if self.proxy is not None:
            self.proxy.close()
        self.broker.stop()


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()
