"""Read the per-commit history the refresh keeps in Parquet (one folder per refresh run).

Layout (offsets.history.files): `run=<id>/connector=<name>/part-*.parquet` (or
`run=<first>-<last>/...`, runs merged by the refresh), rows sorted by key_hash in row groups of
about 1 MiB. One partition's history is read from its connector's folders only, and from the
row groups whose key_hash statistics can hold it: a few thousand rows per chart instead of
every commit of the cluster.
"""

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from offsets.domain.source_lag import position_age_ms
from offsets.history.files import connector_folder, run_folders
from offsets.history.store import history_path
from offsets.models import Cluster

_COLUMNS = [
    "key_hash",
    "topic",
    "kafka_partition",
    "kafka_offset",
    "timestamp_ms",
    "progress",
    "offset_json",
]


@dataclass(frozen=True)
class CommitPoint:
    at: datetime
    progress: float | None
    offset: dict | None
    kafka_offset: int
    rewind: bool
    # How old the source position was at this commit (CDC and JDBC-style offsets only).
    position_age_ms: int | None = None


def connector_files(*, cluster: Cluster, connector: str) -> list[Path]:
    """The Parquet files of one connector's history, across every run kept."""
    folder = connector_folder(connector)
    # Spark's own files (_SUCCESS, .crc checksums) do not end in .parquet.
    return [
        path
        for run in run_folders(history_path(cluster))
        for path in sorted((run / folder).glob("*.parquet"))
    ]


def _may_hold(statistics: pq.Statistics | None, key_hash: str) -> bool:
    if statistics is None or not statistics.has_min_max:
        return True
    return statistics.min <= key_hash <= statistics.max


def _read_key(path: Path, key_hash: str) -> pa.Table | None:
    """The rows of one key in one file, reading only the row groups that can hold it.

    By hand rather than with a pyarrow dataset filter: the dataset evaluates the filter
    against every row group's statistics as an expression, ~7 ms for the 50 groups of a
    10,000-partition connector, where this loop takes a fraction of a millisecond.
    """
    with pq.ParquetFile(path) as parquet:
        metadata = parquet.metadata
        # A flat schema: Arrow field index == Parquet column index.
        column = parquet.schema_arrow.get_field_index("key_hash")
        groups = [
            index
            for index in range(metadata.num_row_groups)
            if _may_hold(metadata.row_group(index).column(column).statistics, key_hash)
        ]
        if not groups:
            return None
        table = parquet.read_row_groups(groups, columns=_COLUMNS, use_threads=False)
    return table.filter(pc.equal(table["key_hash"], key_hash))


def _key_rows(cluster: Cluster, connector: str, key_hash: str) -> list[dict]:
    """The key's commit rows in every run folder, each Kafka record once: a reader that meets
    a merged folder and the runs it merged (for the moment between the two) sees both."""
    rows: dict[tuple, dict] = {}
    for path in connector_files(cluster=cluster, connector=connector):
        table = _read_key(path, key_hash)
        if table is not None:
            for row in table.to_pylist():
                rows[(row["topic"], row["kafka_partition"], row["kafka_offset"])] = row
    return list(rows.values())


def partition_history(
    *,
    cluster: Cluster,
    connector: str,
    key_hash: str,
    since: datetime | None = None,
    connector_class: str = "",
) -> list[CommitPoint]:
    """Return every recorded commit of one source partition (exact key), oldest first.

    `rewind` marks a commit whose progress is lower than the commit before it;
    `position_age_ms` is the source position's age at the commit, for a class whose offsets
    carry the source's clock (`source_lag.position_age_ms`).
    """
    try:
        rows = _key_rows(cluster, connector, key_hash)
    except FileNotFoundError:
        # A refresh merged or dropped run folders after they were listed (the merged folder
        # is in place before any is deleted): list them again.
        rows = _key_rows(cluster, connector, key_hash)
    rows.sort(key=lambda row: (row["timestamp_ms"], row["kafka_offset"]))
    points: list[CommitPoint] = []
    previous: float | None = None
    # A commit before `since` still tells whether the first one after it went back.
    since_ms = None if since is None else int(since.timestamp() * 1000)
    for row in rows:
        progress = row["progress"]
        if since_ms is not None and row["timestamp_ms"] < since_ms:
            previous = progress if progress is not None else previous
            continue
        offset = json.loads(row["offset_json"]) if row["offset_json"] else None
        points.append(
            CommitPoint(
                at=datetime.fromtimestamp(row["timestamp_ms"] / 1000, tz=UTC),
                progress=progress,
                offset=offset,
                kafka_offset=row["kafka_offset"],
                rewind=previous is not None and progress is not None and progress < previous,
                position_age_ms=position_age_ms(connector_class, offset, row["timestamp_ms"])
                if connector_class
                else None,
            )
        )
        if progress is not None:
            previous = progress
    return points
