"""A PostgreSQL server of a test module's own with logical decoding on, for a CDC connector.

`logical_postgres` starts it once for the module that asks (import the fixture there), with
trust authentication on a free loopback port and its socket in its own folder, and stops it
and removes its data at the end. The machine's PostgreSQL is never started or touched.
"""

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

from devkit.embedded import free_port

USER = "postgres"
DATABASE = "postgres"


@dataclass(frozen=True)
class LogicalPostgres:
    """Where the server listens, for psycopg and for a connector's `database.*` settings."""

    host: str
    port: int

    @property
    def dsn(self) -> str:
        return f"host={self.host} port={self.port} user={USER} dbname={DATABASE}"

    def execute(self, *statements: str) -> None:
        """Run `statements` in one committed transaction."""
        with psycopg.connect(self.dsn) as conn:
            for statement in statements:
                conn.execute(statement)


def _pg_bin() -> Path:
    found = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"),
        key=lambda initdb: [int(part) for part in initdb.parts[-3].split(".") if part.isdigit()],
    )
    if not found:
        pytest.fail("PostgreSQL's initdb was not found under /usr/lib/postgresql.")
    return found[-1].parent


def _as_server_user() -> list[str]:
    # initdb and postgres refuse to run as root: run them as the postgres user when root.
    return ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []


def _start(pg_bin: Path, as_pg: list[str], folder: Path, port: int) -> None:
    data = folder / "data"
    run = {"check": True, "capture_output": True, "text": True, "timeout": 60}
    # Its data is thrown away at the end: nothing is synced to disk, which saves seconds.
    initdb = [pg_bin / "initdb", "-D", data, "--auth=trust", "-U", USER, "-E", "UTF8", "--no-sync"]
    subprocess.run([*as_pg, *initdb], **run)
    options = (
        f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        " -c wal_level=logical -c max_replication_slots=4 -c max_wal_senders=4"
    )
    log = folder / "server.log"
    subprocess.run(
        [*as_pg, pg_bin / "pg_ctl", "-D", data, "-l", log, "-w", "-o", options, "start"], **run
    )


@pytest.fixture(scope="module")
def logical_postgres() -> Iterator[LogicalPostgres]:
    """A PostgreSQL with wal_level=logical: Debezium reads changes through logical decoding."""
    pg_bin, as_pg = _pg_bin(), _as_server_user()
    # Under /tmp, not pytest's folder, which the postgres user may not traverse.
    folder = Path(tempfile.mkdtemp(prefix="logical-postgres-"))
    if as_pg:
        shutil.chown(folder, user="postgres")
    port = free_port()
    try:
        _start(pg_bin, as_pg, folder, port)
    except subprocess.CalledProcessError as exc:
        shutil.rmtree(folder, ignore_errors=True)
        pytest.fail(f"PostgreSQL did not start: {exc.stderr or exc.stdout}")
    try:
        yield LogicalPostgres("127.0.0.1", port)
    finally:
        stop = [*as_pg, pg_bin / "pg_ctl", "-D", folder / "data", "-m", "fast", "stop"]
        subprocess.run(stop, capture_output=True, timeout=60)
        shutil.rmtree(folder, ignore_errors=True)
