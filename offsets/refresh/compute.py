"""The Spark phase: fold the new records, merge them with the previous state, collect the results."""

import contextlib
import functools
import json
from collections.abc import Callable
from pathlib import Path

from django.conf import settings

from offsets import tuning
from offsets.models import Cluster
from offsets.refresh.inputs import MergeInputs, previous_table, remembered_row
from offsets.refresh.results import SourcePlan, SourceResults

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
    collected, changed = _read_and_merge(
        cluster, plan, inputs, reading_topics, now_ms=now_ms, run_dir=run_dir
    )
    results = SourceResults.collected(plan, collected)
    results.changed_keys = changed
    return results


def _read_and_merge(
    cluster: Cluster,
    plan: SourcePlan,
    inputs: MergeInputs,
    reading_topics: list[str],
    *,
    now_ms: int,
    run_dir: Path,
) -> tuple[dict[str, list[dict]], set[tuple[str, str]] | None]:
    """Fold the new records (read from Kafka, or those the planner kept) and merge them with
    the previous state: the collected results by name, and the keys whose rows can differ
    from the stored ones (None: any).

    When the planner kept every new record (a live loop's round), only the keys they touch
    are merged (`touched_groups`), the others carried (`carry_untouched`, or from the loop's
    memory: `carry_remembered`), and a merge of one task's size runs in this process
    (`merge_kept_here`). Otherwise one Spark job.
    """
    how = {"now_ms": now_ms, "stall_ms": _stall_ms(cluster), "run_dir": run_dir}
    remembered = inputs.remembered
    touched = None
    if inputs.previous_rows is not None or remembered is not None:
        touched = touched_groups(plan, reading_topics)
    if remembered is not None and touched is not None:
        return _merge_remembered(cluster, plan, inputs, reading_topics, touched, **how)
    previous = inputs.previous_rows
    if remembered is not None:
        previous = [remembered_row(row) for row in remembered.latest.values()]
    merged_rows, untouched = _split_previous(previous, touched)
    results = _merge(cluster, plan, inputs, reading_topics, merged_rows, **how)
    if untouched is None:
        return results, None
    carried = carry_untouched(
        untouched,
        inputs,
        worker_topic=cluster.offsets_topic,
        now_ms=now_ms,
        stall_ms=how["stall_ms"],
    )
    return results | {name: results[name] + carried[name] for name in carried}, None


def _stall_ms(cluster: Cluster) -> int:
    return settings.STALL_AFTER_FLUSH_INTERVALS * cluster.offset_flush_interval_ms


def _merge(
    cluster: Cluster,
    plan: SourcePlan,
    inputs: MergeInputs,
    reading_topics: list[str],
    merged_rows: list[tuple] | None,
    **how,
) -> dict[str, list[dict]]:
    """The new records' folds merged with `merged_rows`: in this process when the planner
    kept every record and the merge is one task's size, otherwise in Spark."""
    here = (
        merged_rows is not None
        and all(topic in plan.kept for topic in reading_topics)
        and tuning.merge_tasks(len(merged_rows) or plan.total_records()) == 1
    )
    merge = merge_kept_here if here else _spark_merge
    return merge(cluster, plan, inputs, reading_topics, merged_rows, **how)


def _merge_remembered(
    cluster: Cluster,
    plan: SourcePlan,
    inputs: MergeInputs,
    reading_topics: list[str],
    touched: set[tuple[str, str]],
    **how,
) -> tuple[dict[str, list[dict]], set[tuple[str, str]]]:
    """A live round from the loop's memory: the touched keys merged, the others carried as
    remembered with their stall flags judged again, their drift as remembered. Returns the
    results and the keys that can differ from the stored rows: those merged and those whose
    stall flag flipped."""
    remembered = inputs.remembered
    assert remembered is not None
    merged_rows, untouched = [], []
    for row in remembered.latest.values():
        if (row["connector"], row["identity"]) in touched:
            merged_rows.append(remembered_row(row))
        else:
            untouched.append(row)
    results = _merge(cluster, plan, inputs, reading_topics, merged_rows, **how)
    carried, flipped = carry_remembered(
        untouched, inputs.running, now_ms=how["now_ms"], stall_ms=how["stall_ms"]
    )
    drift = [row for row in remembered.drift if (row["connector"], row["identity"]) not in touched]
    changed = {(row["topic"], row["key_hash"]) for row in results["latest"]} | flipped
    whole = {"latest": results["latest"] + carried, "drift": results["drift"] + drift}
    return results | whole, changed


def carry_remembered(
    rows: list[dict], running: frozenset[str], *, now_ms: int, stall_ms: int
) -> tuple[list[dict], set[tuple[str, str]]]:
    """Remembered latest rows of keys no new record touched, their stall flags judged again
    (`merge.stall_flag`): the rows, a copy of each whose flag flipped, and those keys. Their
    effective value and drift stay: those change only with new records or other topics."""
    from offsets.spark.merge import stall_flag

    carried, flipped = [], set()
    for row in rows:
        stalled = stall_flag(row, running, now_ms=now_ms, threshold_ms=stall_ms)
        if stalled != row["stalled"]:
            # A copy: the memory stays what was saved until this round's save replaces it.
            row = dict(row, stalled=stalled)
            flipped.add((row["topic"], row["key_hash"]))
        carried.append(row)
    return carried, flipped


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


def _split_previous(previous: list[tuple] | None, touched: set[tuple[str, str]] | None):
    """The stored rows (STATE_COLUMNS tuples) to merge with the new records' folds (None:
    `inputs.previous_table`, for a full refresh) and those left out of it (None: none)."""
    if previous is None:
        return None, None
    if touched is None:
        return previous, None
    # STATE_COLUMNS: connector is the fourth, identity the sixth.
    merged = [row for row in previous if (row[3], row[5]) in touched]
    left = [row for row in previous if (row[3], row[5]) not in touched]
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
