"""The Spark phase: fold the new records, merge them with the previous state, collect the results."""

import contextlib
import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from django.conf import settings

from offsets import tuning
from offsets.formats.connectors import Connector
from offsets.models import Cluster, SourceOffset
from offsets.refresh.results import SourcePlan, SourceResults, StoredRows
from offsets.refresh.store import SOURCE_OFFSET_FIELDS

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


@dataclass
class MergeInputs:
    """The merge's inputs that need no Kafka read (`merge_inputs`)."""

    spark: object
    # The stored per-key state (STATE_SCHEMA) as an Arrow table; None for a full refresh, or
    # when `previous_rows` holds it instead (built once the merge knows which rows it needs).
    previous_table: object | None
    stored_keys: int  # how many keys the last run stored (a full refresh counts them too)
    # The stored SourceOffset rows the previous state was read from, as the save compares
    # them (`StoredRows`); None for a full refresh, whose save reads them itself.
    stored_rows: StoredRows | None
    own_topics: dict[str, str]  # connector -> its own offsets topic (KIP-618)
    running: frozenset[str]  # connectors that commit offsets now
    # The stored per-key state as STATE_COLUMNS tuples (an incremental refresh).
    previous_rows: list[tuple] | None = None


def merge_inputs(
    spark, cluster: Cluster, connectors: list[Connector], *, full: bool
) -> MergeInputs:
    """Start Spark if needed and build the merge's inputs from the database and the configs.

    Built while the snapshot is planned (`offsets.refresh.plan.read_state_and_plan`): that is mostly waiting on
    the broker, and the merge's inputs were ~0.3-0.5 s of its building, which is what an
    incremental refresh's merge waited for. The previous state stays an Arrow table until the
    merge makes its frame.
    """
    spark = spark or start_spark()
    if full:
        rows = stored_rows = None
        stored_keys = SourceOffset.objects.filter(cluster=cluster).count()
    else:
        rows, stored_rows = previous_rows(cluster)
        stored_keys = len(rows)
    return MergeInputs(
        spark=spark,
        previous_table=None,
        stored_keys=stored_keys,
        stored_rows=stored_rows,
        own_topics={c.name: c.own_offsets_topic for c in connectors if c.own_offsets_topic},
        running=frozenset(c.name for c in connectors if c.consuming),
        previous_rows=rows,
    )


def start_spark():
    """The process's Spark session, started now if it is not yet: a refresh starts Spark only
    once Kafka has answered, so that one of an unreachable cluster fails in seconds."""
    from offsets.spark.session import get_spark

    try:
        return get_spark(settings.SPARK_MASTER, settings.SPARK_CONF)
    except Exception as exc:
        raise RuntimeError(f"Spark could not start: {exc}") from exc


def previous_state(cluster: Cluster):
    """Return the stored per-key state as an Arrow table (STATE_SCHEMA) and as the stored
    rows the save compares its results with (`StoredRows`)."""
    rows, stored = previous_rows(cluster)
    return previous_table(rows), stored


def previous_rows(cluster: Cluster) -> tuple[list[tuple], StoredRows]:
    """Return the stored per-key state as STATE_COLUMNS tuples, and as the stored rows the
    save compares its results with (`StoredRows`).

    The save reuses the rows read here rather than reading them again: only a refresh writes
    SourceOffset rows, and the save's lock and read-position check stop it when another
    refresh saved since this one began.
    """
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
                _epoch_ms(field["last_commit_at"]) or 0,
                field["progress"],
                field["commits"],
                _epoch_ms(field["first_commit_at"]),
                _epoch_ms(field["last_commit_at"]),
            )
        )
    return rows, stored


def previous_table(rows: list[tuple]):
    """STATE_COLUMNS tuples as an Arrow table (STATE_SCHEMA): a frame with no pandas
    conversion (`merge.previous_frame`)."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    from offsets.spark.schemas import STATE_COLUMNS, STATE_SCHEMA

    columns = zip(*rows, strict=True) if rows else ([] for _ in STATE_COLUMNS)
    return pa.table(
        {name: list(column) for name, column in zip(STATE_COLUMNS, columns, strict=True)},
        schema=to_arrow_schema(STATE_SCHEMA),
    )


def _epoch_ms(moment: datetime | None) -> int | None:
    return None if moment is None else int(moment.timestamp() * 1000)


def compute_sources(
    cluster: Cluster,
    plan: SourcePlan,
    inputs: MergeInputs,
    *,
    now_ms: int,
    run_dir: Path,
    phase: Progress,
) -> SourceResults:
    """Fold the new records and merge them with the previous state: the refresh's results.

    The read tasks fold what they read (offsets.spark.partials) and write every commit to the
    run's history files themselves (offsets.history.files): Spark gets only the partial
    results per key, and merges them with the previous state (offsets.spark.merge), so the
    commits (a row each) never pass through Spark. Topics with nothing new get no read at all
    (not even an empty frame: each of its partitions would cost a task).
    """
    reading_topics = plan.reading_topics()
    if reading_topics:
        phase(
            "reading, folding and writing the commit history (Parquet); "
            "merging the latest offsets, key drift, rewinds, buckets and malformed records"
        )
    else:
        phase("merging the latest offsets, key drift and stalls")
    collected = _read_and_merge(
        cluster, plan, inputs, reading_topics, now_ms=now_ms, run_dir=run_dir
    )
    return SourceResults.collected(plan, collected)


def _read_and_merge(
    cluster: Cluster,
    plan: SourcePlan,
    inputs: MergeInputs,
    reading_topics: list[str],
    *,
    now_ms: int,
    run_dir: Path,
) -> dict[str, list[dict]]:
    """Fold the new records (read from Kafka, or those the planner kept) and merge them with
    the previous state: the collected results by name.

    When the planner kept every new record (a live loop's round), only the keys they touch
    are merged (`touched_groups`), the others carried (`carry_untouched`), and a merge of one
    task's size runs in this process (`merge_kept_here`). Otherwise one Spark job.
    """
    stall_after_ms = settings.STALL_AFTER_FLUSH_INTERVALS * cluster.offset_flush_interval_ms
    touched = None
    if inputs.previous_rows is not None:
        touched = touched_groups(plan, reading_topics)
    merged_rows, untouched = _split_previous(inputs, touched)
    here = touched is not None and tuning.merge_tasks(len(merged_rows) or plan.total_records()) == 1
    results = (merge_kept_here if here else _spark_merge)(
        cluster,
        plan,
        inputs,
        reading_topics,
        merged_rows,
        now_ms=now_ms,
        stall_ms=stall_after_ms,
        run_dir=run_dir,
    )
    if untouched is None:
        return results
    carried = carry_untouched(
        untouched,
        inputs,
        worker_topic=cluster.offsets_topic,
        now_ms=now_ms,
        stall_ms=stall_after_ms,
    )
    return results | {name: results[name] + carried[name] for name in carried}


def merge_kept_here(
    cluster: Cluster,
    plan: SourcePlan,
    inputs: MergeInputs,
    reading_topics: list[str],
    merged_rows: list[tuple],
    *,
    now_ms: int,
    stall_ms: int,
    run_dir: Path,
) -> dict[str, list[dict]]:
    """The merge of one Spark task, in this process: the planner's kept records folded as a
    read task folds them (`kafka_source.fold_kept`, which writes their commit history too),
    and `merge.merge_folds` over those folds and the touched keys' previous state
    (`merged_rows`, STATE_COLUMNS tuples), as the task's partition would hold them.

    The same rules over the same rows as in Spark, without a Spark job's fixed cost (its
    scheduling, a Python worker, the rows' trips through the JVM), which was most of a live
    round's cost: 0.15 of the 0.26 s of CPU of a round at ten connectors.
    """
    from offsets.spark import merge
    from offsets.spark.kafka_source import fold_kept
    from offsets.spark.schemas import STATE_COLUMNS

    rows = [
        row
        for topic in reading_topics
        for row in fold_kept(
            topic,
            plan.plans[topic],
            plan.kept[topic],
            bucket_seconds=settings.COMMIT_BUCKET_SECONDS,
            history_dir=str(run_dir),
        )
    ]
    rows += [merge.previous_row(dict(zip(STATE_COLUMNS, row, strict=True))) for row in merged_rows]
    return merge.merge_folds(
        rows,
        dict(inputs.own_topics),
        set(inputs.running),
        worker_topic=cluster.offsets_topic,
        now_ms=now_ms,
        stall_after_ms=stall_ms,
        reading=bool(reading_topics),
    )


def touched_groups(plan: SourcePlan, reading_topics: list[str]) -> set[tuple[str, str]] | None:
    """The (connector, identity) groups the new records touch, when the planner kept all of
    them (a live loop's round); None when some are read from Kafka by Spark's tasks."""
    from offsets.spark.partials import key_group

    if any(topic not in plan.kept for topic in reading_topics):
        return None
    groups = {key_group(record[3]) for topic in reading_topics for record in plan.kept[topic]}
    groups.discard(None)
    return groups


def _split_previous(inputs: MergeInputs, touched: set[tuple[str, str]] | None):
    """The stored rows to merge with the new records' folds (None: `inputs.previous_table`,
    for a full refresh) and those left out of it (None: none left out)."""
    if inputs.previous_rows is None:
        return None, None
    if touched is None:
        return inputs.previous_rows, None
    # STATE_COLUMNS: connector is the fourth, identity the sixth.
    merged = [row for row in inputs.previous_rows if (row[3], row[5]) in touched]
    left = [row for row in inputs.previous_rows if (row[3], row[5]) not in touched]
    return merged, left


def carry_untouched(
    rows: list[tuple], inputs: MergeInputs, *, worker_topic: str, now_ms: int, stall_ms: int
) -> dict[str, list[dict]]:
    """The latest offsets and drift of stored keys no new record touched: the merge's own
    rules (`merge.merge_folds`) over their previous state alone. Their effective value and
    drift stay as they were unless the connectors' topics changed; their stall flags move
    with the time, so these are judged again every round."""
    from offsets.spark import merge
    from offsets.spark.schemas import STATE_COLUMNS

    states = (merge.previous_row(dict(zip(STATE_COLUMNS, row, strict=True))) for row in rows)
    return merge.merge_folds(
        states,
        dict(inputs.own_topics),
        set(inputs.running),
        worker_topic=worker_topic,
        now_ms=now_ms,
        stall_after_ms=stall_ms,
        reading=False,
    )


def _spark_merge(
    cluster: Cluster,
    plan: SourcePlan,
    inputs: MergeInputs,
    reading_topics: list[str],
    merged_rows: list[tuple] | None,
    *,
    now_ms: int,
    stall_ms: int,
    run_dir: Path,
) -> dict[str, list[dict]]:
    """The new records' folds merged with the stored rows `merged_rows` (None: the inputs'
    previous table) in one Spark job, collected by result name."""
    from pyspark.sql import DataFrame

    from offsets.spark import merge

    spark = inputs.spark
    previous = inputs.previous_table if merged_rows is None else previous_table(merged_rows)
    frames = _folded_reads(spark, cluster, plan, reading_topics, run_dir=run_dir)
    read_tasks = sum(_read_tasks(plan.plans[t]) for t in reading_topics if t not in plan.kept)
    # The keys merged; with none stored, the records to read count instead.
    keys = (previous.num_rows if previous is not None else inputs.stored_keys) or (
        plan.total_records()
    )
    # A merge of one task runs without generated code (tuning.NO_CODEGEN_CONF); the settings
    # are read when the query is planned, which collecting it does.
    one_task = tuning.merge_tasks(keys) == 1
    with spark_conf(spark, tuning.NO_CODEGEN_CONF if one_task else {}):
        results = merge.merge_results(
            spark,
            functools.reduce(DataFrame.unionByName, frames) if frames else None,
            previous,
            inputs.own_topics,
            inputs.running,
            keys=keys,
            parallel_read=read_tasks > 1,
            worker_topic=cluster.offsets_topic,
            now_ms=now_ms,
            stall_after_ms=stall_ms,
        )
        return merge.collect_results(results)


def _folded_reads(
    spark, cluster: Cluster, plan: SourcePlan, reading_topics: list[str], *, run_dir: Path
) -> list:
    """A frame of the folds (partials.SUMMARY_SCHEMA) of each topic's new records: the
    records the planner kept, or a read of Kafka whose tasks fold what they read."""
    from offsets.spark.kafka_source import NAME, kept_records_frame

    kafka_json = json.dumps(cluster.kafka_settings())
    return [
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
        .option("bucket_seconds", str(settings.COMMIT_BUCKET_SECONDS))
        # A broker gone mid-read fails the run after this long, not after 30 s.
        .option("timeout", str(settings.KAFKA_READ_TIMEOUT))
        .option("history_dir", str(run_dir))
        .load()
        for topic in reading_topics
    ]


def _read_tasks(plan: dict[int, tuple[int, int]]) -> int:
    records = sum(end - start for start, end in plan.values())
    return tuning.read_tasks(records, settings.SPARK_MAX_READ_TASKS)
