"""Build the Prometheus metrics of every cluster afresh per scrape, from the stored results.

Nothing is kept between scrapes: each one builds a new CollectorRegistry whose one collector
reads what the refreshes stored with a fixed handful of queries (never one per connector or
partition), so a deleted connector or cluster simply stops appearing. docs/metrics.md lists
every series, its labels and how their number is bounded.
"""

import math
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from django.conf import settings
from django.db.models import Count, OuterRef, Q, Subquery, Sum
from django.utils import timezone
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from offsets.domain import pauses
from offsets.models import (
    Cluster,
    CommitBucket,
    ConnectorSnapshot,
    MalformedCount,
    OffsetEdit,
    RefreshRun,
    SinkPartitionLag,
)
from offsets.queries.snapshots import CONNECTOR_STATES, STATE_CHOICES

PREFIX = "kafka_connect_offsets_"
# A sink's status is Burrow's group status; its partitions' statuses say why it is ERR. One its
# owner paused or stopped is PAUSED, never ERR (offsets.domain.pauses).
CONNECTOR_LAG_STATUSES = ("OK", "WARN", "ERR", pauses.PAUSED)
PARTITION_LAG_STATUSES = tuple(SinkPartitionLag.Status.values)
REFRESH_OUTCOMES = (RefreshRun.Status.SUCCEEDED.value, RefreshRun.Status.FAILED.value)
EDIT_STATES = tuple(OffsetEdit.State.values)
# A source's commit rate is taken over this many whole commit buckets (COMMIT_BUCKET_SECONDS
# each) before its cluster's last successful refresh: the bucket that refresh ended in is
# still filling, and anything later is not read yet.
COMMIT_RATE_BUCKETS = 3

# The two kinds of lag series: a sink's behind its topics, a MirrorMaker 2 source's behind its
# upstream cluster. Same shapes, own names, so a dashboard never mixes the two.
SINK, MIRROR = "sink", "mirror"
_KIND_NOUNS = {SINK: "sink", MIRROR: "MirrorMaker 2 source"}

CONNECTOR = ("cluster", "connector")
PARTITION = ("cluster", "connector", "topic", "partition")


def exposition() -> bytes:
    """Return every series in Prometheus' text format (version 0.0.4)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(StoredResultsCollector(now=timezone.now()))
    return generate_latest(registry)


class StoredResultsCollector(Collector):
    """Yield the metric families of every cluster as the database holds them now."""

    def __init__(self, *, now: datetime) -> None:
        self.now = now

    def collect(self) -> Iterator[Metric]:
        clusters = _clusters_with_runs()
        names = {row.cluster.pk: row.cluster.name for row in clusters}
        yield from refresh_families(clusters, now=self.now)
        snapshots = _snapshots(names)
        yield from connector_families(snapshots, names)
        sources = [row for row in snapshots if row.type == "source"]
        rates = commit_rates(clusters, bucket_seconds=settings.COMMIT_BUCKET_SECONDS)
        yield from source_families(sources, names, rates, now=self.now)
        sinks = [row for row in snapshots if row.type == "sink"]
        status_counts = _partition_status_counts(names)
        limit = max(0, settings.METRICS_MAX_SINK_PARTITIONS)
        yield from sink_families(sinks, names, status_counts)
        yield from sink_partition_families(names, limit=limit)
        mirrors = [row for row in sources if row.upstream_cluster]
        yield from sink_families(mirrors, names, status_counts, kind=MIRROR)
        yield from sink_partition_families(names, limit=limit, kind=MIRROR)
        yield from malformed_families(names)
        yield from edit_families(names)


def gauge(name: str, documentation: str, labels: Sequence[str] = ()) -> GaugeMetricFamily:
    return GaugeMetricFamily(PREFIX + name, documentation, labels=list(labels))


def label(value: object) -> str:
    """A label value that has a UTF-8 form and one line: lone surrogates written as \\udxxx,
    a carriage return as \\r.

    Connector names are any Java String; prometheus-client escapes backslashes, quotes and
    newlines itself, but a lone surrogate would make the whole exposition fail to encode, and
    a raw carriage return ends the line for scrapers that split lines at it.
    """
    return str(value).encode("utf-8", "backslashreplace").decode("utf-8").replace("\r", "\\r")


def one_hot(current: str | None, choices: Iterable[str]) -> list[tuple[str, float]]:
    """Each choice with 1 for the current one and 0 for the others."""
    return [(choice, 1.0 if choice == current else 0.0) for choice in choices]


# -------------------------------------------------------------------------------------------
# Refreshes.


@dataclass(frozen=True)
class ClusterRuns:
    cluster: Cluster
    last: RefreshRun | None
    last_finished: RefreshRun | None
    last_success: RefreshRun | None


def _clusters_with_runs() -> list[ClusterRuns]:
    """Every cluster with its latest, latest finished and latest successful run (two queries)."""
    runs = RefreshRun.objects.filter(cluster=OuterRef("pk")).order_by("-started_at", "-pk")
    clusters = list(
        Cluster.objects.order_by("name").annotate(
            last_id=Subquery(runs.values("pk")[:1]),
            finished_id=Subquery(runs.exclude(status=RefreshRun.Status.RUNNING).values("pk")[:1]),
            success_id=Subquery(runs.filter(status=RefreshRun.Status.SUCCEEDED).values("pk")[:1]),
        )
    )
    ids = {pk for c in clusters for pk in (c.last_id, c.finished_id, c.success_id) if pk}
    by_id = RefreshRun.objects.in_bulk(list(ids))
    return [
        ClusterRuns(c, by_id.get(c.last_id), by_id.get(c.finished_id), by_id.get(c.success_id))
        for c in clusters
    ]


def refresh_families(clusters: list[ClusterRuns], *, now: datetime) -> list[Metric]:
    age = gauge(
        "refresh_last_success_age_seconds",
        "Seconds since the cluster's last successful refresh ended (absent: none yet).",
        ["cluster"],
    )
    duration = gauge(
        "refresh_duration_seconds",
        "How long the cluster's last finished refresh took.",
        ["cluster"],
    )
    outcome = gauge(
        "refresh_outcome",
        "The outcome of the cluster's last finished refresh: 1 for it, 0 for the other.",
        ["cluster", "outcome"],
    )
    read = gauge(
        "refresh_read_records",
        "Records of the Connect topics the cluster's last finished refresh read.",
        ["cluster"],
    )
    running = gauge("refresh_running", "1 while a refresh of the cluster runs.", ["cluster"])
    for row in clusters:
        name = row.cluster.name
        last, success = row.last_finished, row.last_success
        if success is not None:
            ended = success.finished_at or success.started_at
            age.add_metric([name], max(0.0, (now - ended).total_seconds()))
        if last is not None:
            seconds = last.seconds
            if seconds is None and last.finished_at is not None:
                seconds = (last.finished_at - last.started_at).total_seconds()
            if seconds is not None:
                duration.add_metric([name], seconds)
            for value, hot in one_hot(last.status, REFRESH_OUTCOMES):
                outcome.add_metric([name, value], hot)
            read.add_metric([name], last.records_read)
        is_running = row.last is not None and row.last.status == RefreshRun.Status.RUNNING
        running.add_metric([name], 1.0 if is_running else 0.0)
    return [age, duration, outcome, read, running]


# -------------------------------------------------------------------------------------------
# Connectors.


def _snapshots(names: dict[int, str]) -> list[ConnectorSnapshot]:
    return list(
        ConnectorSnapshot.objects.filter(cluster_id__in=list(names))
        .order_by("cluster_id", "name")
        .only(
            "cluster_id",
            "name",
            "type",
            "runtime_state",
            "deleted",
            "task_states",
            "partitions",
            "last_commit_at",
            "rewinds",
            "stalled_partitions",
            "drifted_partitions",
            "malformed",
            "lag_records",
            "lag_ms",
            "lag_status",
            "upstream_cluster",
            "target_state",
            "failed_tasks",
        )
    )


def connector_families(snapshots: list[ConnectorSnapshot], names: dict[int, str]) -> list[Metric]:
    state = gauge(
        "connector_state",
        "The connector's runtime state (DELETED: config gone, offsets remain): 1 for it, 0 for "
        "the others.",
        [*CONNECTOR, "type", "state"],
    )
    tasks = gauge("connector_tasks", "The connector's tasks in each state.", [*CONNECTOR, "state"])
    malformed = gauge(
        "connector_malformed_records",
        "Records of the connector that are not what Connect writes (skipped by the refresh).",
        CONNECTOR,
    )
    for row in snapshots:
        labels = [names[row.cluster_id], label(row.name)]
        current = "DELETED" if row.deleted else row.runtime_state
        for value, hot in one_hot(current, STATE_CHOICES):
            state.add_metric([*labels, row.type, value], hot)
        counts = defaultdict(int)
        for task_state in row.task_states.values():
            counts[task_state] += 1
        for value in CONNECTOR_STATES:
            tasks.add_metric([*labels, value], counts[value])
        malformed.add_metric(labels, row.malformed)
    return [state, tasks, malformed]


def commit_rate_window(end: datetime, *, bucket_seconds: int) -> tuple[datetime, datetime]:
    """The span of the COMMIT_RATE_BUCKETS whole buckets that ended by `end`: [start, stop)."""
    stop = math.floor(end.timestamp() / bucket_seconds) * bucket_seconds
    start = stop - COMMIT_RATE_BUCKETS * bucket_seconds
    return datetime.fromtimestamp(start, tz=UTC), datetime.fromtimestamp(stop, tz=UTC)


def commit_rates(
    clusters: list[ClusterRuns], *, bucket_seconds: int
) -> dict[tuple[int, str], float]:
    """Commits per second of each source over its cluster's rate window (one query)."""
    windows = Q()
    for row in clusters:
        if row.last_success is not None:
            success = row.last_success
            start, stop = commit_rate_window(
                success.finished_at or success.started_at, bucket_seconds=bucket_seconds
            )
            windows |= Q(cluster_id=row.cluster.pk, bucket_start__gte=start, bucket_start__lt=stop)
    if not windows:
        return {}
    totals = (
        CommitBucket.objects.filter(windows)
        .values_list("cluster_id", "connector")
        .annotate(commits=Sum("commits"))
        .order_by()
    )
    seconds = COMMIT_RATE_BUCKETS * bucket_seconds
    return {(cluster_id, name): commits / seconds for cluster_id, name, commits in totals}


def source_families(
    sources: list[ConnectorSnapshot],
    names: dict[int, str],
    rates: dict[tuple[int, str], float],
    *,
    now: datetime,
) -> list[Metric]:
    partitions = gauge(
        "source_partitions", "Source partitions with an offset in the offsets topics.", CONNECTOR
    )
    age = gauge(
        "source_last_commit_age_seconds",
        "Seconds since the source's last offset commit, at scrape time (absent: none).",
        CONNECTOR,
    )
    rate = gauge(
        "source_commits_per_second",
        f"Offset commits per second over the last {COMMIT_RATE_BUCKETS} whole commit buckets "
        "before the cluster's last successful refresh.",
        CONNECTOR,
    )
    stalled = gauge(
        "source_stalled_partitions",
        "Partitions of a running source with no commit for STALL_AFTER_FLUSH_INTERVALS flushes.",
        CONNECTOR,
    )
    rewinds = gauge(
        "source_rewinds",
        "Committed offsets of the source that went backwards, not written by an offset edit.",
        CONNECTOR,
    )
    drift = gauge(
        "source_key_drift_partitions",
        "Logical partitions of the source stored under more than one key byte form.",
        CONNECTOR,
    )
    for row in sources:
        labels = [names[row.cluster_id], label(row.name)]
        partitions.add_metric(labels, row.partitions)
        if row.last_commit_at is not None:
            age.add_metric(labels, max(0.0, (now - row.last_commit_at).total_seconds()))
        rate.add_metric(labels, rates.get((row.cluster_id, row.name), 0.0))
        stalled.add_metric(labels, row.stalled_partitions)
        rewinds.add_metric(labels, row.rewinds)
        drift.add_metric(labels, row.drifted_partitions)
    return [partitions, age, rate, stalled, rewinds, drift]


# -------------------------------------------------------------------------------------------
# Sinks.


def _partition_status_counts(names: dict[int, str]) -> dict[tuple[int, str], dict[str, int]]:
    """Each sink's topic-partitions counted by lag status (one query)."""
    counts: dict[tuple[int, str], dict[str, int]] = defaultdict(dict)
    rows = (
        SinkPartitionLag.objects.filter(cluster_id__in=list(names))
        .values_list("cluster_id", "connector", "status")
        .annotate(count=Count("pk"))
        .order_by()
    )
    for cluster_id, connector, status, count in rows:
        counts[cluster_id, connector][status] = count
    return counts


def sink_families(
    sinks: list[ConnectorSnapshot],
    names: dict[int, str],
    status_counts: dict[tuple[int, str], dict[str, int]],
    *,
    kind: str = SINK,
) -> list[Metric]:
    """The per-connector lag series of the sinks, or (`kind=MIRROR`) of the mirrors."""
    noun = _KIND_NOUNS[kind]
    records = gauge(
        f"{kind}_lag_records",
        f"The {noun}'s lag in records, summed over its partitions.",
        CONNECTOR,
    )
    seconds = gauge(
        f"{kind}_lag_seconds", f"The {noun}'s lag in time: its worst partition's.", CONNECTOR
    )
    status = gauge(
        f"{kind}_lag_status",
        f"The {noun}'s lag status by Burrow's rules (PAUSED: its owner paused or stopped it): "
        "1 for the current one, 0 for the others.",
        [*CONNECTOR, "status"],
    )
    partitions = gauge(
        f"{kind}_partitions",
        f"The {noun}'s topic-partitions by lag status (STALL, STOP, REWIND make it ERR).",
        [*CONNECTOR, "status"],
    )
    for row in sinks:
        labels = [names[row.cluster_id], label(row.name)]
        if row.lag_records is not None:
            records.add_metric(labels, row.lag_records)
        if row.lag_ms is not None:
            seconds.add_metric(labels, row.lag_ms / 1000)
        if row.lag_status:
            shown = pauses.shown_status(row.lag_status, paused=row.paused_by_owner)
            for value, hot in one_hot(shown, CONNECTOR_LAG_STATUSES):
                status.add_metric([*labels, value], hot)
        counts = status_counts.get((row.cluster_id, row.name), {})
        for value in PARTITION_LAG_STATUSES:
            partitions.add_metric([*labels, value], counts.get(value, 0))
    return [records, seconds, status, partitions]


def sink_partition_families(names: dict[int, str], *, limit: int, kind: str = SINK) -> list[Metric]:
    """Per-partition series of the sinks, or (`kind=MIRROR`) of the mirrors' upstream
    partitions, all of them or none: past `limit` partitions they are dropped.

    All or none, never the first `limit`, so that which series exist does not depend on the
    order partitions happen to sort in; `<kind>_partitions_unexported` says how many are
    missing.
    """
    records = gauge(
        f"{kind}_partition_lag_records", "The topic-partition's lag in records.", PARTITION
    )
    seconds = gauge(
        f"{kind}_partition_lag_seconds",
        "The topic-partition's lag in time (absent: not measurable).",
        PARTITION,
    )
    status = gauge(
        f"{kind}_partition_lag_status",
        "The topic-partition's lag status: one series, for the current status, valued 1.",
        [*PARTITION, "status"],
    )
    unexported = gauge(
        f"{kind}_partitions_unexported",
        f"The {_KIND_NOUNS[kind]}s' topic-partitions left without series of their own "
        "(METRICS_MAX_SINK_PARTITIONS).",
    )
    rows = SinkPartitionLag.objects.filter(cluster_id__in=list(names))
    # A mirror's partitions name their upstream cluster; a sink's do not.
    rows = rows.exclude(upstream="") if kind == MIRROR else rows.filter(upstream="")
    kept = list(
        rows.order_by("cluster_id", "connector", "topic", "partition").values_list(
            "cluster_id", "connector", "topic", "partition", "lag_records", "lag_ms", "status"
        )[: limit + 1]
    )
    if len(kept) > limit:
        unexported.add_metric([], rows.count())
        return [records, seconds, status, unexported]
    for cluster_id, connector, topic, partition, lag_records, lag_ms, current in kept:
        labels = [names[cluster_id], label(connector), label(topic), str(partition)]
        records.add_metric(labels, lag_records)
        if lag_ms is not None:
            seconds.add_metric(labels, lag_ms / 1000)
        status.add_metric([*labels, current], 1.0)
    unexported.add_metric([], 0)
    return [records, seconds, status, unexported]


# -------------------------------------------------------------------------------------------
# Malformed records and edits.


def malformed_families(names: dict[int, str]) -> list[Metric]:
    malformed = gauge(
        "malformed_records",
        "Records of a Connect topic that are not what Connect writes, by reason.",
        ["cluster", "topic", "reason"],
    )
    rows = (
        MalformedCount.objects.filter(cluster_id__in=list(names))
        .values_list("cluster_id", "topic", "reason")
        .annotate(total=Sum("count"))
        .order_by("cluster_id", "topic", "reason")
    )
    for cluster_id, topic, reason, total in rows:
        malformed.add_metric([names[cluster_id], label(topic), label(reason)], total)
    return [malformed]


def edit_families(names: dict[int, str]) -> list[Metric]:
    edits = gauge("edits", "Offset edits of the cluster in each state.", ["cluster", "state"])
    counts: dict[int, dict[str, int]] = defaultdict(dict)
    rows = (
        OffsetEdit.objects.filter(cluster_id__in=list(names))
        .values_list("cluster_id", "state")
        .annotate(count=Count("pk"))
        .order_by()
    )
    for cluster_id, state, count in rows:
        counts[cluster_id][state] = count
    for cluster_id, name in names.items():
        for state in EDIT_STATES:
            edits.add_metric([name, state], counts[cluster_id].get(state, 0))
    return [edits]
