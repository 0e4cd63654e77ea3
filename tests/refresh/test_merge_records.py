"""The merge's rules on small hand-made records, folded and merged as a refresh does them.

Plain Python: the fold (offsets.spark.partials) and the merge's rules (merge.merge_folds) need
no Spark.
"""

import pyarrow as pa
import pytest

from offsets.formats.offset_records import MalformedReason
from offsets.spark import kafka_source
from offsets.spark import merge as M
from offsets.spark import partials as P
from offsets.spark.schemas import STATE_COLUMNS
from tests.support.records import OWN, WORKER, key, value

# The spark tier, whether or not a test asks for the session: these are the rules of the
# refresh's Spark job.
pytestmark = pytest.mark.spark


def previous_rows(latest: list[dict]) -> list[dict]:
    """A refresh's stored state (its latest offsets) as the merge's PREVIOUS rows."""
    empty = dict.fromkeys(P.SUMMARY_SCHEMA.names)
    return [
        empty
        | {name: state[name] for name in STATE_COLUMNS if name != "commits"}
        | {"kind": M.PREVIOUS, "count": state["commits"]}
        for state in latest
    ]


def merged(records, earlier=(), *, own_topics=None, running=(), now_ms=0, threshold_ms=0):
    """The merge's results for `records` (topic, kafka_partition, kafka_offset, timestamp_ms,
    key, value) read after `earlier`: each topic folded as a read task folds it."""
    rows = previous_rows(merged(earlier, own_topics=own_topics)["latest"]) if earlier else []
    for topic in dict.fromkeys(record[0] for record in records):
        folder = P.Folder(topic, 300)
        for record in records:
            if record[0] == topic:
                folder.add(*record[1:])
        rows += pa.Table.from_batches([folder.summary_batch()]).to_pylist()
    return M.merge_folds(
        rows,
        own_topics or {},
        set(running),
        worker_topic=WORKER,
        now_ms=now_ms,
        stall_after_ms=threshold_ms,
    )


def latest(records, **options):
    return merged(records, **options)["latest"]


def test_it_classifies_malformed_records_by_reason_and_keeps_good_ones():
    good = key("a", {"f": 1})
    results = merged(
        [
            (WORKER, 0, 0, 1, b"not json", b"{}"),
            (WORKER, 0, 1, 1, b'{"a":1}', b"{}"),
            (WORKER, 0, 2, 1, None, b"{}"),
            (WORKER, 0, 3, 1, good, b"[1]"),
            (WORKER, 0, 4, 1, good, b"\xff\xfe"),
            (WORKER, 0, 5, 1, good, b'{"position":5}'),
            (WORKER, 1, 0, 1, key("a", {"f": 2}), None),
        ]
    )
    counts = {row["reason"]: row["count"] for row in results["malformed"]}
    assert counts == {
        MalformedReason.KEY_NOT_JSON: 1,
        MalformedReason.KEY_NOT_ARRAY: 1,
        MalformedReason.KEY_NULL: 1,
        MalformedReason.VALUE_NOT_OBJECT: 1,
        MalformedReason.VALUE_NOT_UTF8: 1,
    }
    found = sorted(results["latest"], key=lambda row: row["kafka_partition"])
    assert [(r["kafka_offset"], r["offset_json"], r["progress"], r["commits"]) for r in found] == [
        (5, '{"position":5}', 5.0, 1),
        (0, None, None, 0),
    ]
    assert results["records"] == [{"topic": WORKER, "count": 7}]


def test_latest_is_the_last_write_per_exact_key_bytes_and_a_tombstone_removes_it():
    a, b = key("c", {"t": "x"}), key("c", {"t": "y"})
    found = latest(
        [
            (WORKER, 0, 0, 100, a, value({"offset": 1})),
            (WORKER, 0, 1, 200, a, value({"offset": 2})),
            (WORKER, 1, 0, 150, b, value({"offset": 9})),
            (WORKER, 1, 1, 250, b, None),
        ]
    )
    by_key = {row["key"]: row for row in found}
    assert by_key[a]["offset_json"] == '{"offset":2}'
    assert (by_key[a]["commits"], by_key[a]["first_commit_ms"], by_key[a]["last_commit_ms"]) == (
        2,
        100,
        200,
    )
    assert by_key[b]["offset_json"] is None  # tombstoned, history kept
    assert by_key[b]["commits"] == 1


def test_the_same_partition_under_other_key_bytes_is_another_key_and_drift():
    form1 = b'["c",{"a":1,"b":2}]'
    form2 = b'["c",{"b":2,"a":1}]'
    form3 = b'["c", {"a":1,"b":2}]'
    results = merged(
        [
            (WORKER, 0, 0, 100, form1, value({"offset": 1})),
            (WORKER, 1, 0, 200, form2, value({"offset": 50})),
            (WORKER, 2, 0, 300, form3, value({"offset": 70})),
            (WORKER, 3, 0, 300, key("c", {"a": 9}), value({"offset": 1})),
        ]
    )
    assert len(results["latest"]) == 4
    (drift,) = results["drift"]
    assert drift["forms_count"] == 3
    assert [form["key_text"].encode() for form in drift["forms"]] == [
        form3,
        form2,
        form1,
    ]  # newest first
    assert [form["offset_json"] for form in drift["forms"]] == [
        '{"offset":70}',
        '{"offset":50}',
        '{"offset":1}',
    ]


def test_a_connectors_own_topic_takes_precedence_over_the_worker_topic():
    k, other = key("eos", {"db": "x"}), key("eos", {"db": "y"})
    found = latest(
        [
            (OWN, 0, 0, 100, k, value({"lsn": 10})),
            (WORKER, 0, 0, 900, k, value({"lsn": 99})),  # newer, but the worker copy
            (WORKER, 0, 1, 900, other, value({"lsn": 5})),  # only in the worker topic
            (OWN, 0, 1, 100, key("plain", {"f": 1}), value({"offset": 1})),  # not its topic
        ],
        own_topics={"eos": OWN},
    )
    effective = {(row["topic"], row["key"]): row["effective"] for row in found}
    assert effective == {
        (OWN, k): True,
        (WORKER, k): False,
        (WORKER, other): True,
        (OWN, key("plain", {"f": 1})): False,
    }


def test_a_tombstone_in_the_own_topic_leaves_the_worker_value_effective():
    k = key("eos", {"db": "x"})
    found = latest(
        [
            (OWN, 0, 0, 100, k, value({"lsn": 10})),
            (OWN, 0, 1, 200, k, None),
            (WORKER, 0, 0, 100, k, value({"lsn": 10})),
        ],
        own_topics={"eos": OWN},
    )
    assert {row["topic"]: row["effective"] for row in found} == {OWN: False, WORKER: True}


def test_it_finds_rewinds_and_not_a_restart_after_a_tombstone():
    k, reset = key("jdbc", {"table": "orders"}), key("jdbc", {"table": "items"})
    found = merged(
        [
            (WORKER, 0, 0, 100, k, value({"incrementing": 10})),
            (WORKER, 0, 1, 200, k, value({"incrementing": 30})),
            (WORKER, 0, 2, 300, k, value({"incrementing": 20})),  # rewind
            (WORKER, 0, 3, 400, k, value({"incrementing": 25})),
            (WORKER, 1, 0, 100, reset, value({"incrementing": 50})),
            (WORKER, 1, 1, 200, reset, None),
            (WORKER, 1, 2, 300, reset, value({"incrementing": 1})),  # after a reset: fine
        ]
    )["rewinds"]
    assert [(r["kafka_offset"], r["from_progress"], r["to_progress"]) for r in found] == [
        (2, 30.0, 20.0)
    ]


def test_a_rewind_across_two_refreshes_is_found_with_the_previous_state():
    k = key("jdbc", {"table": "orders"})
    first = [(WORKER, 0, 0, 100, k, value({"incrementing": 30}))]
    second = [(WORKER, 0, 1, 200, k, value({"incrementing": 5}))]
    assert [r["kafka_offset"] for r in merged(second, first)["rewinds"]] == [1]
    assert merged(second)["rewinds"] == []


def test_latest_over_new_records_plus_previous_state_equals_latest_over_all():
    a, b = key("c", {"t": "x"}), key("c", {"t": "y"})
    rows = [
        (WORKER, 0, 0, 100, a, value({"offset": 1})),
        (WORKER, 1, 0, 110, b, value({"offset": 5})),
        (WORKER, 0, 1, 200, a, value({"offset": 2})),
        (WORKER, 1, 1, 210, b, None),
        (WORKER, 0, 2, 300, a, value({"offset": 3})),
    ]
    full = latest(rows)
    incremental = latest(rows[2:], earlier=rows[:2])
    assert len(full) == 2
    assert sorted(full, key=repr) == sorted(incremental, key=repr)


def test_commit_buckets_count_commits_per_connector_and_bucket():
    a, b = key("c1", {"t": "x"}), key("c2", {"t": "y"})
    found = merged(
        [
            (WORKER, 0, 0, 1_000, a, value({"offset": 1})),
            (WORKER, 0, 1, 299_000, a, value({"offset": 2})),
            (WORKER, 0, 2, 301_000, a, value({"offset": 3})),
            (WORKER, 1, 0, 1_000, b, value({"offset": 1})),
            (WORKER, 1, 1, 2_000, b, None),
        ]
    )["buckets"]
    buckets = {(row["connector"], row["bucket_start_ms"]): row["commits"] for row in found}
    assert buckets == {("c1", 0): 2, ("c1", 300_000): 1, ("c2", 0): 1}


def test_stalls_are_live_partitions_of_running_connectors_without_recent_commits():
    old, new, stopped = key("run", {"t": 1}), key("run", {"t": 2}), key("stop", {"t": 1})
    found = latest(
        [
            (WORKER, 0, 0, 1_000, old, value({"offset": 1})),
            (WORKER, 0, 1, 900_000, new, value({"offset": 1})),
            (WORKER, 0, 2, 1_000, stopped, value({"offset": 1})),
        ],
        running={"run"},
        now_ms=1_000_000,
        threshold_ms=300_000,
    )
    assert {row["key"]: row["stalled"] for row in found} == {
        old: True,
        new: False,
        stopped: False,
    }


@pytest.mark.parametrize("max_tasks,expected_groups", [(1, 1), (3, 3), (50, 4)])
def test_reads_pack_kafka_partitions_into_at_most_max_tasks(max_tasks, expected_groups):
    ranges = {0: (0, 100), 1: (0, 10), 2: (5, 5), 3: (0, 50), 4: (0, 40)}
    groups = kafka_source.pack(ranges, max_tasks)
    assert len(groups) == expected_groups
    assert sorted(p for group in groups for p in group) == [0, 1, 3, 4]  # empty range dropped


def test_a_keys_hash_is_the_sha1_of_its_exact_key_bytes():
    import hashlib

    k = key("c", {"t": "é"})
    (row,) = latest([(WORKER, 0, 0, 1, k, value({"offset": 1}))])
    assert row["key_hash"] == hashlib.sha1(k).hexdigest()
