"""The merge of the folds with the previous state (offsets.spark.merge).

On the random mix of writes, rewinds, tombstones, malformed records and key drift over two
topics that tests/support/records.py makes, for a full and an incremental read and for a refresh
with nothing new to read, the merge must give what the record-by-record reference model gives
(tests/support/reference_merge.py), over one partition or several; its rules are pinned on
hand-made rows in plain Python; and Spark must plan a small merge without a shuffle.
"""

import fnmatch
import json

import pyarrow as pa
import pytest
from pyspark.sql.pandas.types import to_arrow_schema

from offsets import tuning
from offsets.spark import kafka_source
from offsets.spark import merge as M
from offsets.spark import partials as P
from offsets.spark.schemas import RESULT_STRUCTS, STATE_SCHEMA, result_schema
from tests.support import reference_merge
from tests.support.records import OWN, WORKER, partials_frame, random_records

# The spark tier, whether or not a test asks for the session: these are the rules of the
# refresh's Spark job.
pytestmark = pytest.mark.spark

NOW_MS, THRESHOLD_MS = 2_600_000, 120_000
OWN_TOPICS, RUNNING = {"eos": OWN}, {"a", "eos"}


def dicts(rows):
    return sorted(rows, key=repr)


def without_examples(rows):
    return [{k: v for k, v in row.items() if k != "example"} for row in rows]


def previous_table(states: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(states, schema=to_arrow_schema(STATE_SCHEMA))


def merged(spark, partials, previous, *, keys=1, parallel_read=False):
    frame = M.merge_results(
        spark,
        partials,
        previous,
        OWN_TOPICS,
        RUNNING,
        keys=keys,
        parallel_read=parallel_read,
        worker_topic=WORKER,
        now_ms=NOW_MS,
        stall_after_ms=THRESHOLD_MS,
    )
    return frame, M.collect_results(frame)


def reference(records, earlier=()):
    return reference_merge.results(
        records,
        earlier,
        own_topics=OWN_TOPICS,
        running=RUNNING,
        worker_topic=WORKER,
        now_ms=NOW_MS,
        threshold_ms=THRESHOLD_MS,
    )


def previous_state(earlier):
    """The state a refresh of `earlier` stores (the reference's latest offsets)."""
    states = reference(earlier)["latest"] if earlier else []
    return previous_table([{n: s[n] for n in STATE_SCHEMA.names} for s in states])


@pytest.mark.parametrize(("seed", "incremental"), [(1, False), (2, False), (1, True), (3, True)])
def test_the_merge_gives_the_reference_models_results(spark, seed, incremental):
    records = random_records(seed, 1500)
    cut = 900 if incremental else 0
    partials = partials_frame(spark, records[cut:])
    previous = previous_state(records[:cut]) if incremental else None

    frame, found = merged(spark, partials, previous)
    expected = reference(records[cut:], records[:cut])

    assert frame.schema == result_schema(reading=True)
    assert found.keys() == expected.keys() == set(RESULT_STRUCTS)
    for name in expected:
        assert expected[name], name  # the random records reach every result
        assert dicts(without_examples(found[name])) == dicts(expected[name]), name
    # A group's example is one of its records' examples.
    examples = {row["example"] for row in partials.where(f"kind = '{P.MALFORMED}'").collect()}
    assert {row["example"] for row in found["malformed"]} <= examples
    assert any(row["stalled"] for row in found["latest"])
    if incremental:  # rewinds only visible against the previous state are found too
        assert len(found["rewinds"]) > len(reference(records[cut:])["rewinds"])

    # Nothing read: only the latest offsets and the drift, from the previous state alone.
    _, nothing = merged(spark, None, previous)
    assert set(nothing) == {"latest", "drift"}
    assert dicts(nothing["latest"]) == dicts(reference(records[:cut])["latest"])


@pytest.mark.parametrize("tasks", [3, 7])
def test_a_merge_over_several_partitions_gives_one_partitions_results(spark, monkeypatch, tasks):
    """Every row a result row depends on lands in one partition (merge.PARTITION_COLUMNS),
    the rows without a connector (malformed keys, records read) too."""
    records = random_records(5, 1500)
    partials = partials_frame(spark, records[700:])
    previous = previous_state(records[:700])
    assert partials.where("connector IS NULL").count() > 4  # several tasks' records rows
    _, one = merged(spark, partials, previous)
    monkeypatch.setattr(tuning, "KEYS_PER_MERGE_TASK", 10)
    frame, spread = merged(spark, partials, previous, keys=10 * tasks)
    assert frame.rdd.getNumPartitions() == tasks
    assert spread.keys() == one.keys()
    for name in one:
        assert one[name], name
        assert dicts(spread[name]) == dicts(one[name]), name


def test_the_records_read_are_summed_per_topic_when_collected(spark):
    rows = [{"records": {"topic": WORKER, "count": n}} for n in (3, 4)]
    rows.append({"records": {"topic": OWN, "count": 5}})
    frame = spark.createDataFrame(
        [{name: row.get(name) for name in RESULT_STRUCTS} for row in rows],
        result_schema(reading=True),
    )
    found = M.collect_results(frame)
    assert dicts(found["records"]) == dicts(
        [{"topic": WORKER, "count": 7}, {"topic": OWN, "count": 5}]
    )
    assert found["latest"] == []


def unread_kafka_frame(spark, tasks):
    # Port 9 (discard): nothing listens, and nothing must try, since nothing is run.
    return (
        spark.read.format(kafka_source.NAME)
        .option("topic", WORKER)
        .option("kafka.settings", json.dumps({"bootstrap.servers": "127.0.0.1:9"}))
        .option("ranges", json.dumps({str(p): [0, 400] for p in range(25)}))
        .option("max_tasks", str(tasks))
        .load()
    )


def executed_plan(frame) -> str:
    return frame._jdf.queryExecution().executedPlan().toString()


def test_a_small_merge_runs_in_the_reads_one_task(spark):
    """No shuffle: a shuffle costs a stage and a task per exchange, more than such a merge."""
    row = reference_merge.latest_by_key(
        [reference_merge.parse(WORKER, 0, 1, 1, b'["c",{}]', b"{}")]
    )
    frame = M.merge_results(
        spark,
        unread_kafka_frame(spark, 1),
        previous_table(row),
        {},
        {"c"},
        keys=tuning.KEYS_PER_MERGE_TASK,
        parallel_read=False,
        worker_topic=WORKER,
        now_ms=NOW_MS,
        stall_after_ms=THRESHOLD_MS,
    )
    assert frame.rdd.getNumPartitions() == 1
    assert "Exchange" not in executed_plan(frame)


@pytest.mark.parametrize(
    ("keys", "exchange"),
    [
        (1, "Exchange SinglePartition"),
        (
            tuning.KEYS_PER_MERGE_TASK * 2 + 1,
            "Exchange hashpartitioning(connector#*, identity#*, 3)",
        ),
    ],
)
def test_a_parallel_read_keeps_its_tasks_and_a_large_merge_spreads(spark, keys, exchange):
    """Looked at without running it: Spark's adaptive execution runs a shuffle's first stage
    to tell how many partitions come out of it."""
    frame = M.merge_results(
        spark,
        unread_kafka_frame(spark, 4),
        None,
        {},
        set(),
        keys=keys,
        parallel_read=True,
        worker_topic=WORKER,
        now_ms=NOW_MS,
        stall_after_ms=THRESHOLD_MS,
    )
    plan = executed_plan(frame)
    assert fnmatch.fnmatch(plan, f"*{exchange}, REPARTITION_BY_NUM*"), plan


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
    assert set(merge(rows)) == set(RESULT_STRUCTS)


def test_merging_only_the_touched_keys_and_carrying_the_others_gives_the_reference(spark):
    """A live loop's round: the planner kept every new record, so only the stored keys those
    records touch go through Spark (refresh.compute.touched_groups), and every other key's
    results follow from its stored state alone (refresh.compute.carry_untouched). Together
    they are what the reference model gives for the whole."""
    from types import SimpleNamespace

    from offsets.refresh import compute
    from offsets.spark.schemas import STATE_COLUMNS

    records = random_records(3, 1500)
    earlier = records[:900]
    # New records of connector "a" only (its drifting key form too), in topic order.
    new = [r for r in records[900:] if r[4] is not None and r[4].startswith(b'["a"')]
    touched = {P.key_group(r[4]) for r in new} - {None}
    states = [{n: s[n] for n in STATE_SCHEMA.names} for s in reference(earlier)["latest"]]
    inside = [s for s in states if (s["connector"], s["identity"]) in touched]
    outside = [s for s in states if (s["connector"], s["identity"]) not in touched]
    assert inside and outside

    _, found = merged(spark, partials_frame(spark, new), previous_table(inside))
    inputs = SimpleNamespace(own_topics=OWN_TOPICS, running=frozenset(RUNNING))
    carried = compute.carry_untouched(
        [tuple(s[name] for name in STATE_COLUMNS) for s in outside],
        inputs,
        worker_topic=WORKER,
        now_ms=NOW_MS,
        stall_ms=THRESHOLD_MS,
    )
    expected = reference(new, earlier)
    assert set(carried) == {"latest", "drift"}
    for name in expected:
        both = found[name] + carried.get(name, [])
        assert dicts(without_examples(both)) == dicts(without_examples(expected[name])), name
    assert any(s["stalled"] for s in carried["latest"])  # judged again with the time


def test_a_one_task_merge_of_kept_records_runs_here_with_the_same_results(tmp_path):
    """A live loop's round whose merge Spark would run as one task runs in the refresh's
    process (refresh.compute.merge_kept_here): the planner's kept records folded as a read
    task folds them, merged with the touched keys' stored state, and the other keys carried.
    Together they are what the reference model gives, and the commits go to the history."""
    from types import SimpleNamespace

    import pyarrow.parquet as pq

    from offsets.refresh import compute
    from offsets.spark.schemas import STATE_COLUMNS

    records = random_records(7, 1500)
    earlier = records[:900]
    # Connector "a"'s new records (its drifting key form too) and the malformed ones.
    new = [r for r in records[900:] if r[4] is None or not r[4].startswith((b'["b"', b'["eos"'))]
    touched = {P.key_group(r[4]) for r in new} - {None}
    states = [{n: s[n] for n in STATE_SCHEMA.names} for s in reference(earlier)["latest"]]
    inside = [
        tuple(s[n] for n in STATE_COLUMNS)
        for s in states
        if (s["connector"], s["identity"]) in touched
    ]
    outside = [
        tuple(s[n] for n in STATE_COLUMNS)
        for s in states
        if (s["connector"], s["identity"]) not in touched
    ]
    assert outside, "some stored keys are left untouched"
    plans, kept = {}, {}
    for topic, partition, offset, timestamp, key, value in new:
        start, _ = plans.setdefault(topic, {}).get(partition, (offset, offset))
        plans[topic][partition] = (start, offset + 1)
        kept.setdefault(topic, []).append((partition, offset, timestamp, key, value))
    inputs = SimpleNamespace(own_topics=OWN_TOPICS, running=frozenset(RUNNING))
    stall = {"now_ms": NOW_MS, "stall_ms": THRESHOLD_MS}

    found = compute.merge_kept_here(
        SimpleNamespace(offsets_topic=WORKER),
        SimpleNamespace(plans=plans, kept=kept),
        inputs,
        sorted(plans),
        inside,
        run_dir=tmp_path,
        **stall,
    )
    carried = compute.carry_untouched(outside, inputs, worker_topic=WORKER, **stall)
    expected = reference(new, earlier)
    assert found.keys() == set(RESULT_STRUCTS)
    for name in expected:
        both = found[name] + carried.get(name, [])
        assert dicts(without_examples(both)) == dicts(without_examples(expected[name])), name
    written = sum(pq.read_table(path).num_rows for path in tmp_path.rglob("*.parquet"))
    commits = sum(row["commits"] for row in expected["buckets"])
    assert written == commits > 0
