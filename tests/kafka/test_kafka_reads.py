"""The snapshot planner and the multi-topic reader against a real broker."""

import time

import pytest

from offsets import tuning
from offsets.kafka import admin, handles, planner, producers, reading
from offsets.kafka.errors import KafkaUnavailable, TopicNotFound

pytestmark = pytest.mark.integration


def _fill(settings: dict, topic: str, partitions: int, records: int) -> None:
    admin.create_topics(settings, [admin.TopicSpec(topic, partitions, {})])
    producer = producers.java_producer(settings)
    for index in range(records):
        producer.produce(
            topic, key=b"k%d" % index, value=b"v%d" % index, partition=index % partitions
        )
    producer.flush()


def _fill_one_per_batch(settings: dict, topic: str, records: int) -> None:
    """One partition of records b"v0", b"v1", ..., one record per batch: the high
    watermark is then exact on every broker."""
    admin.create_topics(settings, [admin.TopicSpec(topic, 1, {})])
    producer = producers.java_producer(settings)
    for index in range(records):
        producer.produce(topic, key=b"k", value=b"v%d" % index, partition=0)
        producer.flush()


def test_an_incremental_plan_starts_at_the_previous_end_and_finds_the_same_end(fresh_kafka):
    settings = {"bootstrap.servers": fresh_kafka}
    _fill(settings, "t", 2, 40)  # 20 records per partition, in multi-record batches
    full = planner.plan_snapshot(settings, {"t": None}).plans
    assert full == {"t": {0: (0, 20), 1: (0, 20)}}
    # Nothing new since a read that ended at 20; one that ended at 5 has 15 to read.
    assert planner.plan_snapshot(settings, {"t": {0: 20, 1: 5}}).plans == {
        "t": {0: (20, 20), 1: (5, 20)}
    }


def test_reading_on_from_vouched_positions_finds_the_same_ends_without_listing_offsets(
    fresh_kafka, monkeypatch
):
    settings = {"bootstrap.servers": fresh_kafka}
    _fill(settings, "t", 2, 40)
    _fill(settings, "u", 1, 3)
    starts = {"t": {0: 20, 1: 5}, "u": {0: 1}}
    asked: list[list] = []
    log_bounds = admin.log_bounds
    monkeypatch.setattr(
        admin,
        "log_bounds",
        lambda settings, starts_of, ends_of, **kw: (
            asked.append(sorted(ends_of)) or log_bounds(settings, starts_of, ends_of, **kw)
        ),
    )
    expected = {"t": {0: (20, 20), 1: (5, 20)}, "u": {0: (1, 3)}}
    assert planner.plan_snapshot(settings, starts).plans == expected
    assert planner.plan_snapshot(settings, starts, read_on=["t"]).plans == expected
    # Only the topic not vouched for had its ends listed.
    assert asked == [[("t", 0), ("t", 1), ("u", 0)], [("u", 0)]]


def test_a_partition_far_behind_skips_ahead_to_its_last_record(fresh_kafka, monkeypatch):
    settings = {"bootstrap.servers": fresh_kafka}
    _fill_one_per_batch(settings, "t", 30)
    monkeypatch.setattr(tuning, "CATCH_UP_RECORDS", 10)
    skips: list[bool] = []
    skip = planner._skip_far_behind
    monkeypatch.setattr(planner, "_skip_far_behind", lambda *a: skips.append(skip(*a)) or skips[-1])
    assert planner.plan_snapshot(settings, {"t": {0: 2}}, read_on=["t"]).plans == {
        "t": {0: (2, 30)}
    }
    assert planner.plan_snapshot(settings, {"t": {0: 25}}, read_on=["t"]).plans == {
        "t": {0: (25, 30)}
    }
    assert skips == [True, False]


def _read_as_kept(settings: dict, topic: str, plan: dict) -> list[tuple]:
    """What a read of the planned ranges gets, as the planner keeps records."""
    return [
        (m.partition(), m.offset(), m.timestamp()[1], m.key(), m.value())
        for messages in reading.read_range(settings, topic, plan)
        for m in messages
    ]


def _by_partition(records: list[tuple]) -> dict[int, list[tuple]]:
    """Records per partition, in the order they came (Kafka order within a partition)."""
    found: dict[int, list[tuple]] = {}
    for record in records:
        found.setdefault(record[0], []).append(record)
    return found


def test_the_planner_keeps_the_records_it_reads_on_through(fresh_kafka):
    settings = {"bootstrap.servers": fresh_kafka}
    _fill(settings, "t", 2, 40)
    _fill(settings, "u", 1, 3)
    _fill(settings, "v", 1, 4)
    starts = {"t": {0: 20, 1: 5}, "u": {0: 1}, "v": {0: 4}}
    snapshot = planner.plan_snapshot(settings, starts, read_on=["t", "v"], keep_records=100)
    assert snapshot.plans == {"t": {0: (20, 20), 1: (5, 20)}, "u": {0: (1, 3)}, "v": {0: (4, 4)}}
    # "t": exactly what a read of its planned ranges gets, in Kafka order per partition.
    # "u" was not read on (its ends were listed, its records not read); "v" has nothing new.
    assert set(snapshot.records) == {"t"}
    kept = snapshot.records["t"]
    assert len(kept) == 15 and {r[0] for r in kept} == {1}
    assert _by_partition(kept) == _by_partition(_read_as_kept(settings, "t", snapshot.plans["t"]))
    assert [r[1] for r in kept] == list(range(5, 20))
    # Without keep_records, or past it, nothing is kept; the plans are the same.
    for keep in (0, 14):
        again = planner.plan_snapshot(settings, starts, read_on=["t", "v"], keep_records=keep)
        assert (again.plans, again.records) == (snapshot.plans, {})


def test_a_partition_that_skips_ahead_keeps_no_records(fresh_kafka, monkeypatch):
    settings = {"bootstrap.servers": fresh_kafka}
    _fill_one_per_batch(settings, "t", 30)
    monkeypatch.setattr(tuning, "CATCH_UP_RECORDS", 10)
    # 28 behind: it skipped the records from 2 to 28, so none are kept; 5 behind: all are.
    far = planner.plan_snapshot(settings, {"t": {0: 2}}, read_on=["t"], keep_records=100)
    assert (far.plans, far.records) == ({"t": {0: (2, 30)}}, {})
    near = planner.plan_snapshot(settings, {"t": {0: 25}}, read_on=["t"], keep_records=100)
    assert [(r[1], r[4]) for r in near.records["t"]] == [(i, b"v%d" % i) for i in range(25, 30)]


def _without_end_of_partition(monkeypatch) -> None:
    """The planner's consumer reports no end-of-partition: only the high-watermark rule can
    end a partition."""
    config = reading.reader_config
    monkeypatch.setattr(
        reading,
        "reader_config",
        lambda settings, purpose, **kw: {
            **config(settings, purpose, **kw),
            **({"enable.partition.eof": False} if purpose == "planner" else {}),
        },
    )


def test_partitions_with_new_records_end_at_their_high_watermark_without_end_of_partition(
    fresh_kafka, monkeypatch
):
    # Multi-record batches: some Kafka-compatible brokers report the last batch's base offset + 1
    # as the high watermark, below the true end; the planner must still end each partition at
    # its last record.
    settings = {"bootstrap.servers": fresh_kafka}
    _fill(settings, "t", 2, 40)
    expected = planner.plan_snapshot(settings, {"t": {0: 3, 1: 5}}, read_on=["t"], keep_records=100)
    _without_end_of_partition(monkeypatch)
    snapshot = planner.plan_snapshot(
        settings, {"t": {0: 3, 1: 5}}, read_on=["t"], keep_records=100, timeout=10
    )
    assert snapshot.plans == expected.plans == {"t": {0: (3, 20), 1: (5, 20)}}
    assert snapshot.records == expected.records
    assert [r[1] for r in snapshot.records["t"] if r[0] == 0] == list(range(3, 20))


def test_a_partition_ending_in_a_transaction_marker_ends_past_the_marker(fresh_kafka):
    # The last record delivered (offset 2) is below the high watermark (4): the commit marker
    # at 3 takes an offset without a record. Only end-of-partition can tell where it ends,
    # so the high-watermark rule must leave it alone.
    settings = {"bootstrap.servers": fresh_kafka}
    admin.create_topics(settings, [admin.TopicSpec("t", 1, {})])
    producer = producers.java_producer(settings, transactional_id="test-planner-marker")
    producer.init_transactions(30)
    producer.begin_transaction()
    for index in range(3):
        producer.produce("t", key=b"k", value=b"v%d" % index, partition=0)
    producer.commit_transaction(30)
    # The commit returns once the coordinator decided; the marker reaches the partition just
    # after, and until then a read_committed reader sees an end at 0.
    deadline = time.monotonic() + 30
    while len(list(reading.read_topic(settings, "t", timeout=5))) < 3:
        assert time.monotonic() < deadline, "the committed records never became readable"
        time.sleep(0.1)
    snapshot = planner.plan_snapshot(settings, {"t": {0: 0}}, read_on=["t"], keep_records=100)
    assert snapshot.plans == {"t": {0: (0, 4)}}
    assert [r[4] for r in snapshot.records["t"]] == [b"v0", b"v1", b"v2"]


def test_a_partition_holding_more_than_one_fetch_response_is_read_to_its_end(fresh_kafka):
    # 60,000 records of ~110 bytes: more than one fetch response holds (fetch.max.bytes and
    # the broker's own limits), so the read must go on fetching to the end.
    settings = {"bootstrap.servers": fresh_kafka}
    admin.create_topics(settings, [admin.TopicSpec("big", 1, {})])
    producer = producers.java_producer(settings)
    for index in range(60_000):
        producer.produce("big", key=b"k%d" % index, value=b"v" * 100, partition=0)
        if index % 10_000 == 0:
            producer.flush()
    producer.flush()
    offsets = [record.offset for record in reading.read_topic(settings, "big", timeout=5)]
    assert offsets == list(range(60_000))
    plan = planner.plan_snapshot(settings, {"big": None}, timeout=5).plans
    assert plan == {"big": {0: (0, 60_000)}}
    read = reading.read_range(settings, "big", plan["big"], timeout=5)
    assert sum(len(messages) for messages in read) == 60_000


def test_the_planner_reads_without_the_clusters_bulk_fetch_tuning(fresh_kafka, monkeypatch):
    # The planner fetches a refresh's new records: with a cluster's bulk tuning (a large
    # fetch.min.bytes) every answer would wait out fetch.wait.max.ms. Its wait is its own
    # (tuning.PLANNER_WAIT_MS).
    settings = {"bootstrap.servers": fresh_kafka}
    _fill(settings, "t", 2, 40)
    configs = []
    consumer = handles.consumer
    monkeypatch.setattr(
        handles, "consumer", lambda config: configs.append(config) or consumer(config)
    )
    snapshot = planner.plan_snapshot(settings, {"t": {0: 3, 1: 5}}, read_on=["t"])
    assert snapshot.plans == {"t": {0: (3, 20), 1: (5, 20)}}
    (planning,) = [c for c in configs if c["group.id"].startswith("offsets-dashboard-planner-")]
    assert planning["fetch.min.bytes"] == 1
    assert planning["fetch.wait.max.ms"] == tuning.PLANNER_WAIT_MS == 50


def test_a_previous_end_past_the_log_end_plans_nothing_and_moves_back_to_the_end(fresh_kafka):
    # As after the topic was deleted and created again: the next read must not start at the
    # old position (records written below it would never be read). The refresh sees the end
    # before its position and rebuilds from the beginning (refresh.recreated_topics).
    settings = {"bootstrap.servers": fresh_kafka}
    _fill(settings, "t", 1, 7)
    assert planner.plan_snapshot(settings, {"t": {0: 1_000}}).plans == {"t": {0: (7, 7)}}


def test_a_topic_deleted_and_created_again_has_a_new_topic_id(fresh_kafka):
    settings = {"bootstrap.servers": fresh_kafka}
    _fill(settings, "t", 2, 4)
    first = admin.ids_of(admin.describe_topics(settings, ["t", "missing"]))
    assert list(first) == ["t"] and len(first["t"]) == 22  # base64 of 16 bytes; missing: left out
    assert admin.ids_of(admin.describe_topics(settings, ["t"])) == first
    admin.admin_client(settings).delete_topics(["t"])["t"].result(10)
    assert admin.ids_of(admin.describe_topics(settings, ["t"])) == {}
    _fill(settings, "t", 2, 4)
    second = admin.ids_of(admin.describe_topics(settings, ["t"]))
    assert second.keys() == {"t"} and second["t"] != first["t"]


def test_topic_ids_of_a_broker_that_is_down_raise_kafka_unavailable():
    with pytest.raises(KafkaUnavailable, match="did not answer within 2s"):
        admin.ids_of(admin.describe_topics({"bootstrap.servers": "127.0.0.1:1"}, ["t"], timeout=2))


def test_partition_counts_of_named_topics_leave_out_those_that_do_not_exist(fresh_kafka):
    settings = {"bootstrap.servers": fresh_kafka}
    _fill(settings, "a", 3, 3)
    _fill(settings, "b", 2, 2)
    everything = admin.topic_partition_counts(settings)
    assert {"a": 3, "b": 2}.items() <= everything.items()
    # Described, not listed: the same counts, only of the topics named (each once); names no
    # topic can have, like missing topics, are left out.
    assert admin.topic_partition_counts(settings, ["b", "missing", "a", "b", "", "bad name!"]) == {
        "b": 2,
        "a": 3,
    }
    assert admin.topic_partition_counts(settings, []) == {}


def test_partition_counts_of_named_topics_on_a_broker_that_is_down_raise_kafka_unavailable():
    with pytest.raises(KafkaUnavailable, match="did not answer within 2s"):
        admin.topic_partition_counts({"bootstrap.servers": "127.0.0.1:1"}, ["t"], timeout=2)


def test_read_topics_reads_every_record_of_several_topics_in_order(fresh_kafka):
    settings = {"bootstrap.servers": fresh_kafka}
    _fill(settings, "a", 2, 30)
    _fill(settings, "b", 1, 5)
    records = list(reading.read_topics(settings, ["a", "b"]))
    by_partition: dict[tuple[str, int], list[int]] = {}
    for record in records:
        by_partition.setdefault((record.topic, record.partition), []).append(record.offset)
    assert by_partition == {
        ("a", 0): list(range(15)),
        ("a", 1): list(range(15)),
        ("b", 0): list(range(5)),
    }
    with pytest.raises(TopicNotFound, match="'missing'"):
        list(reading.read_topics(settings, ["a", "missing"]))
