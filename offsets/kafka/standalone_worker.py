"""A standalone worker: its offsets file read from disk, its connectors from its REST API.

A standalone worker keeps its source offsets in `offset.storage.file.filename`
(FileOffsetBackingStore) and its connectors' configs in memory, so what the config and status
topics say of a distributed cluster comes from its REST API here, when it answers.
"""

import hashlib
from dataclasses import dataclass
from pathlib import Path

from offsets.formats.config_records import ConfigSnapshot, ConnectorConfig
from offsets.formats.standalone_offsets_file import OffsetsFileError, decode
from offsets.formats.status_records import ConnectorStatus, StatusSnapshot, TaskStatus
from offsets.kafka.connect_answers import ConnectRestError
from offsets.kafka.connect_rest import ConnectorStatus as RestStatus
from offsets.kafka.connect_rest import ConnectRest
from offsets.kafka.errors import KafkaUnavailable

# The target state a REST status implies (a standalone worker has no config topic to say it).
_TARGET_STATES = {"PAUSED": "PAUSED", "STOPPED": "STOPPED"}


class OffsetsFileProblem(KafkaUnavailable):
    """The offsets file cannot be read, or is not one a standalone worker writes.

    A KafkaUnavailable: to the pages, the API and the refresh it is the worker's offsets store
    out of reach, as an unreachable offsets topic is for a distributed cluster.
    """


@dataclass(frozen=True)
class OffsetsFile:
    """The file as read once: its entries (key bytes to value bytes, None for a reset) and
    the SHA-256 of its bytes, which tells a later read whether it changed."""

    path: str
    entries: dict[bytes, bytes | None]
    sha256: str
    size: int


def read_offsets_file(path: str) -> OffsetsFile:
    """Read and decode the file; raise OffsetsFileProblem naming the file (and the byte)."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise OffsetsFileProblem(
            f"The offsets file {path} does not exist (the worker writes it at its first "
            "offset commit; is the path the one the dashboard sees?)"
        ) from None
    except OSError as exc:
        raise OffsetsFileProblem(
            f"The offsets file {path} cannot be read: {exc.strerror or exc}"
        ) from None
    try:
        entries = decode(data)
    except OffsetsFileError as exc:
        raise OffsetsFileProblem(
            f"The offsets file {path} is not one a standalone worker writes: {exc}"
        ) from None
    return OffsetsFile(path, entries, hashlib.sha256(data).hexdigest(), len(data))


@dataclass(frozen=True)
class WorkerSnapshots:
    """The worker's connectors as the config and status topics would describe them."""

    configs: ConfigSnapshot
    statuses: StatusSnapshot


def worker_snapshots(cluster) -> WorkerSnapshots:
    """Ask the worker for its connectors, their configs and states.

    Raises ConnectRestError (ConnectNotConfigured without a REST URL, ConnectUnreachable when
    no worker answers).
    """
    rest = ConnectRest.for_cluster(cluster)
    statuses = rest.connectors()
    configs = {}
    for name, status in statuses.items():
        try:
            properties = rest.config(name)
        except ConnectRestError:
            # Deleted between the two calls: shown from its status alone.
            properties = {}
        configs[name] = ConnectorConfig(
            name=name,
            properties=properties,
            target_state=_TARGET_STATES.get(status.state, "STARTED"),
            task_count=len(status.tasks),
            task_configs={},
            deleted=False,
        )
    return WorkerSnapshots(
        ConfigSnapshot(connectors=configs),
        StatusSnapshot(connectors={name: _status(s) for name, s in statuses.items()}),
    )


def _status(status: RestStatus) -> ConnectorStatus:
    traces = dict(status.failures)
    return ConnectorStatus(
        name=status.name,
        state=status.state,
        trace=traces.get("the connector") or None,
        worker_id=None,
        generation=None,
        tasks={
            task: TaskStatus(
                connector=status.name,
                task=task,
                state=state,
                trace=traces.get(f"task {task}") or None,
                worker_id=None,
                generation=0,
            )
            for task, state in enumerate(status.tasks)
        },
    )
