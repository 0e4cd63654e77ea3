"""The one read of a record at a position: the record a sink reads next, with its headers.

A reader consumer (`reading.reader_consumer`: a throwaway group, nothing committed) is assigned
each partition at its offset and polled for the first message of each, within one bounded time
for them all. An offset that is no longer there (retention, compaction) or that holds a
transaction marker yields the record read next, whose offset says so; the end of the partition
yields None.
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
def records_at(
    settings: dict,
    positions: dict[tuple[str, int], int],
    *,
    isolation_level: str = "read_uncommitted",
    timeout: float = 10.0,
) -> dict[tuple[str, int], RecordRead | None]:
    """Read the first record at or after each partition's offset in `positions` (None: the
    partition ends before one), with one consumer, within `timeout` for them all."""
    found: dict[tuple[str, int], RecordRead | None] = {}
    if not positions:
        return found
    consumer = reader_consumer(settings, "record", isolation_level=isolation_level)
    try:
        consumer.assign([TopicPartition(t, p, offset) for (t, p), offset in positions.items()])
        deadline = time.monotonic() + timeout
        while len(found) < len(positions):
            message = consumer.poll(0.1)
            if message is None:
                if time.monotonic() > deadline:
                    waiting = sorted(f"{t}-{p}" for t, p in positions.keys() - found.keys())
                    raise KafkaUnavailable(
                        f"Reading {', '.join(waiting)} stalled for {timeout:.0f}s"
                    )
                continue
            key = (message.topic(), message.partition())
            if key in found:
                continue  # a later record of a partition read already
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    found[key] = None
                    continue
                raise read_failure(error, f"{key[0]}-{key[1]}", key[0])
            found[key] = _read(message)
            # Nothing more of this partition is needed.
            consumer.pause([TopicPartition(*key)])
    finally:
        consumer.close()
    return found


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
    found = records_at(
        settings, {(topic, partition): offset}, isolation_level=isolation_level, timeout=timeout
    )
    return found[(topic, partition)]


def _read(message) -> RecordRead:
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
