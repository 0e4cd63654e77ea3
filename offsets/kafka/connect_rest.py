"""The adapter to Kafka Connect's REST API: one cluster's workers, their auth, TLS and errors.

Plain `urllib` through `offsets.outgoing` (no redirects, a deadline, a size cap), JSON in and
out. A cluster may list several worker URLs: they are tried in order and one that cannot be
reached is skipped (any worker forwards to the leader). Every failure is a `ConnectRestError`
subclass whose message says what went wrong in words a user acts on; whatever the worker
wrote is masked (`mask_text`), since traces may quote configs. A worker's answer is data like
any other: a broken one, a huge one, one of the wrong shape is an error, never a crash.
"""

import base64
import json
import ssl
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field

from offsets import outgoing, tuning
from offsets.domain.masking import mask_text
from offsets.domain.workers import (
    WorkerCapabilities,
    parse_connect_urls,
    worker_capabilities,
)
from offsets.kafka import files, tls
from offsets.kafka.connect_answers import (
    QUOTED_CHARS,
    ConnectAnswerBroken,
    ConnectAnswerTooLarge,
    ConnectAuthFailed,
    ConnectBadRequest,
    ConnectMalformed,
    ConnectNotConfigured,
    ConnectNotJson,
    ConnectorUnknown,
    ConnectRebalancing,
    ConnectRedirected,
    ConnectRestError,
    ConnectServerError,
    ConnectUnreachable,
    error_for_answer,
    parse_json,
    quoted,
)

# The adapter's face: the client and what it returns, and the errors it raises (read from
# the answers in connect_answers.py), which callers import from here with the client.
__all__ = [
    "DEFAULT_TIMEOUT",
    "INITIAL_STATES",
    "ConnectAnswerBroken",
    "ConnectAnswerTooLarge",
    "ConnectAuthFailed",
    "ConnectBadRequest",
    "ConnectMalformed",
    "ConnectNotConfigured",
    "ConnectNotJson",
    "ConnectRebalancing",
    "ConnectRedirected",
    "ConnectRest",
    "ConnectRestError",
    "ConnectServerError",
    "ConnectSettings",
    "ConnectUnreachable",
    "ConnectorStatus",
    "ConnectorUnknown",
    "WorkerInfo",
]

# Target states a connector can be created in (KIP-980), as POST /connectors spells them.
INITIAL_STATES = ("RUNNING", "PAUSED", "STOPPED")
DEFAULT_TIMEOUT = 30.0


@dataclass(frozen=True)
class ConnectSettings:
    """How to reach a cluster's workers: URLs in order, basic auth, TLS files, timeout."""

    urls: tuple[str, ...]
    username: str = ""
    password: str = field(default="", repr=False)
    ca_file: str = ""
    cert_file: str = ""
    key_file: str = ""
    timeout: float = DEFAULT_TIMEOUT
    # The whole call's bound; None: tuning.CONNECT_DEADLINE_FACTOR times the timeout.
    deadline: float | None = None
    max_answer_bytes: int = tuning.CONNECT_ANSWER_MAX_BYTES

    @property
    def call_deadline(self) -> float:
        return self.deadline or self.timeout * tuning.CONNECT_DEADLINE_FACTOR

    @classmethod
    def from_cluster(cls, cluster, *, timeout: float = DEFAULT_TIMEOUT) -> "ConnectSettings":
        return cls(
            urls=parse_connect_urls(cluster.connect_url),
            username=cluster.connect_username,
            password=cluster.connect_password,
            ca_file=cluster.connect_ca_file,
            cert_file=cluster.connect_cert_file,
            key_file=cluster.connect_key_file,
            timeout=timeout,
        )


@dataclass(frozen=True)
class ConnectorStatus:
    """GET /connectors/{name}/status: the connector's state and each task's."""

    name: str
    state: str
    tasks: tuple[str, ...]
    traces: tuple[str, ...] = ()
    # What is FAILED ("the connector", "task 0") with its masked trace, connector first.
    failures: tuple[tuple[str, str], ...] = ()
    # Each part by name ("the connector", "task 0"): (name, state, masked trace), connector first.
    parts: tuple[tuple[str, str, str], ...] = ()

    @classmethod
    def from_json(cls, body: dict) -> "ConnectorStatus":
        try:
            tasks = sorted(body.get("tasks", []), key=lambda task: task.get("id", 0))
            traces = [body["connector"].get("trace", "")] + [t.get("trace", "") for t in tasks]
            parts = [("the connector", body["connector"])]
            parts += [(f"task {task.get('id', '?')}", task) for task in tasks]
            status = cls(
                name=body["name"],
                state=body["connector"]["state"],
                tasks=tuple(task["state"] for task in tasks),
                # Traces may quote configs: masked here, as every trace read from Kafka is.
                traces=tuple(mask_text(trace) for trace in traces if trace),
                failures=tuple(
                    (name, mask_text(str(part.get("trace") or "")))
                    for name, part in parts
                    if part.get("state") == "FAILED"
                ),
                parts=tuple(
                    (name, part["state"], mask_text(str(part.get("trace") or "")))
                    for name, part in parts
                ),
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise ConnectMalformed(f"The connector status lacks {exc}: {quoted(body)}") from None
        if not all(isinstance(text, str) for text in (status.name, status.state, *status.tasks)):
            raise ConnectMalformed(f"The connector status holds a non-text state: {quoted(body)}")
        return status

    @property
    def summary(self) -> str:
        """The connector's state, or FAILED when it runs with a failed task (as the UI says)."""
        if self.state == "RUNNING" and "FAILED" in self.tasks:
            return "FAILED"
        return self.state

    @property
    def is_stopped(self) -> bool:
        """STOPPED with no tasks left, which is what KIP-875 edits need."""
        return self.state == "STOPPED" and not self.tasks


@dataclass(frozen=True)
class WorkerInfo:
    """GET /: the worker's version and commit, and what that version supports."""

    url: str
    version: str
    commit: str
    kafka_cluster_id: str
    capabilities: WorkerCapabilities


class ConnectRest:
    """The REST API of one Connect cluster (any worker of it forwards to the leader)."""

    def __init__(self, settings: ConnectSettings | str, *, timeout: float = DEFAULT_TIMEOUT):
        if isinstance(settings, str):
            settings = ConnectSettings(urls=parse_connect_urls(settings), timeout=timeout)
        if not settings.urls:
            raise ConnectNotConfigured(
                "No Connect REST URL: the cluster has no connect_url (add_cluster --connect-url)."
            )
        self.settings = settings
        self.url = settings.urls[0]
        self._opener = outgoing.opener(self._tls_context())

    @classmethod
    def for_cluster(cls, cluster, *, timeout: float = DEFAULT_TIMEOUT) -> "ConnectRest":
        try:
            settings = ConnectSettings.from_cluster(cluster, timeout=timeout)
        except ValueError as exc:
            raise ConnectNotConfigured(f"The cluster's Connect URL is not valid: {exc}") from exc
        return cls(settings)

    def worker_info(self) -> WorkerInfo:
        """GET / of the first worker that answers."""
        return self._call("GET", "/", shape=self._worker_info)

    def _worker_info(self, body) -> WorkerInfo:
        if not isinstance(body, dict) or not isinstance(body.get("version"), str):
            raise ConnectMalformed(f"GET / answered no version: {quoted(body)}")
        return WorkerInfo(
            url=self.url,
            version=_text(body["version"]),
            commit=_text(body.get("commit", "")),
            kafka_cluster_id=_text(body.get("kafka_cluster_id", "")),
            capabilities=worker_capabilities(body["version"]),
        )

    def connectors(self) -> dict[str, ConnectorStatus]:
        """Every connector of the cluster with its status (GET /connectors?expand=status)."""
        return self._call(
            "GET",
            "/connectors?expand=status",
            shape=lambda body: {
                name: ConnectorStatus.from_json(item["status"]) for name, item in body.items()
            },
        )

    def status(self, name: str) -> ConnectorStatus:
        return self._call(
            "GET", f"/connectors/{_quote(name)}/status", shape=ConnectorStatus.from_json
        )

    def config(self, name: str) -> dict[str, str]:
        return self._call("GET", f"/connectors/{_quote(name)}/config", shape=_mapping)

    def offsets(self, name: str) -> dict:
        """GET /connectors/{name}/offsets (KIP-875, Connect 3.5 and later)."""
        return self._call("GET", f"/connectors/{_quote(name)}/offsets")

    def alter_offsets(self, name: str, offsets: list[dict]) -> dict:
        """PATCH /connectors/{name}/offsets (KIP-875, 3.6+): a null offset deletes the partition.

        The connector must be STOPPED; the worker fences exactly-once zombies, lets the
        connector validate the offsets (alterOffsets), then writes them itself.
        """
        return self._call("PATCH", f"/connectors/{_quote(name)}/offsets", {"offsets": offsets})

    def reset_offsets(self, name: str) -> dict:
        """DELETE /connectors/{name}/offsets (KIP-875, 3.6+): every offset of the connector."""
        return self._call("DELETE", f"/connectors/{_quote(name)}/offsets")

    def plugin_classes(self) -> set[str]:
        """The connector classes the worker has (GET /connector-plugins?connectorsOnly=true)."""
        return self._call("GET", "/connector-plugins?connectorsOnly=true", shape=_plugin_classes)

    def exists(self, name: str) -> bool:
        """Whether the worker has a connector of that name (its status answers, not 404)."""
        try:
            self._call("GET", f"/connectors/{_quote(name)}/status")
        except ConnectorUnknown:
            return False
        return True

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
        """PUT .../resume: back to RUNNING from PAUSED or STOPPED."""
        self._call("PUT", f"/connectors/{_quote(name)}/resume")

    def restart(self, name: str, *, include_tasks: bool = False, only_failed: bool = False):
        """POST /connectors/{name}/restart (KIP-745 options); the worker's answer, if any."""
        query = urllib.parse.urlencode(
            {"includeTasks": str(include_tasks).lower(), "onlyFailed": str(only_failed).lower()}
        )
        return self._call("POST", f"/connectors/{_quote(name)}/restart?{query}")

    def restart_task(self, name: str, task: int):
        """POST /connectors/{name}/tasks/{task}/restart: that one task, wherever it runs."""
        return self._call("POST", f"/connectors/{_quote(name)}/tasks/{int(task)}/restart")

    def delete(self, name: str) -> None:
        self._call("DELETE", f"/connectors/{_quote(name)}")

    def _call(
        self, method: str, path: str, body: dict | None = None, *, shape: Callable | None = None
    ):
        """Send to each URL in turn until one answers; map its answer to a value or an error.

        `shape` turns the parsed JSON into what the method returns; an answer it cannot
        take (a key missing, a wrong type) is ConnectMalformed.
        """
        unreachable = []
        for url in self.settings.urls:
            what = f"{method} {path} on {url}"
            try:
                answer = self._send(url, method, path, body)
            except outgoing.NotReached as exc:
                unreachable.append(f"{url} did not answer ({mask_text(str(exc))})")
                continue
            except outgoing.AnswerTooLarge as exc:
                doubt = "" if method == "GET" else ": it may have done it"
                raise ConnectAnswerTooLarge(
                    f"{what}: {exc} (CONNECT_ANSWER_MAX_BYTES): no Connect answer is that "
                    f"large{doubt}"
                ) from None
            except outgoing.AnswerBroken as exc:
                if method == "GET":
                    # Reading again elsewhere is harmless; sending a write again is not.
                    unreachable.append(f"{url} {mask_text(str(exc))}")
                    continue
                raise ConnectAnswerBroken(
                    f"{what}: the worker {mask_text(str(exc))}: it may have done it"
                ) from None
            self.url = url
            content_type = answer.headers.get("Content-Type", "")
            location = answer.headers.get("Location", "")
            error = error_for_answer(what, answer.status, answer.body, content_type, location)
            if error is not None:
                raise error
            value = parse_json(what, answer.body, content_type)
            if shape is None:
                return value
            try:
                return shape(value)
            except (KeyError, TypeError, AttributeError, ValueError, RecursionError) as exc:
                raise ConnectMalformed(
                    f"{what}: the answer is not what Connect sends ({type(exc).__name__}): "
                    f"{quoted(value)}"
                ) from None
        raise ConnectUnreachable(
            f"{method} {path}: no Connect worker answered: {'; '.join(unreachable)}"
        )

    def _send(self, url: str, method: str, path: str, body: dict | None) -> outgoing.Answer:
        """Send one request to one URL and read its whole answer (any status)."""
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.settings.username:
            # Sent up front: Connect's basic auth extension answers 401 without a challenge
            # that urllib's auth handler would wait for.
            pair = f"{self.settings.username}:{self.settings.password}".encode()
            headers["Authorization"] = "Basic " + base64.b64encode(pair).decode("ascii")
        request = urllib.request.Request(url + path, data=data, method=method, headers=headers)
        try:
            return outgoing.exchange(
                self._opener,
                request,
                timeout=self.settings.timeout,
                deadline=self.settings.call_deadline,
                max_bytes=self.settings.max_answer_bytes,
            )
        except outgoing.TlsRefused as exc:
            # A setup to fix like a 401, not a worker away: the cluster's other URLs share
            # its TLS files, and nothing was sent that the worker acted on.
            raise ConnectAuthFailed(
                f"{method} {path} on {url}: {mask_text(str(exc))} (check the cluster's Connect "
                "CA, client certificate and key files)"
            ) from None

    def _tls_context(self) -> ssl.SSLContext:
        try:
            return tls.context_for(
                self.settings.ca_file, self.settings.cert_file, self.settings.key_file
            )
        except (OSError, ssl.SSLError, files.FileRefused) as exc:
            raise ConnectRestError(
                f"The Connect TLS files cannot be read (CA {self.settings.ca_file or '-'}, "
                f"certificate {self.settings.cert_file or '-'}, key "
                f"{self.settings.key_file or '-'}): {exc}"
            ) from exc


def _quote(name: str) -> str:
    return urllib.parse.quote(name, safe="")


def _text(value: object) -> str:
    """A short text of the worker's, masked (quoted when it is not a string)."""
    return mask_text(value[:QUOTED_CHARS]) if isinstance(value, str) else quoted(value)


def _mapping(body) -> dict:
    if not isinstance(body, dict):
        raise ConnectMalformed(f"The worker answered no JSON object: {quoted(body)}")
    return body


def _plugin_classes(body) -> set[str]:
    if not isinstance(body, list):
        raise ConnectMalformed(f"GET /connector-plugins answered no list: {quoted(body)}")
    return {
        item["class"]
        for item in body
        if isinstance(item, dict) and isinstance(item.get("class"), str)
    }
