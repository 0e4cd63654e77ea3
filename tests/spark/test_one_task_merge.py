"""The merge in one task (offsets.spark.one_task_merge) gives what the SQL merge gives.

On the random mix of writes, rewinds, tombstones, malformed records and key drift over two
topics of test_partials, for a full and an incremental read and for a refresh with nothing new
to read, both routes must return the same rows; and the rules of `merge_folds` are pinned on
hand-made rows, in plain Python.
"""

import pytest

from offsets.spark import kafka_source
from offsets.spark import one_task_merge as M
from offsets.spark import partials as P
from offsets.spark import transforms as T
from tests.spark.test_partials import OWN, WORKER, dicts, partials_frame, random_records

NOW_MS, THRESHOLD_MS = 2_600_000, 120_000


def both_routes(spark, partials, previous, *, reading=True):
    own_topics, running = {"eos": OWN}, {"a", "eos"}
    sql = T.merge_results(
        partials,
        previous,
        spark.createDataFrame(list(own_topics.items()), "connector string, own_topic string"),
        spark.createDataFrame([(name,) for name in running], "connector string"),
        worker_topic=WORKER,
        now_ms=NOW_MS,
        stall_after_ms=THRESHOLD_MS,
        reading=reading,
    )
    one_task = M.merge_in_one_task(
        partials,
        previous,
        own_topics,
        running,
        worker_topic=WORKER,
        now_ms=NOW_MS,
        stall_after_ms=THRESHOLD_MS,
        reading=reading,
    )
    return sql, one_task


def without_examples(rows):
    return [{k: v for k, v in row.items() if k != "example"} for row in rows]


@pytest.mark.parametrize(("seed", "incremental"), [(1, False), (2, False), (1, True), (3, True)])
def test_the_one_task_merge_gives_the_sql_merges_rows(spark, seed, incremental):
    records = random_records(seed, 1500)
    cut = 900 if incremental else 0
    parse = lambda rs: T.valid_records(  # noqa: E731
        T.parse_offset_records(spark.createDataFrame(rs, kafka_source.SCHEMA))
    )
    previous = T.latest_by_key(parse(records[:cut])) if incremental else None
    partials = partials_frame(spark, records[cut:])

    sql, one_task = both_routes(spark, partials, previous)
    expected, found = T.collect_results(sql), T.collect_results(one_task)

    assert found.keys() == expected.keys() == set(M.RESULT_STRUCTS)
    for name in expected:
        assert expected[name], name  # the random records reach every result
        assert dicts(without_examples(found[name])) == dicts(without_examples(expected[name]))
    # The SQL's first(example) is any one of a group's examples; the one here is one of them.
    examples = {row["example"] for row in partials.where(f"kind = '{P.MALFORMED}'").collect()}
    assert {row["example"] for row in found["malformed"]} <= examples
    if incremental:  # rewinds only visible against the previous state are found too
        assert any(row["kafka_offset"] is not None for row in found["rewinds"])

    sql, one_task = both_routes(spark, partials.where("false"), previous, reading=False)
    nothing, expected = T.collect_results(one_task), T.collect_results(sql)
    assert dicts(nothing.get("latest", [])) == dicts(expected.get("latest", []))
    assert set(nothing) <= {"latest", "drift"}
    if incremental:
        assert len(nothing["latest"]) == previous.count()


def test_both_routes_give_the_same_columns(spark):
    partials = partials_frame(spark, random_records(1, 200))
    sql, one_task = both_routes(spark, partials, None)
    assert one_task.schema == M.RESULT_SCHEMA

    def shape(data_type):  # names and types, nullability aside
        return data_type.simpleString()

    assert shape(sql.schema) == shape(M.RESULT_SCHEMA)


def key_row(topic, connector, key_hash, kafka_offset, offset_json, **values):
    row = dict.fromkeys(P.SUMMARY_SCHEMA.names)
    row.update(
        kind=P.KEY,
        topic=topic,
        connector=connector,
        key_hash=key_hash,
        key=f'["{connector}",{{"p":"{key_hash}"}}]'.encode(),
        identity=f'{{"p":"{key_hash[0]}"}}',
        partition_json=f'{{"p":"{key_hash}"}}',
        kafka_partition=0,
        kafka_offset=kafka_offset,
        timestamp_ms=kafka_offset,
        offset_json=offset_json,
        progress=None,
        count=1,
        first_commit_ms=kafka_offset,
        last_commit_ms=kafka_offset,
        head_kafka_offset=kafka_offset,
        head_timestamp_ms=kafka_offset,
        head_tombstone=offset_json is None,
    )
    row.update(values)
    return row


def merge(rows, **options):
    options = {"worker_topic": WORKER, "now_ms": 1_000, "stall_after_ms": 100} | options
    return M.merge_folds(rows, {"c": OWN}, {"c"}, **options)


def by_hash(latest):
    return {(row["topic"], row["key_hash"]): row for row in latest}


def test_the_last_write_wins_and_totals_add_up_over_the_previous_state():
    rows = [
        key_row(WORKER, "c", "k", 7, '{"o":7}', count=3, first_commit_ms=5, last_commit_ms=7),
        key_row(WORKER, "c", "k", 4, '{"o":4}', kind=M.PREVIOUS, count=2, first_commit_ms=1),
    ]
    (state,) = merge(rows)["latest"]
    assert (state["offset_json"], state["commits"]) == ('{"o":7}', 5)
    assert (state["first_commit_ms"], state["last_commit_ms"]) == (1, 7)


def test_a_connectors_own_topic_wins_and_other_topics_and_tombstones_never_count():
    rows = [
        key_row(WORKER, "c", "k", 9, '{"o":9}'),
        key_row(OWN, "c", "k", 1, '{"o":1}'),
        key_row("other-offsets", "c", "m", 5, '{"o":5}'),
        key_row(WORKER, "c", "t", 6, None),
    ]
    latest = by_hash(merge(rows)["latest"])
    assert latest[(OWN, "k")]["effective"] and not latest[(WORKER, "k")]["effective"]
    assert not latest[("other-offsets", "m")]["effective"]
    assert not latest[(WORKER, "t")]["effective"]


def test_stalls_are_flagged_on_live_values_of_running_connectors_only():
    rows = [
        key_row(WORKER, "c", "old", 800, '{"o":1}'),
        key_row(WORKER, "c", "new", 950, '{"o":1}'),
        key_row(WORKER, "idle", "o2", 800, '{"o":1}'),
        key_row(WORKER, "c", "unknown", 1, '{"o":1}', last_commit_ms=None),
    ]
    latest = {(r["connector"], r["key_hash"]): r["stalled"] for r in merge(rows)["latest"]}
    assert latest == {("c", "old"): True, ("c", "new"): False, ("idle", "o2"): False} | {
        ("c", "unknown"): None  # SQL's null: true but for an unknown last commit time
    }


def test_key_drift_lists_each_live_form_newest_first():
    rows = [
        key_row(WORKER, "c", "a1", 1, '{"o":1}'),
        key_row(WORKER, "c", "a2", 3, '{"o":3}'),
        key_row(WORKER, "c", "b1", 2, '{"o":2}'),
    ]
    (drift,) = merge(rows)["drift"]
    assert (drift["identity"], drift["forms_count"]) == ('{"p":"a"}', 2)
    assert [form["key_hash"] for form in drift["forms"]] == ["a2", "a1"]
    assert drift["forms"][0]["key_text"] == '["c",{"p":"a2"}]'


def test_a_first_new_write_below_the_previous_value_is_a_rewind():
    previous = key_row(WORKER, "c", "k", 4, '{"o":40}', kind=M.PREVIOUS, progress=40.0)
    lower = key_row(WORKER, "c", "k", 9, '{"o":5}', head_progress=5.0, head_kafka_offset=8)
    higher = dict(lower, head_progress=41.0)
    after_tombstone = dict(lower, head_tombstone=True)
    assert merge([previous, higher])["rewinds"] == []
    assert merge([previous, after_tombstone])["rewinds"] == []
    (rewind,) = merge([previous, lower])["rewinds"]
    assert (rewind["from_progress"], rewind["to_progress"], rewind["kafka_offset"]) == (
        40.0,
        5.0,
        8,
    )


def test_nothing_read_gives_the_latest_offsets_and_drift_only():
    rows = [key_row(WORKER, "c", "k", 4, '{"o":4}', kind=M.PREVIOUS)]
    assert set(merge(rows, reading=False)) == {"latest", "drift"}
    assert set(merge(rows)) == set(M.RESULT_STRUCTS)


@pytest.mark.parametrize(("seed", "cut"), [(1, 900), (3, 900), (2, 0)])
def test_records_folded_in_the_merges_own_task_give_the_two_step_rows_and_history(
    spark, tmp_path, seed, cut
):
    """`fold_and_merge_in_one_task` (the planner's kept records folded in the merge's task)
    gives what `merge_in_one_task` over `kept_records_frame` gives, and writes the same
    history files; with no previous state too (its task must still run)."""
    import pyarrow.parquet as pq
    from pyspark.sql.pandas.types import to_arrow_schema

    records = random_records(seed, 1500)
    parse = lambda rs: T.valid_records(  # noqa: E731
        T.parse_offset_records(spark.createDataFrame(rs, kafka_source.SCHEMA))
    )
    previous = T.latest_by_key(parse(records[:cut])).select(*T.STATE_COLUMNS) if cut else None
    previous_table = (
        previous.toArrow()
        if previous is not None
        else to_arrow_schema(T.STATE_SCHEMA).empty_table()
    )
    kept = {}
    for topic in (WORKER, OWN):
        rows = [r[1:] for r in records[cut:] if r[0] == topic]
        offsets = {p: [r[1] for r in rows if r[0] == p] for p in {r[0] for r in rows}}
        kept[topic] = ({p: (min(o), max(o) + 1) for p, o in offsets.items()}, rows)
    options = {
        "worker_topic": WORKER,
        "now_ms": NOW_MS,
        "stall_after_ms": THRESHOLD_MS,
    }
    own_topics, running = {"eos": OWN}, {"a", "eos"}
    frames = [
        kafka_source.kept_records_frame(
            spark, topic, plan, rows, bucket_seconds=300, history_dir=str(tmp_path / "two")
        )
        for topic, (plan, rows) in kept.items()
    ]
    two_step = M.merge_in_one_task(
        frames[0].unionByName(frames[1]), previous, own_topics, running, **options
    )
    fused = M.fold_and_merge_in_one_task(
        spark,
        {
            topic: (plan, kafka_source.kept_records_table(topic, rows))
            for topic, (plan, rows) in kept.items()
        },
        previous_table,
        own_topics,
        running,
        bucket_seconds=300,
        history_dir=str(tmp_path / "fused"),
        **options,
    )
    expected, found = T.collect_results(two_step), T.collect_results(fused)
    assert found.keys() == expected.keys() == set(M.RESULT_STRUCTS)
    for name in expected:
        assert expected[name], name
        assert dicts(without_examples(found[name])) == dicts(without_examples(expected[name]))
    files = sorted(p.relative_to(tmp_path / "two") for p in (tmp_path / "two").rglob("*.parquet"))
    assert files and files == sorted(
        p.relative_to(tmp_path / "fused") for p in (tmp_path / "fused").rglob("*.parquet")
    )
    for name in files:
        assert pq.read_table(tmp_path / "two" / name) == pq.read_table(tmp_path / "fused" / name)
