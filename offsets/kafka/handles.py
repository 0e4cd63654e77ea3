"""Kafka client handles that Python's garbage collector never destroys.

confluent-kafka resolves an AdminClient's futures on librdkafka's own background thread, so
Python code runs there, and with it, now and then, Python's cyclic garbage collector. A
collection there that frees a client handle makes librdkafka destroy the handle from one of
its own threads, which it forbids: the process aborts ("rd_kafka_destroy() called from
librdkafka owned thread is prohibited") or crashes in pthread_join (confluent-kafka-python
#1761). A handle only waits for the collector when it sits in a reference cycle, and one
exception is enough for that: a KafkaException raised from a future, in a frame that holds the
client, links future -> exception -> traceback -> frame -> client.

Seen here: a refresh loop's process died with a segfault in libc on one of its threads while
its sink sampling's admin requests were in flight, and a stress run of failing and succeeding
admin calls side by side aborted within a minute, the collector running on librdkafka's thread. In the web server such a crash takes every user's request with it.

So every handle this project creates is made here and kept in `_held` until an application
thread finds that nothing else refers to it and that the requests it was left with are done:
when a function marked `@released_after` returns, or the next time a handle is made. Dropping
it then destroys it on that thread. A cycle that still holds a handle is collected first (that
only lowers the count); the handle waits for the next release.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
from collections.abc import Callable, Iterable

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient

# No log lines from librdkafka: failures reach the caller as exceptions with their own text.
QUIET = {"log_level": 0}

_lock = threading.Lock()
# id(handle) -> [handle, futures it must outlive]
_held: dict[int, list] = {}
# id(admin client) -> what its error_cb saw last; dropped with the handle.
_last_errors: dict[int, LastError] = {}
_held_pid = os.getpid()
# Handles inherited through fork(): their threads did not come along, so destroying them would
# hang or crash the child. They are kept, unused, for the life of the process.
_inherited: list = []
# sys.getrefcount's count of a handle that only `_held` refers to, as release_unused sees it:
# the entry's list, release_unused's local variable and getrefcount's own argument.
_ONLY_HELD_HERE = 3


class LastError:
    """The last error librdkafka reported for a handle (its `error_cb`).

    A broker that refuses the handshake (a wrong password, an untrusted or expired
    certificate) fails no request: librdkafka retries the connection until the request times
    out, and says why only here.
    """

    def __init__(self) -> None:
        self.text = ""

    def __call__(self, error) -> None:
        self.text = error.str()


def admin_client(settings: dict) -> AdminClient:
    seen = LastError()
    client = _hold(AdminClient({**settings, **QUIET, "error_cb": seen}))
    with _lock:
        _last_errors[id(client)] = seen
    return client


def last_error(client: AdminClient) -> str:
    """The last error librdkafka reported for `client` (made by `admin_client`), or ""."""
    # error_cb runs from poll(), which nothing else calls on an admin client.
    client.poll(0)
    with _lock:
        seen = _last_errors.get(id(client))
    return seen.text if seen else ""


def producer(config: dict) -> Producer:
    return _hold(Producer(config))


def consumer(config: dict) -> Consumer:
    return _hold(Consumer(config))


def keep_until_done(handle: object, futures: Iterable) -> None:
    """Keep ``handle`` until ``futures`` resolve, also when nothing else refers to it any more.

    For requests given up on (the broker went away mid-request): destroying a handle with a
    request outstanding can abort the process inside librdkafka (an assertion on the request's
    reference count, as in confluent-kafka-python#1640).
    """
    with _lock:
        _held.setdefault(id(handle), [handle, []])[1].extend(futures)


def release_unused() -> int:
    """Drop the handles that only this module still refers to; return how many."""
    global _held_pid
    released = []
    with _lock:
        if os.getpid() != _held_pid:
            _inherited.extend(entry[0] for entry in _held.values())
            _held.clear()
            _last_errors.clear()
            _held_pid = os.getpid()
        for key, entry in list(_held.items()):
            handle = entry[0]
            if sys.getrefcount(handle) > _ONLY_HELD_HERE:
                continue
            if not all(future.done() for future in entry[1]):
                continue
            released.append(_held.pop(key))
            _last_errors.pop(key, None)
            del handle
    # Outside the lock: destroying a handle waits for its threads to finish.
    count = len(released)
    released.clear()
    return count


def released_after[**P, R](function: Callable[P, R]) -> Callable[P, R]:
    """Release unused handles when ``function`` returns, so that those it made are destroyed
    then, as if nothing held them: an idle client keeps its broker connections open, and the
    embedded broker's shutdown waits for its clients to leave."""

    @functools.wraps(function)
    def release_on_return(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return function(*args, **kwargs)
        finally:
            release_unused()

    return release_on_return


def held_count() -> int:
    with _lock:
        return len(_held)


def _hold[H](handle: H) -> H:
    release_unused()
    with _lock:
        _held[id(handle)] = [handle, []]
    return handle
