"""The connector page's history charts: commits and lag over the chosen range, with what
happened to the connector marked across them, and a partition's rewinds marked on its
offset progress."""

from datetime import datetime

from django.conf import settings
from django.http import Http404
from django.urls import reverse

from dashboard.pages.connector import chart_ranges
from dashboard.pages.connector import svg as charts
from dashboard.pages.connector.chart_events import Event, chart_events
from offsets.domain import epochs
from offsets.domain.edit_rewinds import edit_for_rewind
from offsets.domain.history import progress_field
from offsets.edits.writes import edit_writes
from offsets.models import (
    AuditEvent,
    Cluster,
    ConnectorSnapshot,
    ConnectorStateChange,
    OffsetEdit,
)
from offsets.queries import snapshots
from offsets.queries.snapshots.choices import MAX_COMMIT_BUCKETS, MAX_LAG_SAMPLES

# The dashboard's own controls worth a mark (a failed one changed nothing).
CONTROL_ACTIONS = (
    AuditEvent.Action.STOPPED,
    AuditEvent.Action.PAUSED,
    AuditEvent.Action.RESUMED,
    AuditEvent.Action.RESTARTED,
    AuditEvent.Action.TASK_RESTARTED,
)
APPLIED = AuditEvent.Action.APPLIED
RECONCILED = AuditEvent.Action.RECONCILED


def history_charts(
    cluster: Cluster, snapshot: ConnectorSnapshot, span: chart_ranges.ChartRange
) -> dict[str, charts.Chart]:
    """The commit chart, and the lag charts of a sink or a mirror with an upstream, over the
    range `span` ending at the refresh the page shows: each in buckets wide enough to draw it
    whole, named on the chart."""
    until = snapshot.updated_at
    since = span.since(until)
    lag_tracked = snapshot.type == "sink" and not snapshot.offsets_managed_externally
    lagging = lag_tracked or bool(snapshot.upstream_cluster)
    # Each chart's buckets fit what it draws: from the range's start or its oldest data.
    starts = [
        max(start, since) if start and since else start
        for start in snapshots.history_start(cluster=cluster, connector=snapshot.name, lag=lagging)
    ]
    events = connector_events(cluster, snapshot.name, since)
    context = {"commit_chart": commit_chart(cluster, snapshot, since, starts[0], until, events)}
    if lagging:
        context.update(lag_charts(cluster, snapshot, since, starts[1], until, events))
    return context


def connector_events(cluster: Cluster, connector: str, since: datetime | None) -> list[Event]:
    """What happened to the connector since `since`: the states the refreshes saw change,
    the dashboard's stops, resumes and restarts, the edits applied (two queries)."""
    states = ConnectorStateChange.objects.filter(cluster=cluster, connector=connector)
    audit = AuditEvent.objects.filter(
        cluster=cluster, connector=connector, action__in=[*CONTROL_ACTIONS, APPLIED, RECONCILED]
    )
    if since is not None:
        states = states.filter(at__gte=since)
        audit = audit.filter(at__gte=since)
    strategies = dict(OffsetEdit.Strategy.choices)
    controls, edits = [], []
    for at, action, actor, pk, strategy, state in audit.order_by("at").values_list(
        "at", "action", "actor_name", "edit_id", "edit__strategy", "edit__state"
    ):
        # An edit whose apply was cut short and settled later as applied changed the
        # offsets at its settling, as far as anyone can tell.
        if action == APPLIED or (action == RECONCILED and state == OffsetEdit.State.APPLIED):
            edits.append((at, pk, strategies.get(strategy, strategy)))
        elif action in CONTROL_ACTIONS:
            controls.append((at, action, actor))
    return chart_events(
        list(
            states.values_list(
                "at",
                "target_state",
                "runtime_state",
                "failed_tasks",
                "first_seen",
                "at_from_status",
            )
        ),
        controls,
        edits,
        lambda pk: reverse("edit-detail", kwargs={"cluster_name": cluster.name, "pk": pk}),
    )


def commit_chart(
    cluster: Cluster,
    snapshot: ConnectorSnapshot,
    since: datetime | None,
    start: datetime | None,
    until: datetime,
    events: list[Event],
) -> charts.Chart:
    """Commits per bucket from `since` (None: all kept), the first drawn at `start`."""
    width = chart_ranges.bucket_width(
        until - (start or until), settings.COMMIT_BUCKET_SECONDS, MAX_COMMIT_BUCKETS
    )
    buckets = snapshots.commit_buckets(
        cluster=cluster, connector=snapshot.name, since=since, width=width
    )
    return charts.line_chart(
        [(bucket.start, bucket.commits) for bucket in buckets],
        title="Offset commits",
        unit="commits",
        bucket=f"per {chart_ranges.width_label(width)}",
        events=events if buckets else (),
    )


def lag_charts(
    cluster: Cluster,
    snapshot: ConnectorSnapshot,
    since: datetime | None,
    start: datetime | None,
    until: datetime,
    events: list[Event],
) -> dict[str, charts.Chart]:
    """Lag in records and in time from `since` (None: all kept), the first drawn at `start`:
    each sample, or the worst of each bucket when the range holds too many to draw."""
    width = chart_ranges.bucket_width(
        until - (start or until), settings.LAG_SAMPLE_SECONDS or 1, MAX_LAG_SAMPLES
    )
    series = snapshots.lag_series(
        cluster=cluster, connector=snapshot.name, since=since, width=width
    )
    if width <= settings.LAG_SAMPLE_SECONDS:
        bucket = "a sample per refresh, at most one a " + chart_ranges.width_label(
            settings.LAG_SAMPLE_SECONDS
        )
    else:
        bucket = f"worst per {chart_ranges.width_label(width)}"
    timed = [(point.at, point.lag_ms / 1000) for point in series if point.lag_ms is not None]
    return {
        "lag_chart": charts.line_chart(
            [(point.at, point.lag_records) for point in series],
            title="Lag (records, all partitions)",
            unit="records",
            bucket=bucket,
            events=events if series else (),
        ),
        "lag_time_chart": charts.line_chart(
            timed,
            title="Lag (time, worst partition)",
            unit="time behind the newest record",
            bucket=bucket,
            durations=True,
            events=events if timed else (),
        ),
    }


def rewind_markers(cluster: Cluster, connector: str, key_hash: str, points: list) -> list[tuple]:
    """A marker per rewind of a partition: one an applied edit wrote names (and links to) it
    (`edit_for_rewind`: the same rule that keeps it out of the REWIND status)."""
    if not any(point.rewind for point in points):
        return []  # no rewind, no edit to look for
    writes = edit_writes(cluster, [connector]).get(connector, [])
    markers = []
    for point in points:
        if not point.rewind:
            continue
        when = f"{point.at:%Y-%m-%d %H:%M:%S} UTC"
        pk = edit_for_rewind(key_hash, point.at, point.progress, writes)
        if pk is None:
            markers.append((point.at, point.progress, f"rewind at {when}: no edit explains it"))
            continue
        href = reverse("edit-detail", kwargs={"cluster_name": cluster.name, "pk": pk})
        markers.append(
            (point.at, point.progress, f"edit #{pk} moved the offset back at {when}", href)
        )
    return markers


def partition_progress(
    cluster: Cluster, snapshot: ConnectorSnapshot, key_hash: str, since: datetime | None
) -> dict:
    """A source partition's offset progress (rewinds marked) and position age since `since`:
    the one asked for by its key hash, else the page's default one."""
    if key_hash:
        partition = snapshots.get_source_partition(
            cluster=cluster, connector=snapshot.name, key_hash=key_hash
        )
        if partition is None:
            raise Http404(f"No partition {key_hash} in {snapshot.name}.")
    else:
        partition = snapshots.default_chart_partition(cluster=cluster, connector=snapshot.name)
    context: dict[str, object] = {"chart_partition": partition}
    if partition is None:
        return context
    # The history service reads Parquet; import it here so the pages load without pyarrow work.
    from offsets.history import reading as history

    points = history.partition_history(
        cluster=cluster,
        connector=snapshot.name,
        key_hash=partition.key_hash,
        since=since,
        connector_class=snapshot.connector_class,
    )
    numeric = [point for point in points if point.progress is not None]
    aged = [point for point in points if point.position_age_ms is not None]
    if aged:
        context["age_chart"] = charts.line_chart(
            [(point.at, point.position_age_ms / 1000) for point in aged],
            title="Source position age",
            unit="the source's clock in the offset, behind the commit",
            bucket="at each commit",
            durations=True,
        )
    # A progress that is a time (a JDBC source's `timestamp`) is dated, never "1.79591G".
    field = progress_field(partition.offset if isinstance(partition.offset, dict) else None)
    context["progress_chart"] = charts.line_chart(
        [(point.at, point.progress) for point in numeric],
        markers=rewind_markers(cluster, snapshot.name, partition.key_hash, numeric),
        title="Offset progress",
        unit="",
        bucket="every commit",
        zero_based=False,
        moment_unit=epochs.series_unit(field or "", [point.progress for point in numeric]),
    )
    context["progress_commits"] = len(points)
    context["progress_not_numeric"] = bool(points) and not numeric
    return context
