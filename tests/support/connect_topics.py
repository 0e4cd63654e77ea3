"""Records written straight into Connect's topics, as a worker (or anyone with access) would."""

from collections.abc import Iterable

from offsets.kafka import producers

# 10000-01-01: a timestamp Kafka accepts on a record, past any date the dashboard can store.
YEAR_10000_MS = 253_402_300_800_000


def write_records(
    settings: dict, records: Iterable[tuple[str, bytes | None, bytes | None, int | None]]
) -> None:
    """Write (topic, key, value, timestamp ms or None for now) records and wait for them all."""
    producer = producers.java_producer(settings)
    for topic, key, value, timestamp in records:
        stamp = {"timestamp": timestamp} if timestamp is not None else {}
        # Explicit partition 0: a null key has no murmur2 placement, and garbage needs none.
        producer.produce(
            topic,
            key=key,
            value=value,
            partition=0,
            on_delivery=producers.raise_on_delivery_error,
            **stamp,
        )
        producer.poll(0)
    assert producer.flush(60) == 0
