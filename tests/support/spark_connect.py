"""A Spark Connect server on loopback, from pyspark's own distribution: the tests' stand-in for
a company's Spark (Databricks, EMR, Dataproc) that SPARK_REMOTE points the refresh at.

    with connect_server(tmp_path) as server:
        ... SPARK_REMOTE_FILE=server.url_file ...

One JVM (`spark-submit` of SparkConnectServer, in local[2]: its tasks and their Python workers
are the server's, apart from the refresh's process), which asks every client for a token
(`spark.connect.authenticate.token`, given in its environment, never on its command line).
`stop` and `start` take it down and bring it back on the same port, for the fault tests.

Its Python workers run spark_cluster's executor Python (the dependencies, not the project's
editable install), as a company's server has them: the refresh's `offsets` reaches them only
as the session's artifact, so a session that does not ship it fails here too.
"""

import contextlib
import os
import secrets
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from devkit.embedded import free_port
from tests.support.spark_cluster import NOT_FOR_EXECUTORS, executor_python, spark_home

# The server comes up in 5-10 s on the project's loaded 2-core machine; room for a slower
# CI runner.
START_SECONDS = 120
STOP_SECONDS = 15
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
# C1 only: the server's JVM starts sooner, and a test's small queries never pay C2 back.
JAVA_OPTIONS = "-XX:TieredStopAtLevel=1"


@dataclass
class ConnectServer:
    root: Path  # its log, and the folder it runs in
    port: int
    token: str
    process: subprocess.Popen | None = field(default=None, repr=False)
    starts: int = 0
    # More of the server's environment, which its Python workers inherit (a pause point).
    extra_env: dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        # "localhost": PySpark sends a token without TLS only to a local server.
        return f"sc://localhost:{self.port}/;token={self.token}"

    @property
    def url_file(self) -> Path:
        """SPARK_REMOTE_FILE: the URL with its token, out of the environment."""
        path = self.root / "spark-remote"
        if not path.exists():
            path.write_text(self.url)
            path.chmod(0o600)
        return path

    @property
    def log(self) -> Path:
        return self.root / "connect-server.log"

    def start(self) -> None:
        home = spark_home()
        env = {key: value for key, value in os.environ.items() if key not in NOT_FOR_EXECUTORS}
        env.update(
            SPARK_HOME=str(home),
            SPARK_LOCAL_IP="127.0.0.1",
            # The server's Python workers: this interpreter with the project's dependencies
            # and the refresh's Python version (a server's Python must match its clients'),
            # but not the project, as on a company's server: `offsets` comes from the
            # session's artifacts (spark_cluster.EXECUTOR_PYTHON).
            PYSPARK_PYTHON=str(executor_python(self.root)),
            SPARK_CONNECT_AUTHENTICATE_TOKEN=self.token,
            **self.extra_env,
        )
        command = [
            str(home / "bin" / "spark-submit"),
            "--class",
            SERVER_CLASS,
            "--master",
            "local[2]",
            "--driver-java-options",
            JAVA_OPTIONS,
            "--conf",
            "spark.ui.enabled=false",
            "--conf",
            "spark.connect.grpc.binding.address=127.0.0.1",
            "--conf",
            f"spark.connect.grpc.binding.port={self.port}",
        ]
        self.starts += 1
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                command,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=self.root,
                start_new_session=True,
            )
        self._wait_until_listening()

    def _wait_until_listening(self) -> None:
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                break
            with (
                contextlib.suppress(OSError),
                socket.create_connection(("127.0.0.1", self.port), timeout=1),
            ):
                return
            time.sleep(0.3)
        tail = "\n".join(self.log.read_text(errors="replace").splitlines()[-30:])
        self.stop()
        raise RuntimeError(f"The Spark Connect server did not listen on {self.port}:\n{tail}")

    def kill(self) -> None:
        """SIGKILL the server and every process of its session (its Python workers): a crash."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(STOP_SECONDS)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(STOP_SECONDS)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(STOP_SECONDS)


@contextlib.contextmanager
def connect_server(root: Path, **extra_env: str) -> Iterator[ConnectServer]:
    """Start a Spark Connect server on a free loopback port, and stop it on the way out."""
    server = ConnectServer(
        root=root, port=free_port(), token=secrets.token_urlsafe(16), extra_env=extra_env
    )
    server.start()
    try:
        yield server
    finally:
        server.stop()
