"""Write a simulated Connect cluster (`devkit.demo`) to a real Kafka cluster.

Records go where and how the Java runtime puts them: the partition its producer would choose
(murmur2 of the exact key bytes), acks=all, one transaction per commit for the exactly-once
source's own offsets topic, and the record timestamps of the simulated time.
"""

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from confluent_kafka import KafkaException, Producer

from devkit.demo import (
    DemoCluster,
    DemoOptions,
    Record,
    SinkFlush,
    continued_offset_records,
    continued_sink_flushes,
)
from offsets.formats.murmur2 import java_partition
from offsets.kafka import admin, groups, handles, producers
from offsets.kafka.errors import KafkaUnavailable

logger = logging.getLogger(__name__)


class DemoClusterError(RuntimeError):
    pass


@dataclass(frozen=True)
class SeedSummary:
    records_by_topic: dict[str, int]
    transactions: int
    data_records: int
    groups: int
    seconds: float


@handles.released_after
def write_demo(
    settings: dict, demo: DemoCluster, *, progress: Callable[[str], None] = lambda _: None
) -> SeedSummary:
    """Create the demo's topics on an EMPTY cluster and write every record; return counts."""
    started = time.monotonic()
    partitions = _create_topics(settings, demo)
    progress(f"created {len(demo.topics)} topics")
    counts, transactions = _write_connect_records(settings, demo, partitions, progress)
    progress(f"{sum(counts.values()):,} Connect records written ({transactions} transactions)")

    data_records = _write_data_topics(settings, demo, partitions)
    progress(f"{data_records:,} sink data records written")
    for group_id, offsets in demo.group_offsets.items():
        groups.alter_offsets(settings, group_id, offsets)
    progress(f"committed offsets of {len(demo.group_offsets)} sink groups")
    return SeedSummary(
        records_by_topic=dict(counts),
        transactions=transactions,
        data_records=data_records,
        groups=len(demo.group_offsets),
        seconds=time.monotonic() - started,
    )


def _create_topics(settings: dict, demo: DemoCluster) -> dict[str, int]:
    """Create the demo's topics, refusing a cluster that has any of them; return their sizes."""
    existing = admin.topic_partition_counts(settings)
    clash = sorted(set(demo.topics) & set(existing))
    if clash:
        # Never write simulated offsets next to a real Connect cluster's.
        raise DemoClusterError(
            f"Topic(s) {', '.join(clash)} exist already on {settings['bootstrap.servers']}: "
            "seed_demo only writes into a cluster without them (use a fresh embedded broker)."
        )
    admin.create_topics(
        settings,
        [
            admin.TopicSpec(name, partitions, config)
            for name, (partitions, config) in demo.topics.items()
        ],
    )
    return {name: count for name, (count, _) in demo.topics.items()}


def _write_connect_records(
    settings: dict,
    demo: DemoCluster,
    partitions: dict[str, int],
    progress: Callable[[str], None],
) -> tuple[Counter[str], int]:
    """Write the config, status and offsets records; return the records per topic and the
    number of transactions."""
    counts: Counter[str] = Counter()
    producer = producers.java_producer(settings)
    transactional: dict[str, Producer] = {}
    open_transaction: tuple[str, int] | None = None

    def send(target: Producer, record: Record) -> None:
        _produce(target, record, partitions)
        target.poll(0)
        counts[record.topic] += 1

    transactions = 0
    for record in demo.records():
        if record.transactional_id is None:
            _produce_with_backpressure(send, producer, record)
            continue
        txn_producer = transactional.get(record.transactional_id)
        if txn_producer is None:
            txn_producer = producers.java_producer(
                settings, transactional_id=record.transactional_id
            )
            # init_transactions fences any zombie with this id, as a new task generation does.
            txn_producer.init_transactions(30)
            transactional[record.transactional_id] = txn_producer
        current = (record.transactional_id, record.transaction)
        if open_transaction != current:
            if open_transaction is not None:
                transactional[open_transaction[0]].commit_transaction(30)
            txn_producer.begin_transaction()
            open_transaction = current
            transactions += 1
        send(txn_producer, record)
        if sum(counts.values()) % 100_000 == 0:
            progress(f"{sum(counts.values()):,} records written")
    if open_transaction is not None:
        transactional[open_transaction[0]].commit_transaction(30)
    _flush(producer)
    return counts, transactions


@handles.released_after
def keep_writing(
    settings: dict,
    options: DemoOptions,
    *,
    stop: threading.Event,
    progress: Callable[[str], None] = lambda _: None,
) -> int:
    """Go on writing a seeded cluster's source commits, its sinks' new data records and
    their groups' commits, one flush interval at a time, until `stop` is set; return how
    many offsets records were written.

    The cluster must have been seeded with the same options: the simulated window is
    replayed (nothing written) to find where each partition stands. Each flush is written at
    its time (missed ones at once), the exactly-once source's in a transaction.
    """
    partitions = admin.topic_partition_counts(settings)
    producer = producers.java_producer(settings)
    transactional: dict[str, Producer] = {}
    written = 0
    sinks = continued_sink_flushes(options)
    for tick, records in continued_offset_records(options):
        sink_flush = next(sinks)
        wait_s = (options.tick_ms(tick) - time.time() * 1000) / 1000
        if stop.wait(max(wait_s, 0)):
            break
        try:
            _write_offsets(settings, producer, transactional, records, partitions)
            written += len(records)
            data = _write_sink_flush(settings, producer, sink_flush)
        except (KafkaUnavailable, KafkaException, DemoClusterError) as exc:
            # A broker hiccup (a group coordinator not ready yet) costs this flush only.
            progress(f"flush {tick - options.ticks + 1} failed: {exc}")
            continue
        progress(f"flush {tick - options.ticks + 1}: {len(records)} commits, {data} sink records")
    return written


def _produce(target: Producer, record: Record, partitions: dict[str, int]) -> None:
    """Produce one Connect record to the partition the Java runtime would choose."""
    target.produce(
        record.topic,
        key=record.key,
        value=record.value,
        partition=java_partition(record.key, partitions[record.topic]),
        timestamp=record.timestamp_ms,
        on_delivery=producers.raise_on_delivery_error,
    )


def _write_offsets(
    settings: dict,
    producer: Producer,
    transactional: dict[str, Producer],
    records: list[Record],
    partitions: dict[str, int],
) -> None:
    """Write one flush's offsets records, the exactly-once source's in a transaction each."""
    for record in records:
        target = producer
        if record.transactional_id is not None:
            target = transactional.get(record.transactional_id)
            if target is None:
                target = producers.java_producer(settings, transactional_id=record.transactional_id)
                target.init_transactions(30)
                transactional[record.transactional_id] = target
            target.begin_transaction()
        _produce(target, record, partitions)
        if record.transactional_id is not None:
            target.commit_transaction(30)
    _flush(producer)


def _write_sink_flush(settings: dict, producer: Producer, sink_flush: SinkFlush) -> int:
    """Append a flush's sink data records (as `_write_data_topics` writes them) and commit
    the groups' offsets; return how many records."""
    written = 0
    for (topic, partition), stamps in sink_flush.records.items():
        for index, stamp in enumerate(stamps, start=sink_flush.first_index[(topic, partition)]):
            producer.produce(
                topic,
                key=str(index).encode(),
                value=f'{{"id":{index},"partition":{partition},"ts":{stamp}}}'.encode(),
                partition=partition,
                timestamp=stamp,
                on_delivery=producers.raise_on_delivery_error,
            )
            written += 1
    _flush(producer)
    for group_id, offsets in sink_flush.group_offsets.items():
        groups.alter_offsets(settings, group_id, offsets)
    return written


def _produce_with_backpressure(
    send: Callable[[Producer, Record], None], producer: Producer, record: Record
) -> None:
    try:
        send(producer, record)
    except BufferError:
        # The local queue is full: wait for deliveries, then retry once.
        producer.poll(1)
        send(producer, record)


def _flush(producer: Producer, timeout: float = 60.0) -> None:
    remaining = producer.flush(timeout)
    if remaining:
        raise DemoClusterError(f"{remaining} records were not delivered within {timeout:.0f}s")


def _write_data_topics(settings: dict, demo: DemoCluster, partitions: dict[str, int]) -> int:
    """Write the sinks' data topics, one record per produce request.

    One record per batch keeps the high watermark exact on brokers that report the base offset
    of the last batch + 1 (some Kafka-compatible brokers); Apache Kafka does not care.
    """
    producer = handles.producer(
        {**settings, **handles.QUIET, "acks": "all", "batch.num.messages": 1, "linger.ms": 0}
    )
    written = 0
    for topic in demo.data_topics:
        for partition, stamps in enumerate(topic.timestamps):
            for index, stamp in enumerate(stamps):
                value = f'{{"id":{index},"partition":{partition},"ts":{stamp}}}'.encode()
                while True:
                    try:
                        producer.produce(
                            topic.name,
                            key=str(index).encode(),
                            value=value,
                            partition=partition,
                            timestamp=stamp,
                            on_delivery=producers.raise_on_delivery_error,
                        )
                        break
                    except BufferError:
                        producer.poll(0.5)
                producer.poll(0)
                written += 1
    _flush(producer)
    return written
