"""Admin requests to a Kafka cluster: topics, their partitions and IDs, and log offsets."""

import time
from collections.abc import Callable, Collection, Iterable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, NamedTuple

from confluent_kafka import (
    IsolationLevel,
    KafkaError,
    KafkaException,
    TopicCollection,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

from offsets.domain.masking import mask_text
from offsets.kafka import handles
from offsets.kafka.errors import KafkaNotAuthorized, KafkaUnavailable, not_authorized

TopicPartitionKey = tuple[str, int]

# What a broker without topic IDs (before Kafka 2.8) answers for one.
NO_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAA"

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


class NotReady(KafkaUnavailable):
    """The broker asks to be asked again (`asked_again`): a leader or coordinator is moving."""


@dataclass(frozen=True)
class TopicSpec:
    name: str
    partitions: int
    config: dict[str, str]


@dataclass(frozen=True)
class TopicFacts:
    """What a DescribeTopics request tells of one topic (`describe_topics`)."""

    topic_id: str  # "" from a broker without topic IDs (before Kafka 2.8)
    partitions: int


class Watermarks(NamedTuple):
    """A partition's log start and log end (with read_committed, the last stable offset)."""

    low: int
    high: int


def admin_client(settings: dict) -> AdminClient:
    try:
        return handles.admin_client(settings)
    except KafkaException as exc:  # settings librdkafka refuses, e.g. a Java JAAS config
        raise KafkaUnavailable(
            f"Could not create a Kafka client for {settings.get('bootstrap.servers')}: "
            f"{exc.args[0]}"
        ) from exc


def wait_for[K](
    admin: AdminClient,
    futures: Mapping[K, Future],
    *,
    settings: dict,
    timeout: float,
    failure: Callable[[K], str],
    expected: Collection[int] = (),
    not_ready: Collection[int] = (),
    outstanding: Iterable[Future] | None = None,
) -> dict[K, Any]:
    """Wait for the answers to an admin request, {key: result}, or raise KafkaUnavailable.

    An answer that failed with a code in `expected` is returned as its KafkaError for the
    caller to handle; one in `not_ready` raises NotReady; any other failure raises
    KafkaUnavailable, its text after `failure(key)`.

    A future that never resolves means the broker went away mid-request. `admin` is then kept
    until every request in `outstanding` (by default `futures`) resolves
    (`handles.keep_until_done`): destroying it with requests in flight can abort the process
    inside librdkafka.
    """
    results: dict[K, Any] = {}
    for key, future in futures.items():
        try:
            results[key] = future.result(timeout=timeout)
        except TimeoutError as exc:
            in_flight = futures.values() if outstanding is None else outstanding
            handles.keep_until_done(admin, list(in_flight))
            raise KafkaUnavailable(did_not_answer(admin, settings, timeout)) from exc
        except KafkaException as exc:
            error = exc.args[0] if exc.args else exc
            code = error.code() if isinstance(error, KafkaError) else None
            # librdkafka's own request timeout (callers set it to `timeout` too) may fire
            # first: the same broker that did not answer, said the same way.
            if code == KafkaError._TIMED_OUT:
                raise KafkaUnavailable(did_not_answer(admin, settings, timeout, error)) from exc
            if code in expected:
                results[key] = error
                continue
            problem = NotReady if code in not_ready else KafkaUnavailable
            raise problem(f"{failure(key)}: {error}") from exc
    return results


def did_not_answer(
    admin: AdminClient, settings: dict, timeout: float, error: KafkaError | None = None
) -> str:
    """Say that the cluster did not answer in time, and the last error its client saw: a
    refused handshake (authentication failed, certificate verify failed) shows only there."""
    message = f"Kafka at {settings.get('bootstrap.servers')} did not answer within {timeout:.0f}s"
    if error is not None:
        message += f" ({error.str()})"
    cause = handles.last_error(admin)
    # librdkafka's words never hold a password; masked all the same, like any error text.
    return message + (f"; the last error: {mask_text(cause)}" if cause else "")


def asked_again[R](request: Callable[[], R], *, timeout: float) -> R:
    """Return what `request` answers, asking again with a growing pause while it raises
    NotReady, until `timeout`."""
    deadline = time.monotonic() + timeout
    pause = 0.1
    while True:
        try:
            return request()
        except NotReady:
            if time.monotonic() + pause > deadline:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 1.0)


@handles.released_after
def topic_partition_counts(
    settings: dict, topics: Collection[str] | None = None, *, timeout: float = 10.0
) -> dict[str, int]:
    """Return every topic's partition count, or those of `topics` that exist; or raise
    KafkaUnavailable.

    Given the topics, they are described (DescribeTopics) instead of listing every topic: on
    a new handle a list of all topics often waits ~50 ms (librdkafka drops the bootstrap
    connection once it learns the broker's own address, the request with it, and asks again
    only after `reconnect.backoff.ms` / 2), against ~2 ms for a description.
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
        cause = handles.last_error(admin)
        raise KafkaUnavailable(
            f"Kafka at {settings.get('bootstrap.servers')} did not answer: {exc.args[0]}"
            + (f"; the last error: {mask_text(cause)}" if cause else "")
        ) from exc
    return {name: len(topic.partitions) for name, topic in metadata.topics.items()}


@handles.released_after
def create_topics(settings: dict, specs: Iterable[TopicSpec], *, timeout: float = 30.0) -> None:
    """Create the topics, raising on the first failure (including 'already exists'); return
    once the broker's metadata lists them."""
    new_topics = [
        NewTopic(spec.name, num_partitions=spec.partitions, config=spec.config) for spec in specs
    ]
    if not new_topics:
        return
    admin = admin_client(settings)  # keep the handle alive until the futures resolve
    wait_for(
        admin,
        admin.create_topics(new_topics, operation_timeout=timeout),
        settings=settings,
        timeout=timeout,
        failure=lambda name: f"Could not create topic {name}",
    )
    _wait_until_listed(admin, settings, {topic.topic for topic in new_topics}, timeout)


def _wait_until_listed(admin: AdminClient, settings: dict, topics: set[str], timeout: float):
    # CreateTopics answers once the controller has committed the topics; a broker lists them
    # only after it has applied that metadata, a moment later (longer on a busy machine). A
    # metadata request in between (the next step of a writer) would not find them.
    deadline = time.monotonic() + timeout
    while missing := topics - _partition_counts(admin, settings, timeout).keys():
        if time.monotonic() > deadline:
            raise KafkaUnavailable(
                f"Kafka at {settings.get('bootstrap.servers')} created but does not list "
                f"{', '.join(sorted(missing))} after {timeout:.0f} s"
            )
        time.sleep(0.02)


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
    answers = wait_for(
        admin,
        admin.describe_topics(TopicCollection(names), request_timeout=timeout),
        settings=settings,
        timeout=timeout,
        failure=lambda topic: f"Could not describe topic {topic}",
        expected=(
            KafkaError.UNKNOWN_TOPIC_OR_PART,
            KafkaError.TOPIC_EXCEPTION,
            KafkaError.TOPIC_AUTHORIZATION_FAILED,
        ),
    )
    described: dict[str, TopicFacts] = {}
    for topic, description in answers.items():
        if isinstance(description, KafkaError):
            if description.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED:
                raise topic_refused(topic, description.name())
            continue
        topic_id = str(description.topic_id or "")
        described[topic] = TopicFacts(
            topic_id=topic_id if topic_id != NO_TOPIC_ID else "",
            partitions=len(description.partitions),
        )
    return described


def topic_refused(topic: str, code: str) -> KafkaNotAuthorized:
    """The refusal to describe `topic`: the dashboard reads every topic it describes."""
    return KafkaNotAuthorized(
        not_authorized(
            "DESCRIBE", "topic", topic, code, "READ on that topic (READ includes DESCRIBE)"
        )
    )


def ids_of(described: dict[str, TopicFacts]) -> dict[str, str]:
    """Return the topic IDs (KIP-516) in a `describe_topics` answer, {topic: ID}, topics
    without one left out.

    A topic deleted and created again under the same name gets a new ID: that is how a refresh
    tells that the records it read before are gone, even once the new topic has as many.
    """
    return {topic: facts.topic_id for topic, facts in described.items() if facts.topic_id}


def list_offsets(
    settings: dict,
    batches: list[dict[TopicPartitionKey, OffsetSpec]],
    *,
    isolation_level: str = "read_uncommitted",
    timeout: float = 30.0,
) -> list[dict[TopicPartitionKey, int]]:
    """Answer each batch of {topic-partition: OffsetSpec} with one ListOffsets request.

    Every request goes out before any answer is awaited. A partition that does not exist
    raises KafkaUnavailable before anything is asked. A partition whose leader is not ready is
    asked again (a new handle, new metadata), with a growing pause, until `timeout`.
    """
    return asked_again(
        lambda: _list_offsets_once(
            settings, batches, isolation_level=isolation_level, timeout=timeout
        ),
        timeout=timeout,
    )


@handles.released_after
def _list_offsets_once(
    settings: dict,
    batches: list[dict[TopicPartitionKey, OffsetSpec]],
    *,
    isolation_level: str,
    timeout: float,
) -> list[dict[TopicPartitionKey, int]]:
    wanted = {tp for batch in batches for tp in batch}
    if not wanted:
        return [{} for _ in batches]
    admin = admin_client(settings)
    # librdkafka looks up each partition's leader before it sends ListOffsets. A new handle's
    # metadata cache is empty, so it waits for a metadata update, and that wait races with the
    # update on librdkafka's own thread: the process segfaults (pthread_mutex_lock on a NULL
    # mutex in rd_kafka_topic_partition_list_query_leaders_async_worker). Asking for the
    # metadata first avoids the race, and tells a missing partition apart from a slow broker.
    _require_partitions(wanted, _partition_counts(admin, settings, timeout))
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
    outstanding = [future for futures in requests for future in futures.values()]
    answers = []
    for futures in requests:
        found = wait_for(
            admin,
            futures,
            settings=settings,
            timeout=timeout,
            failure=lambda tp: f"Could not list offsets of {tp.topic}[{tp.partition}]",
            not_ready=LEADER_NOT_READY,
            outstanding=outstanding,
        )
        answers.append({(tp.topic, tp.partition): info.offset for tp, info in found.items()})
    return answers


def _require_partitions(wanted: set[TopicPartitionKey], counts: dict[str, int]) -> None:
    """Raise KafkaUnavailable naming the first of `wanted` that does not exist."""
    missing = sorted(tp for tp in wanted if tp[1] >= counts.get(tp[0], 0))
    if missing:
        topic, partition = missing[0]
        raise KafkaUnavailable(
            f"Could not list offsets of {topic}[{partition}]: "
            + ("no such partition" if topic in counts else "no such topic")
        )


def watermarks(
    settings: dict,
    partitions: Iterable[TopicPartitionKey],
    *,
    isolation_level: str = "read_uncommitted",
    timeout: float = 30.0,
) -> dict[TopicPartitionKey, Watermarks]:
    """Return the log start and end of many partitions in two batched ListOffsets requests.

    Both requests go out before either answer is awaited. With read_committed the end is the
    last stable offset.
    """
    partitions = list(partitions)
    lows, highs = log_bounds(
        settings, partitions, partitions, isolation_level=isolation_level, timeout=timeout
    )
    return {tp: Watermarks(low, highs[tp]) for tp, low in lows.items()}


def log_bounds(
    settings: dict,
    starts_of: list[TopicPartitionKey],
    ends_of: list[TopicPartitionKey],
    *,
    isolation_level: str,
    timeout: float,
) -> tuple[dict[TopicPartitionKey, int], dict[TopicPartitionKey, int]]:
    """Return the log starts of `starts_of` and the log ends of `ends_of`, in two batched
    ListOffsets requests."""
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


def offsets_for_times(
    settings: dict, times_ms: dict[TopicPartitionKey, int], *, timeout: float = 30.0
) -> dict[TopicPartitionKey, int | None]:
    """Ask the broker for the first offset at or after each time (None: no such record).

    The answer is not trusted by callers: ``edit_rules.check_offset_for_time`` checks it
    against the records around it.
    """
    if not times_ms:
        return {}
    (answers,) = list_offsets(
        settings,
        [{tp: OffsetSpec.for_timestamp(ms) for tp, ms in times_ms.items()}],
        timeout=timeout,
    )
    return {tp: (offset if offset >= 0 else None) for tp, offset in answers.items()}
