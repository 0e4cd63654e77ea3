"""The rules for every HTTP call the dashboard makes: no redirects, a deadline, a size cap.

urllib's default opener follows 301, 302, 303, 307 and 308 to any host and re-sends the
request's headers there, `Authorization` included. A Connect worker never redirects its REST
API and a webhook that redirects is misconfigured, so whoever answers with a redirect (a
proxy, an SSO gateway sending to its login page, an attacker's worker) would get the
credentials or the alert's body for nothing. The caller reports the 3xx with its Location.

A socket timeout bounds each wait for a byte, not the answer: one byte a second holds the
call (and the server thread running it) forever. `exchange` gives the whole call a deadline,
shutting its socket down when it passes, and reads at most `max_bytes` of the body. Every way
an answer can fail reaches the caller as one of this module's errors, never as whatever
`http.client` raised.
"""

import contextlib
import functools
import http.client
import socket
import ssl
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass
from email.message import Message

READ_SIZE = 64 * 1024


class NoRedirects(urllib.request.HTTPRedirectHandler):
    """Turn every redirect into the `HTTPError` it is, so the caller sees the 3xx."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


class OutgoingError(Exception):
    """An HTTP call failed; str() says how, in words for an error message."""


class NotReached(OutgoingError):
    """The request never reached the server whole (refused, unknown host, TLS, connect)."""

    def __init__(self, message: str, *, timed_out: bool = False) -> None:
        super().__init__(message)
        self.timed_out = timed_out


class TlsRefused(NotReached):
    """The TLS handshake failed on a certificate: the server refused the client's (or its
    absence), or the client refused the server's. Nothing was sent that the server acted on.

    With TLS 1.3 the server checks the client's certificate after the client has sent its
    request, so the refusal arrives where an answer was expected.
    """


# The words of OpenSSL's reasons (and alerts) that name a certificate problem.
_CERTIFICATE_REASONS = ("CERTIFICATE", "UNKNOWN_CA")


def _tls_refusal(exc: BaseException) -> TlsRefused | None:
    reason = getattr(exc, "reason", None) or ""
    if isinstance(exc, ssl.SSLError) and any(word in reason for word in _CERTIFICATE_REASONS):
        return TlsRefused(f"the TLS handshake failed: {str(exc)[:200]}")
    return None


class AnswerBroken(OutgoingError):
    """The request was sent, but no whole answer came back: the server may have acted on it."""


class TimedOut(AnswerBroken):
    """The answer did not come, or did not finish, in time (a read's timeout, the deadline)."""


class AnswerTooLarge(AnswerBroken):
    """The answer's body is larger than the caller reads."""


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes
    headers: Message


class _Deadline:
    """Shut a call's sockets down when its time is up: a blocked read then returns at once."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.passed = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def __enter__(self) -> "_Deadline":
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)
            if self.passed:
                _shut(sock)

    def _expire(self) -> None:
        with self._lock:
            self.passed = True
            for sock in self._sockets:
                _shut(sock)


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


class _Watched:
    """A connection whose socket its deadline shuts down (mixed into HTTP and HTTPS)."""

    def __init__(self, *args, deadline: _Deadline | None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._deadline = deadline

    def connect(self) -> None:
        super().connect()
        if self._deadline is not None:
            self._deadline.watch(self.sock)


class _WatchedHTTP(_Watched, http.client.HTTPConnection):
    pass


class _WatchedHTTPS(_Watched, http.client.HTTPSConnection):
    pass


# A request sent through `exchange` carries its deadline; one opened directly has none.
class _HTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req):
        connection = functools.partial(_WatchedHTTP, deadline=getattr(req, "deadline", None))
        return self.do_open(connection, req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def https_open(self, req):
        connection = functools.partial(_WatchedHTTPS, deadline=getattr(req, "deadline", None))
        return self.do_open(connection, req, context=self._context)


def opener(https_context=None) -> urllib.request.OpenerDirector:
    """urllib's opener refusing redirects, for `exchange` (proxies from the environment stay)."""
    return urllib.request.build_opener(
        _HTTPHandler, _HTTPSHandler(context=https_context), NoRedirects
    )


def exchange(
    opener: urllib.request.OpenerDirector,
    request: urllib.request.Request,
    *,
    timeout: float,
    deadline: float,
    max_bytes: int,
    keep_start: bool = False,
) -> Answer:
    """Send `request` and read its whole answer, any status, within `deadline` seconds.

    `timeout` bounds each wait (connect, each read). Raises NotReached when the request did
    not go out whole, AnswerBroken (TimedOut, AnswerTooLarge) once it did. With
    `keep_start`, a body past `max_bytes` is cut there instead of failing.
    """
    with _Deadline(deadline) as watch:
        request.deadline = watch
        try:
            response = opener.open(request, timeout=timeout)
        except urllib.error.HTTPError as exc:
            response = exc
        except urllib.error.URLError as exc:
            # urllib wraps what fails while connecting and sending, before any answer.
            reason = getattr(exc, "reason", exc)
            timed_out = watch.passed or isinstance(reason, TimeoutError)
            raise _tls_refusal(reason) or NotReached(str(reason), timed_out=timed_out) from None
        except (OSError, http.client.HTTPException, ValueError) as exc:
            raise _tls_refusal(exc) or _broken(exc, watch) from None
        with response:
            try:
                body = _read(response, max_bytes, keep_start)
            except AnswerTooLarge:
                raise
            except (OSError, http.client.HTTPException, ValueError) as exc:
                raise _broken(exc, watch) from None
        if watch.passed:
            # The shut socket ends headers and a body without a length as if they were whole.
            raise _broken(None, watch)
        return Answer(response.status, body, response.headers)


def _read(response, max_bytes: int, keep_start: bool) -> bytes:
    if keep_start:
        return response.read(max_bytes)
    declared = response.headers.get("Content-Length", "").strip()
    # Compared as text first: int() refuses thousands of digits.
    if (
        declared.isascii()
        and declared.isdigit()
        and (len(declared) > 18 or int(declared) > max_bytes)
    ):
        raise AnswerTooLarge(
            f"announced an answer of {_size(declared)}, more than the {_mib(max_bytes)} read"
        )
    body = bytearray()
    while chunk := response.read(min(READ_SIZE, max_bytes + 1 - len(body))):
        body += chunk
        if len(body) > max_bytes:
            raise AnswerTooLarge(f"sent an answer larger than the {_mib(max_bytes)} read")
    # read(n) returns what came when the connection ends before Content-Length did.
    missing = getattr(response, "length", None)
    if missing:
        raise http.client.IncompleteRead(bytes(body), missing)
    return bytes(body)


def _broken(exc: BaseException | None, watch: _Deadline) -> AnswerBroken:
    if watch.passed:
        return TimedOut(f"did not finish its answer within {watch.seconds:g} s")
    if isinstance(exc, TimeoutError):
        return TimedOut(f"stopped answering ({exc or 'timed out'})")
    if isinstance(exc, http.client.IncompleteRead):
        return AnswerBroken(f"cut its answer short ({len(exc.partial)} bytes read, then the end)")
    detail = str(exc)[:200] or type(exc).__name__
    return AnswerBroken(f"sent a broken HTTP answer ({type(exc).__name__}: {detail})")


def _size(declared: str) -> str:
    return f"{int(declared) / 2**20:.1f} MiB" if len(declared) <= 18 else f"{len(declared)} digits"


def _mib(size: int) -> str:
    return f"{size / 2**20:g} MiB"
