"""A deployment made by deploy/quickstart in a fresh clone, as tests/deploy/test_image.py runs
it: compose's project of its own, against the session's broker and worker, and what the tests
need of it (its containers, its database, its API, its logs)."""

import secrets
import subprocess
import uuid
from pathlib import Path

import httpx
import psycopg

from devkit.embedded import free_port
from tests.support.connect_rest import wait_until
from tests.support.podman import podman, sandbox_env

RUN = uuid.uuid4().hex[:8]
CLUSTER = f"ct-{RUN}"
# Secrets that must never reach a log line: the worker's REST password, the database
# password (compose-env draws it), and a password inside a connector's config (read from
# Connect's config topic).
CONNECT_PASSWORD = "Zq7ConnectPw" + secrets.token_hex(4)
CONFIG_SECRET = "Zq7ConfigPw" + secrets.token_hex(4)


class Stack:
    """One deployment made by deploy/quickstart in a clone, and what the tests need of it."""

    def __init__(self, clone: Path, kafka_runtime) -> None:
        self.clone = clone
        self.project = f"ct-{RUN}"  # compose's project: the containers' and volumes' prefix
        self.pg_port = free_port()
        self.web_port = free_port()
        self.base = f"http://127.0.0.1:{self.web_port}"
        self.env = {
            **sandbox_env(),
            "COMPOSE_PROJECT_NAME": self.project,
            "DASHBOARD_HOST": "127.0.0.1",
            "CLUSTER": CLUSTER,
            "BOOTSTRAP_SERVERS": kafka_runtime.bootstrap_servers,
            "CONNECT_URL": kafka_runtime.connect_url,
            "ADMIN_EMAIL": "ops@example.com",
        }
        self.env_file = clone / "deploy" / "compose.env"
        self.kafka = kafka_runtime
        self.names: dict[str, str] = {}
        self.database_url = ""
        self.database_password = ""
        self.token = ""

    def run(self, *command: str, timeout: float = 120) -> str:
        """A command in the clone, as the operator's shell runs it; its output."""
        done = subprocess.run(
            command, cwd=self.clone, env=self.env, capture_output=True, text=True, timeout=timeout
        )
        output = done.stdout + done.stderr
        assert done.returncode == 0, f"{' '.join(command)}:\n{output[-4000:]}"
        return output

    def write_env_file(self) -> None:
        """compose.env as an operator of this host makes it: compose-env, then edited.

        The database listens on a port of its own and the web server on loopback over plain
        HTTP; the worker's REST password is there for add_cluster. A killed scheduler's run is
        taken over once its lease runs out (a container started again has a new pid namespace).
        """
        self.run("deploy/compose-env")
        values = dict(
            line.split("=", 1) for line in self.env_file.read_text().splitlines() if "=" in line
        )
        self.database_password = values["POSTGRES_PASSWORD"]
        self.database_url = (
            f"postgres://offsets:{self.database_password}@127.0.0.1:{self.pg_port}/offsets"
        )
        values |= {
            "PGPORT": str(self.pg_port),
            "DATABASE_URL": self.database_url,
            "SECURE_SSL_REDIRECT": "false",
            "SECURE_COOKIES": "false",
            "SECURE_HSTS_SECONDS": "0",
            "SECURE_PROXY_SSL_HEADER": "false",
            "WEB_BIND": f"127.0.0.1:{self.web_port}",
            "WEB_WORKERS": "1",
            "CONNECT_PASSWORD": CONNECT_PASSWORD,
        }
        self.env_file.write_text("".join(f"{key}={value}\n" for key, value in values.items()))

    @property
    def secrets(self) -> tuple[str, ...]:
        return CONNECT_PASSWORD, self.database_password, CONFIG_SECRET

    def deploy(self) -> str:
        """Run the README's steps; the container of each service; their output."""
        output = self.run("deploy/quickstart", timeout=1500)
        for service in ("postgres", "web", "scheduler"):
            self.names[service] = self.containers(service)[0]
        return output

    def containers(self, service: str) -> list[str]:
        """The names of the service's containers, running or not."""
        return podman(
            "ps", "--all", "--format", "{{.Names}}",
            "--filter", f"label=com.docker.compose.project={self.project}",
            "--filter", f"label=com.docker.compose.service={service}",
        ).stdout.split()  # fmt: skip

    def memory_mb(self, name: str) -> tuple[int, int]:
        """A container's memory as its cgroup counts it (cgroup v1, as docs/deploy.md's
        "Memory" measures): its usage, page cache included, and its resident memory."""
        cgroup = "/sys/fs/cgroup/memory"
        read = podman(
            "exec", name, "cat", f"{cgroup}/memory.usage_in_bytes", f"{cgroup}/memory.stat"
        ).stdout.splitlines()
        stat = dict(line.split(" ", 1) for line in read[1:])
        return int(read[0]) // 1_000_000, int(stat["total_rss"]) // 1_000_000

    def compose(self, *args: str, timeout: float = 180) -> str:
        return self.run(
            "var/podman-compose/bin/podman-compose", "-f", "deploy/compose.yaml", *args,
            timeout=timeout,
        )  # fmt: skip

    def run_once(self, *args: str) -> str:
        """A one-shot container of the image (a manage.py command), as the steps run them."""
        return self.compose("run", "--rm", "-T", "migrate", *args)

    def wait_for_postgres(self) -> None:
        wait_until(
            lambda: podman(
                "exec", self.names["postgres"], "pg_isready", "--host=127.0.0.1",
                f"--port={self.pg_port}", check=False,
            ).returncode,
            lambda code: code == 0,
            timeout=60,
            what="PostgreSQL to accept connections",
        )  # fmt: skip

    def logs(self, *parts: str, since: str = "") -> str:
        """What the containers of `parts` (all of them by default) wrote, both streams."""
        names = [self.names[part] for part in parts or self.names]
        options = ["--since", since] if since else []
        written = [podman("logs", *options, name, check=False) for name in names]
        return "".join(done.stdout + done.stderr for done in written)

    def api(self, path: str) -> httpx.Response:
        return httpx.get(
            f"{self.base}/api/v1{path}",
            headers={"Authorization": f"Token {self.token}"},
            timeout=10,
        )

    def query(self, sql: str, *params) -> list[tuple]:
        with psycopg.connect(self.database_url.replace("postgres://", "postgresql://")) as db:
            return db.execute(sql, params).fetchall()

    def runs(self) -> list[tuple]:
        """The cluster's refresh runs, oldest first: (id, status, error, host)."""
        return self.query(
            "SELECT r.id, r.status, r.error, r.host FROM offsets_refreshrun r "
            "JOIN offsets_cluster c ON c.id = r.cluster_id WHERE c.name = %s ORDER BY r.id",
            CLUSTER,
        )

    def remove(self) -> None:
        """Take the deployment down, its volumes with it."""
        if (self.clone / "var" / "podman-compose" / "bin" / "podman-compose").exists():
            # A Spark Connect server of the profile a test started, should it have been left
            # (compose's `down` without the profile does not see it): it holds the volume.
            for name in self.containers("spark-connect"):
                podman("rm", "--force", name, timeout=60)
            self.compose("down", "--volumes", timeout=300)
