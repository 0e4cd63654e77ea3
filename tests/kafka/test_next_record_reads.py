"""The one read of a record at a position, on the session's broker: the record there with its
headers, a transaction marker or deleted offsets giving the record read next (and the stuck
sink's row saying so), the log end giving nothing to read yet."""

import uuid

import pytest
from confluent_kafka import TopicPartition

from offsets.kafka import admin, handles, producers
from offsets.kafka.records import record_at, records_at
from offsets.queries.next_records import next_records
from tests.support import factories
from tests.support.connect_rest import wait_until

pytestmark = pytest.mark.integration


def _topic(kafka: dict) -> str:
    """Offsets 0-4 plain records (4 with headers), 5-6 a committed transaction's, 7 its
    commit marker, 8 a plain record: the log end is 9."""
    topic = f"next-record-{uuid.uuid4().hex[:8]}"
    admin.create_topics(kafka, [admin.TopicSpec(topic, 1, {})])
    plain = producers.java_producer(kafka)
    for index in range(5):
        headers = [("h", b"x"), ("bin", b"\xff")] if index == 4 else None
        plain.produce(topic, key=b"k%d" % index, value=b"v%d" % index, headers=headers)
    assert plain.flush(10) == 0
    transactional = producers.java_producer(kafka, transactional_id=f"{topic}-tx")
    transactional.init_transactions(10)
    transactional.begin_transaction()
    transactional.produce(topic, value=b"t5")
    transactional.produce(topic, value=b"t6")
    transactional.commit_transaction(10)
    # The coordinator writes the commit marker after it answers: wait for it at offset 7.
    wait_until(
        lambda: admin.watermarks(kafka, [(topic, 0)], timeout=10)[(topic, 0)].high,
        lambda high: high == 8,
        timeout=30,
        what="the commit marker",
    )
    plain.produce(topic, value=b"v8")
    assert plain.flush(10) == 0
    return topic


def test_the_record_at_an_offset_comes_with_its_headers(kafka):
    topic = _topic(kafka)
    record = record_at(kafka, topic, 0, 4, timeout=10)
    assert (record.offset, record.key, record.value) == (4, b"k4", b"v4")
    assert record.headers == (("h", b"x"), ("bin", b"\xff"))
    assert record.timestamp_ms > 0 and record.timestamp_type == 1


def test_a_transaction_marker_gives_the_next_record_and_the_log_end_none(kafka):
    topic = _topic(kafka)
    assert record_at(kafka, topic, 0, 7, timeout=10).offset == 8
    assert record_at(kafka, topic, 0, 9, timeout=10) is None


def test_deleted_offsets_give_the_first_record_still_there(kafka):
    topic = _topic(kafka)
    client = admin.admin_client(kafka)
    futures = client.delete_records([TopicPartition(topic, 0, 3)], request_timeout=10)
    for future in futures.values():
        future.result(timeout=10)
    del client
    handles.release_unused()
    assert record_at(kafka, topic, 0, 1, timeout=10).offset == 3


@pytest.mark.django_db
def test_the_stuck_sinks_row_says_the_record_it_reads_is_past_the_marker(kafka, admin_user):
    topic = _topic(kafka)
    cluster = factories.cluster("c1", bootstrap_servers=kafka["bootstrap.servers"])
    snapshot = factories.snapshot(cluster, "s", "sink", task_states={"0": "FAILED"})
    factories.sink_lags(cluster, "s", topic, 1, committed=7, lag_records=2)
    (row,) = next_records(user=admin_user, cluster=cluster, snapshot=snapshot).rows
    assert (row.position, row.offset, row.value.text) == (7, 8, "v8")
    assert "No record at offset 7" in row.note and "reads offset 8 next" in row.note


def test_one_read_answers_for_several_partitions_each_its_own(kafka):
    first, second = _topic(kafka), _topic(kafka)
    found = records_at(kafka, {(first, 0): 2, (second, 0): 0}, timeout=10)
    assert {key: record.value for key, record in found.items()} == {
        (first, 0): b"v2",
        (second, 0): b"v0",
    }
    found = records_at(kafka, {(first, 0): 9, (second, 0): 5}, timeout=10)
    assert found[(first, 0)] is None and found[(second, 0)].value == b"t5"
