"""The refresh's DataFrame transforms on small hand-made frames (local Spark)."""

import pytest

from offsets.formats import jackson
from offsets.formats.offset_records import MalformedReason
from offsets.spark import kafka_source
from offsets.spark import transforms as T

WORKER = "connect-offsets"
OWN = "connect-offsets-eos"


def key(connector, partition):
    return jackson.dumps_key(connector, partition)


def value(offset):
    return None if offset is None else jackson.dumps(offset)


def raw(spark, rows):
    """rows: (topic, kafka_partition, kafka_offset, timestamp_ms, key bytes, value bytes)"""
    return spark.createDataFrame(rows, kafka_source.SCHEMA)


def parsed(spark, rows):
    return T.parse_offset_records(raw(spark, rows))


def test_it_classifies_malformed_records_by_reason_and_keeps_good_ones(spark):
    good = key("a", {"f": 1})
    df = parsed(
        spark,
        [
            (WORKER, 0, 0, 1, b"not json", b"{}"),
            (WORKER, 0, 1, 1, b'{"a":1}', b"{}"),
            (WORKER, 0, 2, 1, None, b"{}"),
            (WORKER, 0, 3, 1, good, b"[1]"),
            (WORKER, 0, 4, 1, good, b"\xff\xfe"),
            (WORKER, 0, 5, 1, good, b'{"position":5}'),
            (WORKER, 0, 6, 1, b'["a",{"f":1}]', None),
        ],
    )
    counts = {(r.reason): r["count"] for r in T.malformed_counts(df).collect()}
    assert counts == {
        MalformedReason.KEY_NOT_JSON: 1,
        MalformedReason.KEY_NOT_ARRAY: 1,
        MalformedReason.KEY_NULL: 1,
        MalformedReason.VALUE_NOT_OBJECT: 1,
        MalformedReason.VALUE_NOT_UTF8: 1,
    }
    valid = T.valid_records(df).orderBy("kafka_offset").collect()
    assert [(r.kafka_offset, r.tombstone, r.progress) for r in valid] == [
        (5, False, 5.0),
        (6, True, None),
    ]
    assert valid[0].offset_json == '{"position":5}'


def test_latest_is_the_last_write_per_exact_key_bytes_and_a_tombstone_removes_it(spark):
    a, b = key("c", {"t": "x"}), key("c", {"t": "y"})
    df = T.valid_records(
        parsed(
            spark,
            [
                (WORKER, 0, 0, 100, a, value({"offset": 1})),
                (WORKER, 0, 1, 200, a, value({"offset": 2})),
                (WORKER, 1, 0, 150, b, value({"offset": 9})),
                (WORKER, 1, 1, 250, b, None),
            ],
        )
    )
    latest = {r.key: r for r in T.latest_by_key(df).collect()}
    assert latest[a].offset_json == '{"offset":2}'
    assert (latest[a].commits, latest[a].first_commit_ms, latest[a].last_commit_ms) == (2, 100, 200)
    assert latest[b].offset_json is None  # tombstoned, history kept
    assert latest[b].commits == 1


def test_the_same_partition_under_other_key_bytes_is_another_key_and_drift(spark):
    form1 = b'["c",{"a":1,"b":2}]'
    form2 = b'["c",{"b":2,"a":1}]'
    form3 = b'["c", {"a":1,"b":2}]'
    df = T.valid_records(
        parsed(
            spark,
            [
                (WORKER, 0, 0, 100, form1, value({"offset": 1})),
                (WORKER, 1, 0, 200, form2, value({"offset": 50})),
                (WORKER, 2, 0, 300, form3, value({"offset": 70})),
                (WORKER, 3, 0, 300, key("c", {"a": 9}), value({"offset": 1})),
            ],
        )
    )
    latest = T.latest_by_key(df)
    assert latest.count() == 4
    effective = T.effective_offsets(
        latest, spark.createDataFrame([], "connector string, own_topic string"), WORKER
    )
    drift = T.key_drift(effective).collect()
    assert len(drift) == 1
    assert drift[0].forms_count == 3
    assert [form.key_text.encode() for form in drift[0].forms] == [
        form3,
        form2,
        form1,
    ]  # newest first
    assert [form.offset_json for form in drift[0].forms] == [
        '{"offset":70}',
        '{"offset":50}',
        '{"offset":1}',
    ]


def test_a_connectors_own_topic_takes_precedence_over_the_worker_topic(spark):
    k, other = key("eos", {"db": "x"}), key("eos", {"db": "y"})
    df = T.valid_records(
        parsed(
            spark,
            [
                (OWN, 0, 0, 100, k, value({"lsn": 10})),
                (WORKER, 0, 0, 900, k, value({"lsn": 99})),  # newer, but the worker copy
                (WORKER, 0, 1, 900, other, value({"lsn": 5})),  # only in the worker topic
                (OWN, 0, 1, 100, key("plain", {"f": 1}), value({"offset": 1})),  # not its topic
            ],
        )
    )
    own_topics = spark.createDataFrame([("eos", OWN)], "connector string, own_topic string")
    rows = T.effective_offsets(T.latest_by_key(df), own_topics, WORKER).collect()
    effective = {(r.topic, r.key): r.effective for r in rows}
    assert effective == {
        (OWN, k): True,
        (WORKER, k): False,
        (WORKER, other): True,
        (OWN, key("plain", {"f": 1})): False,
    }


def test_a_tombstone_in_the_own_topic_leaves_the_worker_value_effective(spark):
    k = key("eos", {"db": "x"})
    df = T.valid_records(
        parsed(
            spark,
            [
                (OWN, 0, 0, 100, k, value({"lsn": 10})),
                (OWN, 0, 1, 200, k, None),
                (WORKER, 0, 0, 100, k, value({"lsn": 10})),
            ],
        )
    )
    own_topics = spark.createDataFrame([("eos", OWN)], "connector string, own_topic string")
    rows = {
        r.topic: r.effective
        for r in T.effective_offsets(T.latest_by_key(df), own_topics, WORKER).collect()
    }
    assert rows == {OWN: False, WORKER: True}


def test_it_finds_rewinds_and_not_a_restart_after_a_tombstone(spark):
    k, reset = key("jdbc", {"table": "orders"}), key("jdbc", {"table": "items"})
    df = T.valid_records(
        parsed(
            spark,
            [
                (WORKER, 0, 0, 100, k, value({"incrementing": 10})),
                (WORKER, 0, 1, 200, k, value({"incrementing": 30})),
                (WORKER, 0, 2, 300, k, value({"incrementing": 20})),  # rewind
                (WORKER, 0, 3, 400, k, value({"incrementing": 25})),
                (WORKER, 1, 0, 100, reset, value({"incrementing": 50})),
                (WORKER, 1, 1, 200, reset, None),
                (WORKER, 1, 2, 300, reset, value({"incrementing": 1})),  # after a reset: fine
            ],
        )
    )
    found = T.rewinds(df).collect()
    assert [(r.kafka_offset, r.from_progress, r.to_progress) for r in found] == [(2, 30.0, 20.0)]


def test_a_rewind_across_two_refreshes_is_found_with_the_previous_state(spark):
    k = key("jdbc", {"table": "orders"})
    first = T.valid_records(parsed(spark, [(WORKER, 0, 0, 100, k, value({"incrementing": 30}))]))
    state = T.latest_by_key(first)
    second = T.valid_records(parsed(spark, [(WORKER, 0, 1, 200, k, value({"incrementing": 5}))]))
    assert [r.kafka_offset for r in T.rewinds(second, state).collect()] == [1]
    assert T.rewinds(second).count() == 0


def test_latest_over_new_records_plus_previous_state_equals_latest_over_all(spark):
    a, b = key("c", {"t": "x"}), key("c", {"t": "y"})
    rows = [
        (WORKER, 0, 0, 100, a, value({"offset": 1})),
        (WORKER, 1, 0, 110, b, value({"offset": 5})),
        (WORKER, 0, 1, 200, a, value({"offset": 2})),
        (WORKER, 1, 1, 210, b, None),
        (WORKER, 0, 2, 300, a, value({"offset": 3})),
    ]
    full = T.latest_by_key(T.valid_records(parsed(spark, rows)))
    state = T.latest_by_key(T.valid_records(parsed(spark, rows[:2])))
    incremental = T.latest_by_key(T.valid_records(parsed(spark, rows[2:])), state)
    assert sorted(full.collect()) == sorted(incremental.collect())


def test_commit_buckets_count_commits_per_connector_and_bucket(spark):
    a, b = key("c1", {"t": "x"}), key("c2", {"t": "y"})
    df = T.valid_records(
        parsed(
            spark,
            [
                (WORKER, 0, 0, 1_000, a, value({"offset": 1})),
                (WORKER, 0, 1, 299_000, a, value({"offset": 2})),
                (WORKER, 0, 2, 301_000, a, value({"offset": 3})),
                (WORKER, 1, 0, 1_000, b, value({"offset": 1})),
                (WORKER, 1, 1, 2_000, b, None),
            ],
        )
    )
    buckets = {
        (r.connector, r.bucket_start_ms): r.commits
        for r in T.commit_buckets(T.commits(df), 300).collect()
    }
    assert buckets == {("c1", 0): 2, ("c1", 300_000): 1, ("c2", 0): 1}


def test_stalls_are_live_partitions_of_running_connectors_without_recent_commits(spark):
    old, new, stopped = key("run", {"t": 1}), key("run", {"t": 2}), key("stop", {"t": 1})
    df = T.valid_records(
        parsed(
            spark,
            [
                (WORKER, 0, 0, 1_000, old, value({"offset": 1})),
                (WORKER, 0, 1, 900_000, new, value({"offset": 1})),
                (WORKER, 0, 2, 1_000, stopped, value({"offset": 1})),
            ],
        )
    )
    effective = T.effective_offsets(
        T.latest_by_key(df), spark.createDataFrame([], "connector string, own_topic string"), WORKER
    )
    running = spark.createDataFrame([("run",)], "connector string")
    rows = T.flag_stalls(effective, running, now_ms=1_000_000, threshold_ms=300_000).collect()
    assert {r.key: r.stalled for r in rows} == {old: True, new: False, stopped: False}


@pytest.mark.parametrize("max_tasks,expected_groups", [(1, 1), (3, 3), (50, 4)])
def test_reads_pack_kafka_partitions_into_at_most_max_tasks(max_tasks, expected_groups):
    ranges = {0: (0, 100), 1: (0, 10), 2: (5, 5), 3: (0, 50), 4: (0, 40)}
    groups = kafka_source.pack(ranges, max_tasks)
    assert len(groups) == expected_groups
    assert sorted(p for group in groups for p in group) == [0, 1, 3, 4]  # empty range dropped


def test_parsed_key_hash_is_the_sha1_of_the_exact_key_bytes(spark):
    import hashlib

    k = key("c", {"t": "é"})
    row = (
        T.valid_records(parsed(spark, [(WORKER, 0, 0, 1, k, value({"offset": 1}))]))
        .select("key_hash")
        .first()
    )
    assert row.key_hash == hashlib.sha1(k).hexdigest()
