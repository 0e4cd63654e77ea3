"""The domain models, one module per area; import them from here."""

from offsets.models.access import Grant, ProviderGroup, ProviderIdentity, Role
from offsets.models.alerts import AlertDelivery, AlertRule, AlertState
from offsets.models.cluster import Cluster, MirrorUpstream
from offsets.models.edits import AuditEvent, ChangeCounts, OffsetEdit, OffsetEditChange
from offsets.models.refresh import (
    CommitBucket,
    ConnectorSnapshot,
    ConnectorStateChange,
    KeyDrift,
    LagSample,
    MalformedCount,
    ReadPosition,
    RefreshRun,
    RewindEvent,
    SinkPartitionLag,
    SourceOffset,
)
from offsets.models.scheduling import SchedulerBeat
from offsets.models.sink_stores import SinkOffsetsStore

__all__ = [
    "AlertDelivery",
    "AlertRule",
    "AlertState",
    "AuditEvent",
    "ChangeCounts",
    "Cluster",
    "CommitBucket",
    "ConnectorSnapshot",
    "ConnectorStateChange",
    "Grant",
    "KeyDrift",
    "LagSample",
    "MalformedCount",
    "MirrorUpstream",
    "OffsetEdit",
    "OffsetEditChange",
    "ProviderGroup",
    "ProviderIdentity",
    "ReadPosition",
    "RefreshRun",
    "RewindEvent",
    "Role",
    "SchedulerBeat",
    "SinkOffsetsStore",
    "SinkPartitionLag",
    "SourceOffset",
]
