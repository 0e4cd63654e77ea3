"""Read the per-commit history the refresh keeps in Parquet (one folder per refresh run)."""

import json
from dataclasses import dataclass
from datetime import UTC, datetime

import pyarrow.dataset as ds

from offsets.models import Cluster
from offsets.services.refresh import history_path


@dataclass(frozen=True)
class CommitPoint:
    at: datetime
    progress: float | None
    offset: dict | None
    kafka_offset: int
    rewind: bool


def partition_history(
    *, cluster: Cluster, connector: str, key_hash: str, since: datetime | None = None
) -> list[CommitPoint]:
    """Return every recorded commit of one source partition (exact key), oldest first.

    `rewind` marks a commit whose progress is lower than the commit before it.
    """
    root = history_path(cluster)
    if not root.exists() or not any(root.iterdir()):
        return []
    dataset = ds.dataset(str(root), format="parquet", partitioning="hive")
    condition = (ds.field("connector") == connector) & (ds.field("key_hash") == key_hash)
    if since is not None:
        condition &= ds.field("timestamp_ms") >= int(since.timestamp() * 1000)
    table = dataset.to_table(
        columns=["topic", "kafka_offset", "timestamp_ms", "progress", "offset_json"],
        filter=condition,
    )
    rows = sorted(table.to_pylist(), key=lambda row: (row["timestamp_ms"], row["kafka_offset"]))
    points: list[CommitPoint] = []
    previous: float | None = None
    for row in rows:
        progress = row["progress"]
        points.append(
            CommitPoint(
                at=datetime.fromtimestamp(row["timestamp_ms"] / 1000, tz=UTC),
                progress=progress,
                offset=json.loads(row["offset_json"]) if row["offset_json"] else None,
                kafka_offset=row["kafka_offset"],
                rewind=previous is not None and progress is not None and progress < previous,
            )
        )
        if progress is not None:
            previous = progress
    return points
