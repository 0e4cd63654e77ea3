"""Write source connector offsets like the Connect runtime, all of them in ONE transaction.

Each record carries the exact key bytes it was given and goes to the partition the Java
producer would choose (``murmur2``), with the runtime producer's settings (acks=all, one
request in flight). The transactional id is one per cluster and connector, so two dashboard
processes applying to the same connector fence each other instead of interleaving.

Records stay in the client until the commit: ``linger.ms`` is long and only the commit flushes
them. A failure before the commit (a check that throws, a broker that went away) therefore
sends nothing at all, which matters beyond read_committed readers: Connect workers without
exactly-once support read the offsets topic with read_uncommitted and would see the records of
an aborted transaction that had reached the log.
"""

import functools
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from confluent_kafka import KafkaError, KafkaException, Producer

from offsets.formats.murmur2 import java_partition
from offsets.kafka import admin, handles
from offsets.kafka.errors import KafkaUnavailable, TopicNotFound, not_authorized
from offsets.kafka.producers import JAVA_RUNTIME_PRODUCER_SETTINGS

logger = logging.getLogger(__name__)

TRANSACTIONAL_ID_PREFIX = "connect-offsets-dashboard"

# Hold records until the commit flushes them (see the module docstring). librdkafka wants
# message.timeout.ms > linger.ms and transaction.timeout.ms >= message.timeout.ms. The
# transaction timeout also bounds how long an abandoned transaction (a crash mid-apply) can
# hold back read_committed readers before the broker aborts it.
WRITER_SETTINGS = {
    "linger.ms": 10_000,
    "message.timeout.ms": 55_000,
    "transaction.timeout.ms": 60_000,
    "enable.idempotence": True,
}

_UNSAFE_ID_CHARS = re.compile(r"[^A-Za-z0-9._-]")


@dataclass(frozen=True)
class OffsetWrite:
    """One record to write: ``value`` None is a tombstone."""

    topic: str
    key: bytes
    value: bytes | None


@dataclass(frozen=True)
class WrittenRecord:
    topic: str
    partition: int
    offset: int
    key: bytes
    value: bytes | None


@dataclass(frozen=True)
class WriteResult:
    transactional_id: str
    records: list[WrittenRecord]


class WriteNotCommitted(KafkaUnavailable):
    """The write failed and nothing of it was committed (aborted, or never sent)."""


class WriteInDoubt(KafkaUnavailable):
    """The write failed at the commit and may or may not have been committed: read it back."""


def transactional_id(cluster_name: str, connector: str) -> str:
    """Return the transactional id for edits of one connector on one cluster.

    Not the tasks' ids (``<group.id>-<connector>-<task>``): fencing a task is the lock
    check's job (the connector must be stopped), not a side effect of an edit.
    """
    return f"{TRANSACTIONAL_ID_PREFIX}.{cluster_name}.{_UNSAFE_ID_CHARS.sub('_', connector)}"


@handles.released_after
def write_transaction(
    settings: dict,
    writes: Sequence[OffsetWrite],
    *,
    transactional_id: str,
    timeout: float = 30.0,
    before_commit: Callable[[], None] | None = None,
) -> WriteResult:
    """Write every record in one transaction and commit it, or raise having committed nothing.

    Raises ``WriteNotCommitted`` when certain that nothing was committed, ``WriteInDoubt``
    when the commit itself failed in a way that leaves the outcome unknown (read it back after
    ``fence``), ``TopicNotFound`` before anything is sent when a topic is missing.
    ``before_commit`` runs after every record is handed to the producer and before the commit
    (tests use it to fail or cut the broker at the worst moment).
    """
    if not writes:
        raise ValueError("nothing to write")
    counts = _partition_counts(settings, writes, timeout)
    producer = _producer(settings, transactional_id, JAVA_RUNTIME_PRODUCER_SETTINGS)
    _begin(producer, transactional_id, timeout)
    reports: dict[int, tuple[KafkaError | None, int, int]] = {}

    def delivered(index: int, error: KafkaError | None, message: object) -> None:
        reports[index] = (error, message.partition(), message.offset())

    try:
        for index, write in enumerate(writes):
            producer.produce(
                write.topic,
                key=write.key,
                value=write.value,
                partition=java_partition(write.key, counts[write.topic]),
                on_delivery=functools.partial(delivered, index),
            )
        if before_commit is not None:
            before_commit()
        producer.commit_transaction(timeout)
    except Exception as exc:
        topics = sorted({write.topic for write in writes})
        raise _abort(producer, exc, reports, len(writes), timeout, topics) from exc
    producer.poll(0)
    records = []
    for index, write in enumerate(writes):
        _error, partition, offset = reports.get(index, (None, -1, -1))
        records.append(WrittenRecord(write.topic, partition, offset, write.key, write.value))
    return WriteResult(transactional_id=transactional_id, records=records)


def _begin(producer: Producer, transactional_id: str, timeout: float) -> None:
    """Start the transaction, or raise WriteNotCommitted: nothing is written yet."""
    try:
        # Also fences an earlier producer with this id and resolves its open transaction.
        producer.init_transactions(timeout)
        producer.begin_transaction()
    except KafkaException as exc:
        refused = _refusal(exc, transactional_id, [])
        raise WriteNotCommitted(
            f"{refused} Nothing was written."
            if refused
            else f"Could not start a transaction as {transactional_id}: {_describe(exc)}. "
            "Nothing was written."
        ) from exc


def _partition_counts(
    settings: dict, writes: Sequence[OffsetWrite], timeout: float
) -> dict[str, int]:
    """Return the partition counts of the topics, or raise TopicNotFound for a missing one."""
    counts = admin.topic_partition_counts(settings, timeout=timeout)
    for topic in sorted({write.topic for write in writes}):
        if topic not in counts:
            raise TopicNotFound(f"Topic {topic!r} does not exist; nothing was written.")
    return counts


def _producer(settings: dict, transactional_id: str, runtime_settings: dict) -> Producer:
    return handles.producer(
        {
            **settings,
            **handles.QUIET,
            **runtime_settings,
            **WRITER_SETTINGS,
            "transactional.id": transactional_id,
        }
    )


@handles.released_after
def fence(settings: dict, transactional_id: str, *, timeout: float = 30.0) -> None:
    """Fence any earlier producer with this id and let the broker settle its transaction.

    After this returns, a transaction that producer left open has been aborted (or, if its
    commit had started, completed), so a read_committed read gives the final outcome.
    """
    producer = _producer(settings, transactional_id, {})
    try:
        producer.init_transactions(timeout)
    except KafkaException as exc:
        raise KafkaUnavailable(
            _refusal(exc, transactional_id, [])
            or f"Could not fence transactional id {transactional_id}: {_describe(exc)}"
        ) from exc


def _abort(
    producer: Producer,
    cause: Exception,
    reports: dict[int, tuple[KafkaError | None, int, int]],
    expected: int,
    timeout: float,
    topics: list[str],
) -> KafkaUnavailable:
    """Abort after a failure and say whether anything may have been committed."""
    aborted = False
    try:
        producer.abort_transaction(timeout)
        aborted = True
    except KafkaException as exc:
        # E.g. the broker is gone, or librdkafka still considers the commit in progress.
        logger.warning("Aborting the transaction failed too: %s", _describe(exc))
    # Drop whatever is still queued and collect every delivery report.
    try:
        producer.purge(in_queue=True, in_flight=True)
        producer.poll(0)
    except KafkaException as exc:  # pragma: no cover - purge only fails on misuse
        logger.warning("Purging the producer failed: %s", _describe(exc))
    never_sent = len(reports) == expected and all(
        error is not None and error.code() == KafkaError._PURGE_QUEUE
        for error, _partition, _offset in reports.values()
    )
    reason = (_refusal(cause, "", topics) or _describe(cause)).rstrip(".")
    if aborted:
        return WriteNotCommitted(f"{reason}. The transaction was aborted; nothing was committed.")
    if never_sent:
        return WriteNotCommitted(
            f"{reason}. No record left this process (all were still queued), so nothing was "
            "written; the broker aborts the empty transaction after its timeout."
        )
    return WriteInDoubt(
        f"{reason}. The commit may or may not have happened: the edit stays 'applying' until "
        "it is reconciled by reading the topic back."
    )


def _refusal(exc: BaseException, transactional_id: str, topics: list[str]) -> str:
    """The message naming the ACL the broker refused the write for, or "" for any other failure.

    librdkafka's own text names neither the topic nor the transactional id.
    """
    error = exc.args[0] if isinstance(exc, KafkaException) and exc.args else None
    code = error.code() if isinstance(error, KafkaError) else None
    if code == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
        return not_authorized(
            "WRITE",
            "transactional id",
            transactional_id,
            error.name(),
            f"WRITE on the transactional ids prefixed {TRANSACTIONAL_ID_PREFIX!r} (a PREFIXED "
            "ACL; WRITE includes DESCRIBE)",
        )
    if code == KafkaError.TOPIC_AUTHORIZATION_FAILED and len(topics) == 1:
        return not_authorized("WRITE", "topic", topics[0], error.name(), "WRITE on that topic")
    if code == KafkaError.TOPIC_AUTHORIZATION_FAILED and topics:
        # An exactly-once source's edit writes its own offsets topic and the worker's; the
        # broker's answer does not say which one it refused.
        either = " or the topic ".join(repr(topic) for topic in topics)
        return (
            f"The dashboard's principal may not WRITE the topic {either} ({error.name()}):"
            " grant it WRITE on each."
        )
    return ""


def _describe(exc: BaseException) -> str:
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        return exc.args[0].str()
    return str(exc) or type(exc).__name__
