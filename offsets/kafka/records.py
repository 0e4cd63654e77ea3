"""The one read of a record at a position: the record a sink reads next, with its headers.

A reader consumer (`reading.reader_consumer`: a throwaway group, nothing committed) is assigned
the partition at the offset and polled for one message, within a bounded time. An offset that
is no longer there (retention, compaction) or that holds a transaction marker yields the record
read next, whose offset says so; the end of the partition yields None.
"""

import time
from dataclasses import dataclass

from confluent_kafka import KafkaError, TopicPartition

from offsets.kafka.errors import KafkaUnavailable
from offsets.kafka.handles import released_after
from offsets.kafka.reading import read_failure, reader_consumer


@dataclass(frozen=True)
class RecordRead:
    topic: str
    partition: int
    offset: int
    timestamp_ms: int
    timestamp_type: int  # 1 create time, 2 log append time (confluent_kafka's TIMESTAMP_*)
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]


@released_after
def record_at(
    settings: dict,
    topic: str,
    partition: int,
    offset: int,
    *,
    isolation_level: str = "read_uncommitted",
    timeout: float = 10.0,
) -> RecordRead | None:
    """Read the first record at or after `offset` (None: the partition ends before one)."""
    consumer = reader_consumer(settings, "record", isolation_level=isolation_level)
    try:
        consumer.assign([TopicPartition(topic, partition, offset)])
        deadline = time.monotonic() + timeout
        while True:
            message = consumer.poll(0.1)
            if message is None:
                if time.monotonic() > deadline:
                    raise KafkaUnavailable(
                        f"Reading {topic}-{partition} at offset {offset} stalled for {timeout:.0f}s"
                    )
                continue
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    return None
                raise read_failure(error, f"{topic}-{partition}", topic)
            timestamp_type, timestamp_ms = message.timestamp()
            return RecordRead(
                topic=message.topic(),
                partition=message.partition(),
                offset=message.offset(),
                timestamp_ms=timestamp_ms,
                timestamp_type=timestamp_type,
                key=message.key(),
                value=message.value(),
                headers=tuple(message.headers() or ()),
            )
    finally:
        consumer.close()
