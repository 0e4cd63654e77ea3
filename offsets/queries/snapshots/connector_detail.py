"""One connector's page: its partitions, rewinds, drifts, charts and export."""

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import (
    F,
    Max,
    QuerySet,
    Sum,
)

from offsets.domain.source_lag import has_source_clock, position_age_ms
from offsets.formats.jackson import JsonValue
from offsets.formats.offsets_json import PartitionOffset, to_kip875
from offsets.models import (
    Cluster,
    CommitBucket,
    ConnectorSnapshot,
    KeyDrift,
    LagSample,
    RewindEvent,
    SinkPartitionLag,
    SourceOffset,
)
from offsets.queries.snapshots.choices import (
    MAX_COMMIT_BUCKETS,
    MAX_LAG_SAMPLES,
    PARTITION_SORTS,
    SINK_PARTITION_SORTS,
    order_by,
    severity_case,
)


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
    return rows.order_by(*order_by(PARTITION_SORTS, sort), "identity", "pk")


def sink_partitions(
    *, cluster: Cluster, connector: str, q: str = "", sort: str = "partition"
) -> QuerySet[SinkPartitionLag]:
    rows = SinkPartitionLag.objects.filter(cluster=cluster, connector=connector).annotate(
        severity=severity_case("status")
    )
    if q:
        rows = rows.filter(topic__icontains=q)
    return rows.order_by(*order_by(SINK_PARTITION_SORTS, sort), "topic", "partition")


def with_position_ages(rows: Iterable[SourceOffset], *, connector_class: str) -> list[SourceOffset]:
    """Set `position_age_ms` on each row: its source position's age at its last commit, for a
    class whose offsets carry the source's clock (CDC, JDBC-style); None otherwise."""
    rows = list(rows)
    for row in rows:
        row.position_age_ms = (
            position_age_ms(connector_class, row.offset, int(row.last_commit_at.timestamp() * 1000))
            if has_source_clock(connector_class) and row.last_commit_at is not None
            else None
        )
    return rows


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


def commit_buckets(
    *, cluster: Cluster, connector: str, since: datetime | None = None, width: int | None = None
) -> list[Bucket]:
    """Commits per bucket, oldest first, with empty buckets filled in as zero; with `since`,
    the buckets that start then or later. With `width` (seconds, a multiple of the stored
    COMMIT_BUCKET_SECONDS), the stored buckets summed into buckets that wide, aligned on the
    epoch (a chart of a week draws hours, not 2,016 five-minute buckets)."""
    buckets = CommitBucket.objects.filter(cluster=cluster, connector=connector)
    if since is not None:
        buckets = buckets.filter(bucket_start__gte=since)
    stored = settings.COMMIT_BUCKET_SECONDS
    if width is not None and width > stored:
        # The width keeps the buckets under MAX_COMMIT_BUCKETS: every stored row is read.
        summed: dict[datetime, int] = {}
        for start, commits in buckets.order_by("bucket_start").values_list(
            "bucket_start", "commits"
        ):
            slot = _epoch_floor(start, width)
            summed[slot] = summed.get(slot, 0) + commits
        rows = list(summed.items())
    else:
        width = stored
        rows = list(
            buckets.order_by("-bucket_start").values_list("bucket_start", "commits")[
                :MAX_COMMIT_BUCKETS
            ]
        )
        rows.reverse()
    if not rows:
        return []
    step = timedelta(seconds=width)
    by_start = dict(rows)
    first, last = rows[0][0], rows[-1][0]
    filled = []
    at = first
    while at <= last and len(filled) < MAX_COMMIT_BUCKETS:
        filled.append(Bucket(at, by_start.get(at, 0)))
        at += step
    if len(filled) < len(rows):
        # Buckets not aligned on the width (a changed setting): show them as stored.
        return [Bucket(start, commits) for start, commits in rows]
    return filled


def _epoch_floor(at: datetime, width: int) -> datetime:
    """The start of the `width`-second bucket, counted from the epoch, that holds `at`."""
    seconds = int(at.timestamp())
    return datetime.fromtimestamp(seconds - seconds % width, tz=at.tzinfo)


def history_start(*, cluster: Cluster, connector: str, lag: bool) -> list[datetime | None]:
    """The oldest commit bucket kept of the connector and, with `lag`, its oldest lag sample:
    where each chart's history starts."""
    starts = [
        CommitBucket.objects.filter(cluster=cluster, connector=connector)
        .order_by("bucket_start")
        .values_list("bucket_start", flat=True)
        .first()
    ]
    if lag:
        starts.append(
            LagSample.objects.filter(cluster=cluster, connector=connector)
            .order_by("sampled_at")
            .values_list("sampled_at", flat=True)
            .first()
        )
    return starts


@dataclass(frozen=True)
class LagPoint:
    at: datetime
    lag_records: int
    lag_ms: int | None


def lag_series(
    *, cluster: Cluster, connector: str, since: datetime | None = None, width: int | None = None
) -> list[LagPoint]:
    """A sink's or mirror's total lag (records) and worst lag (time) at each refresh, oldest
    first; with `since`, the samples taken then or later. With `width` (seconds), the worst
    of each `width`-second bucket (aligned on the epoch), dated by its start: peaks survive."""
    samples = LagSample.objects.filter(cluster=cluster, connector=connector)
    if since is not None:
        samples = samples.filter(sampled_at__gte=since)
    per_sample = samples.values("sampled_at").annotate(records=Sum("lag_records"), ms=Max("lag_ms"))
    if width is None or width <= settings.LAG_SAMPLE_SECONDS:
        rows = list(per_sample.order_by("-sampled_at")[:MAX_LAG_SAMPLES])
        rows.reverse()
        return [LagPoint(r["sampled_at"], r["records"] or 0, r["ms"]) for r in rows]
    worst: dict[datetime, LagPoint] = {}
    for row in per_sample.order_by("sampled_at"):
        slot = _epoch_floor(row["sampled_at"], width)
        before = worst.get(slot)
        records, ms = row["records"] or 0, row["ms"]
        if before is not None:
            records = max(records, before.lag_records)
            ms = before.lag_ms if ms is None else max(ms, before.lag_ms or 0)
        worst[slot] = LagPoint(slot, records, ms)
    return list(worst.values())


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


# The header a stored export carries when some of its offsets are older than the current ones.
NOT_CURRENT_HEADER = "X-Newer-Offsets-Not-Stored"


def newer_offsets_not_stored(*, cluster: Cluster, snapshot: ConnectorSnapshot) -> int:
    """How many of a source's partitions have a newer offset than the stored one, which the
    database cannot hold (a NUL or a lone surrogate): the runtime uses that one."""
    if snapshot.type == "sink":
        return 0
    return SourceOffset.objects.filter(
        cluster=cluster,
        connector=snapshot.name,
        effective=True,
        newer_unstorable_offset__isnull=False,
    ).count()
