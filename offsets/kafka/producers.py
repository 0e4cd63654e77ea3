"""Producers configured like the Connect runtime's own, for the demo's and the tests' writes."""

from confluent_kafka import KafkaError, KafkaException, Producer

from offsets import tuning
from offsets.kafka import handles

# How Connect's runtime configures the producer of its internal topics (KafkaBasedLog):
# every write acknowledged by all replicas, strictly in order.
JAVA_RUNTIME_PRODUCER_SETTINGS = {"acks": "all", "max.in.flight.requests.per.connection": 1}


def java_producer(settings: dict, *, transactional_id: str | None = None) -> Producer:
    """Return a producer configured like Connect's own (explicit partitions are chosen by the
    caller with `formats.murmur2.java_partition`, never by librdkafka's partitioner)."""
    config = {**settings, **handles.QUIET, **JAVA_RUNTIME_PRODUCER_SETTINGS, "linger.ms": 5}
    if transactional_id:
        config["transactional.id"] = transactional_id
        config["enable.idempotence"] = True
        config["retry.backoff.ms"] = tuning.TRANSACTIONAL_RETRY_BACKOFF_MS
    return handles.producer(config)


def raise_on_delivery_error(error: KafkaError | None, message: object) -> None:
    """A delivery callback that turns a failed delivery into an exception at poll/flush."""
    if error is not None:
        raise KafkaException(error)
