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
import re
import reprlib
import ssl
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field

from offsets import outgoing, tuning
from offsets.formats.connect_workers import (
    WorkerCapabilities,
    parse_connect_urls,
    worker_capabilities,
)
from offsets.formats.masking import mask_text
from offsets.kafka import tls

# Target states a connector can be created in (KIP-980), as POST /connectors spells them.
INITIAL_STATES = ("RUNNING", "PAUSED", "STOPPED")
DEFAULT_TIMEOUT = 30.0
# How much of an unexpected answer an error message quotes.
QUOTED_CHARS = 200
# Connect's answers nest a few levels plus a connector's own partition and offset maps.
# Deeper is no Connect answer, and Python's recursive repr() and json.dumps() of it fail later.
MAX_ANSWER_DEPTH = 64
# What an error message quotes of a parsed answer: bounded in depth and length.
_QUOTE = reprlib.Repr(maxlevel=3, maxstring=80, maxother=80, maxlist=6, maxdict=6)
_TITLE = re.compile(rb"<title>([^<]*)</title>", re.IGNORECASE)


class ConnectRestError(RuntimeError):
    """A Connect REST call failed; `status` is the worker's HTTP status when it answered.

    `http_status` is what a page or the API answers with: 502 (Bad Gateway) unless a subclass
    says otherwise, since the worker refused or failed what the dashboard asked of it.
    """

    http_status = 502

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


class ConnectNotConfigured(ConnectRestError):
    """The cluster has no worker URL (or an invalid one)."""

    # Nothing to call until someone sets the cluster's worker URL: the cluster's state conflicts.
    http_status = 409


class ConnectUnreachable(ConnectRestError):
    """No worker URL answered (refused, unknown host, TLS failure, timeout)."""

    http_status = 503


class ConnectAuthFailed(ConnectRestError):
    """401 or 403: the worker wants other credentials."""

    # The worker refused the dashboard's credentials, not the user's: a gateway failure (502).


class ConnectorUnknown(ConnectRestError):
    """404: the worker knows no such connector (or path)."""

    http_status = 404


class ConnectRebalancing(ConnectRestError):
    """409: the workers are rebalancing; the same call later usually works."""

    # The same request later usually works: a conflict with the workers' state, not a failure.
    http_status = 409


class ConnectBadRequest(ConnectRestError):
    """400 (or another 4xx): the worker refused the request as it stands."""


class ConnectNotJson(ConnectRestError):
    """The URL answered HTML or other non-JSON: it is not a Connect worker."""


class ConnectRedirected(ConnectNotJson):
    """A 3xx: a Connect worker never redirects its API, so this is a proxy or another server.

    The redirect is not followed (it would carry the worker's credentials elsewhere).
    """


class ConnectMalformed(ConnectRestError):
    """The answer claimed to be JSON but is not, or lacks what Connect always sends."""


class ConnectServerError(ConnectRestError):
    """5xx: the worker failed to do it."""


class ConnectAnswerBroken(ConnectRestError):
    """The request went out but no whole answer came back: cut short, broken HTTP framing,
    past the call's deadline. After a write, the worker may have done it."""


class ConnectAnswerTooLarge(ConnectAnswerBroken):
    """The answer is larger than the dashboard reads (tuning.CONNECT_ANSWER_MAX_BYTES)."""


def quoted(value: object) -> str:
    """A parsed answer, shortened and masked, for an error message."""
    return mask_text(_QUOTE.repr(value))[:QUOTED_CHARS]


def _looks_html(body: bytes, content_type: str) -> bool:
    start = body.lstrip()[:15].lower()
    return "html" in content_type.lower() or start.startswith((b"<!doctype", b"<html", b"<"))


def _worker_message(body: bytes) -> str:
    """The "message" of Connect's error JSON, an HTML page's title, or the body's start; masked."""
    title = _TITLE.search(body)
    if title:
        return mask_text(title[1].decode("utf-8", "replace").strip()[:QUOTED_CHARS])
    try:
        parsed = json.loads(body)
        if isinstance(parsed, dict) and isinstance(parsed.get("message"), str):
            return mask_text(parsed["message"])
    except ValueError:
        pass
    text = body.decode("utf-8", "replace").strip()
    return mask_text(text[:QUOTED_CHARS]) or "(no message)"


# The message of Connect's RebalanceNeededException.
REBALANCE_NEEDED = "Request cannot be completed because a rebalance is expected"


def error_for_answer(
    what: str, status: int, body: bytes, content_type: str = "", location: str = ""
) -> ConnectRestError | None:
    """Map a worker's answer to the error it means, or None when it is a success to parse.

    `what` names the call ("PUT .../stop on http://connect:8083") for the message; `location`
    is a redirect's Location header.
    """
    if 300 <= status < 400:
        target = mask_text(location[:QUOTED_CHARS]) or "(no Location)"
        return ConnectRedirected(
            f"{what}: HTTP {status}: redirects to {target}, which the dashboard does not "
            "follow (a Connect worker never redirects; following would send its credentials "
            "there): set the worker's own URL on the cluster",
            status=status,
        )
    if status in (401, 403):
        return ConnectAuthFailed(
            f"{what}: HTTP {status}: the worker refused the credentials (check the Connect "
            f"username and password of the cluster): {_worker_message(body)}",
            status=status,
        )
    # A 404 or a success in HTML is another server; other errors in HTML are the worker's
    # own Jetty refusing the request before Connect sees it (e.g. an encoded slash).
    if status in (200, 201, 202, 204, 404) and body.strip() and _looks_html(body, content_type):
        return ConnectNotJson(
            f"{what}: HTTP {status}: answered HTML, not Connect's JSON: is this the worker URL?",
            status=status,
        )
    if status == 404:
        return ConnectorUnknown(
            f"{what}: HTTP 404: the worker knows no such connector: {_worker_message(body)}",
            status=status,
        )
    if status == 409:
        message = _worker_message(body)
        # Connect answers 409 for a name that exists too (POST /connectors): say which.
        if "already exists" in message:
            return ConnectBadRequest(f"{what}: HTTP 409: {message}", status=status)
        return ConnectRebalancing(
            f"{what}: HTTP 409: the workers are rebalancing; try again in a few seconds: {message}",
            status=status,
        )
    if 400 <= status < 500:
        # Connect 4's Jetty refuses an encoded slash in a path before Connect sees it.
        hint = (
            " (its Jetty refuses a connector name with a slash in REST paths)"
            if status == 400 and "%2F" in what
            else ""
        )
        return ConnectBadRequest(
            f"{what}: HTTP {status}: the worker refused the request{hint}: {_worker_message(body)}",
            status=status,
        )
    if status >= 500:
        message = _worker_message(body)
        # A worker that has read a config change but not yet rebalanced refuses requests
        # before acting on them (DistributedHerder's RebalanceNeededException); some
        # resources pass that on as a 500 rather than Connect's usual 409.
        if message == REBALANCE_NEEDED:
            return ConnectRebalancing(
                f"{what}: HTTP {status}: the workers are rebalancing; try again in a few "
                f"seconds: {message}",
                status=status,
            )
        return ConnectServerError(
            f"{what}: HTTP {status}: the worker failed: {message}", status=status
        )
    return None


def parse_json(what: str, body: bytes, content_type: str = ""):
    """Parse a successful answer's JSON (None when empty), or raise the error it is."""
    if not body.strip():
        return None
    if _looks_html(body, content_type):
        raise ConnectNotJson(f"{what}: answered HTML, not Connect's JSON: is this the worker URL?")
    try:
        value = json.loads(body)
    except RecursionError:
        value = None
    except ValueError as exc:
        start = mask_text(body[:QUOTED_CHARS].decode("utf-8", "replace"))
        # ValueError also says why: int() refuses numbers of thousands of digits.
        raise ConnectMalformed(
            f"{what}: the answer is not valid JSON ({str(exc)[:QUOTED_CHARS]}): {start!r}"
        ) from None
    else:
        if _depth_within(value, MAX_ANSWER_DEPTH):
            return value
    raise ConnectMalformed(
        f"{what}: the answer nests deeper than {MAX_ANSWER_DEPTH} levels: no Connect answer does"
    )


def _depth_within(value: object, limit: int) -> bool:
    """Whether `value` nests at most `limit` levels, found without recursion."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return False
        if isinstance(item, dict):
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)
    return True


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

    @classmethod
    def from_json(cls, body: dict) -> "ConnectorStatus":
        try:
            tasks = sorted(body.get("tasks", []), key=lambda task: task.get("id", 0))
            traces = [body["connector"].get("trace", "")] + [t.get("trace", "") for t in tasks]
            status = cls(
                name=body["name"],
                state=body["connector"]["state"],
                tasks=tuple(task["state"] for task in tasks),
                # Traces may quote configs: masked here, as every trace read from Kafka is.
                traces=tuple(mask_text(trace) for trace in traces if trace),
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
        self._call("PUT", f"/connectors/{_quote(name)}/resume")

    def restart(self, name: str, *, include_tasks: bool = False, only_failed: bool = False):
        """POST /connectors/{name}/restart (KIP-745 options); the worker's answer, if any."""
        query = urllib.parse.urlencode(
            {"includeTasks": str(include_tasks).lower(), "onlyFailed": str(only_failed).lower()}
        )
        return self._call("POST", f"/connectors/{_quote(name)}/restart?{query}")

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
        return outgoing.exchange(
            self._opener,
            request,
            timeout=self.settings.timeout,
            deadline=self.settings.call_deadline,
            max_bytes=self.settings.max_answer_bytes,
        )

    def _tls_context(self) -> ssl.SSLContext:
        try:
            return tls.context_for(
                self.settings.ca_file, self.settings.cert_file, self.settings.key_file
            )
        except (OSError, ssl.SSLError) as exc:
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
