"""The read task's fold (offsets.spark.partials) and Spark's merge of the folds.

The fold's rules are unit-tested in plain Python; then, on a random mix of writes, rewinds,
tombstones, malformed records and key drift over two topics, Spark's merge of the folds must
equal the record-level transforms over the same records, for a full and an incremental read.
"""

import random
from collections import Counter

import pyarrow as pa
import pytest

from offsets.formats import jackson
from offsets.formats.murmur2 import java_partition
from offsets.spark import kafka_source
from offsets.spark import partials as P
from offsets.spark import transforms as T

WORKER = "connect-offsets"
OWN = "connect-offsets-eos"


def key(connector, partition):
    return jackson.dumps_key(connector, partition)


def value(offset):
    return jackson.dumps(offset)


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


class Message:
    """The five accessors of a confluent-kafka message that the fold reads."""

    def __init__(self, partition, offset, timestamp_ms, key, value):
        self._fields = (partition, offset, timestamp_ms, key, value)

    def partition(self):
        return self._fields[0]

    def offset(self):
        return self._fields[1]

    def timestamp(self):
        return (1, self._fields[2])

    def key(self):
        return self._fields[3]

    def value(self):
        return self._fields[4]


def test_commit_rows_come_in_bounded_batches_and_the_summary_last(monkeypatch):
    monkeypatch.setattr(P, "COMMITS_PER_BATCH", 2)
    k = key("c", {"t": "x"})
    lists = [[Message(0, i, i, k, value({"offset": i})) for i in range(j, j + 2)] for j in (0, 2)]
    batches = list(P.fold_messages(WORKER, 300, lists))
    kinds = [sorted(set(batch.column("kind").to_pylist())) for batch in batches]
    assert kinds == [[P.COMMIT], [P.COMMIT], [P.BUCKET, P.KEY, P.RECORDS]]
    assert all(batch.schema == P.SUMMARY_ARROW for batch in batches)
    assert list(P.fold_messages(WORKER, 300, [])) == []


def random_records(seed: int, count: int) -> list[tuple]:
    """(topic, kafka_partition, kafka_offset, timestamp_ms, key, value) in topic order."""
    rng = random.Random(seed)
    keys = [key(c, {"t": i}) for c in ("a", "b", "eos") for i in range(4)]
    keys.append(b'["a", {"t":0}]')  # the same logical partition as a's t=0: key drift
    progress: Counter = Counter()
    next_offset: Counter = Counter()
    records = []
    for step in range(count):
        k = rng.choice(keys)
        topic = OWN if k.startswith(b'["eos"') and rng.random() < 0.5 else WORKER
        roll = rng.random()
        if roll < 0.65:
            progress[k] += rng.randint(1, 5)
            v = value({"offset": progress[k]})
        elif roll < 0.75:
            progress[k] -= rng.randint(1, 20)  # a rewind
            v = value({"offset": progress[k]})
        elif roll < 0.83:
            v = None
        elif roll < 0.88:
            v = value({"file": "f"})  # no progress field
        elif roll < 0.94:
            v = rng.choice([b"not json", b"[1]", b"\xff\xfe", b'{"a":{"b":1}}'])
        else:
            k = rng.choice([b"junk", b'{"a":1}', None, b'["c",[1]]'])
            v = value({"offset": 1})
        # Now and then a key the database cannot store (without drawing on rng: the seeds'
        # other cases stay as they were).
        if step % 41 == 40:
            k = key("c\x00", {"t": "x"})
        elif step % 43 == 42:
            k = key("c", {"t": "\ud800"})
        partition = java_partition(k, 3) if k is not None else rng.randrange(3)
        timestamp = 1_000_000 + step * 1000 + rng.randint(-900, 900)
        slot = (topic, partition)
        records.append(
            (
                topic,
                partition,
                next_offset[slot],
                timestamp if step % 47 != 46 else 2**62,  # now and then after the year 9999
                k,
                v,
            )
        )
        next_offset[slot] += 1
    return records


def partials_frame(spark, records, bucket_seconds=300):
    """Fold the records like the source does: per topic, Kafka partitions split over tasks."""
    batches = []
    for topic in (WORKER, OWN):
        for task in ({0, 2}, {1}):
            messages = [Message(*r[1:]) for r in records if r[0] == topic and r[1] in task]
            batches += P.fold_messages(topic, bucket_seconds, [messages])
    table = pa.Table.from_batches(batches, schema=P.SUMMARY_ARROW)
    return spark.createDataFrame(table.to_pandas(), P.SUMMARY_SCHEMA)


def rows(frame, *columns):
    return sorted((tuple(row[c] for c in columns) for row in frame.collect()), key=repr)


@pytest.mark.parametrize("seed", [1, 2])
def test_merged_folds_equal_the_record_level_transforms(spark, seed):
    records = random_records(seed, 1500)
    parsed = T.parse_offset_records(spark.createDataFrame(records, kafka_source.SCHEMA))
    valid = T.valid_records(parsed)
    partials = partials_frame(spark, records)

    assert rows(T.merge_latest(partials), *T.STATE_COLUMNS) == rows(
        T.latest_by_key(valid), *T.STATE_COLUMNS
    )
    rewind_columns = T.merge_rewinds(partials).columns
    expected_rewinds = rows(T.rewinds(valid), *rewind_columns)
    assert expected_rewinds and rows(T.merge_rewinds(partials), *rewind_columns) == expected_rewinds
    assert rows(
        T.merge_commit_buckets(partials), "connector", "bucket_start_ms", "commits"
    ) == rows(T.commit_buckets(T.commits(valid), 300), "connector", "bucket_start_ms", "commits")
    malformed = ("topic", "connector", "reason", "count")
    assert rows(T.merge_malformed_counts(partials), *malformed) == rows(
        T.malformed_counts(parsed), *malformed
    )
    history = T.commits(valid).columns
    assert rows(T.commit_history(partials), *history) == rows(T.commits(valid), *history)
    assert rows(T.merge_records_read(partials), "topic", "count") == rows(
        parsed.groupBy("topic").count(), "topic", "count"
    )
    own_topics = spark.createDataFrame([("eos", OWN)], "connector string, own_topic string")
    drift = rows(
        T.key_drift(T.effective_offsets(T.merge_latest(partials), own_topics, WORKER)),
        "connector",
        "identity",
        "forms_count",
    )
    assert drift == [("a", '{"t":0}', 2)]


def test_merged_folds_over_new_records_and_the_previous_state_equal_a_full_read(spark):
    records = random_records(3, 1500)
    cut = 900
    parse = lambda rs: T.valid_records(  # noqa: E731
        T.parse_offset_records(spark.createDataFrame(rs, kafka_source.SCHEMA))
    )
    everything, before, after = parse(records), parse(records[:cut]), parse(records[cut:])
    previous = T.latest_by_key(before)
    partials = partials_frame(spark, records[cut:])

    assert rows(T.merge_latest(partials, previous), *T.STATE_COLUMNS) == rows(
        T.latest_by_key(everything), *T.STATE_COLUMNS
    )
    columns = T.rewinds(after).columns
    found = rows(T.rewinds(before), *columns) + rows(T.merge_rewinds(partials, previous), *columns)
    across = rows(T.rewinds(after, previous), *columns)
    assert sorted(found, key=repr) == rows(T.rewinds(everything), *columns)
    # Some rewinds are only visible against the previous state (their key's first new write).
    assert len(across) > len(rows(T.rewinds(after), *columns))


def dicts(rows_):
    return sorted((row if isinstance(row, dict) else row.asDict(True) for row in rows_), key=repr)


@pytest.mark.parametrize("incremental", [False, True])
def test_the_refreshs_one_merge_query_holds_what_each_merge_gives(spark, incremental):
    """`merge_results` chains the same SQL steps as the functions tested above, in one query."""
    records = random_records(1, 1500)
    cut = 900 if incremental else 0
    parse = lambda rs: T.valid_records(  # noqa: E731
        T.parse_offset_records(spark.createDataFrame(rs, kafka_source.SCHEMA))
    )
    previous = T.latest_by_key(parse(records[:cut])) if incremental else None
    partials = partials_frame(spark, records[cut:])
    own_topics = spark.createDataFrame([("eos", OWN)], "connector string, own_topic string")
    running = spark.createDataFrame([("a",), ("eos",), ("eos",)], "connector string")
    now_ms, threshold_ms = 2_600_000, 120_000

    def merged(read, **reading) -> dict[str, list[dict]]:
        frame = T.merge_results(
            read,
            previous,
            own_topics,
            running,
            worker_topic=WORKER,
            now_ms=now_ms,
            stall_after_ms=threshold_ms,
            **reading,
        )
        return T.collect_results(frame)

    results = merged(partials)

    effective = T.effective_offsets(T.merge_latest(partials, previous), own_topics, WORKER)
    latest = T.flag_stalls(effective, running, now_ms=now_ms, threshold_ms=threshold_ms)
    expected = {
        "latest": latest.collect(),
        "drift": T.key_drift(latest).collect(),
        "records": T.merge_records_read(partials).collect(),
        "rewinds": T.merge_rewinds(partials, previous).collect(),
        "buckets": T.merge_commit_buckets(partials).collect(),
        "malformed": T.merge_malformed_counts(partials).collect(),
    }
    assert results.keys() == expected.keys()
    for name, rows_ in expected.items():
        assert rows_, name  # the random records reach every result
        assert dicts(results[name]) == dicts(rows_), name
    stalled = [row for row in results["latest"] if row["stalled"]]
    assert stalled and {row["connector"] for row in stalled} <= {"a", "eos"}

    # Nothing read: only the latest offsets and the drift, from the previous state alone.
    nothing = merged(partials.where("false"), reading=False)
    assert set(nothing) <= {"latest", "drift"}
    if incremental:
        assert len(nothing["latest"]) == previous.count()


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
