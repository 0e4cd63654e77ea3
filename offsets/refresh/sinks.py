"""The sinks' lag: each sink partition's lag in records and in time, rated with Burrow's rules."""

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timedelta

from django.conf import settings

from offsets.domain.connectors import (
    EARLIEST,
    LATEST,
    Connector,
    manages_offsets_externally,
    sink_offset_reset,
    sink_topics,
)
from offsets.domain.edit_rewinds import EditWrite, sink_drops_edited, sink_key
from offsets.domain.history import LagPoint, LagStatus, partition_lag_status
from offsets.domain.masking import mask_text
from offsets.edits.writes import edit_writes
from offsets.kafka import admin, reading
from offsets.kafka.errors import KafkaError
from offsets.models import Cluster, LagSample, SinkPartitionLag
from offsets.refresh.results import KnownTimeLags, SinkResults, StoreFacts, ms_to_datetime
from offsets.sink_stores import (
    CONNECT_GROUP,
    REMOTE_GROUP,
    StoreSetting,
    StoreUnreadable,
    read_groups,
    setting_of,
    stores_of,
)
from offsets.sink_stores import read as read_store

# A sink connector's partition: (connector, (topic, partition)).
Slot = tuple[str, tuple[str, int]]
# Recent lag samples: {(connector, topic, partition): points, oldest first}.
RecentSamples = dict[tuple[str, str, int], list[LagPoint]]


def sink_connectors(connectors: list[Connector]) -> list[Connector]:
    return [c for c in connectors if c.type == "sink" and not c.deleted]


def deleted_sinks(connectors: list[Connector]) -> list[Connector]:
    """Deleted sinks whose config the config topic still holds, so their group is known."""
    return [c for c in connectors if c.type == "sink" and c.deleted and c.sink_group]


def orphan_groups(deleted: list[Connector], by_group: dict[str, dict]) -> dict[str, int]:
    """How many committed partitions each deleted sink's group still holds.

    A new sink of that name resumes from them: counted so the pages can offer a clean-up.
    """
    return {c.name: len(by_group[c.sink_group]) for c in deleted if by_group.get(c.sink_group)}


def consumer_position(
    committed: int | None, log_start: int, log_end: int, *, reset: str = EARLIEST
) -> int:
    """Where a sink's consumer reads next: its committed offset, or where `reset`
    (auto.offset.reset) puts it when it never committed or its offset fell below the log start.

    "latest" is the log end: the records there now are never read. Any other value counts
    from the log start: "earliest" exactly; for "by_duration:..." an upper bound of the lag;
    "none" fails the task, and the records still wait.
    """
    if committed is not None and committed >= log_start:
        return committed
    return log_end if reset == LATEST else log_start


def database_reads(cluster: Cluster, connectors: list[Connector]) -> dict:
    """What `sample_sinks` needs of the database, read first as its keyword arguments: the
    sampling itself may run beside the Spark phase, on a thread that reads no database."""
    names = [c.name for c in sink_connectors(connectors)]
    return {
        "recent": recent_samples(cluster, names),
        "known": known_time_lags(cluster),
        "stores": store_settings(cluster, connectors),
        # The sink edits that may have moved a committed offset back within the window.
        "writes": edit_writes(cluster, names, sinks=True) if names else {},
    }


def store_settings(cluster: Cluster, connectors: list[Connector]) -> dict[str, StoreSetting]:
    """The stores an admin set for the cluster's sinks, read before the sampling: the
    sampling runs beside the Spark phase and reads no database."""
    groups = {c.name: c.sink_group or "" for c in connectors}
    return {
        name: setting_of(row, sink_group=groups.get(name, ""))
        for name, row in stores_of(cluster).items()
    }


def known_time_lags(cluster: Cluster) -> KnownTimeLags:
    """The lags in time of the cluster's lagging sink partitions at the last refresh, with
    the offsets they were measured between (`sample_sinks` reuses them)."""
    known: KnownTimeLags = {}
    rows = SinkPartitionLag.objects.filter(
        cluster=cluster, lag_records__gt=0, lag_ms__isnull=False
    ).values_list("connector", "topic", "partition", "log_end", "lag_records", "lag_ms")
    for connector, topic, partition, high, lag, lag_ms in rows:
        known[(connector, (topic, partition))] = ((high - lag, high), lag_ms)
    return known


def sample_sinks(
    cluster: Cluster,
    connectors: list[Connector],
    *,
    now_ms: int,
    recent: RecentSamples,
    known: KnownTimeLags | None = None,
    stores: dict[str, StoreSetting] | None = None,
    writes: dict[str, list[EditWrite]] | None = None,
) -> SinkResults:
    """Sample every sink partition's lag and rate it with `recent` (`recent_samples`) and the
    sinks' edits (`writes`), each sink's offsets read from its store (`stores`: those an admin
    set; Connect's group else). Reads Kafka and the stores, not the database (beside Spark)."""
    stores = stores or {}
    sinks = sink_connectors(connectors)
    deleted = deleted_sinks(connectors)
    results = SinkResults()
    if not sinks and not deleted:
        return results
    kafka = cluster.kafka_settings()
    by_group = read_groups(kafka, [c.sink_group for c in [*sinks, *deleted]])
    results.orphan_groups = orphan_groups(deleted, by_group)
    sinks, committed = _store_offsets(sinks, stores, by_group, results)
    if not sinks:
        return results
    existing = listed_topics(kafka, sinks)
    wanted = _wanted_partitions(sinks, existing, committed)
    marks = admin.watermarks(kafka, sorted({tp for tps in wanted.values() for tp in tps}))
    positions = _positions(sinks, wanted, committed, marks)
    results.externally_managed.update(_externally_managed(sinks, stores))
    lagging = {slot: at for slot, at in positions.items() if at < marks[slot[1]][1]}
    lags_ms = time_lags(kafka, lagging, marks, known or {})
    sampled_at = ms_to_datetime(now_ms)
    for connector in sinks:
        for tp in wanted[connector.name]:
            add_partition(
                results,
                cluster,
                connector,
                tp,
                group=_group_of(connector, stores.get(connector.name)),
                committed=committed[connector.name].get(tp),
                position=positions[(connector.name, tp)],
                marks=marks[tp],
                lag_ms=lags_ms.get((connector.name, tp)),
                recent=recent.get((connector.name, *tp), []),
                sampled_at=sampled_at,
                writes=(writes or {}).get(connector.name, ()),
            )
    return results


def _externally_managed(sinks: list[Connector], stores: dict[str, StoreSetting]) -> set[str]:
    """The sinks known to keep their offsets elsewhere that no store setting places: their
    group's offsets (none, or stale ones) are not where they resume from."""
    return {
        c.name
        for c in sinks
        if c.name not in stores
        and manages_offsets_externally(c.config, settings.EXTERNAL_OFFSETS_SINK_CLASSES)
    }


def _store_offsets(
    sinks: list[Connector],
    stores: dict[str, StoreSetting],
    by_group: dict[str, dict[admin.TopicPartitionKey, int]],
    results: SinkResults,
) -> tuple[list[Connector], dict[str, dict[admin.TopicPartitionKey, int]]]:
    """Each sink's offsets, from its store (Connect's group unless set), and the sinks
    measured: one whose store could not be read has no lag, its facts say why, and the
    others are measured all the same."""
    measured: list[Connector] = []
    committed: dict[str, dict[admin.TopicPartitionKey, int]] = {}
    for connector in sinks:
        store = stores.get(connector.name)
        if store is None or store.kind == CONNECT_GROUP:
            committed[connector.name] = by_group.get(connector.sink_group, {})
            measured.append(connector)
            continue
        facts = results.stores[connector.name] = StoreFacts(where=store.where())
        try:
            committed[connector.name] = read_store(store)
        except (StoreUnreadable, KafkaError) as exc:
            facts.error = mask_text(str(exc))
            continue
        measured.append(connector)
    return measured, committed


def _group_of(connector: Connector, store: StoreSetting | None) -> str:
    """The group a sink partition's offsets were read from ("" for a file)."""
    if store is None or store.kind == CONNECT_GROUP:
        return connector.sink_group
    return store.group_id if store.kind == REMOTE_GROUP else ""


def listed_topics(kafka: dict, sinks: list[Connector]) -> dict[str, int]:
    """Every topic the cluster lists to the dashboard, {topic: partitions}.

    A listing leaves out a topic the principal may not describe as it leaves out a deleted
    one, so a topic a sink names and the listing lacks is described: a deleted one stays out,
    a refused one raises KafkaNotAuthorized, which names the ACL missing.
    """
    existing = admin.topic_partition_counts(kafka)
    unlisted = {topic for c in sinks for topic in c.sink_topics} - existing.keys()
    if unlisted:
        admin.describe_topics(kafka, sorted(unlisted))
    return existing


def _wanted_partitions(
    sinks: list[Connector],
    existing: dict[str, int],
    committed: dict[str, dict[admin.TopicPartitionKey, int]],
) -> dict[str, list[admin.TopicPartitionKey]]:
    """Each sink's partitions: every partition of each topic it reads (`_topics_of`)."""
    return {
        c.name: [
            (topic, p)
            for topic in sorted(_topics_of(c, existing, committed[c.name]))
            for p in range(existing[topic])
        ]
        for c in sinks
    }


def _positions(
    sinks: list[Connector],
    wanted: dict[str, list[admin.TopicPartitionKey]],
    committed: dict[str, dict[admin.TopicPartitionKey, int]],
    marks: dict[admin.TopicPartitionKey, admin.Watermarks],
) -> dict[Slot, int]:
    """Where each sink's consumer stands in each partition it reads. Two sinks may read one
    topic from different offsets, each its own lag."""
    positions: dict[Slot, int] = {}
    for connector in sinks:
        reset = sink_offset_reset(connector.config)
        for tp in wanted[connector.name]:
            low, high = marks[tp]
            positions[(connector.name, tp)] = consumer_position(
                committed[connector.name].get(tp), low, high, reset=reset
            )
    return positions


def _topics_of(
    connector: Connector, existing: dict[str, int], committed: dict[tuple[str, int], int]
) -> set[str]:
    """The topics a sink reads: those its config names or matches, and those it committed."""
    topics = sink_topics(
        connector.sink_topics, connector.sink_topics_regex, existing, connector=connector.name
    )
    topics |= {topic for topic, _ in committed if topic in existing}
    return topics


def time_lags(
    kafka: dict,
    positions: dict[Slot, int],
    marks: dict[tuple[str, int], tuple[int, int]],
    known: KnownTimeLags,
) -> dict[Slot, int]:
    """Each lagging partition's lag in time: the newest record's timestamp less that of the
    record at the consumer's position.

    A partition whose position and log end are both where they were at the last refresh
    (`known`) has the same two records, so its lag is reused rather than read again: reading
    the two records of every lagging partition is a fetch per partition on every refresh,
    also for a sink that has not moved. (A topic deleted and created again whose offsets came
    back to the same two keeps the old value until one moves.)
    """
    lags: dict[Slot, int] = {}
    for slot, position in positions.items():
        offsets, lag_ms = known.get(slot, (None, None))
        if offsets == (position, marks[slot[1]][1]):
            lags[slot] = lag_ms
    asked = {slot: position for slot, position in positions.items() if slot not in lags}
    last = {tp: marks[tp][1] - 1 for _, tp in asked}
    stamps = reading.timestamps_at(
        kafka, set(last.items()) | {(tp, position) for (_, tp), position in asked.items()}
    )
    newest = {tp: stamps[(tp, offset)] for tp, offset in last.items() if (tp, offset) in stamps}
    # Nothing at high - 1: a topic of transactions ends with a commit marker, which no consumer
    # returns (an exactly-once source's output); its newest record is a little before.
    newest |= reading.newest_timestamps(kafka, {tp: marks[tp] for tp in last if tp not in newest})
    for (connector, tp), position in asked.items():
        newest_at, oldest_unread = newest.get(tp), stamps.get((tp, position))
        if newest_at is not None and oldest_unread is not None:
            lags[(connector, tp)] = max(newest_at - oldest_unread, 0)
    return lags


def add_partition(
    results: SinkResults,
    cluster: Cluster,
    connector: Connector,
    tp: tuple[str, int],
    *,
    group: str,
    upstream: str = "",
    committed: int | None,
    position: int,
    marks: tuple[int, int],
    lag_ms: int | None,
    recent: list[LagPoint],
    sampled_at: datetime,
    writes: Sequence[EditWrite] = (),
) -> None:
    """Add one partition's current lag and its sample to `results`: a sink's group's
    (`group`), or a mirror's upstream partition (`upstream`, its cluster).

    A sink's partition its group never committed lags from where the consumer starts
    (`consumer_position`): a sink just created, paused or failing before its first commit
    has records waiting all the same, rated by the same rules; an offset a sink edit moved
    back (`writes`, `sink_drops_edited`) is no REWIND."""
    low, high = marks
    lag = max(high - position, 0)
    if lag == 0:
        lag_ms = 0
    window = [*recent[-(settings.LAG_WINDOW_SAMPLES - 1) :], LagPoint(position, lag, sampled_at)]
    topic, partition = tp
    edited = sink_drops_edited(sink_key(topic, partition), writes)
    status = (
        LagStatus.OK
        if connector.name in results.externally_managed
        else partition_lag_status(window, consuming=connector.consuming, edited=edited)
    )
    measured = {
        "cluster": cluster,
        "connector": connector.name,
        "topic": topic,
        "partition": partition,
        "committed": committed,
        "log_end": high,
        "lag_records": lag,
        "lag_ms": lag_ms,
        "sampled_at": sampled_at,
    }
    results.lags.append(
        SinkPartitionLag(**measured, group=group, upstream=upstream, log_start=low, status=status)
    )
    results.samples.append(LagSample(**measured))


def recent_samples(cluster: Cluster, connectors: list[str]) -> RecentSamples:
    """The lag samples of every sink partition at the cluster's last N-1 samplings, oldest
    first; a sample with no committed offset stands at the consumer's position then (its log
    end less its lag), as `add_partition` rated it.

    A refresh samples every sink at one time (`sampled_at`), so the window is found as those
    times first, through the (cluster, sampled_at) index, and only their rows are read: the
    table holds every sample of the retention period.
    """
    window: RecentSamples = defaultdict(list)
    times = last_samplings(cluster, settings.LAG_WINDOW_SAMPLES - 1)
    if not times or not connectors:
        return window
    samples = (
        LagSample.objects.filter(
            cluster=cluster, connector__in=connectors, sampled_at__gte=times[-1]
        )
        .order_by("sampled_at")
        .values_list(
            "connector", "topic", "partition", "committed", "log_end", "lag_records", "sampled_at"
        )
    )
    for connector, topic, partition, committed, high, lag, at in samples:
        position = committed if committed is not None else high - lag
        window[(connector, topic, partition)].append(LagPoint(position, lag, at))
    return window


def last_samplings(cluster: Cluster, count: int) -> list[datetime]:
    """The times of the cluster's last `count` lag samplings, newest first."""
    if count <= 0:
        return []
    return list(
        LagSample.objects.filter(cluster=cluster)
        .order_by("-sampled_at")
        .values_list("sampled_at", flat=True)
        .distinct()[:count]
    )


def sample_due(last: datetime | None, now: datetime, *, every_seconds: int) -> bool:
    """Whether a refresh at `now` keeps its lag samples, the cluster's last kept at `last`.

    Samples spaced by at least `every_seconds` (0: every refresh keeps its own): Burrow's
    window then spans minutes however fast the loop refreshes, and the table stays small.
    """
    return last is None or every_seconds <= 0 or now - last >= timedelta(seconds=every_seconds)


def save_samples(cluster: Cluster, samples: list[LagSample], *, now_ms: int) -> bool:
    """Store this refresh's lag samples if one is due (`sample_due`); return whether stored."""
    last = last_samplings(cluster, 1)
    due = sample_due(
        last[0] if last else None,
        ms_to_datetime(now_ms),
        every_seconds=settings.LAG_SAMPLE_SECONDS,
    )
    if due:
        LagSample.objects.bulk_create(samples)
    return due


def drop_expired_lag_samples(cluster: Cluster, *, now_ms: int) -> None:
    """Delete lag samples older than LAG_SAMPLE_RETENTION_DAYS (0: keep every sample).

    A refresh adds a sample per sink partition, so a `--every` loop would grow the table
    without end. The samples of the last LAG_WINDOW_SAMPLES samplings stay whatever their age:
    Burrow's rules need them when refreshes are further apart than the retention.
    """
    days = settings.LAG_SAMPLE_RETENTION_DAYS
    if days <= 0:
        return
    cutoff = ms_to_datetime(now_ms) - timedelta(days=days)
    window = last_samplings(cluster, settings.LAG_WINDOW_SAMPLES)
    if window:
        cutoff = min(cutoff, window[-1])
    LagSample.objects.filter(cluster=cluster, sampled_at__lt=cutoff).delete()
