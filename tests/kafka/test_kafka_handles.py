"""When offsets.kafka.handles lets a client handle go (no broker needed: a client that never
connects is still a librdkafka handle with threads of its own)."""

import gc
import weakref
from concurrent.futures import Future

import pytest

from offsets.kafka import admin, handles
from offsets.kafka.errors import KafkaUnavailable

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


def test_a_function_marked_released_after_destroys_the_handles_it_made_when_it_returns(
    held_before,
):
    made = []

    @handles.released_after
    def ask_the_cluster():
        admin = handles.admin_client(NOWHERE)
        made.append(weakref.ref(admin))
        assert handles.held_count() == held_before + 1
        return "answer"

    assert ask_the_cluster() == "answer"
    assert made[0]() is None
    assert handles.held_count() == held_before


def test_an_admin_request_given_up_on_raises_kafka_unavailable_and_keeps_its_handle():
    handle = handles.admin_client(NOWHERE)
    gone = weakref.ref(handle)
    stuck, other = Future(), Future()  # never resolved by themselves: a broker gone mid-request
    with pytest.raises(KafkaUnavailable, match=r"127\.0\.0\.1:1 did not answer within 0s"):
        admin.wait_for(
            handle,
            {"stuck": stuck},
            outstanding=[stuck, other],
            settings=NOWHERE,
            timeout=0,
            failure=str,
        )
    del handle
    stuck.set_result(None)
    assert handles.release_unused() == 0  # `other` is still in flight
    other.set_result(None)
    assert handles.release_unused() == 1
    assert gone() is None


def _failed(code: int) -> Future:
    from confluent_kafka import KafkaError, KafkaException

    future: Future = Future()
    future.set_exception(KafkaException(KafkaError(code)))
    return future


def test_an_admin_request_that_librdkafka_timed_out_raises_the_same_kafka_unavailable():
    from confluent_kafka import KafkaError

    handle = handles.admin_client(NOWHERE)
    with pytest.raises(KafkaUnavailable, match=r"127\.0\.0\.1:1 did not answer within 2s"):
        admin.wait_for(
            handle,
            {"t": _failed(KafkaError._TIMED_OUT)},
            settings=NOWHERE,
            timeout=2,
            failure=str,
        )


def test_an_admin_request_that_failed_says_what_could_not_be_done():
    from confluent_kafka import KafkaError

    handle = handles.admin_client(NOWHERE)
    refused = {"t": _failed(KafkaError.TOPIC_AUTHORIZATION_FAILED)}
    with pytest.raises(KafkaUnavailable, match=r"Could not describe t: .*AUTHORIZATION"):
        admin.wait_for(
            handle,
            refused,
            settings=NOWHERE,
            timeout=2,
            failure=lambda t: f"Could not describe {t}",
        )
    # An expected failure is the caller's to handle; a not-ready one is asked again.
    expected = admin.wait_for(
        handle,
        {"t": _failed(KafkaError.TOPIC_AUTHORIZATION_FAILED)},
        settings=NOWHERE,
        timeout=2,
        failure=str,
        expected=(KafkaError.TOPIC_AUTHORIZATION_FAILED,),
    )
    assert expected["t"].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    with pytest.raises(admin.NotReady):
        admin.wait_for(
            handle,
            {"t": _failed(KafkaError.NOT_COORDINATOR)},
            settings=NOWHERE,
            timeout=2,
            failure=str,
            not_ready=(KafkaError.NOT_COORDINATOR,),
        )


def test_an_admin_request_that_is_answered_returns_its_result():
    done: Future = Future()
    done.set_result("answer")
    handle = handles.admin_client(NOWHERE)
    assert admin.wait_for(handle, {"t": done}, settings=NOWHERE, timeout=1, failure=str) == {
        "t": "answer"
    }
