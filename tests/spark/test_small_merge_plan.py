"""How Spark plans a small merge: in one partition, with no shuffle, however many read tasks.

A shuffle there costs a stage and a task per exchange (measured: 5-6 stages and 11-12 tasks,
0.9-4 s, against one task of 0.3-0.5 s). The plan is looked at without running it: the read is
planned (its Kafka ranges are options) but no broker is asked, and the cache is never computed,
as when the merge of a refresh is planned while its read still runs.
"""

import json

import pyarrow as pa
import pytest
from pyspark import StorageLevel
from pyspark.sql.pandas.types import to_arrow_schema

from offsets import tuning
from offsets.refresh import compute
from offsets.spark import kafka_source
from offsets.spark import transforms as T


def unread_kafka_frame(spark, tasks=1):
    # Port 9 (discard): nothing listens, and nothing must try, since nothing is run.
    return (
        spark.read.format(kafka_source.NAME)
        .option("topic", "connect-offsets")
        .option("kafka.settings", json.dumps({"bootstrap.servers": "127.0.0.1:9"}))
        .option("ranges", json.dumps({str(p): [0, 400] for p in range(25)}))
        .option("max_tasks", str(tasks))
        .option("decode", kafka_source.DECODE_SUMMARY)
        .load()
    )


def previous_table():
    row = {
        "topic": "connect-offsets",
        "key_hash": "ab",
        "key": b'["c",{"p":1}]',
        "connector": "c",
        "partition_json": '{"p":1}',
        "identity": '{"p":1}',
        "offset_json": '{"o":1}',
        "kafka_partition": 0,
        "kafka_offset": 1,
        "timestamp_ms": 1,
        "progress": 1.0,
        "commits": 1,
        "first_commit_ms": 1,
        "last_commit_ms": 1,
    }
    return pa.Table.from_pylist([row], schema=to_arrow_schema(T.STATE_SCHEMA))


def previous_state(spark):
    return spark.createDataFrame(previous_table(), T.STATE_SCHEMA)


def merge_inputs(spark):
    return compute.MergeInputs(
        spark=spark,
        previous_table=previous_table(),
        stored_keys=1,
        stored_rows=None,
        own_topics={"c": "c-offsets"},
        running=frozenset({"c"}),
    )


@pytest.mark.parametrize("route", ["one task", "SQL"])
@pytest.mark.parametrize("read_tasks", [1, 4])
def test_a_small_merge_is_planned_without_a_shuffle_before_its_read_is_cached(
    spark, read_tasks, route
):
    """Whether the read has one task (an incremental refresh) or several (a full one), and
    whether the merge is one Python task (offsets.spark.one_task_merge) or, past
    ONE_TASK_MERGE_MAX_KEYS, the SQL query of `merge_results`."""
    read = unread_kafka_frame(spark, tasks=read_tasks)
    inputs = merge_inputs(spark)
    options = {"worker_topic": "connect-offsets", "now_ms": 10**12, "stall_after_ms": 60_000}
    with compute.merge_frames(spark, read, inputs, small=True) as merging:
        results = merging.merge(inputs, one_task=route == "one task", **options)
        plan = results._jdf.queryExecution().executedPlan().toString()
        # The read keeps its tasks: the folds meet in one partition only after the cache.
        assert merging.read.rdd.getNumPartitions() == read_tasks
        assert results.rdd.getNumPartitions() == 1
    assert results.columns == ["latest", "drift", "records", "rewinds", "buckets", "malformed"]
    assert "Exchange" not in plan, plan
    assert "InMemoryTableScan" in plan, plan  # the merge reads the cache, not Kafka again
    # The settings are the small run's only inside the block.
    assert (
        spark.conf.get("spark.sql.defaultSizeInBytes")
        != tuning.SMALL_MERGE_CONF["spark.sql.defaultSizeInBytes"]
    )


def test_the_merge_leaves_a_persisted_inputs_cache_and_no_views_behind(spark):
    """A large run gives the merge its persisted read as itself (no coalesce). Dropping a
    temporary view through spark.catalog uncaches any cached plan equal to the view's, which
    would make the merge read Kafka a second time."""
    own = compute.string_frame(spark, {"connector": ["c"], "own_topic": ["c-offsets"]})
    running = compute.string_frame(spark, {"connector": ["c"]})
    views_before = {table.name for table in spark.catalog.listTables()}
    with compute.persisted(unread_kafka_frame(spark)) as partials:
        results = T.merge_results(
            partials,
            previous_state(spark),
            own,
            running,
            worker_topic="connect-offsets",
            now_ms=10**12,
            stall_after_ms=60_000,
        )
        latest = T.merge_latest(partials)
        assert partials.storageLevel != StorageLevel.NONE  # still cached
        for frame in (results, latest):
            plan = frame._jdf.queryExecution().executedPlan().toString()
            assert "InMemoryTableScan" in plan, plan
    assert {table.name for table in spark.catalog.listTables()} == views_before
