"""A small client of a real Kafka Connect worker's REST API, with polling helpers for tests.

Every wait polls (never a blind sleep) and fails with what it last saw, so a test that times
out says which state the worker was in.
"""

import json
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable

from devkit.embedded_config import basic_auth_header

POLL_SECONDS = 0.2
STRING = "org.apache.kafka.connect.storage.StringConverter"
# Raw lines in and out: the test reads the output topic's values as the file's text.
STRING_CONVERTERS = {"key.converter": STRING, "value.converter": STRING}


class ConnectError(RuntimeError):
    def __init__(self, status: int, body: object) -> None:
        super().__init__(f"HTTP {status}: {body}")
        self.status = status
        self.body = body


class ConnectRest:
    def __init__(
        self,
        url: str,
        *,
        timeout: float = 30,
        auth: tuple[str, str] | None = None,
        context: ssl.SSLContext | None = None,
    ) -> None:
        """`auth` is a (username, password) sent as basic auth on every request; `context` the
        TLS client context of an HTTPS worker (its CA, a client certificate)."""
        self.url = url.rstrip("/")
        self.context = context
        self.timeout = timeout
        self.headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if auth:
            self.headers["Authorization"] = basic_auth_header(*auth)

    def request(self, method: str, path: str, body: object = None) -> tuple[int, object]:
        """Send `body` as JSON (bytes as they are); return the status and the answer (parsed JSON,
        else its text)."""
        raw = body is None or isinstance(body, bytes)
        data = body if raw else json.dumps(body).encode()
        request = urllib.request.Request(
            self.url + path,
            data=data,
            method=method,
            headers=self.headers,
        )
        try:
            with urllib.request.urlopen(
                request, timeout=self.timeout, context=self.context
            ) as response:
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as exc:
            status, raw = exc.code, exc.read()
        if not raw.strip():
            return status, None
        try:
            return status, json.loads(raw)
        except ValueError:  # the basic auth extension refuses in plain text
            return status, raw.decode("utf-8", "replace")

    def call(self, method: str, path: str, body: object = None, *, ok=(200, 201, 202, 204)):
        status, parsed = self.request(method, path, body)
        if status not in ok:
            raise ConnectError(status, parsed)
        return parsed

    @staticmethod
    def _name(name: str) -> str:
        return urllib.parse.quote(name, safe="")

    # --- Connectors. ----------------------------------------------------------------------

    def create(self, name: str, config: dict, *, initial_state: str | None = None) -> dict:
        body: dict = {"name": name, "config": config}
        if initial_state:
            body["initial_state"] = initial_state
        return self.call("POST", "/connectors", body)

    def status(self, name: str) -> dict | None:
        status, body = self.request("GET", f"/connectors/{self._name(name)}/status")
        return None if status == 404 else body

    def stop(self, name: str) -> None:
        self.call("PUT", f"/connectors/{self._name(name)}/stop")

    def pause(self, name: str) -> None:
        self.call("PUT", f"/connectors/{self._name(name)}/pause")

    def resume(self, name: str) -> None:
        self.call("PUT", f"/connectors/{self._name(name)}/resume")

    def delete(self, name: str) -> None:
        self.call("DELETE", f"/connectors/{self._name(name)}", ok=(200, 204, 404))

    def offsets(self, name: str) -> dict:
        return self.call("GET", f"/connectors/{self._name(name)}/offsets")

    def patch_offsets(self, name: str, document: dict) -> dict:
        return self.call("PATCH", f"/connectors/{self._name(name)}/offsets", document)

    # --- Waiting. -------------------------------------------------------------------------

    def wait_for_state(
        self, name: str, state: str, *, tasks: int | None = None, timeout: float = 60
    ) -> dict:
        """Wait until the connector is in `state` and every task too.

        STOPPED means no tasks at all (the worker drops them, KIP-875); for the other states
        `tasks` is how many tasks must be in that state (at least one when not given).
        """

        def reached(status: dict | None) -> bool:
            if not status or status["connector"]["state"] != state:
                return False
            states = [task["state"] for task in status["tasks"]]
            if state == "STOPPED":
                return not states
            if tasks is not None and len(states) != tasks:
                return False
            return bool(states) and all(s == state for s in states)

        return wait_until(
            lambda: self.status(name), reached, timeout=timeout, what=f"{name} {state}"
        )

    def wait_until_forgotten(self, name: str, *, timeout: float = 30) -> None:
        """Wait until the worker has no status for a deleted connector. Its status goes only
        once the worker reads back the tombstone it wrote to its status topic: just after
        DELETE, GET .../status may still answer UNASSIGNED, type unknown."""
        wait_until(
            lambda: self.status(name),
            lambda status: status is None,
            timeout=timeout,
            what=f"the worker to forget {name!r}",
        )

    def wait_for_offsets(
        self, name: str, predicate: Callable[[list[dict]], bool], *, timeout: float = 60
    ) -> list[dict]:
        """Wait until GET /connectors/{name}/offsets answers offsets the predicate accepts."""
        return wait_until(
            lambda: self.offsets(name)["offsets"],
            predicate,
            timeout=timeout,
            what=f"{name}'s offsets",
        )


def wait_until[T](
    read: Callable[[], T], done: Callable[[T], bool], *, timeout: float, what: str
) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = read()
        if done(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"Timed out after {timeout:.0f} s waiting for {what}: {value!r}")
        time.sleep(POLL_SECONDS)


def canonical(offsets: list[dict]) -> list[str]:
    """A KIP-875 offsets list in an order-free form: each entry as sorted-key JSON, sorted.

    Connect answers GET .../offsets in no fixed order; the maps themselves compare by value.
    """
    return sorted(json.dumps(entry, sort_keys=True) for entry in offsets)
