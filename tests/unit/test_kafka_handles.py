"""When offsets.kafka.handles lets a client handle go (no broker needed: a client that never
connects is still a librdkafka handle with threads of its own)."""

import gc
import weakref
from concurrent.futures import Future

import pytest

from offsets.kafka import handles

NOWHERE = {"bootstrap.servers": "127.0.0.1:1"}


@pytest.fixture(autouse=True)
def held_before():
    """How many handles earlier tests still hold on purpose (requests given up on, after a
    broker was cut mid-request: `keep_until_done`); the counts below come on top."""
    handles.release_unused()
    return handles.held_count()


def test_a_handle_in_use_is_kept_and_one_no_longer_used_is_released():
    admin = handles.admin_client(NOWHERE)
    gone = weakref.ref(admin)
    assert handles.release_unused() == 0
    assert gone() is admin
    del admin
    assert handles.release_unused() == 1
    assert gone() is None


def test_a_handle_in_a_reference_cycle_outlives_the_collection_of_the_cycle():
    admin = handles.admin_client(NOWHERE)
    gone = weakref.ref(admin)
    cycle: list = [admin]
    cycle.append(cycle)
    del admin, cycle
    gc.disable()
    try:
        assert handles.release_unused() == 0  # the cycle still refers to it
        gc.collect()
        assert gone() is not None  # the collector only broke the cycle
    finally:
        gc.enable()
    assert handles.release_unused() == 1
    assert gone() is None


def test_a_handle_with_requests_given_up_on_is_kept_until_they_are_done():
    admin = handles.admin_client(NOWHERE)
    gone = weakref.ref(admin)
    pending: Future = Future()
    handles.keep_until_done(admin, [pending])
    del admin
    assert handles.release_unused() == 0
    pending.set_result(None)
    assert handles.release_unused() == 1
    assert gone() is None


def test_producers_and_consumers_are_held_too(held_before):
    producer = handles.producer({**NOWHERE, **handles.QUIET})
    consumer = handles.consumer({**NOWHERE, **handles.QUIET, "group.id": "unused"})
    assert handles.held_count() == held_before + 2
    consumer.close()
    del producer, consumer
    assert handles.release_unused() == 2


def test_the_next_handle_releases_the_unused_ones(held_before):
    first = weakref.ref(handles.admin_client(NOWHERE))
    second = handles.admin_client(NOWHERE)
    assert first() is None
    assert handles.held_count() == held_before + 1
    del second


def test_handles_inherited_through_fork_are_never_destroyed(monkeypatch):
    admin = handles.admin_client(NOWHERE)
    kept = weakref.ref(admin)
    del admin
    # As seen from a forked child: the handle's threads stayed in the parent.
    monkeypatch.setattr(handles, "_held_pid", -1)
    assert handles.release_unused() == 0
    assert handles.held_count() == 0
    assert kept() is not None
    assert handles._inherited[-1] is kept()
    handles._inherited.pop()


def test_a_function_marked_released_after_destroys_the_handles_it_made_when_it_returns():
    made = []

    @handles.released_after
    def ask_the_cluster():
        admin = handles.admin_client(NOWHERE)
        made.append(weakref.ref(admin))
        assert handles.held_count() == 1
        return "answer"

    assert ask_the_cluster() == "answer"
    assert made[0]() is None
    assert handles.held_count() == 0


def test_an_admin_request_given_up_on_raises_kafka_unavailable_and_keeps_its_handle():
    from offsets.kafka import client

    admin = handles.admin_client(NOWHERE)
    gone = weakref.ref(admin)
    stuck, other = Future(), Future()  # never resolved by themselves: a broker gone mid-request
    with pytest.raises(client.KafkaUnavailable, match=r"127\.0\.0\.1:1 did not answer within 0s"):
        client.answer(stuck, admin=admin, outstanding=[stuck, other], settings=NOWHERE, timeout=0)
    del admin
    stuck.set_result(None)
    assert handles.release_unused() == 0  # `other` is still in flight
    other.set_result(None)
    assert handles.release_unused() == 1
    assert gone() is None


def test_an_admin_request_that_librdkafka_timed_out_raises_the_same_kafka_unavailable():
    from confluent_kafka import KafkaError, KafkaException

    from offsets.kafka import client

    timed_out: Future = Future()
    timed_out.set_exception(KafkaException(KafkaError(KafkaError._TIMED_OUT)))
    refused: Future = Future()
    refused.set_exception(KafkaException(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED)))
    admin = handles.admin_client(NOWHERE)
    with pytest.raises(client.KafkaUnavailable, match=r"127\.0\.0\.1:1 did not answer within 2s"):
        client.answer(timed_out, admin=admin, outstanding=[timed_out], settings=NOWHERE, timeout=2)
    # Any other error is the caller's to describe.
    with pytest.raises(KafkaException):
        client.answer(refused, admin=admin, outstanding=[refused], settings=NOWHERE, timeout=2)


def test_an_admin_request_that_is_answered_returns_its_result():
    from offsets.kafka import client

    done: Future = Future()
    done.set_result("answer")
    admin = handles.admin_client(NOWHERE)
    assert client.answer(done, admin=admin, outstanding=[done], settings=NOWHERE, timeout=1) == (
        "answer"
    )
