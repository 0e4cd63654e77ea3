"""Make the test database fail the way a busy SQLite file does: another connection holds a lock.

SQLite lets one writer at a time. A connection that wants to write while another holds the
write lock waits for the busy timeout (Django's default: 5 s) and then raises
``OperationalError: database is locked``. These helpers hold that lock from a second, plain
``sqlite3`` connection (as another process would) and shorten this process's busy timeout so
the failure comes in a fraction of a second.
"""

import contextlib
import sqlite3
import threading

import pytest
from django.db import connection


def require_sqlite() -> None:
    if connection.vendor != "sqlite":
        pytest.skip("the database-locked faults are SQLite's (PostgreSQL uses row locks)")


@contextlib.contextmanager
def short_busy_timeout(seconds: float = 0.2):
    """Make this process's database connection give up on a lock after ``seconds``."""
    require_sqlite()
    options = connection.settings_dict.setdefault("OPTIONS", {})
    previous = options.get("timeout")
    options["timeout"] = seconds
    connection.close()  # the next query reconnects with the new timeout
    try:
        yield
    finally:
        if previous is None:
            options.pop("timeout", None)
        else:
            options["timeout"] = previous
        connection.close()


class SqliteLock:
    """A second connection to the test database that takes and releases a lock on demand.

    ``mode`` "IMMEDIATE" holds the write lock (others can read but not write), "EXCLUSIVE"
    also blocks readers (a writer in the middle of its commit).
    """

    def __init__(self, mode: str = "IMMEDIATE") -> None:
        require_sqlite()
        self.mode = mode
        self.path = connection.settings_dict["NAME"]
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def acquire(self) -> None:
        with self._lock:
            if self._db is None:
                # check_same_thread=False: a timer thread may release what a test took.
                self._db = sqlite3.connect(
                    self.path, timeout=10, isolation_level=None, check_same_thread=False
                )
                self._db.execute(f"BEGIN {self.mode}")

    def release(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.execute("ROLLBACK")
                self._db.close()
                self._db = None

    def release_after(self, seconds: float) -> threading.Timer:
        timer = threading.Timer(seconds, self.release)
        timer.daemon = True
        timer.start()
        return timer

    def __enter__(self) -> "SqliteLock":
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def database_url() -> str:
    """A DATABASE_URL for the test database, for a child process (server, crashing apply)."""
    settings = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{settings['NAME']}"
    if connection.vendor == "postgresql":
        from urllib.parse import quote

        auth = quote(settings.get("USER") or "", safe="")
        if settings.get("PASSWORD"):
            auth += ":" + quote(settings["PASSWORD"], safe="")
        host = settings.get("HOST") or "127.0.0.1"
        port = settings.get("PORT") or "5432"
        return f"postgres://{auth}@{host}:{port}/{settings['NAME']}"
    raise NotImplementedError(f"no DATABASE_URL for {connection.vendor}")
