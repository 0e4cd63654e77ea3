"""Setting a group's offsets asks again while the group's coordinator is not ready."""

import pytest
from confluent_kafka import KafkaError

from offsets.kafka import client


def answers(monkeypatch, *replies):
    sent = []

    def once(settings, group_id, offsets, *, timeout):
        sent.append(group_id)
        return replies[min(len(sent), len(replies)) - 1]

    monkeypatch.setattr(client, "_alter_group_offsets_once", once)
    monkeypatch.setattr(client.time, "sleep", lambda seconds: None)
    return sent


def test_a_coordinator_still_loading_is_asked_again_until_it_answers(monkeypatch):
    # What a new Apache Kafka broker answers while it loads __consumer_offsets.
    sent = answers(
        monkeypatch,
        [KafkaError(KafkaError.NOT_COORDINATOR)],
        [KafkaError(KafkaError.COORDINATOR_LOAD_IN_PROGRESS)],
        [],
    )
    client.alter_group_offsets({}, "g", {("t", 0): 5})
    assert sent == ["g", "g", "g"]


def test_any_other_error_fails_at_once(monkeypatch):
    sent = answers(monkeypatch, [KafkaError(KafkaError.UNKNOWN_MEMBER_ID)])
    with pytest.raises(client.KafkaUnavailable, match="Could not set offsets of group g"):
        client.alter_group_offsets({}, "g", {("t", 0): 5})
    assert sent == ["g"]


def test_a_coordinator_that_never_gets_ready_fails_after_the_timeout(monkeypatch):
    clock = iter(range(0, 1000))
    monkeypatch.setattr(client.time, "monotonic", lambda: next(clock))
    answers(monkeypatch, [KafkaError(KafkaError.NOT_COORDINATOR)])
    with pytest.raises(client.KafkaUnavailable, match=r"(?i)coordinator"):
        client.alter_group_offsets({}, "g", {("t", 0): 5}, timeout=5)
