"""Reads of Kafka topics with consumers that commit nothing: whole topics, ranges, single records."""

import time
import uuid
from collections import defaultdict
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, KafkaError, TopicPartition

from offsets.kafka import admin, handles
from offsets.kafka.admin import TopicPartitionKey, Watermarks
from offsets.kafka.errors import KafkaNotAuthorized, KafkaUnavailable, TopicNotFound, not_authorized
from offsets.tuning import POLL_SECONDS, READER_SETTINGS, short_read_settings

# How far before a partition's end `newest_timestamps` looks for its last record. In a topic
# written with transactions (an exactly-once source's output) the last offset is the commit
# marker, a control record no consumer returns, and an aborted transaction's records are
# invisible to read_committed: the newest record sits a few offsets before the end.
NEWEST_LOOKBACK = 100
# Every reader's group id starts with this; ACLs grant READ on it as a PREFIXED pattern.
READER_GROUP_PREFIX = "offsets-dashboard-"


@dataclass(frozen=True)
class RawRecord:
    topic: str
    partition: int
    offset: int
    timestamp_ms: int
    key: bytes | None
    value: bytes | None


@dataclass(frozen=True)
class RecordsAround:
    """The last record before an offset and the first at or after it (None: there is none)."""

    before: RawRecord | None
    at: RawRecord | None


def reader_config(settings: dict, purpose: str, *, isolation_level: str = "read_committed") -> dict:
    """Return the settings of a reader consumer (`reader_consumer`)."""
    return {
        **handles.QUIET,
        **READER_SETTINGS,
        # The cluster's own settings may tune the fetches (the embedded broker's do).
        **settings,
        # A group id is required by librdkafka even with assign(); nothing is committed.
        "group.id": f"{READER_GROUP_PREFIX}{purpose}-{uuid.uuid4()}",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "enable.partition.eof": True,
        "isolation.level": isolation_level,
        "auto.offset.reset": "earliest",
    }


def read_failure(error, what: str, topic: str | None = None) -> Exception:
    """The exception for a reader's `error` while reading `what` (`topic`, when one is known).

    A refusal names the ACL missing: a reader's consumer group is refused before any topic
    (librdkafka asks for its coordinator even though it only assigns and commits nothing), and
    that error names no topic.
    """
    if error.code() == KafkaError.GROUP_AUTHORIZATION_FAILED:
        return KafkaNotAuthorized(
            not_authorized(
                "READ",
                "consumer groups prefixed",
                READER_GROUP_PREFIX,
                error.name(),
                f"READ on the consumer groups prefixed {READER_GROUP_PREFIX!r} (a PREFIXED ACL:"
                " the dashboard's readers use such groups and commit nothing)",
            )
        )
    if error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED:
        return KafkaNotAuthorized(
            not_authorized(
                "READ", "topic", topic or what, error.name(), "READ and DESCRIBE on that topic"
            )
        )
    return KafkaUnavailable(f"Reading {what} failed: {error.str()}")


def reader_consumer(
    settings: dict, purpose: str, *, isolation_level: str = "read_committed"
) -> Consumer:
    """Return a consumer for assign()-and-read-to-the-end reads that commits nothing.

    An assigned offset that no longer exists (retention, compaction) resumes at the earliest
    offset still there, never at the end.
    """
    return handles.consumer(reader_config(settings, purpose, isolation_level=isolation_level))


def _record(message) -> RawRecord:
    return RawRecord(
        topic=message.topic(),
        partition=message.partition(),
        offset=message.offset(),
        timestamp_ms=message.timestamp()[1],
        key=message.key(),
        value=message.value(),
    )


def read_topic(
    settings: dict,
    topic: str,
    *,
    isolation_level: str = "read_committed",
    timeout: float = 30.0,
    batch_size: int = 10_000,
) -> Iterator[RawRecord]:
    """Yield every record of `topic`, all partitions, from the beginning to the current end.

    The end is where each partition reports end-of-partition rather than the high watermark
    fetched up front: some Kafka-compatible brokers report a too-low watermark, and
    end-of-partition is right on every broker. `timeout` bounds each wait for data, not the
    whole read.
    """
    return read_topics(
        settings, [topic], isolation_level=isolation_level, timeout=timeout, batch_size=batch_size
    )


def read_topics(
    settings: dict,
    topics: list[str],
    *,
    isolation_level: str = "read_committed",
    timeout: float = 30.0,
    batch_size: int = 10_000,
) -> Iterator[RawRecord]:
    """Like `read_topic` for several topics at once, in one consumer: their fetches overlap
    (each topic's records come in order per partition, the topics interleaved)."""
    counts = admin.topic_partition_counts(settings, topics, timeout=timeout)
    for topic in topics:
        if topic not in counts:
            raise TopicNotFound(
                f"Topic {topic!r} does not exist on {settings['bootstrap.servers']}"
            )
    consumer = reader_consumer(settings, "reader", isolation_level=isolation_level)
    try:
        pending = {(topic, p) for topic in topics for p in range(counts[topic])}
        # Offset 0 may be gone (retention, compaction); an out-of-range start then goes to
        # the earliest offset still there.
        consumer.assign([TopicPartition(topic, p, 0) for topic, p in sorted(pending)])
        what = ", ".join(topics)
        for messages in _batches(consumer, pending, what, timeout=timeout, size=batch_size):
            for message in messages:
                error = message.error()
                if error is None:
                    yield _record(message)
                elif error.code() == KafkaError._PARTITION_EOF:
                    pending.discard((message.topic(), message.partition()))
                else:
                    raise read_failure(error, message.topic() or what, message.topic())
    finally:
        consumer.close()


@dataclass
class ReadOn:
    """What `read_on` read: the records after the given positions, each partition's end, and
    the topics' IDs; `moved_back` names a partition whose records before its start are gone
    (a topic deleted and created again): the caller reads it all again."""

    records: list[RawRecord]
    ends: dict[tuple[str, int], int]
    topic_ids: dict[str, str]
    moved_back: str = ""


def read_on(
    settings: dict,
    topics: list[str],
    starts: dict[tuple[str, int], int],
    *,
    timeout: float = 30.0,
    batch_size: int = 10_000,
) -> ReadOn:
    """Read `topics` from `starts` ({(topic, partition): next offset}; 0 for a partition not
    in it) to their ends, in one consumer.

    A partition that now ends before its start, or whose first record comes before it (the
    consumer went back to the earliest offset: the start is gone), has moved back: the
    records read are not what follows the ones read before, and `moved_back` says so.
    """
    described = admin.describe_topics(settings, topics, timeout=timeout)
    for topic in topics:
        if topic not in described:
            raise TopicNotFound(
                f"Topic {topic!r} does not exist on {settings['bootstrap.servers']}"
            )
    pending = {(topic, p) for topic in topics for p in range(described[topic].partitions)}
    consumer = reader_consumer(settings, "reader")
    records: list[RawRecord] = []
    ends: dict[tuple[str, int], int] = {}
    moved_back = ""
    try:
        consumer.assign([TopicPartition(t, p, starts.get((t, p), 0)) for t, p in sorted(pending)])
        what = ", ".join(topics)
        for messages in _batches(consumer, pending, what, timeout=timeout, size=batch_size):
            for message in messages:
                slot = (message.topic(), message.partition())
                error = message.error()
                if error is not None and error.code() != KafkaError._PARTITION_EOF:
                    raise read_failure(error, message.topic() or what, message.topic())
                if message.offset() < starts.get(slot, 0) and not moved_back:
                    moved_back = f"{slot[0]} partition {slot[1]}"
                if error is None:
                    records.append(_record(message))
                else:
                    ends[slot] = message.offset()
                    pending.discard(slot)
    finally:
        consumer.close()
    return ReadOn(records, ends, admin.ids_of(described), moved_back)


def read_range(
    settings: dict,
    topic: str,
    ranges: dict[int, tuple[int, int]],
    *,
    isolation_level: str = "read_committed",
    timeout: float = 30.0,
    batch_size: int = 10_000,
) -> Iterator[list]:
    """Yield lists of confluent-kafka messages of `topic` within the planned ranges.

    Compaction leaves gaps and transaction markers take offsets without records, so a
    partition is done at the first record or end-of-partition at or past its end.
    """
    pending = {p: (start, end) for p, (start, end) in ranges.items() if start < end}
    if not pending:
        return
    consumer = reader_consumer(settings, "reader", isolation_level=isolation_level)
    try:
        consumer.assign([TopicPartition(topic, p, start) for p, (start, _) in pending.items()])
        for messages in _batches(consumer, pending, topic, timeout=timeout, size=batch_size):
            keep = [message for message in messages if _in_range(message, topic, pending)]
            if keep:
                yield keep
    finally:
        consumer.close()


def _batches(
    consumer: Consumer, pending: Collection, what: str, *, timeout: float, size: int
) -> Iterator[list]:
    """Yield batches of messages for as long as the caller leaves partitions in `pending`;
    raise KafkaUnavailable when nothing arrives for `timeout`."""
    deadline = time.monotonic() + timeout
    while pending:
        messages = consumer.consume(num_messages=size, timeout=POLL_SECONDS)
        if messages:
            deadline = time.monotonic() + timeout
        elif time.monotonic() > deadline:
            raise KafkaUnavailable(
                f"Reading {what} stalled for {timeout:.0f}s with partitions "
                f"{sorted(pending)} unfinished"
            )
        yield messages


def _in_range(message, topic: str, pending: dict[int, tuple[int, int]]) -> bool:
    """Whether `read_range` keeps `message`; a partition whose end it reaches leaves
    `pending`."""
    partition = message.partition()
    if partition not in pending:
        return False
    end = pending[partition][1]
    error = message.error()
    if error is not None:
        if error.code() != KafkaError._PARTITION_EOF:
            raise read_failure(error, topic, topic)
        if message.offset() >= end:
            del pending[partition]
        return False
    if message.offset() >= end - 1:
        del pending[partition]
    return message.offset() < end


def timestamps_at(
    settings: dict, wanted: Collection[tuple[TopicPartitionKey, int]], *, timeout: float = 30.0
) -> dict[tuple[TopicPartitionKey, int], int]:
    """Return the timestamp of the first record at or after each (partition, offset) asked
    for, {((topic, partition), offset): timestamp}; those with nothing there are left out.

    One record per partition is a small read, so it skips the cluster's bulk fetch tuning
    (`short_read_settings`). A consumer reads a partition from one offset, so each round reads
    every partition once, from the next offset asked for it (`offset_rounds`).
    """
    small = short_read_settings(settings)
    found: dict[tuple[TopicPartitionKey, int], int] = {}
    for offsets in offset_rounds(wanted):
        found |= {
            (tp, offsets[tp]): stamp
            for tp, stamp in _timestamps_round(small, offsets, timeout=timeout).items()
        }
    return found


def offset_rounds(
    wanted: Collection[tuple[TopicPartitionKey, int]],
) -> list[dict[TopicPartitionKey, int]]:
    """Split (partition, offset) pairs into rounds that ask each partition once, lowest
    offsets first: [{partition: offset}]."""
    by_partition: dict[TopicPartitionKey, list[int]] = defaultdict(list)
    for tp, offset in sorted(set(wanted)):
        by_partition[tp].append(offset)
    rounds: list[dict[TopicPartitionKey, int]] = []
    for tp, offsets in by_partition.items():
        for index, offset in enumerate(offsets):
            if index == len(rounds):
                rounds.append({})
            rounds[index][tp] = offset
    return rounds


def _timestamps_round(
    settings: dict, offsets: dict[TopicPartitionKey, int], *, timeout: float
) -> dict[TopicPartitionKey, int]:
    """Return the timestamp of the first record at or after each partition's offset, all in
    one consumer; partitions with nothing there are left out."""
    if not offsets:
        return {}
    consumer = reader_consumer(settings, "lag")
    found: dict[TopicPartitionKey, int] = {}
    try:
        consumer.assign([TopicPartition(t, p, offset) for (t, p), offset in offsets.items()])
        pending = set(offsets)
        for tp, message in _until_done(consumer, pending, timeout=timeout):
            if message.error() is None:
                found[tp] = message.timestamp()[1]
            pending.discard(tp)
    finally:
        consumer.close()
    return found


def newest_timestamps(
    settings: dict,
    bounds: dict[TopicPartitionKey, tuple[int, int]],
    *,
    timeout: float = 30.0,
    lookback: int = NEWEST_LOOKBACK,
) -> dict[TopicPartitionKey, int]:
    """Return the timestamp of the last record before each partition's end, {partition:
    timestamp}, from its (log start, log end); those with none in the last `lookback`
    offsets are left out. One consumer reads the partitions' tails to their ends."""
    starts = {tp: max(low, high - lookback) for tp, (low, high) in bounds.items() if high > low}
    if not starts:
        return {}
    consumer = reader_consumer(short_read_settings(settings), "lag")
    found: dict[TopicPartitionKey, int] = {}
    try:
        consumer.assign([TopicPartition(t, p, offset) for (t, p), offset in starts.items()])
        pending = set(starts)
        for tp, message in _until_done(consumer, pending, timeout=timeout, size=500):
            end = bounds[tp][1]
            if message.error() is not None:  # end-of-partition
                pending.discard(tp)
                continue
            if message.offset() < end:
                found[tp] = message.timestamp()[1]
            if message.offset() >= end - 1:
                pending.discard(tp)
    finally:
        consumer.close()
    return found


def _until_done(
    consumer: Consumer,
    pending: set[TopicPartitionKey],
    *,
    timeout: float,
    size: int | None = None,
) -> Iterator[tuple[TopicPartitionKey, Any]]:
    """Yield (partition, message) for the records and ends-of-partition of the partitions the
    caller leaves in `pending`, until none is left or `timeout` passes; raise KafkaUnavailable
    on any other error. `size` messages are taken at a time, by default one per partition."""
    deadline = time.monotonic() + timeout
    while pending and time.monotonic() < deadline:
        for message in consumer.consume(num_messages=size or len(pending), timeout=POLL_SECONDS):
            tp = (message.topic(), message.partition())
            if tp not in pending:
                continue
            error = message.error()
            if error is not None and error.code() != KafkaError._PARTITION_EOF:
                raise read_failure(error, f"{tp[0]}[{tp[1]}]", tp[0])
            yield tp, message


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
    consumer = reader_consumer(settings, "reader", isolation_level="read_uncommitted")
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
                raise read_failure(error, f"{topic}-{partition}", topic)
            record = _record(message)
            if record.offset < offset:
                before = record
            else:
                at = record
    finally:
        consumer.close()
    return RecordsAround(before=before, at=at)


def confirmed_watermarks(
    settings: dict, partitions: Iterable[TopicPartitionKey], *, timeout: float = 30.0
) -> dict[TopicPartitionKey, Watermarks]:
    """Return the log start and end of many partitions (`admin.watermarks`), each end
    confirmed by reading from it to end-of-partition.

    A broker that reports a too-low high watermark (some Kafka-compatible brokers, after
    multi-record batches) would otherwise make "to latest" and clamping land short. On a
    correct broker that read finds nothing.
    """
    wanted = sorted(set(partitions))
    if not wanted:
        return {}
    marks = admin.watermarks(settings, wanted, timeout=timeout)
    high = _confirm_ends(settings, {tp: mark.high for tp, mark in marks.items()}, timeout)
    return {tp: Watermarks(marks[tp].low, max(high[tp], marks[tp].low)) for tp in wanted}


def _confirm_ends(
    settings: dict, high: dict[TopicPartitionKey, int], timeout: float
) -> dict[TopicPartitionKey, int]:
    confirmed = dict(high)
    consumer = reader_consumer(settings, "reader", isolation_level="read_uncommitted")
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
                    raise read_failure(
                        error, f"{message.topic()}-{message.partition()}", message.topic()
                    )
    finally:
        consumer.close()
    return confirmed
