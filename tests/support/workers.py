"""The Connect workers the integration tests drive, and their Connect clusters as registered."""

from dataclasses import dataclass, field

from devkit import embedded_config
from offsets.models import Cluster


@dataclass(frozen=True)
class ConnectWorker:
    """A worker's REST address, its topics and the credentials its REST API wants, if any."""

    url: str
    topics: dict
    username: str = ""
    password: str = field(default="", repr=False)

    @property
    def auth(self) -> tuple[str, str] | None:
        return (self.username, self.password) if self.username else None


def session_worker(kafka_runtime) -> ConnectWorker:
    """Return the session's worker (`kafka_runtime`), with the topics embedded_kafka gives it."""
    return ConnectWorker(kafka_runtime.connect_url, embedded_config.WORKER_TOPICS)


def register(name: str, bootstrap_servers: str, worker: ConnectWorker) -> Cluster:
    """Register the worker's Connect cluster as `add_cluster --embedded` does."""
    return Cluster.objects.create(
        name=name,
        bootstrap_servers=bootstrap_servers,
        connect_url=worker.url,
        connect_username=worker.username,
        connect_password=worker.password,
        offset_flush_interval_ms=embedded_config.WORKER_FLUSH_INTERVAL_MS,
        **worker.topics,
    )
