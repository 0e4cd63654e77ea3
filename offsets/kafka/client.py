"""The one adapter between this project and a Kafka cluster (confluent-kafka / librdkafka).

Functions here take the cluster's librdkafka settings (``Cluster.kafka_settings()``) and return
plain dataclasses, so the rest of the project never handles a consumer or producer object.
"""

import logging
import time
import uuid
from collections import defaultdict
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass

from confluent_kafka import (
    Consumer,
    IsolationLevel,
    KafkaError,
    KafkaException,
    Producer,
    TopicCollection,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

from offsets.kafka import handles

logger = logging.getLogger(__name__)

# How Connect's runtime configures the producer of its internal topics (KafkaBasedLog):
# every write acknowledged by all replicas, strictly in order.
JAVA_RUNTIME_PRODUCER_SETTINGS = {"acks": "all", "max.in.flight.requests.per.connection": 1}

# librdkafka logs connection failures to stderr by itself; we report them as exceptions.
QUIET = handles.QUIET

# consume(n, timeout) waits until n messages arrived OR the timeout passed, so a long timeout
# is paid in full at every end of data: poll briefly and keep our own deadline instead.
POLL_SECONDS = 0.02
# Reads here run to the end of the data: at the end, a fetch would otherwise wait the default
# 500 ms on the broker for records that are not coming before the end is reported.
READER_WAIT_MS = 20
READER_SETTINGS = {"fetch.wait.max.ms": READER_WAIT_MS}
# The planner's fetch wait (`plan_snapshot`). On Kafka the wait matters only when no planned
# partition has a record to send (a fetch with records is answered at once): a refresh with
# nothing new, or partitions ending in a transaction marker, cost it once. Brokers that stop
# filling an answer once the wait has passed (some Kafka-compatible ones) answer a refresh's
# new records in fewer rounds with 50 ms than with 20.
PLANNER_WAIT_MS = 50


def short_read_settings(settings: dict, *, wait_ms: int = READER_WAIT_MS) -> dict:
    """A cluster's settings for reads that fetch little: Connect's config and status topics,
    the planner's read of the offsets topics' new records (`plan_snapshot`, with
    PLANNER_WAIT_MS), a record's timestamp (`timestamps_at`).

    A cluster's fetch tuning is for the bulk reads of the offsets topic, and a short read
    gains nothing from it: with the embedded broker's (fetch.min.bytes 4 MB, wait 100 ms)
    every fetch of the config and status topics waited out its 100 ms, ~0.2-0.45 s per
    refresh, against ~0.05-0.1 s with a 1-byte minimum. The fetch wait is `wait_ms`, or a
    shorter one the cluster sets.
    """
    wait = min(int(settings.get("fetch.wait.max.ms", wait_ms)), wait_ms)
    return {**settings, "fetch.min.bytes": 1, "fetch.wait.max.ms": wait}


# The planner reads on from a previous position through at most this many records per
# partition to find its end (`plan_reads`); further behind, it skips ahead to the last record.
CATCH_UP_RECORDS = 20_000
# How many messages the planner takes off the queue at a time; fewer means it was drained.
PLANNER_BATCH = 1000


def reader_config(settings: dict, purpose: str, *, isolation_level: str = "read_committed") -> dict:
    """Return the settings of a reader consumer (`reader_consumer`)."""
    return {
        **QUIET,
        **READER_SETTINGS,
        # The cluster's own settings may tune the fetches (the embedded broker's do).
        **settings,
        # A group id is required by librdkafka even with assign(); nothing is committed.
        "group.id": f"offsets-dashboard-{purpose}-{uuid.uuid4()}",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "enable.partition.eof": True,
        "isolation.level": isolation_level,
        "auto.offset.reset": "earliest",
    }


def reader_consumer(
    settings: dict, purpose: str, *, isolation_level: str = "read_committed"
) -> Consumer:
    """Return a consumer for assign()-and-read-to-the-end reads that commits nothing.

    An assigned offset that no longer exists (retention, compaction) resumes at the earliest
    offset still there, never at the end.
    """
    return handles.consumer(reader_config(settings, purpose, isolation_level=isolation_level))


class KafkaUnavailable(RuntimeError):
    """The cluster could not be reached or did not answer in time."""


class TopicNotFound(LookupError):
    pass


@dataclass(frozen=True)
class RawRecord:
    topic: str
    partition: int
    offset: int
    timestamp_ms: int
    key: bytes | None
    value: bytes | None


@dataclass(frozen=True)
class TopicSpec:
    name: str
    partitions: int
    config: dict[str, str]


def admin_client(settings: dict) -> AdminClient:
    try:
        return handles.admin_client(settings)
    except KafkaException as exc:  # settings librdkafka refuses, e.g. a Java JAAS config
        raise KafkaUnavailable(
            f"Could not create a Kafka client for {settings.get('bootstrap.servers')}: "
            f"{exc.args[0]}"
        ) from exc


def answer(future, *, admin: AdminClient, outstanding: Iterable, settings: dict, timeout: float):
    """Wait for an admin request's future; a broker that does not answer raises KafkaUnavailable.

    A future that never resolves means the broker went away mid-request. `admin` is then kept
    until every request in `outstanding` resolves (`handles.keep_until_done`): destroying it
    with requests in flight can abort the process inside librdkafka.
    """
    try:
        return future.result(timeout=timeout)
    except TimeoutError as exc:
        handles.keep_until_done(admin, list(outstanding))
        raise KafkaUnavailable(
            f"Kafka at {settings.get('bootstrap.servers')} did not answer within {timeout:.0f}s"
        ) from exc
    except KafkaException as exc:
        # librdkafka's own request timeout (callers set it to `timeout` too) may fire first:
        # the same broker that did not answer, said the same way.
        if exc.args and exc.args[0].code() == KafkaError._TIMED_OUT:
            raise KafkaUnavailable(
                f"Kafka at {settings.get('bootstrap.servers')} did not answer within "
                f"{timeout:.0f}s ({exc.args[0].str()})"
            ) from exc
        raise


@handles.released_after
def topic_partition_counts(
    settings: dict, topics: Collection[str] | None = None, *, timeout: float = 10.0
) -> dict[str, int]:
    """Return every topic's partition count, or those of `topics` that exist; or raise
    KafkaUnavailable.

    Given the topics, they are described (DescribeTopics) instead of listing every topic: on
    a new handle a list of all topics often waited ~50 ms (librdkafka drops the bootstrap
    connection once it learns the broker's own address, the request with it, and asks again
    only after `reconnect.backoff.ms` / 2), against ~2 ms for a description, seen here on the
    embedded broker in 10 to 20 of 20 calls. A refresh's planner waited for it every time.
    """
    if topics is not None:
        return {
            topic: facts.partitions
            for topic, facts in describe_topics(settings, topics, timeout=timeout).items()
        }
    return _partition_counts(admin_client(settings), settings, timeout)


def _partition_counts(admin: AdminClient, settings: dict, timeout: float) -> dict[str, int]:
    try:
        metadata = admin.list_topics(timeout=timeout)
    except KafkaException as exc:
        raise KafkaUnavailable(
            f"Kafka at {settings.get('bootstrap.servers')} did not answer: {exc.args[0]}"
        ) from exc
    return {name: len(topic.partitions) for name, topic in metadata.topics.items()}


@handles.released_after
def create_topics(settings: dict, specs: Iterable[TopicSpec], *, timeout: float = 30.0) -> None:
    """Create the topics, raising on the first failure (including 'already exists')."""
    new_topics = [
        NewTopic(spec.name, num_partitions=spec.partitions, config=spec.config) for spec in specs
    ]
    if not new_topics:
        return
    admin = admin_client(settings)  # keep the handle alive until the futures resolve
    futures = admin.create_topics(new_topics, operation_timeout=timeout)
    for name, future in futures.items():
        try:
            answer(
                future,
                admin=admin,
                outstanding=futures.values(),
                settings=settings,
                timeout=timeout,
            )
        except KafkaException as exc:
            raise KafkaUnavailable(f"Could not create topic {name}: {exc.args[0]}") from exc


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
    fetched up front: some Kafka-compatible brokers report a too-low watermark, and end-of-partition
    is right on every broker. `timeout` bounds each wait for data, not the whole read.
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
    counts = topic_partition_counts(settings, topics, timeout=timeout)
    for topic in topics:
        if topic not in counts:
            raise TopicNotFound(
                f"Topic {topic!r} does not exist on {settings['bootstrap.servers']}"
            )
    consumer = reader_consumer(settings, "reader", isolation_level=isolation_level)
    try:
        pending = {(topic, p) for topic in topics for p in range(counts[topic])}
        consumer.assign([TopicPartition(topic, p, 0) for topic, p in sorted(pending)])
        # Offset 0 may be gone (retention, compaction); an out-of-range start then goes to
        # the earliest offset still there.
        deadline = time.monotonic() + timeout
        while pending:
            messages = consumer.consume(num_messages=batch_size, timeout=POLL_SECONDS)
            if messages:
                deadline = time.monotonic() + timeout
            elif time.monotonic() > deadline:
                raise KafkaUnavailable(
                    f"Reading {', '.join(topics)} stalled for {timeout:.0f}s with partitions "
                    f"{sorted(pending)} unfinished"
                )
            for message in messages:
                error = message.error()
                if error is None:
                    yield RawRecord(
                        topic=message.topic(),
                        partition=message.partition(),
                        offset=message.offset(),
                        timestamp_ms=message.timestamp()[1],
                        key=message.key(),
                        value=message.value(),
                    )
                elif error.code() == KafkaError._PARTITION_EOF:
                    pending.discard((message.topic(), message.partition()))
                else:
                    raise KafkaUnavailable(f"Reading {message.topic()} failed: {error.str()}")
    finally:
        consumer.close()


def java_producer(settings: dict, *, transactional_id: str | None = None) -> Producer:
    """Return a producer configured like Connect's own (explicit partitions are chosen by the
    caller with `formats.murmur2.java_partition`, never by librdkafka's partitioner)."""
    config = {**settings, **QUIET, **JAVA_RUNTIME_PRODUCER_SETTINGS, "linger.ms": 5}
    if transactional_id:
        config["transactional.id"] = transactional_id
        config["enable.idempotence"] = True
    return handles.producer(config)


def raise_on_delivery_error(error: KafkaError | None, message: object) -> None:
    """A delivery callback that turns a failed delivery into an exception at poll/flush."""
    if error is not None:
        raise KafkaException(error)


# Per-partition answers that mean "ask again": the group's coordinator is moving, or still
# loading __consumer_offsets (a new broker, a leader change). Java's admin client retries
# them itself; librdkafka hands them to the caller.
COORDINATOR_NOT_READY = frozenset(
    {
        KafkaError.NOT_COORDINATOR,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
    }
)


def alter_group_offsets(
    settings: dict, group_id: str, offsets: dict[tuple[str, int], int], *, timeout: float = 30.0
) -> None:
    """Set a consumer group's committed offsets (the group must have no active members).

    A coordinator that is not ready is asked again, with a growing pause, until `timeout`.
    """
    deadline = time.monotonic() + timeout
    pause = 0.1
    while True:
        errors = _alter_group_offsets_once(settings, group_id, offsets, timeout=timeout)
        if not errors:
            return
        error = errors[0]
        if error.code() not in COORDINATOR_NOT_READY or time.monotonic() + pause > deadline:
            raise KafkaUnavailable(f"Could not set offsets of group {group_id}: {error}")
        time.sleep(pause)
        pause = min(pause * 2, 1.0)


@handles.released_after
def _alter_group_offsets_once(
    settings: dict, group_id: str, offsets: dict[tuple[str, int], int], *, timeout: float
) -> list[KafkaError]:
    """Send one AlterConsumerGroupOffsets request; return the errors it was answered with."""
    from confluent_kafka import ConsumerGroupTopicPartitions

    request = ConsumerGroupTopicPartitions(
        group_id,
        [
            TopicPartition(topic, partition, offset)
            for (topic, partition), offset in sorted(offsets.items())
        ],
    )
    admin = admin_client(settings)
    futures = admin.alter_consumer_group_offsets([request], request_timeout=timeout)
    errors: list[KafkaError] = []
    for future in futures.values():
        try:
            result = answer(
                future,
                admin=admin,
                outstanding=futures.values(),
                settings=settings,
                timeout=timeout,
            )
        except KafkaException as exc:
            if exc.args[0].code() in COORDINATOR_NOT_READY:
                return [exc.args[0]]
            raise KafkaUnavailable(
                f"Could not set offsets of group {group_id}: {exc.args[0]}"
            ) from exc
        errors += [tp.error for tp in result.topic_partitions if tp.error is not None]
    return errors


def group_offsets(
    settings: dict, group_id: str, *, timeout: float = 30.0
) -> dict[tuple[str, int], int]:
    """Return a consumer group's committed offsets ({} when it has none)."""
    return sink_group_offsets(settings, [group_id], timeout=timeout)[group_id]


@handles.released_after
def topic_config(settings: dict, topic: str, *, timeout: float = 30.0) -> dict[str, str]:
    """Return a topic's configuration values."""
    from confluent_kafka.admin import ConfigResource

    resource = ConfigResource("topic", topic)
    admin = admin_client(settings)
    try:
        future = admin.describe_configs([resource])[resource]
        entries = answer(
            future, admin=admin, outstanding=[future], settings=settings, timeout=timeout
        )
    except KafkaException as exc:
        raise KafkaUnavailable(f"Could not describe topic {topic}: {exc.args[0]}") from exc
    return {name: entry.value for name, entry in entries.items()}


# What a broker without topic IDs (before Kafka 2.8) answers for one.
NO_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAA"


@handles.released_after
def topic_ids(settings: dict, topics: list[str], *, timeout: float = 30.0) -> dict[str, str]:
    """Return the topic IDs (KIP-516) of those of `topics` that exist: {topic: ID}.

    A topic deleted and created again under the same name gets a new ID: that is how a refresh
    tells that the records it read before are gone, even once the new topic has as many.
    Topics that do not exist, and every topic of a broker without topic IDs, are left out;
    a broker that cannot answer raises KafkaUnavailable.
    """
    return ids_of(describe_topics(settings, topics, timeout=timeout))


def ids_of(described: dict[str, "TopicFacts"]) -> dict[str, str]:
    """The topic IDs in a `describe_topics` answer, {topic: ID}, topics without one left out
    (for a caller that needs the answer's partition counts too, and so cannot ask `topic_ids`
    without a second request)."""
    return {topic: facts.topic_id for topic, facts in described.items() if facts.topic_id}


@dataclass(frozen=True)
class TopicFacts:
    """What a DescribeTopics request tells of one topic (`describe_topics`)."""

    topic_id: str  # "" from a broker without topic IDs (before Kafka 2.8)
    partitions: int


@handles.released_after
def describe_topics(
    settings: dict, topics: Collection[str], *, timeout: float = 30.0
) -> dict[str, TopicFacts]:
    """Describe those of `topics` that exist, in one request: {topic: TopicFacts}.

    A name no topic can have (empty, or one the broker calls invalid) does not exist either;
    a broker that cannot answer raises KafkaUnavailable.
    """
    names = [topic for topic in dict.fromkeys(topics) if topic]
    if not names:
        return {}
    admin = admin_client(settings)
    futures = admin.describe_topics(TopicCollection(names), request_timeout=timeout)
    described: dict[str, TopicFacts] = {}
    for topic, future in futures.items():
        try:
            description = answer(
                future,
                admin=admin,
                outstanding=futures.values(),
                settings=settings,
                timeout=timeout,
            )
        except KafkaException as exc:
            if exc.args[0].code() in (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError.TOPIC_EXCEPTION):
                continue
            raise KafkaUnavailable(f"Could not describe topic {topic}: {exc.args[0]}") from exc
        topic_id = str(description.topic_id or "")
        described[topic] = TopicFacts(
            topic_id=topic_id if topic_id != NO_TOPIC_ID else "",
            partitions=len(description.partitions),
        )
    return described


def plan_read(
    settings: dict,
    topic: str,
    start_offsets: dict[int, int] | None = None,
    *,
    isolation_level: str = "read_committed",
    timeout: float = 30.0,
) -> dict[int, tuple[int, int]]:
    """Fix what a snapshot read of `topic` covers: {partition: (start, end)}, end exclusive.

    `start_offsets` are where a previous read stopped (missing partitions start at the log
    start). See `plan_reads`.
    """
    plans = plan_reads(
        settings, {topic: start_offsets}, isolation_level=isolation_level, timeout=timeout
    )
    if topic not in plans:
        raise TopicNotFound(f"Topic {topic!r} does not exist on {settings['bootstrap.servers']}")
    return plans[topic]


# A record the planner kept: (partition, offset, timestamp ms, key, value).
KeptRecord = tuple[int, int, int, bytes | None, bytes | None]


@dataclass
class Snapshot:
    """What `plan_snapshot` fixed, and the records it read on the way."""

    plans: dict[str, dict[int, tuple[int, int]]]  # {topic: {partition: (start, end)}}
    # The whole planned ranges of some topics, as read by the planner: {topic: records in
    # offset order per partition}. Only topics whose every partition with new records it read
    # from the start (see `plan_snapshot`).
    records: dict[str, list[KeptRecord]]


def plan_reads(
    settings: dict,
    start_offsets: dict[str, dict[int, int] | None],
    *,
    read_on: Collection[str] = (),
    isolation_level: str = "read_committed",
    timeout: float = 30.0,
) -> dict[str, dict[int, tuple[int, int]]]:
    """`plan_snapshot`'s plans: {topic: {partition: (start, end)}}."""
    return plan_snapshot(
        settings,
        start_offsets,
        read_on=read_on,
        isolation_level=isolation_level,
        timeout=timeout,
    ).plans


def plan_snapshot(
    settings: dict,
    start_offsets: dict[str, dict[int, int] | None],
    *,
    read_on: Collection[str] = (),
    keep_records: int = 0,
    partition_counts: dict[str, int] | None = None,
    isolation_level: str = "read_committed",
    timeout: float = 30.0,
) -> Snapshot:
    """Fix what a snapshot read of several topics covers: {topic: {partition: (start, end)}}.

    `start_offsets` maps each topic to where a previous read stopped (missing partitions start
    at the log start); topics that do not exist are left out of the answer. Every partition's
    end is where a consumer reading it reports end-of-partition, all partitions in one
    consumer: a too-low high watermark (some Kafka-compatible brokers) would otherwise hide records, and with
    read_committed the end-of-partition is the last stable offset, past which a reader must
    not go anyway. A partition whose last delivered record reaches the high watermark its
    fetch reported ends there without waiting for end-of-partition, which costs a second
    fetch (`_end_at_high_watermarks`).

    Where that consumer starts:
    - a partition of a topic in `read_on` that has a previous position starts there. The
      caller vouches that the position lies within the log (the topic has the same topic ID
      as when it was read): past the end of a topic created again, some brokers answer neither
      records nor end-of-partition. This needs no ListOffsets request (~0.2 s on some brokers for the
      benchmark's 50 partitions, more than reading on through a refresh's new records). A
      partition more than CATCH_UP_RECORDS behind its high watermark skips ahead to its last
      record, so a long pause between refreshes is not read twice;
    - any other partition starts at its last record (high watermark - 1), from one batched
      ListOffsets request for the log ends (plus one for the log starts of the partitions
      without a previous position; not one request per partition: that cost ~25 round trips
      per topic). Never at the previous position: after the topic was recreated that may lie
      past the end. A previous position below the log start (retention, deleteRecords) is not
      asked about: the reader resumes at the earliest offset still there (`reader_consumer`),
      which only makes the planned record count too high.

    With `keep_records`, the planner also keeps the records it reads on through (at most that
    many in all), so that a small incremental read need not fetch them a second time: a
    topic's records are kept when every one of its partitions with new records was read on
    from its previous position and not skipped ahead. They are the records a read of the
    planned ranges gets (the same consumer settings and isolation level; records past a
    partition's end are dropped). Past `keep_records`, nothing is kept.

    `partition_counts`: the topics' partition counts, when the caller described them already
    (`describe_topics`); otherwise they are asked for.
    """
    counts = (
        partition_counts
        if partition_counts is not None
        else topic_partition_counts(settings, list(start_offsets), timeout=timeout)
    )
    topics = [topic for topic in start_offsets if topic in counts]
    every = [(t, p) for t in topics for p in range(counts[t])]
    known = {(t, p): start for t in topics for p, start in (start_offsets[t] or {}).items()}
    reading_on = {tp: known[tp] for tp in every if tp in known and tp[0] in read_on}
    if not every:
        return Snapshot({topic: {} for topic in topics}, {})
    lows, highs = _log_bounds(
        settings,
        [tp for tp in every if tp not in known],
        [tp for tp in every if tp not in reading_on],
        isolation_level=isolation_level,
        timeout=timeout,
    )
    starts = {tp: known[tp] if tp in known else lows[tp] for tp in every}
    # The planner fetches a refresh's new records, or one record per partition: a bulk read's
    # fetch tuning only makes it wait. On the embedded broker, with its 4 MB minimum, every
    # answer waited out the 100 ms, and answers often left out some partitions' new records
    # (seen in librdkafka's fetch log): the benchmark incremental's 10,102 records took one
    # to four rounds, 0.14-0.35 s. With a 1-byte minimum, ~0.04 s on a small topic; how long
    # it waits for the rest is PLANNER_WAIT_MS.
    consumer = reader_consumer(
        short_read_settings(settings, wait_ms=PLANNER_WAIT_MS),
        "planner",
        isolation_level=isolation_level,
    )
    ends: dict[tuple[str, int], int] = {}
    caught_up: set[tuple[str, int]] = set()
    kept: dict[tuple[str, int], list[KeptRecord]] | None = (
        {tp: [] for tp in reading_on} if keep_records > 0 else None
    )
    kept_count = 0
    # The last record each partition delivered, for ending it without end-of-partition.
    last_offsets: dict[tuple[str, int], int] = {}
    skipped: set[tuple[str, int]] = set()
    try:
        # From the last record (high - 1), never from a previous end that is not vouched for
        # (see above). An offset below the log start resumes at the log start.
        consumer.assign(
            [
                TopicPartition(*tp, reading_on[tp])
                if tp in reading_on
                else TopicPartition(*tp, max(lows.get(tp, 0), highs[tp] - 1))
                for tp in sorted(every)
            ]
        )
        deadline = time.monotonic() + timeout
        while len(ends) < len(every):
            if time.monotonic() > deadline:
                missing = sorted(set(every) - set(ends))
                raise KafkaUnavailable(f"Could not find the end of partitions {missing}")
            messages = consumer.consume(num_messages=PLANNER_BATCH, timeout=POLL_SECONDS)
            for message in messages:
                tp = (message.topic(), message.partition())
                error = message.error()
                if error is None:
                    if tp in reading_on and tp not in caught_up:
                        caught_up.add(tp)
                        if _skip_far_behind(consumer, tp, message.offset()):
                            skipped.add(tp)
                            if kept is not None:
                                kept.pop(tp, None)  # its records up to the end are not read
                    if tp not in skipped:
                        last_offsets[tp] = message.offset()
                    if kept is not None and tp in kept and tp not in ends:
                        kept[tp].append(
                            (
                                message.partition(),
                                message.offset(),
                                message.timestamp()[1],
                                message.key(),
                                message.value(),
                            )
                        )
                        kept_count += 1
                        if kept_count > keep_records:
                            kept = None  # too many to hold: the read fetches them again
                    continue
                if error.code() == KafkaError._PARTITION_EOF:
                    ends.setdefault(tp, message.offset())
                else:
                    raise KafkaUnavailable(
                        f"Reading the end of {message.topic()} failed: {error.str()}"
                    )
            if len(messages) < PLANNER_BATCH:
                _end_at_high_watermarks(consumer, last_offsets, ends)
    finally:
        consumer.close()
    plans: dict[str, dict[int, tuple[int, int]]] = {topic: {} for topic in topics}
    for (topic, partition), end in sorted(ends.items()):
        start = starts[(topic, partition)]
        plans[topic][partition] = (min(start, end), end)
    return Snapshot(plans, _kept_topics(plans, kept or {}))


def _end_at_high_watermarks(
    consumer: Consumer,
    last_offsets: dict[tuple[str, int], int],
    ends: dict[tuple[str, int], int],
) -> None:
    """End each partition whose last delivered record reaches its high watermark, without
    waiting for end-of-partition; call it only when the consumer's queue was just drained.

    librdkafka reports end-of-partition in the handling of the fetch response after the one
    that brought the last records, and with nothing left to send the broker holds that fetch
    for its whole `fetch.wait.max.ms` (PLANNER_WAIT_MS, or a shorter one the cluster
    sets): a second round trip on every refresh that has new records. The high
    watermark of the response that brought them is known without a request (the cached
    watermark).

    Why this ends nowhere too early:
    - On Kafka the high watermark is exact. With read_committed, records are delivered only
      below the last stable offset, which is at most the high watermark, so a delivered
      record at high watermark - 1 means both are there. A partition whose last offsets are
      a transaction marker or an open transaction never qualifies and ends at
      end-of-partition as before.
    - Some Kafka-compatible brokers report the base offset of the last produce batch + 1. A record at or past it
      comes from that last batch, and librdkafka puts a fetched batch's records on the queue
      all at once (a partial batch not at all), so with the queue drained the whole batch was
      delivered and the last delivered record is the last one.
    - A watermark from an older response than the records only ends the partition at a
      point every record below which was delivered: an earlier, consistent end.
    """
    for tp, offset in last_offsets.items():
        if tp in ends:
            continue
        _, high = consumer.get_watermark_offsets(TopicPartition(*tp), cached=True)
        if high >= 0 and offset + 1 >= high:
            ends[tp] = offset + 1


def _kept_topics(
    plans: dict[str, dict[int, tuple[int, int]]],
    kept: dict[tuple[str, int], list[KeptRecord]],
) -> dict[str, list[KeptRecord]]:
    """The kept records of the topics whose every partition with new records was kept whole,
    each partition's within its planned range."""
    records: dict[str, list[KeptRecord]] = {}
    for topic, plan in plans.items():
        reading = [p for p, (start, end) in plan.items() if end > start]
        if reading and all((topic, p) in kept for p in reading):
            records[topic] = [
                record
                for p in reading
                for record in kept[(topic, p)]
                if plan[p][0] <= record[1] < plan[p][1]
            ]
    return records


def _skip_far_behind(consumer: Consumer, tp: tuple[str, int], offset: int) -> bool:
    """Seek a partition that the planner reads on through to its last record when its high
    watermark (known from the first fetch, no request) is more than CATCH_UP_RECORDS ahead;
    return whether it did.

    Records fetched before the seek still arrive and are ignored; only end-of-partition
    counts.
    """
    watermarks = consumer.get_watermark_offsets(TopicPartition(*tp), cached=True)
    if watermarks and watermarks[1] - offset > CATCH_UP_RECORDS:
        consumer.seek(TopicPartition(*tp, watermarks[1] - 1))
        return True
    return False


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
        deadline = time.monotonic() + timeout
        while pending:
            messages = consumer.consume(num_messages=batch_size, timeout=POLL_SECONDS)
            if messages:
                deadline = time.monotonic() + timeout
            elif time.monotonic() > deadline:
                raise KafkaUnavailable(
                    f"Reading {topic} stalled for {timeout:.0f}s with partitions {sorted(pending)} unfinished"
                )
            keep = []
            for message in messages:
                partition = message.partition()
                if partition not in pending:
                    continue
                end = pending[partition][1]
                error = message.error()
                if error is not None:
                    if error.code() != KafkaError._PARTITION_EOF:
                        raise KafkaUnavailable(f"Reading {topic} failed: {error.str()}")
                    if message.offset() >= end:
                        del pending[partition]
                    continue
                if message.offset() < end:
                    keep.append(message)
                if message.offset() >= end - 1:
                    del pending[partition]
            if keep:
                yield keep
    finally:
        consumer.close()


def watermarks(
    settings: dict,
    partitions: Iterable[tuple[str, int]],
    *,
    isolation_level: str = "read_uncommitted",
    timeout: float = 30.0,
) -> dict[tuple[str, int], tuple[int, int]]:
    """Return (log start, log end) of many topic-partitions in two batched ListOffsets requests.

    Both requests go out before either answer is awaited. With read_committed the end is the
    last stable offset.
    """
    partitions = list(partitions)
    lows, highs = _log_bounds(
        settings, partitions, partitions, isolation_level=isolation_level, timeout=timeout
    )
    return {tp: (low, highs[tp]) for tp, low in lows.items()}


# Per-partition ListOffsets answers that mean "ask again": the partition's leadership is
# moving, or not known yet to every broker (just after a topic was created, or created
# again). Java's admin client retries them itself; librdkafka hands them to the caller.
LEADER_NOT_READY = frozenset(
    {
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.UNKNOWN_LEADER_EPOCH,
        KafkaError.FENCED_LEADER_EPOCH,
    }
)


class _LeaderNotReady(KafkaUnavailable):
    pass


def list_offsets(
    settings: dict,
    batches: list[dict[tuple[str, int], OffsetSpec]],
    *,
    isolation_level: str = "read_uncommitted",
    timeout: float = 30.0,
) -> list[dict[tuple[str, int], int]]:
    """Answer each batch of {topic-partition: OffsetSpec} with one ListOffsets request.

    Every request goes out before any answer is awaited. A partition that does not exist
    raises KafkaUnavailable before anything is asked. A partition whose leader is not ready is
    asked again (a new handle, new metadata), with a growing pause, until `timeout`.
    """
    deadline = time.monotonic() + timeout
    pause = 0.1
    while True:
        try:
            return _list_offsets_once(
                settings, batches, isolation_level=isolation_level, timeout=timeout
            )
        except _LeaderNotReady:
            if time.monotonic() + pause > deadline:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 1.0)


@handles.released_after
def _list_offsets_once(
    settings: dict,
    batches: list[dict[tuple[str, int], OffsetSpec]],
    *,
    isolation_level: str,
    timeout: float,
) -> list[dict[tuple[str, int], int]]:
    wanted = {tp for batch in batches for tp in batch}
    if not wanted:
        return [{} for _ in batches]
    admin = admin_client(settings)
    # librdkafka looks up each partition's leader before it sends ListOffsets. A new handle's
    # metadata cache is empty, so it waits for a metadata update, and that wait races with the
    # update on librdkafka's own thread: the process segfaults (pthread_mutex_lock on a NULL
    # mutex in rd_kafka_topic_partition_list_query_leaders_async_worker). Seen here: a loop of
    # new-handle ListOffsets calls crashed within 30 s, on one thread as on three; with the
    # metadata asked for first, three threads made 7,900 calls without one. Asking first also
    # tells a missing partition apart from a slow broker.
    counts = _partition_counts(admin, settings, timeout)
    missing = sorted(tp for tp in wanted if tp[1] >= counts.get(tp[0], 0))
    if missing:
        topic, partition = missing[0]
        raise KafkaUnavailable(
            f"Could not list offsets of {topic}[{partition}]: "
            + ("no such partition" if topic in counts else "no such topic")
        )
    level = (
        IsolationLevel.READ_COMMITTED
        if isolation_level == "read_committed"
        else IsolationLevel.READ_UNCOMMITTED
    )
    requests = [
        admin.list_offsets(
            {TopicPartition(*tp): spec for tp, spec in batch.items()},
            isolation_level=level,
            request_timeout=timeout,
        )
        if batch
        else {}
        for batch in batches
    ]
    answers: list[dict[tuple[str, int], int]] = []
    for futures in requests:
        found: dict[tuple[str, int], int] = {}
        for tp, future in futures.items():
            try:
                found[(tp.topic, tp.partition)] = answer(
                    future,
                    admin=admin,
                    outstanding=[f for fs in requests for f in fs.values()],
                    settings=settings,
                    timeout=timeout,
                ).offset
            except KafkaException as exc:
                problem = _LeaderNotReady if exc.args[0].code() in LEADER_NOT_READY else None
                raise (problem or KafkaUnavailable)(
                    f"Could not list offsets of {tp.topic}[{tp.partition}]: {exc.args[0]}"
                ) from exc
        answers.append(found)
    return answers


def _log_bounds(
    settings: dict,
    starts_of: list[tuple[str, int]],
    ends_of: list[tuple[str, int]],
    *,
    isolation_level: str,
    timeout: float,
) -> tuple[dict[tuple[str, int], int], dict[tuple[str, int], int]]:
    """Return the log starts of `starts_of` and the log ends of `ends_of`."""
    lows, highs = list_offsets(
        settings,
        [
            {tp: OffsetSpec.earliest() for tp in starts_of},
            {tp: OffsetSpec.latest() for tp in ends_of},
        ],
        isolation_level=isolation_level,
        timeout=timeout,
    )
    return lows, highs


def timestamps_at(
    settings: dict, wanted: Collection[tuple[tuple[str, int], int]], *, timeout: float = 30.0
) -> dict[tuple[tuple[str, int], int], int]:
    """Return the timestamp of the first record at or after each (partition, offset) asked
    for, {((topic, partition), offset): timestamp}; those with nothing there are left out.

    One record per partition is a small read: the cluster's fetch tuning for bulk reads
    (the embedded broker's 4 MB minimum) made each fetch wait out its 100 ms, ~0.3-0.9 s
    for a refresh's sink sampling against ~0.15 s with `short_read_settings`. A consumer
    reads a partition from one offset, so each round reads every partition once, from the
    next offset asked for it (`offset_rounds`).
    """
    small = short_read_settings(settings)
    found: dict[tuple[tuple[str, int], int], int] = {}
    for offsets in offset_rounds(wanted):
        found |= {
            (tp, offsets[tp]): stamp
            for tp, stamp in _timestamps_round(small, offsets, timeout=timeout).items()
        }
    return found


# How far before a partition's end `newest_timestamps` looks for its last record. In a topic
# written with transactions (an exactly-once source's output) the last offset is the commit
# marker, a control record no consumer returns, and an aborted transaction's records are
# invisible to read_committed: the newest record sits a few offsets before the end.
NEWEST_LOOKBACK = 100


def newest_timestamps(
    settings: dict,
    bounds: dict[tuple[str, int], tuple[int, int]],
    *,
    timeout: float = 30.0,
    lookback: int = NEWEST_LOOKBACK,
) -> dict[tuple[str, int], int]:
    """Return the timestamp of the last record before each partition's end, {partition:
    timestamp}, from its (log start, log end); those with none in the last `lookback`
    offsets are left out. One consumer reads the partitions' tails to their ends."""
    starts = {tp: max(low, high - lookback) for tp, (low, high) in bounds.items() if high > low}
    if not starts:
        return {}
    consumer = reader_consumer(short_read_settings(settings), "lag")
    found: dict[tuple[str, int], int] = {}
    try:
        consumer.assign([TopicPartition(t, p, offset) for (t, p), offset in starts.items()])
        pending = set(starts)
        deadline = time.monotonic() + timeout
        while pending and time.monotonic() < deadline:
            for message in consumer.consume(num_messages=500, timeout=POLL_SECONDS):
                tp = (message.topic(), message.partition())
                if tp not in pending:
                    continue
                error = message.error()
                if error is None:
                    if message.offset() < bounds[tp][1]:
                        found[tp] = message.timestamp()[1]
                    if message.offset() >= bounds[tp][1] - 1:
                        pending.discard(tp)
                elif error.code() == KafkaError._PARTITION_EOF:
                    pending.discard(tp)
                else:
                    raise KafkaUnavailable(f"Reading {tp[0]}[{tp[1]}] failed: {error.str()}")
    finally:
        consumer.close()
    return found


def offset_rounds(
    wanted: Collection[tuple[tuple[str, int], int]],
) -> list[dict[tuple[str, int], int]]:
    """Split (partition, offset) pairs into rounds that ask each partition once, lowest
    offsets first: [{partition: offset}]."""
    by_partition: dict[tuple[str, int], list[int]] = defaultdict(list)
    for tp, offset in sorted(set(wanted)):
        by_partition[tp].append(offset)
    rounds: list[dict[tuple[str, int], int]] = []
    for tp, offsets in by_partition.items():
        for index, offset in enumerate(offsets):
            if index == len(rounds):
                rounds.append({})
            rounds[index][tp] = offset
    return rounds


def _timestamps_round(
    settings: dict, offsets: dict[tuple[str, int], int], *, timeout: float
) -> dict[tuple[str, int], int]:
    """The timestamp of the first record at or after each partition's offset, all in one
    consumer; partitions with nothing there are left out."""
    if not offsets:
        return {}
    consumer = reader_consumer(settings, "lag")
    found: dict[tuple[str, int], int] = {}
    try:
        consumer.assign([TopicPartition(t, p, offset) for (t, p), offset in offsets.items()])
        pending = set(offsets)
        deadline = time.monotonic() + timeout
        while pending and time.monotonic() < deadline:
            for message in consumer.consume(num_messages=len(pending), timeout=POLL_SECONDS):
                tp = (message.topic(), message.partition())
                if tp not in pending:
                    continue
                error = message.error()
                if error is None:
                    found[tp] = message.timestamp()[1]
                elif error.code() != KafkaError._PARTITION_EOF:
                    raise KafkaUnavailable(f"Reading {tp[0]}[{tp[1]}] failed: {error.str()}")
                pending.discard(tp)
    finally:
        consumer.close()
    return found


@handles.released_after
def sink_group_offsets(
    settings: dict, group_ids: Iterable[str], *, timeout: float = 30.0
) -> dict[str, dict[tuple[str, int], int]]:
    """Return the committed offsets of several consumer groups in one batched call."""
    from confluent_kafka import ConsumerGroupTopicPartitions

    groups = sorted(set(group_ids))
    if not groups:
        return {}
    admin = admin_client(settings)
    # The API takes one group per request; send them all before waiting on any.
    futures = {}
    for group in groups:
        futures.update(
            admin.list_consumer_group_offsets(
                [ConsumerGroupTopicPartitions(group)], request_timeout=timeout
            )
        )
    result = {}
    for group, future in futures.items():
        try:
            offsets = answer(
                future,
                admin=admin,
                outstanding=futures.values(),
                settings=settings,
                timeout=timeout,
            )
        except KafkaException as exc:
            raise KafkaUnavailable(
                f"Could not read offsets of group {group}: {exc.args[0]}"
            ) from exc
        result[group] = {
            (tp.topic, tp.partition): tp.offset for tp in offsets.topic_partitions if tp.offset >= 0
        }
    return result
