"""A small client of Kafka Connect's REST API (a worker's `listeners` URL).

Only what the dashboard's tools need: list connectors with their status, create one (in an
initial target state), change its config, stop, pause, resume and delete it. Plain `urllib`, JSON in and out;
every failure (refused connection, timeout, an error answer) is a `ConnectRestError` with the
worker's own message.
"""

import json
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass

from offsets.formats.masking import mask_text

# Target states a connector can be created in (KIP-980), as POST /connectors spells them.
INITIAL_STATES = ("RUNNING", "PAUSED", "STOPPED")


class ConnectRestError(RuntimeError):
    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class ConnectorStatus:
    """GET /connectors/{name}/status: the connector's state and each task's."""

    name: str
    state: str
    tasks: tuple[str, ...]
    traces: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, body: dict) -> "ConnectorStatus":
        tasks = sorted(body.get("tasks", []), key=lambda task: task.get("id", 0))
        traces = [body["connector"].get("trace", "")] + [task.get("trace", "") for task in tasks]
        return cls(
            name=body["name"],
            state=body["connector"]["state"],
            tasks=tuple(task["state"] for task in tasks),
            # Traces may quote configs: masked here, as every trace read from Kafka is.
            traces=tuple(mask_text(trace) for trace in traces if trace),
        )

    @property
    def summary(self) -> str:
        """The connector's state, or FAILED when it runs with a failed task (as the UI says)."""
        if self.state == "RUNNING" and "FAILED" in self.tasks:
            return "FAILED"
        return self.state


class ConnectRest:
    """The REST API of one Connect worker (any worker of a cluster forwards to the leader)."""

    def __init__(self, url: str, *, timeout: float = 30.0) -> None:
        if not url:
            raise ConnectRestError("No Connect REST URL: the cluster has no connect_url.")
        self.url = url.rstrip("/")
        self.timeout = timeout

    def connectors(self) -> dict[str, ConnectorStatus]:
        """Every connector of the cluster with its status (GET /connectors?expand=status)."""
        body = self._call("GET", "/connectors?expand=status")
        return {name: ConnectorStatus.from_json(item["status"]) for name, item in body.items()}

    def status(self, name: str) -> ConnectorStatus:
        return ConnectorStatus.from_json(self._call("GET", f"/connectors/{_quote(name)}/status"))

    def config(self, name: str) -> dict[str, str]:
        return self._call("GET", f"/connectors/{_quote(name)}/config")

    def create(self, name: str, config: dict[str, str], *, initial_state: str = "RUNNING") -> dict:
        """POST /connectors; a connector of that name existing already is a 409 error."""
        if initial_state not in INITIAL_STATES:
            raise ValueError(f"initial_state must be one of {INITIAL_STATES}, not {initial_state}")
        body = {"name": name, "config": config, "initial_state": initial_state}
        return self._call("POST", "/connectors", body)

    def put_config(self, name: str, config: dict[str, str]) -> dict:
        """PUT /connectors/{name}/config: change it (its tasks restart with the new config)."""
        return self._call("PUT", f"/connectors/{_quote(name)}/config", config)

    def stop(self, name: str) -> None:
        self._call("PUT", f"/connectors/{_quote(name)}/stop")

    def pause(self, name: str) -> None:
        self._call("PUT", f"/connectors/{_quote(name)}/pause")

    def resume(self, name: str) -> None:
        self._call("PUT", f"/connectors/{_quote(name)}/resume")

    def delete(self, name: str) -> None:
        self._call("DELETE", f"/connectors/{_quote(name)}")

    def _call(self, method: str, path: str, body: dict | None = None):
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            self.url + path,
            data=data,
            method=method,
            headers={"Content-Type": "application/json", "Accept": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                text = response.read()
        except urllib.error.HTTPError as exc:
            raise ConnectRestError(
                f"{method} {path}: HTTP {exc.code}: {_error_message(exc)}", status=exc.code
            ) from exc
        except OSError as exc:  # refused, unreachable, timed out
            raise ConnectRestError(f"{method} {path}: {self.url} did not answer: {exc}") from exc
        return json.loads(text) if text.strip() else None


def _quote(name: str) -> str:
    return urllib.parse.quote(name, safe="")


def _error_message(error: urllib.error.HTTPError) -> str:
    try:
        return json.loads(error.read()).get("message") or error.reason
    except (ValueError, AttributeError, OSError):
        return str(error.reason)
