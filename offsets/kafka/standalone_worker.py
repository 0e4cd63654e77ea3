"""A standalone worker: its offsets file read from disk, its connectors from its REST API.

A standalone worker keeps its source offsets in `offset.storage.file.filename`
(FileOffsetBackingStore) and its connectors' configs in memory, so what the config and status
topics say of a distributed cluster comes from its REST API here, when it answers.
"""

import hashlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

from offsets import tuning
from offsets.formats.config_records import ConfigSnapshot, ConnectorConfig
from offsets.formats.standalone_offsets_file import OffsetsFileError, decode
from offsets.formats.status_records import ConnectorStatus, StatusSnapshot, TaskStatus
from offsets.kafka import files
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
    data = _file_bytes(path)
    try:
        entries = decode(data)
    except OffsetsFileError as exc:
        raise OffsetsFileProblem(
            f"The offsets file {path} is not one a standalone worker writes: {exc}"
        ) from None
    return OffsetsFile(path, entries, hashlib.sha256(data).hexdigest(), len(data))


def _file_bytes(path: str) -> bytes:
    """The file's bytes, read as hostile data (`files.read_file`); OffsetsFileProblem if not."""
    try:
        return files.read_file(path, max_bytes=tuning.STANDALONE_OFFSETS_FILE_MAX_BYTES)
    except files.FileRefused as exc:
        if exc.missing:
            raise OffsetsFileProblem(
                f"The offsets file {path} does not exist (the worker writes it at its first "
                "offset commit; is the path the one the dashboard sees?)"
            ) from None
        raise OffsetsFileProblem(f"The offsets file {exc}") from None


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


def file_is_still(path: str, *, pause: float) -> tuple[OffsetsFile, bool]:
    """Read the file twice, `pause` seconds apart: the second read, and whether the bytes
    were the same both times (a running worker rewrites it at every offset flush)."""
    first = read_offsets_file(path)
    time.sleep(pause)
    second = read_offsets_file(path)
    return second, first.sha256 == second.sha256


def replace_offsets_file(path: str, data: bytes, *, expected_sha256: str, backup_name: str) -> str:
    """Replace the file with `data` as one rename, keeping the bytes it held as `backup_name`
    beside it; return the backup's path.

    Refuses (OffsetsFileProblem) when the file's bytes are no longer those hashed as
    `expected_sha256`, or are not a file the worker writes: a corrupt file is never replaced.
    The new bytes are written aside in the same directory and flushed to disk, then renamed
    over the file, and the directory is flushed, so a crash leaves the old file or the new
    one, never a mix; the backup is on disk before the rename.
    """
    target = Path(path)
    current = read_offsets_file(path)  # raises for a corrupt or truncated file
    if current.sha256 != expected_sha256:
        raise OffsetsFileProblem(
            f"The offsets file {path} changed since the edit was checked: nothing written."
        )
    held = _file_bytes(path)
    if hashlib.sha256(held).hexdigest() != expected_sha256:
        raise OffsetsFileProblem(f"The offsets file {path} changed while it was being replaced.")
    backup = target.with_name(backup_name)
    _write_durably(backup, held, exclusive=True)
    aside = target.with_name(f".{target.name}.{backup_name}.new")
    _write_durably(aside, data, exclusive=True)
    os.chmod(aside, target.stat().st_mode & 0o7777)  # the worker's own permissions
    os.replace(aside, target)
    _flush_directory(target.parent)
    return str(backup)


def _write_durably(path: Path, data: bytes, *, exclusive: bool) -> None:
    flags = os.O_WRONLY | os.O_CREAT | (os.O_EXCL if exclusive else os.O_TRUNC)
    descriptor = os.open(path, flags, 0o644)
    try:
        with os.fdopen(descriptor, "wb", closefd=False) as handle:
            handle.write(data)
            handle.flush()
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _flush_directory(folder: Path) -> None:
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
