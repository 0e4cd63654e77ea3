"""What a Connect worker's answer means: the error it is (every `ConnectRestError`), or its JSON.

Pure: bytes and a status in, an error or a value out, so each rule is tested without a worker.
Whatever the worker wrote is masked (`mask_text`) before a message quotes it, since traces may
quote configs. `offsets/kafka/connect_rest.py` sends the requests and raises these.
"""

import json
import re
import reprlib

from offsets.domain.masking import mask_text

# How much of an unexpected answer an error message quotes.
QUOTED_CHARS = 200
# Connect's answers nest a few levels plus a connector's own partition and offset maps.
# Deeper is no Connect answer, and Python's recursive repr() and json.dumps() of it fail later.
MAX_ANSWER_DEPTH = 64
_TOO_DEEP = (
    f"the worker's answer is JSON nested deeper than {MAX_ANSWER_DEPTH} levels: "
    "no Connect answer is"
)
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


class AnswerTooDeep(ValueError):
    """A worker's answer is JSON nested deeper than MAX_ANSWER_DEPTH."""


def parse_worker_json(body: bytes):
    """The JSON of a worker's answer, any status; ValueError saying why it is not JSON.

    AnswerTooDeep (a ValueError) when it nests deeper than MAX_ANSWER_DEPTH: the parser
    recurses once a level, so a body of 100,000 `[` is a RecursionError, not a value.
    """
    try:
        value = json.loads(body)
    except RecursionError:
        raise AnswerTooDeep(_TOO_DEEP) from None
    if not _depth_within(value, MAX_ANSWER_DEPTH):
        raise AnswerTooDeep(_TOO_DEEP)
    return value


def _worker_message(body: bytes) -> str:
    """The "message" of Connect's error JSON, an HTML page's title, or the body's start; masked."""
    title = _TITLE.search(body)
    if title:
        return mask_text(title[1].decode("utf-8", "replace").strip()[:QUOTED_CHARS])
    try:
        parsed = parse_worker_json(body)
    except AnswerTooDeep as exc:
        return str(exc)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and isinstance(parsed.get("message"), str):
        return mask_text(parsed["message"])
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
    if 400 <= status < 500:
        return _refused(what, status, body)
    if status >= 500:
        return _failed(what, status, body)
    return None


def _refused(what: str, status: int, body: bytes) -> ConnectRestError:
    """The error a 4xx answer (other than 401 and 403) means."""
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


def _failed(what: str, status: int, body: bytes) -> ConnectRestError:
    """The error a 5xx answer means."""
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
    return ConnectServerError(f"{what}: HTTP {status}: the worker failed: {message}", status=status)


def parse_json(what: str, body: bytes, content_type: str = ""):
    """Parse a successful answer's JSON (None when empty), or raise the error it is."""
    if not body.strip():
        return None
    if _looks_html(body, content_type):
        raise ConnectNotJson(f"{what}: answered HTML, not Connect's JSON: is this the worker URL?")
    try:
        return parse_worker_json(body)
    except AnswerTooDeep as exc:
        raise ConnectMalformed(f"{what}: {exc}") from None
    except ValueError as exc:
        start = mask_text(body[:QUOTED_CHARS].decode("utf-8", "replace"))
        # ValueError also says why: int() refuses numbers of thousands of digits.
        raise ConnectMalformed(
            f"{what}: the answer is not valid JSON ({str(exc)[:QUOTED_CHARS]}): {start!r}"
        ) from None


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
