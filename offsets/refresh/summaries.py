"""One ConnectorSnapshot per connector: the figures the connectors list shows, from the saved results."""

import hashlib
import json
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Count, Max
from django.utils import timezone

from offsets.formats.connectors import Connector
from offsets.formats.history_rules import LagStatus, connector_lag_status, last_moved_at
from offsets.formats.state_history import State, state_changes
from offsets.models import (
    Cluster,
    ConnectorSnapshot,
    ConnectorStateChange,
    KeyDrift,
    MalformedCount,
    SinkPartitionLag,
    SourceOffset,
)
from offsets.refresh.results import SinkResults, ms_to_datetime


@dataclass
class SourceStats:
    """A source connector's live offsets, summed over its partitions."""

    partitions: int = 0
    last: datetime | None = None
    rewinds: int = 0
    stalled: int = 0


def save_snapshots(cluster: Cluster, connectors: list[Connector], sinks: SinkResults) -> None:
    """Replace the cluster's ConnectorSnapshot rows: one per connector Connect knows, and one
    per connector whose config is gone entirely (compacted tombstone) but whose offsets remain."""
    stats = _source_stats(cluster)
    drift = dict(
        KeyDrift.objects.filter(cluster=cluster).values_list("connector").annotate(n=Count("id"))
    )
    malformed: dict[str, int] = defaultdict(int)
    for name, count in (
        MalformedCount.objects.filter(cluster=cluster)
        .exclude(connector="")
        .values_list("connector", "count")
    ):
        malformed[name] += count
    lags: dict[str, list[SinkPartitionLag]] = defaultdict(list)
    for lag in sinks.lags:
        lags[lag.connector].append(lag)
    updated_at = timezone.now()
    snapshots = [
        ConnectorSnapshot(
            cluster=cluster,
            **_connector_fields(connector),
            **_offsets_fields(connector, stats.get(connector.name, SourceStats()), lags, sinks),
            drifted_partitions=drift.get(connector.name, 0),
            malformed=malformed.get(connector.name, 0),
            updated_at=updated_at,
        )
        for connector in connectors
    ]
    for name in sorted(set(stats) - {c.name for c in connectors}):
        entry = stats[name]
        snapshots.append(
            ConnectorSnapshot(
                cluster=cluster,
                name=name,
                type="source",
                deleted=True,
                partitions=entry.partitions,
                last_commit_at=entry.last,
                rewinds=entry.rewinds,
                drifted_partitions=drift.get(name, 0),
                malformed=malformed.get(name, 0),
                updated_at=updated_at,
            )
        )
    _record_state_changes(cluster, snapshots, updated_at)
    _write_changed(cluster, snapshots, updated_at)


# What a snapshot says, every field but its row, cluster, time and digest.
_SAID = [
    field.attname
    for field in ConnectorSnapshot._meta.concrete_fields
    if field.name not in ("id", "cluster", "updated_at", "fingerprint")
]


def fingerprint(snapshot: ConnectorSnapshot) -> str:
    said = [getattr(snapshot, name) for name in _SAID]
    return hashlib.sha1(
        json.dumps(said, sort_keys=True, default=str).encode(), usedforsecurity=False
    ).hexdigest()


def _write_changed(cluster: Cluster, snapshots: list[ConnectorSnapshot], at: datetime) -> None:
    """Make the stored snapshots these, writing only the rows whose digest changed.

    A live loop rounds every second over a fleet where few connectors change: deleting and
    inserting every row made the save grow with the fleet. Every row is dated with this
    refresh in one statement (what the pages show is as of it).
    """
    stored = dict(
        ConnectorSnapshot.objects.filter(cluster=cluster).values_list("name", "fingerprint")
    )
    written = []
    for snapshot in snapshots:
        snapshot.fingerprint = fingerprint(snapshot)
        if stored.pop(snapshot.name, None) != snapshot.fingerprint:
            written.append(snapshot)
    stale = [snapshot.name for snapshot in written] + list(stored)
    for start in range(0, len(stale), 500):
        ConnectorSnapshot.objects.filter(
            cluster=cluster, name__in=stale[start : start + 500]
        ).delete()
    ConnectorSnapshot.objects.filter(cluster=cluster).update(updated_at=at)
    ConnectorSnapshot.objects.bulk_create(written, batch_size=500)


def _record_state_changes(
    cluster: Cluster, snapshots: list[ConnectorSnapshot], at: datetime
) -> None:
    """Keep the states that differ from the snapshots these replace: the only history of
    a connector's state (the charts' pause, stop and failure markers)."""
    previous = {
        name: State(target, runtime, failed)
        for name, target, runtime, failed in ConnectorSnapshot.objects.filter(
            cluster=cluster, deleted=False
        ).values_list("name", "target_state", "runtime_state", "failed_tasks")
    }
    current = {
        snapshot.name: State(snapshot.target_state, snapshot.runtime_state, snapshot.failed_tasks)
        for snapshot in snapshots
        if not snapshot.deleted
    }
    ConnectorStateChange.objects.bulk_create(
        ConnectorStateChange(
            cluster=cluster,
            connector=name,
            at=at,
            target_state=state.target_state,
            runtime_state=state.runtime_state,
            failed_tasks=state.failed_tasks,
            first_seen=first_seen,
        )
        for name, state, first_seen in state_changes(previous, current)
    )


def drop_expired_state_changes(cluster: Cluster, *, now_ms: int) -> None:
    """Delete state changes older than LAG_SAMPLE_RETENTION_DAYS (0: keep them all), as the
    lag samples beside which they are marked: a connector paused and resumed every minute
    adds two rows a minute. Each connector's newest change stays whatever its age: it says
    since when the connector is in its state now."""
    days = settings.LAG_SAMPLE_RETENTION_DAYS
    if days <= 0:
        return
    rows = ConnectorStateChange.objects.filter(cluster=cluster)
    newest = rows.values("connector").annotate(newest=Max("pk")).values("newest")
    cutoff = ms_to_datetime(now_ms) - timedelta(days=days)
    rows.filter(at__lt=cutoff).exclude(pk__in=newest).delete()


def _source_stats(cluster: Cluster) -> dict[str, SourceStats]:
    """Each connector's live source offsets (effective, not tombstones), summed."""
    stats: dict[str, SourceStats] = defaultdict(SourceStats)
    for name, last, rewinds, stalled in SourceOffset.objects.filter(
        cluster=cluster, effective=True, offset_text__isnull=False
    ).values_list("connector", "last_commit_at", "rewinds", "stalled"):
        entry = stats[name]
        entry.partitions += 1
        entry.last = max(filter(None, (entry.last, last)), default=None)
        entry.rewinds += rewinds
        entry.stalled += int(stalled)
    return stats


def _connector_fields(connector: Connector) -> dict:
    """What Connect's config and status topics say of the connector."""
    return {
        "name": connector.name,
        "type": connector.type,
        "connector_class": connector.connector_class,
        "target_state": connector.target_state,
        "runtime_state": connector.runtime_state or "",
        "task_states": {str(k): v for k, v in connector.runtime_tasks.items()},
        "task_details": {str(k): v for k, v in connector.runtime_task_details.items()},
        "failed_tasks": sum(state == "FAILED" for state in connector.runtime_tasks.values()),
        "task_count": connector.task_count,
        "deleted": connector.deleted,
        "mirrormaker2": connector.mirrormaker2,
        "own_offsets_topic": connector.own_offsets_topic or "",
        "sink_group": connector.sink_group or "",
        "config": connector.config,
        "trace": connector.trace or "",
    }


def _offsets_fields(
    connector: Connector,
    entry: SourceStats,
    lags: dict[str, list[SinkPartitionLag]],
    sinks: SinkResults,
) -> dict:
    """The connector's offsets figures: a sink's lag from its partitions, a source's stats."""
    sink_lags = lags.get(connector.name, [])
    external = connector.name in sinks.externally_managed
    mirror = sinks.mirrors.get(connector.name)
    store = sinks.stores.get(connector.name)
    # A sink's lag is known unless its store is unknown or did not answer; a mirror's when
    # its upstream is registered and answered.
    unread = external or bool(store and store.error)
    lagging = (connector.type == "sink" and not unread) or bool(
        mirror and mirror.cluster and not mirror.error
    )
    last_commit = entry.last
    if connector.type == "sink":
        # Kafka keeps no commit times: a sink's is when a refresh last saw its offsets move.
        moves = [lag.committed_moved_at for lag in sink_lags]
        last_commit = last_moved_at(moves) if lagging else None
    return {
        "partitions": _sink_partitions(connector, sink_lags, sinks)
        if connector.type == "sink"
        else entry.partitions,
        "last_commit_at": last_commit,
        "rewinds": entry.rewinds,
        "stalled_partitions": entry.stalled,
        "offsets_managed_externally": external,
        # Partitions lagging from where the consumer starts, not from a commit: the reason
        # "no commit yet" beside the sink's status.
        "uncommitted_partitions": sum(lag.committed is None for lag in sink_lags) if lagging else 0,
        "lag_records": sum(lag.lag_records for lag in sink_lags) if lagging else None,
        "lag_ms": max((lag.lag_ms or 0 for lag in sink_lags), default=0) if lagging else None,
        "lag_status": connector_lag_status([LagStatus(lag.status) for lag in sink_lags])
        if lagging
        else "",
        "source_alias": mirror.alias if mirror else "",
        "upstream_cluster": mirror.cluster if mirror else "",
        "upstream_error": mirror.error if mirror else "",
        "offsets_store": store.where if store else "",
        "offsets_store_error": store.error if store else "",
    }


def _sink_partitions(
    connector: Connector, sink_lags: list[SinkPartitionLag], sinks: SinkResults
) -> int:
    """A sink's partitions; for a deleted one, those its group still has offsets for."""
    if connector.deleted:
        return sinks.orphan_groups.get(connector.name, 0)
    return len(sink_lags)
