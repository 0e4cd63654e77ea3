"""The refresh's save: its results replace the stored ones, all or nothing, in one transaction."""

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.db.models import Count

from offsets import connect_state
from offsets.domain.edit_rewinds import edit_for_rewind
from offsets.domain.history import committed_move_seen, committed_moved_at
from offsets.domain.masking import mask_text
from offsets.edits.writes import edit_writes
from offsets.formats.offset_records import parse_offset_record
from offsets.models import (
    Cluster,
    CommitBucket,
    KeyDrift,
    MalformedCount,
    ReadPosition,
    RewindEvent,
    SinkPartitionLag,
    SourceOffset,
)
from offsets.refresh import plan as planning
from offsets.refresh import sinks as sinks_lag
from offsets.refresh import summaries, updates
from offsets.refresh.results import (
    SOURCE_OFFSET_FIELDS,
    SinkResults,
    SourcePlan,
    SourceResults,
    StoredRows,
    ms_to_datetime,
)


class RefreshOvertaken(Exception):
    """Another refresh of the cluster saved its results after this one planned its read."""


# Rows deleted per statement (SQLite limits the parameters of one statement).
DELETE_BATCH = 500


def source_offset_values(row: dict, rewinds: int) -> tuple:
    return (
        row["connector"],
        row["identity"],
        row["partition_json"],
        row["offset_json"],
        row["kafka_partition"],
        row["kafka_offset"],
        row["progress"],
        ms_to_datetime(row["first_commit_ms"]),
        ms_to_datetime(row["last_commit_ms"]),
        row["commits"],
        rewinds,
        bool(row["stalled"]),
        bool(row["effective"]),
    )


def stored_source_offsets(cluster: Cluster) -> StoredRows:
    """The cluster's stored SourceOffset rows as the save compares them."""
    return {
        (topic, key_hash): (pk, values)
        for pk, topic, key_hash, *values in SourceOffset.objects.filter(
            cluster=cluster
        ).values_list("pk", "topic", "key_hash", *SOURCE_OFFSET_FIELDS)
    }


def save_source_offsets(
    cluster: Cluster,
    latest: list[dict],
    stored_rows: StoredRows | None = None,
    only: set[tuple[str, str]] | None = None,
) -> StoredRows | None:
    """Make the stored SourceOffset rows equal the Spark result, writing only what differs,
    inside the refresh's transaction (after this run's RewindEvents are stored).

    The result holds every key, so a stored key missing from it is gone (a full refresh of a
    topic that lost it). A big cluster's round usually touches few keys: changed rows are
    updated in place (`update_source_offsets`), new ones inserted, the others left alone.
    `stored_rows`: the rows as the refresh read them (`inputs.previous_state`) or remembered
    them (offsets.refresh.memory); without them they are read here. `only`: the keys that can
    differ from them (a round from its memory knows them); the others are neither compared
    nor gone. Returns the rows as now stored; None when rows were created (their ids unknown).
    """
    rewinds = _rewinds_by_key(cluster)
    # A copy: a retried save starts from the same rows, and a memory stays as it was saved.
    stored = stored_source_offsets(cluster) if stored_rows is None else dict(stored_rows)
    saved: StoredRows = {}
    changed, created = [], []
    for row in latest:
        slot = (row["topic"], row["key_hash"])
        if only is not None and slot not in only:
            continue
        values = source_offset_values(row, rewinds.get(slot, 0))
        old = stored.pop(slot, None)
        if old is None:
            created.append(_source_offset(cluster, row, values))
            continue
        saved[slot] = (old[0], list(values))
        if fields := changed_fields(old[1], values, row):
            if "kafka_offset" in fields:
                # A newer write was kept: whatever unstorable write came before it is past.
                fields["newer_unstorable_offset"] = None
            changed.append((old[0], fields))
    gone = [] if only is not None else [pk for pk, _ in stored.values()]
    for start in range(0, len(gone), DELETE_BATCH):
        SourceOffset.objects.filter(pk__in=gone[start : start + DELETE_BATCH]).delete()
    update_source_offsets(changed)
    SourceOffset.objects.bulk_create(created, batch_size=2000)
    if created:
        return None
    return saved if only is None else stored | saved


def _rewinds_by_key(cluster: Cluster) -> dict[tuple[str, str], int]:
    """The cluster's stored rewinds no edit wrote, counted by key: {(topic, key_hash):
    rewinds}. A rewind an applied edit explains is the edit's work, not an alarm."""
    return {
        (topic, key_hash): count
        for topic, key_hash, count in RewindEvent.objects.filter(cluster=cluster, edit=None)
        .values("topic", "key_hash")
        .annotate(n=Count("id"))
        .values_list("topic", "key_hash", "n")
    }


def changed_fields(stored: list, values: tuple, row: dict) -> dict[str, object]:
    """The SOURCE_OFFSET_FIELDS whose value differs from the stored one, {name: new value},
    with the parsed `offset` beside a changed `offset_text`."""
    fields = {
        name: new
        for name, old, new in zip(SOURCE_OFFSET_FIELDS, stored, values, strict=True)
        if old != new
    }
    if "offset_text" in fields:
        fields["offset"] = _parsed_offset(row)
    return fields


def update_source_offsets(changed: list[tuple[int, dict[str, object]]]) -> None:
    """UPDATE SourceOffset rows by primary key (`updates.update_by_pk`). New commits change
    the same few fields of every key they touch (the offset, its Kafka position, the
    progress, the last commit and the count)."""
    updates.update_by_pk(SourceOffset, changed)


def _parsed_offset(row: dict) -> dict | None:
    """The offset of a result row as JSON data (None: a tombstone)."""
    return None if row["offset_json"] is None else json.loads(row["offset_json"])


def _source_offset(cluster: Cluster, row: dict, values: tuple) -> SourceOffset:
    key = bytes(row["key"])
    return SourceOffset(
        cluster=cluster,
        topic=row["topic"],
        key_hash=row["key_hash"],
        key_bytes=key,
        partition=parse_offset_record(key, None).partition,
        offset=_parsed_offset(row),
        **dict(zip(SOURCE_OFFSET_FIELDS, values, strict=True)),
    )


@dataclass(frozen=True)
class Saved:
    """What a save wrote that a live loop remembers (offsets.refresh.memory)."""

    token: str  # the cluster's new results token
    stored: StoredRows | None  # the SourceOffset rows as now stored (None: not all known)


@transaction.atomic
def save(
    cluster: Cluster,
    state: connect_state.ConnectState,
    plan: SourcePlan,
    sources: SourceResults,
    sinks: SinkResults,
    *,
    full: bool,
    now_ms: int,
    stored_rows: StoredRows | None = None,
    only: set[tuple[str, str]] | None = None,
) -> Saved:
    """Replace the current results and append the history, all or nothing. `stored_rows`
    and `only`: as `save_source_offsets` takes them."""
    # One save of a cluster at a time, each checking what the one before it saved.
    cluster.lock()
    if not full and planning.read_positions(cluster)[0] != plan.read_from:
        # Another refresh (a loop beside a button press, a run deemed abandoned that was not)
        # read the same new records and saved first: adding this one's counts too would
        # count those commits twice. A full refresh replaces everything, so it may go on.
        raise RefreshOvertaken(
            f"Another refresh of {cluster.name} saved its results while this one ran, so this "
            "one's were dropped rather than count the same commits twice; the next refresh "
            "reads on from where that one stopped."
        )
    token = uuid.uuid4().hex
    Cluster.objects.filter(pk=cluster.pk).update(results_token=token)
    if full:
        for model in (CommitBucket, RewindEvent, MalformedCount, ReadPosition):
            model.objects.filter(cluster=cluster).delete()
    _add_rewinds(cluster, sources.rewinds)
    stored = save_source_offsets(cluster, sources.latest, stored_rows, only)
    mark_unstorable(cluster, sources.unstorable, full=full)
    add_commit_buckets(
        cluster,
        {
            (row["connector"], ms_to_datetime(row["bucket_start_ms"])): row["commits"]
            for row in sources.buckets
        },
    )
    _add_malformed(cluster, sources.malformed)
    save_connect_topics_malformed(cluster, state)
    _replace_drift(cluster, sources.drift)
    _replace_sink_lags(cluster, sinks.lags)
    sinks_lag.save_samples(cluster, sinks.samples, now_ms=now_ms)
    sinks_lag.drop_expired_lag_samples(cluster, now_ms=now_ms)
    _save_read_positions(cluster, plan)
    summaries.save_snapshots(cluster, state.connectors, sinks, stored)
    summaries.drop_expired_state_changes(cluster, now_ms=now_ms)
    return Saved(token, stored)


def _replace_sink_lags(cluster: Cluster, lags: list[SinkPartitionLag]) -> None:
    """Replace the cluster's sink partition lags, each dated with its committed offset's
    last move (`committed_moved_at`) and whether a refresh saw it (`committed_move_seen`)
    from the rows it replaces."""
    previous = {
        (connector, topic, partition): (committed, moved, seen)
        for connector, topic, partition, committed, moved, seen in SinkPartitionLag.objects.filter(
            cluster=cluster
        ).values_list(
            "connector",
            "topic",
            "partition",
            "committed",
            "committed_moved_at",
            "committed_move_seen",
        )
    }
    for lag in lags:
        before = previous.get((lag.connector, lag.topic, lag.partition))
        lag.committed_moved_at = committed_moved_at(before, lag.committed, lag.sampled_at)
        lag.committed_move_seen = committed_move_seen(before, lag.committed)
    SinkPartitionLag.objects.filter(cluster=cluster).delete()
    SinkPartitionLag.objects.bulk_create(lags)


def mark_unstorable(cluster: Cluster, unstorable: list[dict], *, full: bool) -> None:
    """Mark the stored offsets that a newer, unstorable write of their key overtook.

    A full refresh reads every record again and finds every such write anew; an incremental
    one keeps the marks of keys it read nothing of (a kept newer write clears the mark in
    `save_source_offsets`).
    """
    if full:
        SourceOffset.objects.filter(cluster=cluster, newer_unstorable_offset__isnull=False).update(
            newer_unstorable_offset=None
        )
    for row in unstorable:
        SourceOffset.objects.filter(
            cluster=cluster,
            topic=row["topic"],
            key_hash=row["key_hash"],
            kafka_offset__lt=row["kafka_offset"],
        ).update(newer_unstorable_offset=row["kafka_offset"])


def _add_rewinds(cluster: Cluster, rewinds: list[dict]) -> None:
    """Store this run's rewinds (a rewind found again by a full refresh is kept once), each
    with the edit that wrote it when one did (`edit_for_rewind`)."""
    if not rewinds:
        return
    times = {id(row): ms_to_datetime(row["timestamp_ms"]) for row in rewinds}
    writes = edit_writes(
        cluster, sorted({row["connector"] for row in rewinds}), since=min(times.values())
    )
    RewindEvent.objects.bulk_create(
        (
            RewindEvent(
                edit_id=edit_for_rewind(
                    row["key_hash"],
                    times[id(row)],
                    row["to_progress"],
                    writes.get(row["connector"], ()),
                ),
                cluster=cluster,
                connector=row["connector"],
                topic=row["topic"],
                key_hash=row["key_hash"],
                partition=json.loads(row["partition_json"]),
                at=times[id(row)],
                kafka_partition=row["kafka_partition"],
                kafka_offset=row["kafka_offset"],
                from_progress=row["from_progress"],
                to_progress=row["to_progress"],
            )
            for row in rewinds
        ),
        ignore_conflicts=True,
    )


def _add_malformed(cluster: Cluster, malformed: list[dict]) -> None:
    """Add the malformed records this run read in the offsets topics to their counts."""
    slots = {(row["topic"], row["connector"] or "", row["reason"]): row for row in malformed}
    add_counts(
        MalformedCount,
        cluster,
        {slot: row["count"] for slot, row in slots.items()},
        key_fields=("topic", "connector", "reason"),
        count_field="count",
        # Examples are raw bytes of hostile records: masked before they are stored.
        extra={slot: {"example": mask_text(row["example"] or "")} for slot, row in slots.items()},
    )


def _replace_drift(cluster: Cluster, drift: list[dict]) -> None:
    """Replace the cluster's key drift (logical partitions with several live key forms)."""
    KeyDrift.objects.filter(cluster=cluster).delete()
    KeyDrift.objects.bulk_create(
        KeyDrift(
            cluster=cluster,
            connector=row["connector"],
            identity=row["identity"],
            forms=[
                {
                    "topic": form["topic"],
                    "key": form["key_text"],
                    "key_hash": form["key_hash"],
                    "offset": form["offset_json"],
                    "last_commit_at": ms_to_datetime(form["last_commit_ms"]).isoformat()
                    if form["last_commit_ms"]
                    else None,
                }
                for form in row["forms"]
            ],
        )
        for row in drift
    )


def _save_read_positions(cluster: Cluster, plan: SourcePlan) -> None:
    """Store where the next incremental refresh reads on from, with the topics' IDs."""
    ReadPosition.objects.bulk_create(
        (
            ReadPosition(
                cluster=cluster,
                topic=topic,
                partition=partition,
                next_offset=end,
                topic_id=plan.topic_ids.get(topic, ""),
            )
            for topic, partitions in plan.plans.items()
            for partition, (_, end) in partitions.items()
        ),
        update_conflicts=True,
        unique_fields=["cluster", "topic", "partition"],
        update_fields=["next_offset", "topic_id"],
    )


def save_connect_topics_malformed(cluster: Cluster, state: connect_state.ConnectState) -> None:
    """Replace the malformed counts of the config and status topics.

    Unlike the offsets topics (read incrementally, so counts add up), these two are read whole
    by every refresh: their counts are the current ones, not increments.
    """
    topics = {
        cluster.configs_topic: (state.config_malformed, state.config_examples),
        cluster.status_topic: (state.status_malformed, state.status_examples),
    }
    MalformedCount.objects.filter(cluster=cluster, topic__in=topics).delete()
    MalformedCount.objects.bulk_create(
        MalformedCount(
            cluster=cluster,
            topic=topic,
            connector="",
            reason=reason,
            count=count,
            example=examples.get(reason, ""),
        )
        for topic, (counts, examples) in topics.items()
        for reason, count in counts.items()
    )


def add_commit_buckets(cluster: Cluster, counts: dict[tuple[str, datetime], int]) -> None:
    """Add commits to the cluster's buckets: {(connector, bucket start): commits}."""
    add_counts(
        CommitBucket,
        cluster,
        counts,
        key_fields=("connector", "bucket_start"),
        count_field="commits",
        narrow=_recent_buckets,
    )


def _recent_buckets(counts: dict[tuple[str, datetime], int]) -> dict:
    """The filters that keep every stored bucket the counts can add to: new commits are
    recent, so only the buckets from the earliest one on; and of a live round's few
    connectors, only theirs (a fleet has a bucket per connector in that window)."""
    narrow: dict = {"bucket_start__gte": min(start for _, start in counts)}
    connectors = {connector for connector, _ in counts}
    if len(connectors) <= DELETE_BATCH:  # one statement's parameters, as for the deletes
        narrow["connector__in"] = sorted(connectors)
    return narrow


def add_counts(
    model,
    cluster: Cluster,
    counts: dict[tuple, int],
    *,
    key_fields: tuple[str, ...],
    count_field: str,
    extra: dict | None = None,
    narrow: Callable[[dict[tuple, int]], dict] | None = None,
) -> None:
    """Add counts to existing rows (incremental refresh) or create them, in bulk.

    `narrow` gives filters that keep every existing row the counts can touch, so that a long
    history is not loaded to add a few counts. Runs inside the refresh's transaction; one
    refresh writes a cluster at a time.
    """
    if not counts:
        return
    existing = {
        tuple(getattr(row, name) for name in key_fields): row
        for row in model.objects.filter(cluster=cluster, **(narrow(counts) if narrow else {}))
    }
    changed, created = [], []
    for key, count in counts.items():
        row = existing.get(key)
        if row is None:
            fields = dict(zip(key_fields, key, strict=True))
            created.append(
                model(
                    cluster=cluster, **fields, **{count_field: count}, **(extra or {}).get(key, {})
                )
            )
        else:
            setattr(row, count_field, getattr(row, count_field) + count)
            changed.append(row)
    model.objects.bulk_update(changed, [count_field], batch_size=1000)
    model.objects.bulk_create(created, batch_size=1000)
