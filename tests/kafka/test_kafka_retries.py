"""Requests librdkafka leaves to the caller to repeat: a group coordinator or a partition leader not ready yet."""

import pytest
from confluent_kafka import KafkaError

from offsets.kafka import admin, groups
from offsets.kafka.errors import KafkaUnavailable


def answers(monkeypatch, *replies):
    sent = []

    def once(settings, group_id, offsets, *, timeout):
        sent.append(group_id)
        return replies[min(len(sent), len(replies)) - 1]

    monkeypatch.setattr(groups, "_alter_offsets_once", once)
    monkeypatch.setattr(admin.time, "sleep", lambda seconds: None)
    return sent


def test_a_coordinator_still_loading_is_asked_again_until_it_answers(monkeypatch):
    # What a new Apache Kafka broker answers while it loads __consumer_offsets.
    sent = answers(
        monkeypatch,
        [KafkaError(KafkaError.NOT_COORDINATOR)],
        [KafkaError(KafkaError.COORDINATOR_LOAD_IN_PROGRESS)],
        [],
    )
    groups.alter_offsets({}, "g", {("t", 0): 5})
    assert sent == ["g", "g", "g"]


def test_any_other_error_fails_at_once(monkeypatch):
    sent = answers(monkeypatch, [KafkaError(KafkaError.UNKNOWN_MEMBER_ID)])
    with pytest.raises(KafkaUnavailable, match="Could not set offsets of group g"):
        groups.alter_offsets({}, "g", {("t", 0): 5})
    assert sent == ["g"]


def test_a_coordinator_that_never_gets_ready_fails_after_the_timeout(monkeypatch):
    clock = iter(range(0, 1000))
    monkeypatch.setattr(admin.time, "monotonic", lambda: next(clock))
    answers(monkeypatch, [KafkaError(KafkaError.NOT_COORDINATOR)])
    with pytest.raises(KafkaUnavailable, match=r"(?i)coordinator"):
        groups.alter_offsets({}, "g", {("t", 0): 5}, timeout=5)


def test_listing_offsets_asks_again_while_a_partition_has_no_ready_leader(monkeypatch):
    # What Apache Kafka answers just after a topic was deleted and created again.
    replies = [admin.NotReady("not leader"), admin.NotReady("not leader"), [{}]]
    sent = []

    def once(settings, batches, **kwargs):
        sent.append(batches)
        reply = replies[len(sent) - 1]
        if isinstance(reply, Exception):
            raise reply
        return reply

    monkeypatch.setattr(admin, "_list_offsets_once", once)
    monkeypatch.setattr(admin.time, "sleep", lambda seconds: None)
    assert admin.list_offsets({}, [{("t", 0): None}]) == [{}]
    assert len(sent) == 3


def test_listing_offsets_does_not_retry_other_failures(monkeypatch):
    sent = []

    def once(settings, batches, **kwargs):
        sent.append(batches)
        raise KafkaUnavailable("no such partition")

    monkeypatch.setattr(admin, "_list_offsets_once", once)
    with pytest.raises(KafkaUnavailable, match="no such partition"):
        admin.list_offsets({}, [{("t", 0): None}])
    assert len(sent) == 1
