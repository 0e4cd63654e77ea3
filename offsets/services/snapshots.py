"""Read what the last refresh stored, for the pages and the API (no Kafka I/O here).

Every function returns a bounded number of queries whatever the number of rows: the pages
show 1,000 connectors and 10,000 partitions, so nothing here may query once per row.
"""

import json
import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.core.paginator import Page, Paginator
from django.db.models import (
    Case,
    Count,
    Exists,
    F,
    IntegerField,
    Max,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Sum,
    Value,
    When,
)
from django.utils import timezone
from django.utils.timesince import timesince

from offsets.formats.jackson import JsonValue
from offsets.formats.offsets_json import PartitionOffset, to_kip875
from offsets.models import (
    Cluster,
    CommitBucket,
    ConnectorSnapshot,
    KeyDrift,
    LagSample,
    RefreshRun,
    RewindEvent,
    SinkPartitionLag,
    SourceOffset,
)

logger = logging.getLogger(__name__)

# Runtime states a connector can be in (AbstractStatus.State), plus "DELETED" for a connector
# whose config is gone but whose offsets remain.
CONNECTOR_STATES = ("RUNNING", "PAUSED", "STOPPED", "FAILED", "UNASSIGNED", "RESTARTING")
DELETED = "DELETED"
STATE_CHOICES = (*CONNECTOR_STATES, DELETED)
CONNECTOR_TYPES = ("source", "sink")
# A connector's status is the worst of its partitions' (Burrow); STALL, STOP and REWIND are
# shown as ERR at connector level, and kept as the reason beside it.
LAG_STATUSES = ("OK", "WARN", "STALL", "STOP", "REWIND", "ERR")
ERR_REASONS = ("STALL", "STOP", "REWIND")
_SEVERITY = {"OK": 1, "WARN": 2, "REWIND": 3, "STALL": 4, "STOP": 5, "ERR": 6}

# Sort keys offered to users -> model fields (nulls always last).
CONNECTOR_SORTS = {
    "name": "name",
    "type": "type",
    "state": "state_order",
    "tasks": "task_count",
    "partitions": "partitions",
    "lag_records": "lag_records",
    "lag_ms": "lag_ms",
    "status": "severity",
    "last_commit": "last_commit_at",
    "malformed": "malformed",
}
PARTITION_SORTS = {
    "partition": "identity",
    "last_commit": "last_commit_at",
    "commits": "commits",
    "rewinds": "rewinds",
}
SINK_PARTITION_SORTS = {
    "partition": "topic",
    "lag_records": "lag_records",
    "lag_ms": "lag_ms",
    "status": "severity",
}

# Charts read at most this many points; older ones are left out.
MAX_COMMIT_BUCKETS = 288
MAX_LAG_SAMPLES = 500


def _severity(field: str) -> Case:
    return Case(
        *(When(**{field: status}, then=Value(rank)) for status, rank in _SEVERITY.items()),
        default=Value(0),
        output_field=IntegerField(),
    )


def severity_rank(status: str | None) -> int:
    return _SEVERITY.get(status or "", 0)


# -------------------------------------------------------------------------------------------
# Refresh runs: what the pages say about freshness.


@dataclass(frozen=True)
class RefreshState:
    """The latest refresh of a cluster and the latest that succeeded (they may be the same)."""

    last_run: RefreshRun | None
    last_success: RefreshRun | None

    @property
    def running(self) -> RefreshRun | None:
        run = self.last_run
        return run if run is not None and run.status == RefreshRun.Status.RUNNING else None

    @property
    def failed(self) -> RefreshRun | None:
        run = self.last_run
        return run if run is not None and run.status == RefreshRun.Status.FAILED else None

    @property
    def never_refreshed(self) -> bool:
        return self.last_success is None

    @property
    def snapshot_at(self) -> datetime | None:
        """When the results on show were computed (the end of the last successful run)."""
        run = self.last_success
        return (run.finished_at or run.started_at) if run else None

    @property
    def stale(self) -> bool:
        """True when the results on show are older than settings.SNAPSHOT_STALE_SECONDS."""
        at = self.snapshot_at
        limit = timedelta(seconds=settings.SNAPSHOT_STALE_SECONDS)
        return at is not None and timezone.now() - at > limit

    @property
    def silent_since(self) -> datetime | None:
        """The running refresh's last sign of life (its last heartbeat, or its start), when it
        has missed two heartbeats: its process may be gone. None otherwise (or when heartbeats
        are off)."""
        run = self.running
        interval = settings.REFRESH_HEARTBEAT_SECONDS
        if run is None or interval <= 0:
            return None
        last = run.heartbeat_at or run.started_at
        return last if timezone.now() - last > timedelta(seconds=2 * interval) else None

    @property
    def abandoned_after(self) -> int:
        """Seconds without a sign of life after which a running refresh stops blocking."""
        return settings.REFRESH_ABANDONED_SECONDS

    @property
    def age_seconds(self) -> int | None:
        """How old the results on show are, in whole seconds (None: there are none)."""
        at = self.snapshot_at
        return None if at is None else max(0, int((timezone.now() - at).total_seconds()))

    @property
    def warning(self) -> str | None:
        """Why the results on show may be out of date, in a sentence; None when they are not.

        The API says it in words, beside the fields, as the pages' banner does: a script that
        only reads the numbers should still be told that they are not current.
        """
        at = self.snapshot_at
        shown = (
            f"Showing the results of the last successful refresh, {timesince(at)} old "
            f"({at:%Y-%m-%d %H:%M:%S %Z})."
            if at is not None
            else "There are no earlier results to show."
        )
        failed = self.failed
        if failed is not None:
            ended = failed.finished_at or failed.started_at
            error = failed.error or "no error recorded"
            return f"The last refresh failed {timesince(ended)} ago: {error} {shown}"
        if self.stale:
            return f"Stale: no refresh has succeeded for {timesince(at)}. {shown}"
        return None


def refresh_state(*, cluster: Cluster) -> RefreshState:
    """Return the latest refresh run and the latest successful one (two queries)."""
    runs = RefreshRun.objects.filter(cluster=cluster).order_by("-started_at", "-pk")
    last_run = runs.first()
    if last_run is not None and last_run.status == RefreshRun.Status.SUCCEEDED:
        return RefreshState(last_run, last_run)
    return RefreshState(last_run, runs.filter(status=RefreshRun.Status.SUCCEEDED).first())


# -------------------------------------------------------------------------------------------
# Clusters overview.


@dataclass(frozen=True)
class ConnectorCounts:
    """What the overview says of a cluster's connectors: it changes only with a refresh."""

    connectors: int = 0
    counts_by_state: dict[str, int] = field(default_factory=dict)
    total_sink_lag: int | None = None
    worst_lag_status: str | None = None


@dataclass(frozen=True)
class ClusterRuns:
    """A cluster with its refresh state."""

    cluster: Cluster
    refresh: RefreshState


@dataclass(frozen=True)
class ClusterSummary:
    cluster: Cluster
    connectors: int
    counts_by_state: dict[str, int]
    total_sink_lag: int | None
    worst_lag_status: str | None
    refresh: RefreshState


def cluster_summaries(clusters: QuerySet[Cluster] | None = None) -> list[ClusterSummary]:
    """Summarise every cluster: connector counts by state, sink lag, worst status, refreshes.

    Three queries whatever the number of clusters and connectors.
    """
    runs = cluster_runs(clusters)
    return summarize(runs, connector_counts([row.cluster.pk for row in runs]))


def cluster_runs(clusters: QuerySet[Cluster] | None = None) -> list[ClusterRuns]:
    """Every cluster with its latest run and latest success (two queries)."""
    clusters = Cluster.objects.all() if clusters is None else clusters
    latest_run = RefreshRun.objects.filter(cluster=OuterRef("pk")).order_by("-started_at", "-pk")
    rows = list(
        clusters.annotate(
            last_run_id=Subquery(latest_run.values("pk")[:1]),
            last_success_id=Subquery(
                latest_run.filter(status=RefreshRun.Status.SUCCEEDED).values("pk")[:1]
            ),
        )
    )
    run_ids = {r.last_run_id for r in rows} | {r.last_success_id for r in rows}
    runs = RefreshRun.objects.in_bulk([pk for pk in run_ids if pk is not None])
    return [
        ClusterRuns(
            cluster=row,
            refresh=RefreshState(runs.get(row.last_run_id), runs.get(row.last_success_id)),
        )
        for row in rows
    ]


def connector_counts(cluster_ids: list[int]) -> dict[int, ConnectorCounts]:
    """Connector counts by state, sink lag and worst status of each cluster (one query)."""
    # One small GROUP BY instead of a conditional aggregate per state: a few groups per
    # cluster, folded here.
    groups = (
        ConnectorSnapshot.objects.filter(cluster__in=cluster_ids)
        .values_list(
            "cluster_id",
            "type",
            "runtime_state",
            "deleted",
            "lag_status",
            "offsets_managed_externally",
        )
        .annotate(count=Count("pk"), lag=Sum("lag_records"))
        .order_by()
    )
    counts: dict[int, dict[str, int]] = {pk: {} for pk in cluster_ids}
    totals: dict[int, int] = {}
    sink_lag: dict[int, int | None] = {}
    worst: dict[int, str | None] = {}
    for cluster_id, kind, state, deleted, status, external, count, lag in groups:
        key = DELETED if deleted else state
        if key:
            counts[cluster_id][key] = counts[cluster_id].get(key, 0) + count
        totals[cluster_id] = totals.get(cluster_id, 0) + count
        if kind == "sink" and not external and lag is not None:
            sink_lag[cluster_id] = (sink_lag.get(cluster_id) or 0) + lag
        if severity_rank(status) > severity_rank(worst.get(cluster_id)):
            worst[cluster_id] = status
    order = {state: index for index, state in enumerate(STATE_CHOICES)}
    return {
        pk: ConnectorCounts(
            connectors=totals.get(pk, 0),
            counts_by_state=dict(
                sorted(counts[pk].items(), key=lambda item: order.get(item[0], len(order)))
            ),
            total_sink_lag=sink_lag.get(pk),
            worst_lag_status=worst.get(pk),
        )
        for pk in cluster_ids
    }


def summarize(runs: list[ClusterRuns], counts: dict[int, ConnectorCounts]) -> list[ClusterSummary]:
    """The overview's rows from the clusters' runs and their connectors' counts."""
    summaries = []
    for row in runs:
        connectors = counts.get(row.cluster.pk) or ConnectorCounts()
        summaries.append(
            ClusterSummary(
                cluster=row.cluster,
                connectors=connectors.connectors,
                counts_by_state=connectors.counts_by_state,
                total_sink_lag=connectors.total_sink_lag,
                worst_lag_status=connectors.worst_lag_status,
                refresh=row.refresh,
            )
        )
    return summaries


# -------------------------------------------------------------------------------------------
# Connectors list.


def connectors(
    *,
    cluster: Cluster,
    q: str = "",
    type: str = "",
    state: str = "",
    status: str = "",
    sort: str = "name",
) -> QuerySet[ConnectorSnapshot]:
    """Return the cluster's connector snapshots filtered and sorted, one query when evaluated.

    Call `with_partition_status()` on the rows shown to get the reasons of their status.
    """
    rows = (
        ConnectorSnapshot.objects.filter(cluster=cluster)
        # The list never shows configs; they can be large.
        .defer("config")
    )
    # Sort expressions are compiled only when used: each costs ORM time on every request.
    field = sort.lstrip("-")
    if field == "status":
        rows = rows.annotate(severity=_severity("lag_status"))
    elif field == "state":
        rows = rows.annotate(
            state_order=Case(
                When(deleted=True, then=Value(len(CONNECTOR_STATES))),
                *(
                    When(runtime_state=name, then=Value(index))
                    for index, name in enumerate(CONNECTOR_STATES)
                ),
                default=Value(len(CONNECTOR_STATES) + 1),
                output_field=IntegerField(),
            )
        )
    if q:
        rows = rows.filter(name__icontains=q)
    if type:
        rows = rows.filter(type=type)
    if state == DELETED:
        rows = rows.filter(deleted=True)
    elif state:
        rows = rows.filter(runtime_state=state, deleted=False)
    if status in ("OK", "WARN", "ERR"):
        rows = rows.filter(lag_status=status)
    elif status in ERR_REASONS:
        rows = rows.filter(_has_reason(status))
    return rows.order_by(*_order_by(CONNECTOR_SORTS, sort), "name")


def _has_reason(reason: str) -> Q:
    partition_has = Exists(
        SinkPartitionLag.objects.filter(
            cluster=OuterRef("cluster"), connector=OuterRef("name"), status=reason
        )
    )
    if reason == "STALL":
        return partition_has | Q(type="source", stalled_partitions__gt=0)
    if reason == "REWIND":
        return partition_has | Q(type="source", rewinds__gt=0)
    return partition_has


def status_reasons(snapshot: ConnectorSnapshot) -> list[str]:
    """Why a connector is not OK: STALL, STOP or REWIND, from its partitions."""
    reasons = []
    worst = getattr(snapshot, "worst_partition_status", None)
    if worst in ERR_REASONS:
        reasons.append(worst)
    if snapshot.type == "source":
        if snapshot.stalled_partitions and "STALL" not in reasons:
            reasons.append("STALL")
        if snapshot.rewinds and "REWIND" not in reasons:
            reasons.append("REWIND")
    return reasons


# Sort fields that may be NULL; the others sort without NULLS LAST, which lets an index
# give the order (SQLite cannot use an ascending index for "ASC NULLS LAST").
_NULLABLE = {"task_count", "lag_records", "lag_ms", "last_commit_at"}


def _order_by(sorts: dict[str, str], sort: str) -> list:
    descending = sort.startswith("-")
    field = sorts[sort.lstrip("-")]
    expression = F(field)
    nulls_last = True if field in _NULLABLE else None
    return [
        expression.desc(nulls_last=nulls_last)
        if descending
        else expression.asc(nulls_last=nulls_last)
    ]


def with_partition_status(
    rows: list[ConnectorSnapshot], *, cluster: Cluster
) -> list[ConnectorSnapshot]:
    """Set `worst_partition_status` on each sink of `rows` (one query for all of them)."""
    sinks = [row.name for row in rows if row.type == "sink"]
    worst: dict[str, str] = {}
    if sinks:
        statuses = (
            SinkPartitionLag.objects.filter(cluster=cluster, connector__in=sinks)
            .values_list("connector", "status")
            # Without the model's ordering, whose columns would join the DISTINCT and make
            # it return every partition.
            .order_by()
            .distinct()
        )
        for connector, status in statuses:
            if severity_rank(status) > severity_rank(worst.get(connector)):
                worst[connector] = status
    for row in rows:
        row.worst_partition_status = worst.get(row.name)
    return rows


def get_connector(*, cluster_name: str, name: str) -> ConnectorSnapshot | None:
    """Return a connector's snapshot with its cluster (one query; two for a sink)."""
    snapshot = (
        ConnectorSnapshot.objects.select_related("cluster")
        .filter(cluster__name=cluster_name, name=name)
        .first()
    )
    if snapshot is not None:
        with_partition_status([snapshot], cluster=snapshot.cluster)
    return snapshot


def connector_of(cluster: Cluster, name: str) -> ConnectorSnapshot | None:
    """Return a connector's snapshot in a cluster read already (one query).

    Call `with_partition_status()` on it before `status_reasons()`.
    """
    return ConnectorSnapshot.objects.filter(cluster=cluster, name=name).first()


# -------------------------------------------------------------------------------------------
# One connector: partitions, lag, history, export.


def source_partitions(
    *, cluster: Cluster, connector: str, q: str = "", sort: str = "partition"
) -> QuerySet[SourceOffset]:
    """Return the partitions whose offsets the runtime uses (own topic first, KIP-618).

    Sorted by partition on SQLite, the index offsets_sourceoffset_page (migration 0004)
    gives the order and the pages without sorting 10,000 rows.
    """
    rows = SourceOffset.objects.filter(cluster=cluster, connector=connector, effective=True).defer(
        "key_bytes"
    )
    if q:
        rows = rows.filter(identity__icontains=q)
    # pk, not topic, breaks ties: the index ends with the row id, so it still gives the order.
    return rows.order_by(*_order_by(PARTITION_SORTS, sort), "identity", "pk")


def sink_partitions(
    *, cluster: Cluster, connector: str, q: str = "", sort: str = "partition"
) -> QuerySet[SinkPartitionLag]:
    rows = SinkPartitionLag.objects.filter(cluster=cluster, connector=connector).annotate(
        severity=_severity("status")
    )
    if q:
        rows = rows.filter(topic__icontains=q)
    return rows.order_by(*_order_by(SINK_PARTITION_SORTS, sort), "topic", "partition")


def default_chart_partition(*, cluster: Cluster, connector: str) -> SourceOffset | None:
    """The partition the detail page charts first: one that rewound, else the latest active."""
    return (
        SourceOffset.objects.filter(cluster=cluster, connector=connector, effective=True)
        .defer("key_bytes")
        .order_by("-rewinds", F("last_commit_at").desc(nulls_last=True), "identity")
        .first()
    )


def get_source_partition(*, cluster: Cluster, connector: str, key_hash: str) -> SourceOffset | None:
    """The partition of that key, the one the runtime uses first (a key may be in two topics)."""
    # Chosen here, not by ORDER BY: SQLite would then walk an index that gives the order
    # (every partition of the connector) instead of the key index (migration 0007).
    rows = SourceOffset.objects.filter(
        cluster=cluster, connector=connector, key_hash=key_hash
    ).defer("key_bytes")
    return min(rows.order_by(), key=lambda row: (not row.effective, row.pk), default=None)


def rewinds(*, cluster: Cluster, connector: str, limit: int = 20) -> list[RewindEvent]:
    return list(RewindEvent.objects.filter(cluster=cluster, connector=connector)[:limit])


def key_drifts(*, cluster: Cluster, connector: str) -> list[KeyDrift]:
    return list(KeyDrift.objects.filter(cluster=cluster, connector=connector))


@dataclass(frozen=True)
class Bucket:
    start: datetime
    commits: int


def commit_buckets(*, cluster: Cluster, connector: str) -> list[Bucket]:
    """Commits per bucket, oldest first, with empty buckets filled in as zero."""
    rows = list(
        CommitBucket.objects.filter(cluster=cluster, connector=connector)
        .order_by("-bucket_start")
        .values_list("bucket_start", "commits")[:MAX_COMMIT_BUCKETS]
    )
    rows.reverse()
    if not rows:
        return []
    width = timedelta(seconds=settings.COMMIT_BUCKET_SECONDS)
    by_start = dict(rows)
    first, last = rows[0][0], rows[-1][0]
    filled = []
    at = first
    while at <= last and len(filled) < MAX_COMMIT_BUCKETS:
        filled.append(Bucket(at, by_start.get(at, 0)))
        at += width
    if len(filled) < len(rows):
        # Buckets not aligned on the width (a changed setting): show them as stored.
        return [Bucket(start, commits) for start, commits in rows]
    return filled


@dataclass(frozen=True)
class LagPoint:
    at: datetime
    lag_records: int
    lag_ms: int | None


def lag_series(*, cluster: Cluster, connector: str) -> list[LagPoint]:
    """The sink's total lag (records) and worst lag (time) at each refresh, oldest first."""
    rows = list(
        LagSample.objects.filter(cluster=cluster, connector=connector)
        .values("sampled_at")
        .annotate(records=Sum("lag_records"), ms=Max("lag_ms"))
        .order_by("-sampled_at")[:MAX_LAG_SAMPLES]
    )
    rows.reverse()
    return [LagPoint(r["sampled_at"], r["records"] or 0, r["ms"]) for r in rows]


def export_entries(*, cluster: Cluster, snapshot: ConnectorSnapshot) -> list[PartitionOffset]:
    """The connector's offsets as KIP-875 entries: what `GET /connectors/{name}/offsets` says."""
    if snapshot.type == "sink":
        committed = (
            SinkPartitionLag.objects.filter(
                cluster=cluster, connector=snapshot.name, committed__isnull=False
            )
            .order_by("topic", "partition")
            .values_list("topic", "partition", "committed")
        )
        return [
            PartitionOffset(
                {"kafka_topic": topic, "kafka_partition": partition}, {"kafka_offset": offset}
            )
            for topic, partition, offset in committed
        ]
    live = (
        SourceOffset.objects.filter(
            cluster=cluster, connector=snapshot.name, effective=True, offset_text__isnull=False
        )
        .order_by("identity", "pk")
        .values_list("partition_text", "offset_text")
    )
    # From the text as written, so the maps keep Connect's field order (jsonb would not).
    return [
        PartitionOffset(json.loads(partition), json.loads(offset)) for partition, offset in live
    ]


def export_document(*, cluster: Cluster, snapshot: ConnectorSnapshot) -> dict[str, JsonValue]:
    return to_kip875(export_entries(cluster=cluster, snapshot=snapshot))


def paginate(
    rows: QuerySet, number: int | str, per_page: int, *, by_keys: bool = False, probe: int = 0
) -> Page:
    """Return page `number` of `rows` (clamped to the pages there are) as a list.

    With `by_keys`, the page's primary keys are read first and then only those rows: an
    OFFSET over full rows makes the database read every skipped row (page 100 of 10,000
    partitions read 5,000 JSON rows), while an OFFSET over keys walks an index. It costs one
    more query, worth it for tables of thousands of rows.

    With `probe` too (a search), up to that many keys are read first: when the filter keeps
    fewer, they are the count and the page, and the filter ran once instead of twice (a
    COUNT, then the keys: each scans every partition for a search). Else the keys read are
    dropped and the page is read as without it.
    """
    if not by_keys:
        page = Paginator(rows, per_page).get_page(number)
        page.object_list = list(page.object_list)
        return page
    keys_query = rows.values_list("pk", flat=True)
    found = list(keys_query[: probe + 1]) if probe else []
    if probe and len(found) <= probe:
        page = Paginator(found, per_page).get_page(number)
    else:
        page = Paginator(keys_query, per_page).get_page(number)
    keys = list(page.object_list)
    # Rows keep the deferred fields and annotations of `rows`.
    by_key = {row.pk: row for row in rows.filter(pk__in=keys).order_by()} if keys else {}
    page.object_list = [by_key[key] for key in keys if key in by_key]
    return page
