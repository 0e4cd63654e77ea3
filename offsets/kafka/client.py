"""The one adapter between this project and a Kafka cluster (confluent-kafka / librdkafka).

Functions here take the cluster's librdkafka settings (``Cluster.kafka_settings()``) and return
plain dataclasses, so the rest of the project never handles a consumer or producer object.
"""

import logging
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

logger = logging.getLogger(__name__)

# How Connect's runtime configures the producer of its internal topics (KafkaBasedLog):
# every write acknowledged by all replicas, strictly in order.
JAVA_RUNTIME_PRODUCER_SETTINGS = {"acks": "all", "max.in.flight.requests.per.connection": 1}

# librdkafka logs connection failures to stderr by itself; we report them as exceptions.
QUIET = {"log_level": 0}


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


def _admin(settings: dict) -> AdminClient:
    return AdminClient({**settings, **QUIET})


def topic_partition_counts(settings: dict, *, timeout: float = 10.0) -> dict[str, int]:
    """Return every topic's partition count, or raise KafkaUnavailable."""
    try:
        metadata = _admin(settings).list_topics(timeout=timeout)
    except KafkaException as exc:
        raise KafkaUnavailable(
            f"Kafka at {settings.get('bootstrap.servers')} did not answer: {exc.args[0]}"
        ) from exc
    return {name: len(topic.partitions) for name, topic in metadata.topics.items()}


def create_topics(settings: dict, specs: Iterable[TopicSpec], *, timeout: float = 30.0) -> None:
    """Create the topics, raising on the first failure (including 'already exists')."""
    new_topics = [
        NewTopic(spec.name, num_partitions=spec.partitions, config=spec.config) for spec in specs
    ]
    if not new_topics:
        return
    admin = _admin(settings)  # keep the handle alive until the futures resolve
    futures = admin.create_topics(new_topics, operation_timeout=timeout)
    for name, future in futures.items():
        try:
            future.result(timeout=timeout)
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
    fetched up front: some brokers (Tansu) report a too-low watermark, and end-of-partition
    is right on every broker. `timeout` bounds each wait for data, not the whole read.
    """
    counts = topic_partition_counts(settings, timeout=timeout)
    if topic not in counts:
        raise TopicNotFound(f"Topic {topic!r} does not exist on {settings['bootstrap.servers']}")
    consumer = Consumer(
        {
            **settings,
            **QUIET,
            # A group id is required by librdkafka even with assign(); nothing is committed.
            "group.id": f"offsets-dashboard-reader-{uuid.uuid4()}",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "enable.partition.eof": True,
            "isolation.level": isolation_level,
        }
    )
    try:
        pending = set(range(counts[topic]))
        consumer.assign([TopicPartition(topic, p, 0) for p in pending])
        # Offset 0 may be gone (retention, compaction); an out-of-range start then goes to
        # the earliest offset still there.
        deadline = time.monotonic() + timeout
        while pending:
            messages = consumer.consume(num_messages=batch_size, timeout=0.5)
            if messages:
                deadline = time.monotonic() + timeout
            elif time.monotonic() > deadline:
                raise KafkaUnavailable(
                    f"Reading {topic} stalled for {timeout:.0f}s with partitions "
                    f"{sorted(pending)} unfinished"
                )
            for message in messages:
                error = message.error()
                if error is None:
                    yield RawRecord(
                        topic=topic,
                        partition=message.partition(),
                        offset=message.offset(),
                        timestamp_ms=message.timestamp()[1],
                        key=message.key(),
                        value=message.value(),
                    )
                elif error.code() == KafkaError._PARTITION_EOF:
                    pending.discard(message.partition())
                else:
                    raise KafkaUnavailable(f"Reading {topic} failed: {error.str()}")
    finally:
        consumer.close()


def java_producer(settings: dict, *, transactional_id: str | None = None) -> Producer:
    """Return a producer configured like Connect's own (explicit partitions are chosen by the
    caller with `formats.murmur2.java_partition`, never by librdkafka's partitioner)."""
    config = {**settings, **QUIET, **JAVA_RUNTIME_PRODUCER_SETTINGS, "linger.ms": 5}
    if transactional_id:
        config["transactional.id"] = transactional_id
        config["enable.idempotence"] = True
    return Producer(config)


def raise_on_delivery_error(error: KafkaError | None, message: object) -> None:
    """A delivery callback that turns a failed delivery into an exception at poll/flush."""
    if error is not None:
        raise KafkaException(error)


def alter_group_offsets(
    settings: dict, group_id: str, offsets: dict[tuple[str, int], int], *, timeout: float = 30.0
) -> None:
    """Set a consumer group's committed offsets (the group must have no active members)."""
    from confluent_kafka import ConsumerGroupTopicPartitions

    request = ConsumerGroupTopicPartitions(
        group_id,
        [
            TopicPartition(topic, partition, offset)
            for (topic, partition), offset in sorted(offsets.items())
        ],
    )
    admin = _admin(settings)
    futures = admin.alter_consumer_group_offsets([request], request_timeout=timeout)
    for future in futures.values():
        try:
            result = future.result(timeout=timeout)
        except KafkaException as exc:
            raise KafkaUnavailable(
                f"Could not set offsets of group {group_id}: {exc.args[0]}"
            ) from exc
        failed = [tp for tp in result.topic_partitions if tp.error is not None]
        if failed:
            raise KafkaUnavailable(f"Could not set offsets of group {group_id}: {failed[0].error}")


def group_offsets(
    settings: dict, group_id: str, *, timeout: float = 30.0
) -> dict[tuple[str, int], int]:
    """Return a consumer group's committed offsets ({} when it has none)."""
    from confluent_kafka import ConsumerGroupTopicPartitions

    admin = _admin(settings)
    futures = admin.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group_id)], request_timeout=timeout
    )
    try:
        result = futures[group_id].result(timeout=timeout)
    except KafkaException as exc:
        raise KafkaUnavailable(
            f"Could not read offsets of group {group_id}: {exc.args[0]}"
        ) from exc
    return {(tp.topic, tp.partition): tp.offset for tp in result.topic_partitions if tp.offset >= 0}


def topic_config(settings: dict, topic: str, *, timeout: float = 30.0) -> dict[str, str]:
    """Return a topic's configuration values."""
    from confluent_kafka.admin import ConfigResource

    resource = ConfigResource("topic", topic)
    try:
        admin = _admin(settings)
        entries = admin.describe_configs([resource])[resource].result(timeout=timeout)
    except KafkaException as exc:
        raise KafkaUnavailable(f"Could not describe topic {topic}: {exc.args[0]}") from exc
    return {name: entry.value for name, entry in entries.items()}
