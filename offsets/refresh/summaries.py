"""One ConnectorSnapshot per connector: the figures the connectors list shows, from the saved results."""

import hashlib
import json
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Count, Max
from django.utils import timezone

from offsets.domain.connectors import Connector
from offsets.domain.history import LagStatus, connector_lag_status, last_move_seen, last_moved_at
from offsets.domain.state_history import State, change_time, state_changes
from offsets.models import (
    Cluster,
    ConnectorSnapshot,
    ConnectorStateChange,
    KeyDrift,
    MalformedCount,
    SinkPartitionLag,
    SourceOffset,
)
from offsets.refresh import updates
from offsets.refresh.results import (
    SOURCE_OFFSET_FIELDS,
    SinkResults,
    StoredRows,
    ms_to_datetime,
)


@dataclass
class SourceStats:
    """A source connector's live offsets, summed over its partitions."""

    partitions: int = 0
    last: datetime | None = None
    rewinds: int = 0
    stalled: int = 0


def save_snapshots(
    cluster: Cluster,
    connectors: list[Connector],
    sinks: SinkResults,
    stored: StoredRows | None = None,
) -> None:
    """Replace the cluster's ConnectorSnapshot rows: one per connector Connect knows, and one
    per connector whose config is gone entirely (compacted tombstone) but whose offsets remain.

    `stored`: the cluster's SourceOffset rows as the save left them, when it knows them all;
    otherwise they are read back."""
    stats = _source_stats(cluster) if stored is None else stored_stats(stored)
    drift, malformed = _drift_and_malformed(cluster)
    lags: dict[str, list[SinkPartitionLag]] = defaultdict(list)
    for lag in sinks.lags:
        lags[lag.connector].append(lag)
    known = _Known(_KNOWN.get(cluster.pk))
    said = [
        {
            **known.connect_fields(connector),
            **_offsets_fields(connector, stats.get(connector.name, SourceStats()), lags, sinks),
            "drifted_partitions": drift.get(connector.name, 0),
            "malformed": malformed.get(connector.name, 0),
        }
        for connector in connectors
    ]
    for name in sorted(set(stats) - {c.name for c in connectors}):
        entry = stats[name]
        said.append(
            {
                "name": name,
                "type": "source",
                "deleted": True,
                "partitions": entry.partitions,
                "last_commit_at": entry.last,
                "rewinds": entry.rewinds,
                "drifted_partitions": drift.get(name, 0),
                "malformed": malformed.get(name, 0),
            }
        )
    updated_at = timezone.now()
    _record_state_changes(cluster, said, updated_at)
    _write_changed(cluster, said, updated_at, known)
    known.before = None  # only the last round's is kept
    _KNOWN[cluster.pk] = known


def _drift_and_malformed(cluster: Cluster) -> tuple[dict[str, int], dict[str, int]]:
    """Each connector's drifted partitions and malformed records (those of no connector left
    out)."""
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
    return drift, malformed


class _Known:
    """What the last save of a cluster's snapshots in this process built, to build again only
    what changed: a live loop's round says the same of most connectors as the round before.

    The config and status follower keeps a connector whose config and status did not change
    as the same object (offsets.connect_state), so its fields are not built again; a digest is
    computed again only when what a snapshot says differs. Each save keeps only what it used,
    so connectors gone are forgotten.
    """

    def __init__(self, before: "_Known | None" = None):
        self.before = before
        self.fields: dict[str, tuple[Connector, dict]] = {}
        self.digests: dict[str, tuple[dict, str]] = {}

    def connect_fields(self, connector: Connector) -> dict:
        known = self.before.fields.get(connector.name) if self.before else None
        if known is None or known[0] is not connector:
            known = (connector, _connector_fields(connector))
        self.fields[connector.name] = known
        return known[1]

    def said_before(self, name: str, digest: str | None) -> dict | None:
        """What the last save said of a connector, if a row with that digest says it."""
        known = self.before.digests.get(name) if self.before else None
        return known[0] if known is not None and known[1] == digest else None

    def digest(self, said: dict) -> str:
        known = self.before.digests.get(said["name"]) if self.before else None
        if known is None or known[0] != said:
            known = (said, fingerprint(said))
        self.digests[said["name"]] = known
        return known[1]


_KNOWN: dict[int, _Known] = {}


# What a snapshot says, every field but its row, cluster, time and digest, with the value a
# snapshot that does not say it has.
_SAID = {
    field.attname: field.get_default()
    for field in ConnectorSnapshot._meta.concrete_fields
    if field.name not in ("id", "cluster", "updated_at", "fingerprint")
}


def fingerprint(said: dict) -> str:
    """The digest of what a snapshot says (`said`: {field: value}, the others their default)."""
    values = [said.get(name, default) for name, default in _SAID.items()]
    return hashlib.sha1(
        json.dumps(values, sort_keys=True, default=str).encode(), usedforsecurity=False
    ).hexdigest()


def _write_changed(cluster: Cluster, said: list[dict], at: datetime, known: _Known) -> None:
    """Make the stored snapshots say these, writing only what changed.

    A live loop rounds every second over a fleet where few connectors change: a snapshot
    whose digest is the stored one is left alone, one whose stored row says what this
    process's last save said is updated in its changed fields (a round moves a source's last
    commit and partitions, a sink's lag), any other is written whole. Every row is dated with
    this refresh in one statement (what the pages show is as of it).
    """
    stored = {
        name: (pk, digest)
        for name, pk, digest in ConnectorSnapshot.objects.filter(cluster=cluster).values_list(
            "name", "pk", "fingerprint"
        )
    }
    written, changed = [], []
    for fields in said:
        digest = known.digest(fields)
        pk, stored_digest = stored.pop(fields["name"], (None, None))
        if stored_digest == digest:
            continue
        before = known.said_before(fields["name"], stored_digest)
        if pk is not None and before is not None:
            changed.append((pk, _changed_fields(before, fields) | {"fingerprint": digest}))
        else:
            written.append(
                ConnectorSnapshot(cluster=cluster, **fields, fingerprint=digest, updated_at=at)
            )
    stale = [snapshot.name for snapshot in written] + list(stored)
    for start in range(0, len(stale), 500):
        ConnectorSnapshot.objects.filter(
            cluster=cluster, name__in=stale[start : start + 500]
        ).delete()
    updates.update_by_pk(ConnectorSnapshot, changed)
    ConnectorSnapshot.objects.filter(cluster=cluster).update(updated_at=at)
    ConnectorSnapshot.objects.bulk_create(written, batch_size=500)


def _changed_fields(before: dict, said: dict) -> dict:
    """The fields whose value differs between two things a snapshot says (a field one of
    them does not say has its default)."""
    return {
        name: said.get(name, default)
        for name, default in _SAID.items()
        if said.get(name, default) != before.get(name, default)
    }


def _record_state_changes(cluster: Cluster, said: list[dict], at: datetime) -> None:
    """Keep the states that differ from the snapshots these replace: the only history of
    a connector's state (the charts' pause, stop and failure markers)."""
    previous = {
        name: State(target, runtime, failed)
        for name, target, runtime, failed in ConnectorSnapshot.objects.filter(
            cluster=cluster, deleted=False
        ).values_list("name", "target_state", "runtime_state", "failed_tasks")
    }
    current = {
        fields["name"]: State(
            fields["target_state"], fields["runtime_state"], fields["failed_tasks"]
        )
        for fields in said
        if not fields["deleted"]
    }
    failed_at = {fields["name"]: fields["failed_at"] for fields in said if not fields["deleted"]}
    changes = []
    for name, state, first_seen in state_changes(previous, current):
        # A failure is dated by the status record that says it, not the refresh that saw it.
        when, from_status = change_time(state, failed_at[name], at)
        changes.append(
            ConnectorStateChange(
                cluster=cluster,
                connector=name,
                at=when,
                target_state=state.target_state,
                runtime_state=state.runtime_state,
                failed_tasks=state.failed_tasks,
                first_seen=first_seen,
                at_from_status=from_status,
            )
        )
    ConnectorStateChange.objects.bulk_create(changes)


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
    return _summed(
        SourceOffset.objects.filter(
            cluster=cluster, effective=True, offset_text__isnull=False
        ).values_list("connector", "last_commit_at", "rewinds", "stalled")
    )


def stored_stats(stored: StoredRows) -> dict[str, SourceStats]:
    """`_source_stats` of the rows as a save left them (store.SOURCE_OFFSET_FIELDS values)."""
    connector, offset, last, rewinds, stalled, effective = (
        SOURCE_OFFSET_FIELDS.index(name)
        for name in (
            "connector",
            "offset_text",
            "last_commit_at",
            "rewinds",
            "stalled",
            "effective",
        )
    )
    return _summed(
        (values[connector], values[last], values[rewinds], values[stalled])
        for _, values in stored.values()
        if values[effective] and values[offset] is not None
    )


def _summed(rows) -> dict[str, SourceStats]:
    """SourceStats by connector of (connector, last commit, rewinds, stalled) rows."""
    stats: dict[str, SourceStats] = defaultdict(SourceStats)
    for name, last, rewinds, stalled in rows:
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
        "failed_at": ms_to_datetime(connector.runtime_failed_at_ms),
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
    last_commit, seen = entry.last, False
    if connector.type == "sink":
        # Kafka keeps no commit times: a sink's is when a refresh last saw its offsets move,
        # or first read them as they are (`seen` False: unchanged since at least then).
        moves = [(lag.committed_moved_at, lag.committed_move_seen) for lag in sink_lags]
        last_commit = last_moved_at([moved for moved, _ in moves]) if lagging else None
        seen = lagging and last_move_seen(moves)
    return {
        "partitions": _sink_partitions(connector, sink_lags, sinks)
        if connector.type == "sink"
        else entry.partitions,
        "last_commit_at": last_commit,
        "last_commit_seen": seen,
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
