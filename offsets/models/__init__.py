"""The domain models, one module per area; import them from here."""

from offsets.models.cluster import Cluster
from offsets.models.refresh import (
    CommitBucket,
    ConnectorSnapshot,
    KeyDrift,
    LagSample,
    MalformedCount,
    ReadPosition,
    RefreshRun,
    RewindEvent,
    SinkPartitionLag,
    SourceOffset,
)

__all__ = [
    "Cluster",
    "CommitBucket",
    "ConnectorSnapshot",
    "KeyDrift",
    "LagSample",
    "MalformedCount",
    "ReadPosition",
    "RefreshRun",
    "RewindEvent",
    "SinkPartitionLag",
    "SourceOffset",
]
