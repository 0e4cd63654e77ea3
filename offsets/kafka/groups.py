"""Consumer groups and data-topic positions, for sink connector edits (confluent-kafka admin).

Plain dataclasses in, plain dataclasses out; every failure to reach the cluster becomes
``KafkaUnavailable`` with a sentence saying what could not be done.
"""

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import OffsetSpec

from offsets.kafka import client, handles
from offsets.kafka.client import KafkaUnavailable, RawRecord

logger = logging.getLogger(__name__)

TopicPartitionKey = tuple[str, int]


@dataclass(frozen=True)
class GroupState:
    """A consumer group as the coordinator describes it."""

    group_id: str
    # ConsumerGroupState name in upper case: EMPTY, STABLE, PREPARING_REBALANCE, DEAD, ...
    state: str
    member_count: int


@dataclass(frozen=True)
class Watermarks:
    topic: str
    partition: int
    low: int
    high: int


@dataclass(frozen=True)
class RecordsAround:
    """The last record before an offset and the first at or after it (None: there is none)."""

    before: RawRecord | None
    at: RawRecord | None


def _unavailable(what: str, exc: Exception) -> KafkaUnavailable:
    detail = exc.args[0] if exc.args else exc
    return KafkaUnavailable(f"{what}: {detail}")


@handles.released_after
def describe_group(settings: dict, group_id: str, *, timeout: float = 30.0) -> GroupState:
    """Return the group's state and member count (a group that never existed reads as DEAD)."""
    admin = client.admin_client(settings)
    futures = admin.describe_consumer_groups([group_id], request_timeout=timeout)
    try:
        description = client.answer(
            futures[group_id],
            admin=admin,
            outstanding=futures.values(),
            settings=settings,
            timeout=timeout,
        )
    except KafkaException as exc:
        error = exc.args[0]
        if isinstance(error, KafkaError) and error.code() == KafkaError.GROUP_ID_NOT_FOUND:
            return GroupState(group_id, "DEAD", 0)
        raise _unavailable(f"Could not describe group {group_id}", exc) from exc
    state = getattr(description.state, "name", str(description.state)).upper()
    return GroupState(group_id, state, len(description.members or []))


def committed_offsets(
    settings: dict, group_id: str, *, timeout: float = 30.0
) -> dict[TopicPartitionKey, int]:
    """Return the group's committed offsets ({} when it has none)."""
    return client.group_offsets(settings, group_id, timeout=timeout)


def alter_offsets(
    settings: dict, group_id: str, offsets: dict[TopicPartitionKey, int], *, timeout: float = 30.0
) -> None:
    """Commit these offsets for the group in one request (the group must have no members)."""
    client.alter_group_offsets(settings, group_id, offsets, timeout=timeout)


@handles.released_after
def delete_group(settings: dict, group_id: str, *, timeout: float = 30.0) -> None:
    """Delete the group and all its committed offsets (what Connect's offsets reset does)."""
    admin = client.admin_client(settings)
    futures = admin.delete_consumer_groups([group_id], request_timeout=timeout)
    try:
        client.answer(
            futures[group_id],
            admin=admin,
            outstanding=futures.values(),
            settings=settings,
            timeout=timeout,
        )
    except KafkaException as exc:
        error = exc.args[0]
        # Deleting a group that is already gone is what was asked for (Connect treats it the
        # same way in resetSinkConnectorOffsets).
        if isinstance(error, KafkaError) and error.code() == KafkaError.GROUP_ID_NOT_FOUND:
            return
        raise _unavailable(f"Could not delete group {group_id}", exc) from exc


def watermarks(
    settings: dict,
    partitions: Iterable[TopicPartitionKey],
    *,
    timeout: float = 30.0,
    confirm_end: bool = True,
) -> dict[TopicPartitionKey, Watermarks]:
    """Return log start and end of many partitions: one batched ListOffsets call per bound.

    With ``confirm_end``, the end is confirmed by reading from it to end-of-partition: a broker
    that reports a too-low high watermark (some Kafka-compatible brokers, after multi-record batches) would otherwise
    make "to latest" and clamping land short. On a correct broker that read finds nothing.
    """
    wanted = sorted(set(partitions))
    if not wanted:
        return {}
    low, high = client.list_offsets(
        settings,
        [{tp: OffsetSpec.earliest() for tp in wanted}, {tp: OffsetSpec.latest() for tp in wanted}],
        timeout=timeout,
    )
    if confirm_end:
        high = _confirm_ends(settings, high, timeout)
    return {tp: Watermarks(tp[0], tp[1], low[tp], max(high[tp], low[tp])) for tp in wanted}


def offsets_for_times(
    settings: dict, times_ms: dict[TopicPartitionKey, int], *, timeout: float = 30.0
) -> dict[TopicPartitionKey, int | None]:
    """Ask the broker for the first offset at or after each time (None: no such record).

    The answer is not trusted by callers: ``edit_rules.check_offset_for_time`` checks it
    against the records around it.
    """
    if not times_ms:
        return {}
    (answers,) = client.list_offsets(
        settings,
        [{tp: OffsetSpec.for_timestamp(ms) for tp, ms in times_ms.items()}],
        timeout=timeout,
    )
    return {tp: (offset if offset >= 0 else None) for tp, offset in answers.items()}


def records_around(
    settings: dict,
    topic: str,
    partition: int,
    offset: int,
    *,
    log_start: int,
    timeout: float = 30.0,
    look_back: int = 16,
) -> RecordsAround:
    """Read the last record before ``offset`` and the first at or after it.

    It reads from a few offsets earlier: the offset right before may be a transaction marker,
    which consumers never see.
    """
    start = max(log_start, offset - look_back)
    before: RawRecord | None = None
    at: RawRecord | None = None
    consumer = _reader(settings, isolation_level="read_uncommitted")
    try:
        consumer.assign([TopicPartition(topic, partition, start)])
        deadline = time.monotonic() + timeout
        while at is None:
            message = consumer.poll(0.05)
            if message is None:
                if time.monotonic() > deadline:
                    raise KafkaUnavailable(
                        f"Reading {topic}-{partition} around offset {offset} stalled for "
                        f"{timeout:.0f}s"
                    )
                continue
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    break
                raise KafkaUnavailable(f"Reading {topic}-{partition} failed: {error.str()}")
            record = RawRecord(
                topic=topic,
                partition=partition,
                offset=message.offset(),
                timestamp_ms=message.timestamp()[1],
                key=message.key(),
                value=message.value(),
            )
            if record.offset < offset:
                before = record
            else:
                at = record
    finally:
        consumer.close()
    return RecordsAround(before=before, at=at)


def _confirm_ends(
    settings: dict, high: dict[TopicPartitionKey, int], timeout: float
) -> dict[TopicPartitionKey, int]:
    confirmed = dict(high)
    consumer = _reader(settings, isolation_level="read_uncommitted")
    try:
        pending = set(high)
        consumer.assign([TopicPartition(t, p, max(0, high[(t, p)])) for t, p in pending])
        deadline = time.monotonic() + timeout
        while pending:
            messages = consumer.consume(num_messages=1000, timeout=0.05)
            if not messages and time.monotonic() > deadline:
                raise KafkaUnavailable(
                    f"Confirming the end of {len(pending)} partition(s) stalled for {timeout:.0f}s"
                )
            for message in messages:
                key = (message.topic(), message.partition())
                error = message.error()
                if error is None:
                    confirmed[key] = max(confirmed[key], message.offset() + 1)
                elif error.code() == KafkaError._PARTITION_EOF:
                    confirmed[key] = max(confirmed[key], message.offset())
                    pending.discard(key)
                else:
                    raise KafkaUnavailable(
                        f"Reading {message.topic()}-{message.partition()} failed: {error.str()}"
                    )
    finally:
        consumer.close()
    return confirmed


def _reader(settings: dict, *, isolation_level: str) -> Consumer:
    return client.reader_consumer(settings, "reader", isolation_level=isolation_level)
