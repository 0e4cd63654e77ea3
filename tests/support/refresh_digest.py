"""What two refreshes of the same topics on two Sparks must store alike: every result row and
every history row, less the fields that differ between equal results (keys, the wall clock).
The standalone cluster's and the Spark Connect server's tests compare with local mode so."""

import pyarrow.parquet as pq

from offsets.history import store as history_store
from offsets.models import (
    Cluster,
    CommitBucket,
    ConnectorSnapshot,
    KeyDrift,
    LagSample,
    MalformedCount,
    ReadPosition,
    RewindEvent,
    SinkPartitionLag,
    SourceOffset,
)

# Records no Connect runtime would use, so that malformed counts are compared too.
GARBAGE = [
    ("connect-offsets", b"not json at all", b'{"position":1}', None),
    ("connect-offsets", b'["garbage-source",{"n":1}]', b"not json", None),
    ("connect-offsets", b'["garbage-source",{"n":2}]', b"[1,2,3]", None),
]

# Per-row fields that differ between two refreshes of equal results: keys, and the wall clock.
IGNORED = {"id", "cluster_id", "updated_at"}
COMPARED = (
    SourceOffset,
    KeyDrift,
    RewindEvent,
    CommitBucket,
    MalformedCount,
    SinkPartitionLag,
    LagSample,
    ConnectorSnapshot,
    ReadPosition,
)
# The run's counts that equal refreshes share.
RUN_FIELDS = ("records_read", "records_by_topic", "malformed", "malformed_by_reason")


def stored_rows(model, cluster: Cluster) -> list[dict]:
    rows = [
        {
            name: bytes(value) if isinstance(value, memoryview) else value
            for name, value in row.items()
            if name not in IGNORED
        }
        for row in model.objects.filter(cluster=cluster).values()
    ]
    return sorted(rows, key=repr)


def history_rows(cluster: Cluster) -> list[dict]:
    history_store.wait_for_merges()  # a merge going on shows its commits twice for a moment
    rows = [
        row
        for path in history_store.history_path(cluster).glob("run=*/connector=*/*.parquet")
        for row in pq.read_table(path).to_pylist()
    ]
    return sorted(rows, key=lambda row: (row["topic"], row["kafka_partition"], row["kafka_offset"]))
