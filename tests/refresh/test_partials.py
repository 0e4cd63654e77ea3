"""The read task's fold (offsets.spark.partials), and the folds of the records the planner kept.

The fold's rules are unit-tested in plain Python, its commit rows checked against the
reference model (tests/support/reference_merge.py), on hand-made records and on the random mix
of writes, rewinds, tombstones, malformed records and key drift over two topics that
tests/support/records.py makes (the merge's tests, test_merge.py, use it too).
"""

import pyarrow as pa
import pytest

from offsets.spark import kafka_source
from offsets.spark import partials as P
from tests.support import reference_merge
from tests.support.records import OWN, WORKER, Message, key, random_records, value

# The spark tier, whether or not a test asks for the session: these are the rules of the
# refresh's Spark job.
pytestmark = pytest.mark.spark


def fold(records, topic=WORKER, bucket_seconds=300):
    """records: (kafka_partition, kafka_offset, timestamp_ms, key, value); the rows by kind."""
    folder = P.Folder(topic, bucket_seconds)
    for record in records:
        folder.add(*record)
    rows = pa.Table.from_batches([folder.commit_batch(), folder.summary_batch()]).to_pylist()
    by_kind: dict[str, list[dict]] = {}
    for row in rows:
        by_kind.setdefault(row["kind"], []).append(row)
    return by_kind


def test_a_task_folds_each_key_to_its_last_write_with_commit_totals():
    a, b = key("c", {"t": "x"}), key("c", {"t": "y"})
    rows = fold(
        [
            (0, 0, 100, a, value({"offset": 1})),
            (1, 0, 150, b, value({"offset": 9})),
            (0, 1, 300, a, value({"offset": 2})),
            (0, 2, 200, a, value({"offset": 3})),  # an older timestamp than the write before
            (1, 1, 250, b, None),
        ]
    )
    keys = {row["key"]: row for row in rows[P.KEY]}
    assert (keys[a]["offset_json"], keys[a]["kafka_offset"], keys[a]["progress"]) == (
        '{"offset":3}',
        2,
        3.0,
    )
    assert (keys[a]["count"], keys[a]["first_commit_ms"], keys[a]["last_commit_ms"]) == (
        3,
        100,
        300,
    )
    assert (keys[a]["head_kafka_offset"], keys[a]["head_progress"]) == (0, 1.0)
    assert keys[b]["offset_json"] is None and keys[b]["progress"] is None  # tombstoned
    assert (keys[b]["count"], keys[b]["kafka_offset"], keys[b]["last_commit_ms"]) == (1, 1, 150)
    assert keys[a]["identity"] == '{"t":"x"}' and keys[a]["connector"] == "c"
    assert [row["kafka_offset"] for row in rows[P.COMMIT]] == [0, 0, 1, 2]
    assert rows[P.RECORDS][0]["count"] == 5


def test_a_task_finds_rewinds_but_not_a_restart_after_a_tombstone():
    k, reset = key("jdbc", {"table": "orders"}), key("jdbc", {"table": "items"})
    rows = fold(
        [
            (0, 0, 100, k, value({"incrementing": 10})),
            (0, 1, 200, k, value({"incrementing": 30})),
            (0, 2, 300, k, value({"incrementing": 20})),  # rewind
            (1, 0, 100, reset, value({"incrementing": 50})),
            (1, 1, 200, reset, None),
            (1, 2, 300, reset, value({"incrementing": 1})),  # after a reset: fine
            (0, 3, 400, k, value({"file": "no progress field"})),
            (0, 4, 500, k, value({"incrementing": 1})),  # the write before has no progress
        ]
    )
    assert [(r["kafka_offset"], r["from_progress"], r["progress"]) for r in rows[P.REWIND]] == [
        (2, 30.0, 20.0)
    ]


def test_malformed_records_are_counted_by_reason_and_never_folded():
    k = key("c", {"t": "x"})
    rows = fold(
        [
            (0, 0, 100, k, value({"offset": 5})),
            (0, 1, 200, k, b"not json"),  # skipped: neither the last write nor a rewind
            (0, 2, 300, k, value({"offset": 6})),
            (0, 3, 400, b"junk", b"{}"),
            (0, 4, 500, b"junk", b"{}"),
            (0, 5, 600, None, b"{}"),
        ]
    )
    assert rows[P.KEY][0]["offset_json"] == '{"offset":6}' and rows[P.KEY][0]["count"] == 2
    assert P.REWIND not in rows
    counts = {(r["connector"], r["reason"]): r["count"] for r in rows[P.MALFORMED]}
    assert counts == {("c", "value-not-json"): 1, (None, "key-not-json"): 2, (None, "key-null"): 1}
    assert all(r["example"].startswith("key=") for r in rows[P.MALFORMED])


def test_records_the_database_or_a_date_cannot_hold_are_counted_by_reason_and_never_folded():
    good = key("c", {"t": "x"})
    too_late = 253402300800000  # 10000-01-01
    rows = fold(
        [
            (0, 0, 100, good, value({"offset": 5})),
            (0, 1, too_late, good, value({"offset": 6})),
            (0, 2, -(2**63), good, None),  # not even a tombstone goes through
            (0, 3, 2**63 - 1, good, b"not json"),  # the timestamp is checked first
            (0, 4, 200, key("c\x00", {"t": "x"}), value({"offset": 1})),
            (0, 5, 200, key("c\udfff", {"t": "x"}), value({"offset": 1})),
            (0, 6, 200, key("c" * 250, {"t": "x"}), value({"offset": 1})),
            (0, 7, 200, key("c", {"t": "\ud800"}), value({"offset": 1})),
            (0, 8, 200, key("c", {"\x00": "x"}), value({"offset": 1})),
            (0, 9, 300, key("c", {"t": "y"}), value({"offset": "\ud800"})),
        ]
    )
    keys = {row["key"]: row for row in rows[P.KEY]}
    assert set(keys) == {good}
    assert keys[good]["offset_json"] == '{"offset":5}' and keys[good]["count"] == 1
    counts = {(r["connector"], r["reason"]): r["count"] for r in rows[P.MALFORMED]}
    assert counts == {
        ("c", "timestamp-out-of-range"): 3,
        (None, "key-connector-unstorable"): 3,
        (None, "key-partition-unstorable"): 2,
        ("c", "value-unstorable"): 1,
    }
    assert [row["timestamp_ms"] for row in rows[P.COMMIT]] == [100]


def test_commit_rows_come_in_bounded_batches_and_the_summary_last(monkeypatch):
    monkeypatch.setattr(P, "COMMITS_PER_BATCH", 2)
    k = key("c", {"t": "x"})
    lists = [[Message(0, i, i, k, value({"offset": i})) for i in range(j, j + 2)] for j in (0, 2)]
    batches = list(P.fold_messages(WORKER, 300, lists))
    kinds = [sorted(set(batch.column("kind").to_pylist())) for batch in batches]
    assert kinds == [[P.COMMIT], [P.COMMIT], [P.BUCKET, P.KEY, P.RECORDS]]
    assert all(batch.schema == P.SUMMARY_ARROW for batch in batches)
    assert list(P.fold_messages(WORKER, 300, [])) == []


def test_the_commit_rows_are_every_commit_of_the_history():
    records = random_records(1, 1500)
    folded = []
    for topic in (WORKER, OWN):
        messages = [Message(*r[1:]) for r in records if r[0] == topic]
        folded += pa.Table.from_batches(P.fold_messages(topic, 300, [messages])).to_pylist()
    found = [{n: row[n] for n in P.COMMIT_COLUMNS} for row in folded if row["kind"] == P.COMMIT]
    valid = [row for row in (reference_merge.parse(*r) for r in records) if row["reason"] is None]
    expected = reference_merge.commits(valid)
    assert expected and sorted(found, key=repr) == sorted(expected, key=repr)


def worker_records(seed: int, count: int) -> list[tuple]:
    """(kafka_partition, kafka_offset, timestamp_ms, key, value) of the worker topic only."""
    return [record[1:] for record in random_records(seed, count) if record[0] == WORKER]


def test_arrow_batches_of_records_fold_as_the_messages_do(monkeypatch):
    monkeypatch.setattr(P, "COMMITS_PER_BATCH", 50)
    records = worker_records(4, 600)
    expected = pa.Table.from_batches(
        P.fold_messages(WORKER, 300, [[Message(*r) for r in records]]), schema=P.SUMMARY_ARROW
    )
    table = pa.Table.from_batches(
        [kafka_source.raw_batch(WORKER, list(zip(*records, strict=True)))]
    )
    folded = P.fold_record_batches(WORKER, 300, table.to_batches(max_chunksize=70))
    assert expected.num_rows > 100
    assert pa.Table.from_batches(folded, schema=P.SUMMARY_ARROW).to_pylist() == expected.to_pylist()


def test_the_records_the_planner_kept_fold_in_spark_as_a_read_task_folds_them(spark, tmp_path):
    """`kafka_source.kept_records_frame`: the same rows as the read task of the same plan, and
    the same history files (same names: a task run again replaces them)."""
    import pyarrow.parquet as pq

    records = worker_records(5, 900)
    plan = {
        p: (min(r[1] for r in rs), max(r[1] for r in rs) + 1) for p, rs in by_partition(records)
    }
    plan[7] = (40, 40)  # nothing new: no part of the file names
    kept = kafka_source.kept_records_frame(
        spark, WORKER, plan, records, bucket_seconds=300, history_dir=str(tmp_path / "kept")
    )
    assert kept.rdd.getNumPartitions() == 1  # each partition's records in order, in one task
    read_task = kafka_source._history_written(
        P.fold_messages(WORKER, 300, [[Message(*r) for r in records]]),
        str(tmp_path / "read"),
        WORKER,
        [0, 1, 2],
    )
    expected = pa.Table.from_batches(read_task, schema=P.SUMMARY_ARROW).to_pylist()
    assert sorted(kept.toArrow().to_pylist(), key=repr) == sorted(expected, key=repr)
    files = sorted(p.relative_to(tmp_path / "kept") for p in (tmp_path / "kept").rglob("*.parquet"))
    assert files and files == sorted(
        p.relative_to(tmp_path / "read") for p in (tmp_path / "read").rglob("*.parquet")
    )
    for name in files:
        assert pq.read_table(tmp_path / "kept" / name) == pq.read_table(tmp_path / "read" / name)


def by_partition(records: list[tuple]) -> list[tuple[int, list[tuple]]]:
    found: dict[int, list[tuple]] = {}
    for record in records:
        found.setdefault(record[0], []).append(record)
    return sorted(found.items())


def test_a_key_whose_last_write_cannot_be_stored_says_so_until_a_newer_write_is_kept():
    a, b, c = key("c", {"t": "a"}), key("c", {"t": "b"}), key("c", {"t": "c"})
    odd = value({"offset": 7, "file": "\ud800"})
    rows = fold(
        [
            (0, 0, 100, a, value({"offset": 5})),
            (0, 1, 110, a, odd),  # a keeps offset 5, but the runtime reads this one
            (0, 2, 120, b, odd),
            (0, 3, 130, b, value({"offset": 6})),  # kept: b is current again
            (0, 4, 140, c, odd),  # c's only record of this read
        ]
    )
    marked = {
        (row["key_hash"], row["kafka_partition"], row["kafka_offset"]) for row in rows[P.UNSTORABLE]
    }
    assert marked == {
        (P._Key(a, "c", {"t": "a"}).key_hash, 0, 1),
        (P._Key(c, "c", {"t": "c"}).key_hash, 0, 4),
    }
    keys = {row["key"]: row["offset_json"] for row in rows[P.KEY]}
    assert keys == {a: '{"offset":5}', b: '{"offset":6}'}
