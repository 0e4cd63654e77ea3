"""Consumer groups: their state, committed offsets, and the edits a sink connector's group takes."""

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient

from offsets.kafka import admin, handles
from offsets.kafka.admin import TopicPartitionKey
from offsets.kafka.errors import (
    KafkaNotAuthorized,
    KafkaUnavailable,
    KafkaWriteRefused,
    not_authorized,
)

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


@dataclass(frozen=True)
class GroupState:
    """A consumer group as the coordinator describes it."""

    group_id: str
    # ConsumerGroupState name in upper case: EMPTY, STABLE, PREPARING_REBALANCE, DEAD, ...
    state: str
    member_count: int


def describe_group(settings: dict, group_id: str, *, timeout: float = 30.0) -> GroupState:
    """Return the group's state and member count (a group that never existed reads as DEAD)."""
    description = _ask_about_group(
        settings,
        group_id,
        lambda client: client.describe_consumer_groups([group_id], request_timeout=timeout),
        failure=f"Could not describe group {group_id}",
        timeout=timeout,
    )
    if isinstance(description, KafkaError):
        if description.code() == KafkaError.GROUP_AUTHORIZATION_FAILED:
            # A KafkaUnavailable as before: a lock check that cannot read gives the claim back.
            raise KafkaUnavailable(
                not_authorized(
                    "DESCRIBE",
                    "consumer group",
                    group_id,
                    description.name(),
                    "DESCRIBE on that group",
                )
            )
        return GroupState(group_id, "DEAD", 0)
    state = getattr(description.state, "name", str(description.state)).upper()
    return GroupState(group_id, state, len(description.members or []))


def delete_group(settings: dict, group_id: str, *, timeout: float = 30.0) -> None:
    """Delete the group and all its committed offsets (what Connect's offsets reset does).

    Deleting a group that is already gone is what was asked for (Connect treats it the same
    way in resetSinkConnectorOffsets).
    """
    answer = _ask_about_group(
        settings,
        group_id,
        lambda client: client.delete_consumer_groups([group_id], request_timeout=timeout),
        failure=f"Could not delete group {group_id}",
        timeout=timeout,
    )
    if isinstance(answer, KafkaError) and answer.code() == KafkaError.GROUP_AUTHORIZATION_FAILED:
        raise KafkaWriteRefused(
            not_authorized(
                "DELETE", "consumer group", group_id, answer.name(), "DELETE on that group"
            )
        )


@handles.released_after
def _ask_about_group(
    settings: dict,
    group_id: str,
    send: Callable[[AdminClient], dict],
    *,
    failure: str,
    timeout: float,
) -> Any:
    """Send one request about a group and return its answer; a group that does not exist, or
    that the principal may not ask about, answers with its KafkaError (GROUP_ID_NOT_FOUND,
    GROUP_AUTHORIZATION_FAILED)."""
    client = admin.admin_client(settings)
    (answer,) = admin.wait_for(
        client,
        send(client),
        settings=settings,
        timeout=timeout,
        failure=lambda _: failure,
        expected=(KafkaError.GROUP_ID_NOT_FOUND, KafkaError.GROUP_AUTHORIZATION_FAILED),
    ).values()
    return answer


def committed_offsets(
    settings: dict, group_id: str, *, timeout: float = 30.0
) -> dict[TopicPartitionKey, int]:
    """Return a consumer group's committed offsets ({} when it has none)."""
    return committed_offsets_of(settings, [group_id], timeout=timeout)[group_id]


@handles.released_after
def committed_offsets_of(
    settings: dict, group_ids: Iterable[str], *, timeout: float = 30.0
) -> dict[str, dict[TopicPartitionKey, int]]:
    """Return the committed offsets of several consumer groups, {group: offsets}, all asked
    for before any answer is awaited."""
    groups = sorted(set(group_ids))
    if not groups:
        return {}
    client = admin.admin_client(settings)
    # The API takes one group per request.
    futures = {}
    for group in groups:
        futures.update(
            client.list_consumer_group_offsets(
                [ConsumerGroupTopicPartitions(group)], request_timeout=timeout
            )
        )
    answers = admin.wait_for(
        client,
        futures,
        settings=settings,
        timeout=timeout,
        failure=lambda group: f"Could not read offsets of group {group}",
        expected=(KafkaError.GROUP_AUTHORIZATION_FAILED,),
    )
    for group, answer in answers.items():
        if isinstance(answer, KafkaError):
            raise KafkaNotAuthorized(
                not_authorized(
                    "DESCRIBE",
                    "consumer group",
                    group,
                    answer.name(),
                    "DESCRIBE on that group (a sink's group; READ too, to edit its offsets)",
                )
            )
    for offsets in answers.values():
        for tp in offsets.topic_partitions:
            # The broker leaves out the offsets of a topic the principal may not describe.
            if tp.error is not None and tp.error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED:
                raise admin.topic_refused(tp.topic, tp.error.name())
    return {
        group: {
            (tp.topic, tp.partition): tp.offset for tp in offsets.topic_partitions if tp.offset >= 0
        }
        for group, offsets in answers.items()
    }


def alter_offsets(
    settings: dict, group_id: str, offsets: dict[TopicPartitionKey, int], *, timeout: float = 30.0
) -> None:
    """Commit these offsets for the group in one request (the group must have no members).

    A coordinator that is not ready is asked again, with a growing pause, until `timeout`.
    """

    def once() -> None:
        errors = _alter_offsets_once(settings, group_id, offsets, timeout=timeout)
        if errors and errors[0].code() == KafkaError.GROUP_AUTHORIZATION_FAILED:
            raise KafkaWriteRefused(
                not_authorized(
                    "READ", "consumer group", group_id, errors[0].name(), "READ on that group"
                )
            )
        if errors:
            problem = admin.NotReady if errors[0].code() in COORDINATOR_NOT_READY else None
            raise (problem or KafkaUnavailable)(
                f"Could not set offsets of group {group_id}: {errors[0]}"
            )

    admin.asked_again(once, timeout=timeout)


@handles.released_after
def _alter_offsets_once(
    settings: dict, group_id: str, offsets: dict[TopicPartitionKey, int], *, timeout: float
) -> list[KafkaError]:
    """Send one AlterConsumerGroupOffsets request; return the errors it was answered with."""
    request = ConsumerGroupTopicPartitions(
        group_id,
        [
            TopicPartition(topic, partition, offset)
            for (topic, partition), offset in sorted(offsets.items())
        ],
    )
    client = admin.admin_client(settings)
    answers = admin.wait_for(
        client,
        client.alter_consumer_group_offsets([request], request_timeout=timeout),
        settings=settings,
        timeout=timeout,
        failure=lambda _: f"Could not set offsets of group {group_id}",
        expected=(KafkaError.GROUP_AUTHORIZATION_FAILED,),
        not_ready=COORDINATOR_NOT_READY,
    )
    refused = [answer for answer in answers.values() if isinstance(answer, KafkaError)]
    if refused:
        return refused
    return [
        tp.error
        for result in answers.values()
        for tp in result.topic_partitions
        if tp.error is not None
    ]
