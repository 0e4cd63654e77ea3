"""The Spark phase: fold the new records, merge them with the previous state, collect the results."""

import contextlib
import functools
import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from django.conf import settings

from offsets import tuning
from offsets.models import Cluster, SourceOffset
from offsets.refresh.results import SourcePlan, SourceResults, StoredRows
from offsets.refresh.store import SOURCE_OFFSET_FIELDS
from offsets.services.connect_state import ConnectorSummary

Progress = Callable[[str], None]


@contextlib.contextmanager
def spark_conf(spark, conf: dict[str, str]):
    """Set session settings for the queries planned inside the block, then restore them."""
    before = {key: spark.conf.get(key, None) for key in conf}
    for key, value in conf.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


@contextlib.contextmanager
def persisted(frame):
    """Cache a DataFrame for the block (persist), and drop the cache after it (unpersist)."""
    frame = frame.persist()
    try:
        yield frame
    finally:
        frame.unpersist()


@dataclass
class MergeFrames:
    """What `merge_results` merges, ready for it (`merge_frames`)."""

    read: object  # the folded read, cached: `session.fill` it to read Kafka, a task per part
    partials: object  # the same for the merge (one partition for a small merge)
    previous: object | None
    small: bool

    def connectors(self, inputs: "MergeInputs") -> tuple[object, object]:
        """The connectors' own topics (connector, own_topic) and the running ones (connector)
        as frames, for the SQL merge: built only for it (the one-task merge takes the values
        themselves), in one partition for a small merge like every other input."""
        spark = inputs.spark
        own = string_frame(
            spark,
            {"connector": list(inputs.own_topics), "own_topic": list(inputs.own_topics.values())},
        )
        running = string_frame(spark, {"connector": sorted(inputs.running)})
        return (own.coalesce(1), running.coalesce(1)) if self.small else (own, running)

    def merge(self, inputs: "MergeInputs", *, one_task: bool, **options):
        """The merge's results (`transforms.RESULT_SCHEMA`): one Python task
        (offsets.spark.one_task_merge) or the SQL query of `transforms.merge_results`."""
        from offsets.spark import transforms as T
        from offsets.spark.one_task_merge import merge_in_one_task

        if one_task:
            return merge_in_one_task(
                self.partials, self.previous, inputs.own_topics, inputs.running, **options
            )
        own_topics, running = self.connectors(inputs)
        return T.merge_results(self.partials, self.previous, own_topics, running, **options)


@contextlib.contextmanager
def merge_frames(spark, partials, inputs: "MergeInputs", *, small: bool):
    """Cache the folded read for the block, and yield it with the merge's other inputs.

    A small merge (tuning.SMALL_MERGE_MAX_KEYS) has every input in one partition that Spark knows is
    one (SinglePartition): every grouping, window and join then runs inside one task, with no
    shuffle and no extra stage. It and the read are planned under tuning.SMALL_MERGE_CONF (set
    first: persist() plans the cached read). The read itself keeps its tasks (one per 100,000
    records): a full refresh reads in parallel, and only its folds, a row or so per key,
    meet in one partition.
    """
    if not small:
        with persisted(partials) as cached:
            yield MergeFrames(cached, cached, inputs.previous, small=False)
        return
    previous = inputs.previous
    with spark_conf(spark, tuning.SMALL_MERGE_CONF), persisted(partials) as cached:
        # coalesce over the cache: a scan of a cached frame does not tell Spark how it is
        # partitioned, and each join and grouping over it then planned a shuffle (6 stages
        # where 1 does).
        yield MergeFrames(
            cached,
            cached.coalesce(1),
            previous.coalesce(1) if previous is not None else None,
            small=True,
        )


@dataclass
class MergeInputs:
    """The merge's inputs that need no Kafka read (`merge_inputs`)."""

    spark: object
    # The stored per-key state (STATE_SCHEMA) as an Arrow table; None for a full refresh.
    previous_table: object | None
    stored_keys: int  # how many keys the last run stored (a full refresh counts them too)
    # The stored SourceOffset rows the previous state was read from, as the save compares
    # them (`StoredRows`); None for a full refresh, whose save reads them itself.
    stored_rows: StoredRows | None
    own_topics: dict[str, str]  # connector -> its own offsets topic (KIP-618)
    running: frozenset[str]  # connectors that commit offsets now

    @functools.cached_property
    def previous(self):
        """`previous_table` as a STATE_SCHEMA frame (None for a full refresh), built when a
        merge over a Spark read first asks for it.

        The one-task fold and merge of the planner's records, an incremental refresh's usual
        route, takes the table itself: built up front beside the planning, the frame was JVM
        work that route never used.
        """
        from offsets.spark.transforms import STATE_SCHEMA

        if self.previous_table is None:
            return None
        return self.spark.createDataFrame(self.previous_table, STATE_SCHEMA)


def merge_inputs(
    spark, cluster: Cluster, connectors: list[ConnectorSummary], *, full: bool
) -> MergeInputs:
    """Start Spark if needed and build the merge's inputs from the database and the configs.

    Built while the snapshot is planned (`offsets.refresh.plan.read_state_and_plan`): that is mostly waiting on
    the broker, and the merge's inputs were ~0.3-0.5 s of its building, which is what an
    incremental refresh's merge waited for. Spark frames are built when a route uses them
    (`MergeInputs.previous`, and the SQL merge's two small connector frames,
    `MergeFrames.connectors`): the one-task merge, an incremental refresh's, takes the
    values themselves. A frame of the previous state costs ~0.02-0.03 s.
    """
    from offsets.spark.session import get_spark

    spark = spark or get_spark(settings.SPARK_MASTER, settings.SPARK_CONF)
    if full:
        table = stored_rows = None
        stored_keys = SourceOffset.objects.filter(cluster=cluster).count()
    else:
        table, stored_rows = previous_state(cluster)
        stored_keys = table.num_rows
    return MergeInputs(
        spark=spark,
        previous_table=table,
        stored_keys=stored_keys,
        stored_rows=stored_rows,
        own_topics={c.name: c.own_offsets_topic for c in connectors if c.own_offsets_topic},
        running=frozenset(c.name for c in connectors if c.consuming),
    )


def previous_state(cluster: Cluster):
    """Return the stored per-key state as an Arrow table (STATE_SCHEMA) and as the stored
    rows the save compares its results with (`StoredRows`).

    An Arrow table, for a frame of one partition and no pandas conversion
    (`MergeInputs.previous`; through pandas, a few thousand rows were split over every core,
    a task each in every stage of the merge).

    The save reuses the rows read here rather than read them again (~0.03 s of an incremental
    refresh of 2,000 keys): only a refresh writes SourceOffset rows, and the save's lock and
    read-position check stop it when another refresh saved since this one began.
    """
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    from offsets.spark.transforms import STATE_COLUMNS, STATE_SCHEMA

    def ms(moment: datetime | None) -> int | None:
        return None if moment is None else int(moment.timestamp() * 1000)

    # values_list, not model instances: decoding the JSON columns nobody reads here cost more
    # than the query.
    stored: StoredRows = {}
    rows = []
    for pk, topic, key_hash, key, *values in SourceOffset.objects.filter(
        cluster=cluster
    ).values_list("pk", "topic", "key_hash", "key_bytes", *SOURCE_OFFSET_FIELDS):
        stored[(topic, key_hash)] = (pk, values)
        field = dict(zip(SOURCE_OFFSET_FIELDS, values, strict=True))
        rows.append(
            (
                topic,
                key_hash,
                bytes(key),
                field["connector"],
                field["partition_text"],
                field["identity"],
                field["offset_text"],
                field["kafka_partition"],
                field["kafka_offset"],
                ms(field["last_commit_at"]) or 0,
                field["progress"],
                field["commits"],
                ms(field["first_commit_at"]),
                ms(field["last_commit_at"]),
            )
        )
    columns = zip(*rows, strict=True) if rows else ([] for _ in STATE_COLUMNS)
    table = pa.table(
        {name: list(column) for name, column in zip(STATE_COLUMNS, columns, strict=True)},
        schema=to_arrow_schema(STATE_SCHEMA),
    )
    return table, stored


def string_frame(spark, columns: dict[str, list[str]]):
    """A small DataFrame of string columns.

    From Arrow, not from a list of tuples: PySpark ships those to a Python worker to unpickle,
    a Python task in every query that reads the frame.
    """
    import pyarrow as pa

    table = pa.table({name: pa.array(values, pa.string()) for name, values in columns.items()})
    return spark.createDataFrame(table)


def compute_sources(
    cluster: Cluster,
    plan: SourcePlan,
    inputs: MergeInputs,
    *,
    now_ms: int,
    run_dir: Path,
    phase: Progress,
) -> SourceResults:
    from offsets.spark import transforms as T
    from offsets.spark.kafka_source import kept_records_table
    from offsets.spark.one_task_merge import fold_and_merge_in_one_task

    spark = inputs.spark
    # The read tasks fold what they read (offsets.spark.partials) and write every commit to
    # the run's history files themselves (offsets.spark.history_files): Spark gets only the
    # partial results per key, and merges them below: the commits (a row each) never pass
    # through Spark's cache or its Parquet writer. A topic whose new records the planner kept
    # (`plan.kept`) is folded from those, in one task, with no Kafka read. Topics with nothing new get no read
    # at all (not even an empty frame: each of its partitions would cost a task in every
    # stage below).
    reading_topics = plan.reading_topics()
    keys = inputs.stored_keys or plan.total_records()
    one_task = keys <= tuning.ONE_TASK_MERGE_MAX_KEYS
    options = {
        "worker_topic": cluster.offsets_topic,
        "now_ms": now_ms,
        "stall_after_ms": settings.STALL_AFTER_FLUSH_INTERVALS * cluster.offset_flush_interval_ms,
    }
    if (
        reading_topics
        and one_task
        and inputs.previous_table is not None
        and all(topic in plan.kept for topic in reading_topics)
    ):
        # Every new record was kept by the planner, and the merge is one task: that task folds
        # them too, one Spark job with one Python stage (a cached fold and a merge job after
        # it were ~0.35-0.4 s more of the benchmark's incremental refresh; the fold as a frame
        # of its own in the same task ~0.13 s more).
        phase(
            f"folding the {sum(len(plan.kept[t]) for t in reading_topics):,} new records "
            "the planner read and writing the commit history (Parquet); merging the latest "
            "offsets, key drift, rewinds, buckets and malformed records"
        )
        with spark_conf(spark, tuning.NO_CODEGEN_CONF):
            results = fold_and_merge_in_one_task(
                spark,
                {
                    topic: (plan.plans[topic], kept_records_table(topic, plan.kept[topic]))
                    for topic in reading_topics
                },
                inputs.previous_table,
                inputs.own_topics,
                inputs.running,
                bucket_seconds=settings.COMMIT_BUCKET_SECONDS,
                history_dir=str(run_dir),
                **options,
            )
            collected = T.collect_results(results)
    else:
        collected = _read_and_merge(
            cluster,
            plan,
            inputs,
            reading_topics,
            small=keys <= tuning.SMALL_MERGE_MAX_KEYS,
            one_task=one_task,
            run_dir=run_dir,
            phase=phase,
            **options,
        )
    return SourceResults.collected(plan, collected)


def _read_and_merge(
    cluster: Cluster,
    plan: SourcePlan,
    inputs: MergeInputs,
    reading_topics: list[str],
    *,
    small: bool,
    one_task: bool,
    run_dir: Path,
    phase: Progress,
    **options,
) -> dict[str, list[dict]]:
    """Read and fold the new records in Spark tasks (or fold those the planner kept), cache
    the folds, and merge them with the previous state: the collected results by name."""
    from pyspark.sql import DataFrame

    from offsets.spark import transforms as T
    from offsets.spark.kafka_source import DECODE_SUMMARY, NAME, kept_records_frame
    from offsets.spark.partials import SUMMARY_SCHEMA
    from offsets.spark.session import fill

    spark = inputs.spark
    kafka_json = json.dumps(cluster.kafka_settings())
    frames = [
        kept_records_frame(
            spark,
            topic,
            plan.plans[topic],
            plan.kept[topic],
            bucket_seconds=settings.COMMIT_BUCKET_SECONDS,
            history_dir=str(run_dir),
        )
        if topic in plan.kept
        else spark.read.format(NAME)
        .option("topic", topic)
        .option("kafka.settings", kafka_json)
        .option("ranges", json.dumps({str(p): list(r) for p, r in plan.plans[topic].items()}))
        .option("max_tasks", str(_read_tasks(plan.plans[topic])))
        .option("decode", DECODE_SUMMARY)
        .option("bucket_seconds", str(settings.COMMIT_BUCKET_SECONDS))
        # A broker gone mid-read fails the run after this long, not after 30 s.
        .option("timeout", str(settings.KAFKA_READ_TIMEOUT))
        .option("history_dir", str(run_dir))
        .load()
        for topic in reading_topics
    ]
    reading = bool(frames)
    partials = (
        functools.reduce(DataFrame.unionByName, frames)
        if frames
        else spark.createDataFrame([], SUMMARY_SCHEMA)
    )
    # On the way out the pool waits for the read, then the cache is dropped.
    with (
        merge_frames(spark, partials, inputs, small=small) as merging,
        ThreadPoolExecutor(max_workers=1) as pool,
    ):
        if reading:
            phase(
                "reading, folding and writing the commit history (Parquet); "
                "merging the latest offsets, key drift, rewinds, buckets and malformed records"
            )
        else:
            phase("merging the latest offsets, key drift and stalls")
        # The read (a job that fills the cache, writing the history on the way) starts now,
        # and the merge below is built while it runs: Spark computes each cached partition
        # once (a task that needs a partition another task is computing waits for it), so
        # Kafka is read once, and the merge's building overlaps the read.
        read = pool.submit(fill, merging.read) if reading else None
        results = merging.merge(inputs, one_task=one_task, reading=reading, **options)
        collected = T.collect_results(results)
        if read is not None:
            read.result()
    return collected


def _read_tasks(plan: dict[int, tuple[int, int]]) -> int:
    records = sum(end - start for start, end in plan.values())
    return tuning.read_tasks(records, settings.SPARK_MAX_READ_TASKS)
