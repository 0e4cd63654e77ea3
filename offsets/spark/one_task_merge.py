"""The merge of a small refresh in one Spark task: `transforms.merge_results` in plain Python.

`transforms.merge_results` states the merge of the read tasks' folds (offsets.spark.partials)
with the previous state as one SQL query. For an incremental refresh that query was most of
the refresh's time while it had almost nothing to do: Spark's analyser and optimiser took
1.5-2.5 s to plan it (measured with its query-planning tracker; no single rule
dominates, it is the query's size: five CTEs over one relation, three joins, two windows and
six unions), and its one task 0.7-1.0 s more to sort a few thousand rows with interpreted
orderings. Planned here as `mapInArrow` over one partition, the same merge is a plan of four
operators, and the task runs `merge_folds` over the rows in a Python worker.

So a small merge (tuning.ONE_TASK_MERGE_MAX_KEYS: the whole merge fits one task's memory) runs
here, and a large one keeps the SQL query, whose groupings spread over the executors. Both
give the same rows (tests/spark/test_one_task_merge.py checks them against each other).
`merge_folds` is pure Python: no Spark is needed to run or test it.
"""

import itertools
from collections import defaultdict
from collections.abc import Iterable, Iterator

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DoubleType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from offsets.spark import partials as P
from offsets.spark.transforms import REWIND_COLUMNS, STATE_COLUMNS, STATE_SCHEMA

# The previous state's rows (transforms.STATE_SCHEMA) travel with the folds, as summary rows of
# this kind: `count` holds their `commits`, and the head_* columns are null.
PREVIOUS = "previous"


def _state(row: dict) -> dict:
    """A KEY or PREVIOUS row as STATE_COLUMNS (`_key_rows_sql`: `count` is the commits)."""
    return {name: row["count" if name == "commits" else name] for name in STATE_COLUMNS}


def _least(a, b):
    """SQL's min() of two values: nulls are ignored."""
    return b if a is None else a if b is None else min(a, b)


def _greatest(a, b):
    return b if a is None else a if b is None else max(a, b)


def merge_states(rows: Iterable[dict]) -> list[dict]:
    """KEY and PREVIOUS rows reduced to one state per (topic, key): the write with the highest
    Kafka offset, commits summed, the first and last commit times (`_merge_states_sql`)."""
    merged: dict[tuple[str, str], dict] = {}
    for row in rows:
        slot = (row["topic"], row["key_hash"])
        state = merged.get(slot)
        if state is None:
            merged[slot] = _state(row)
            continue
        totals = (
            state["commits"] + row["count"],
            _least(state["first_commit_ms"], row["first_commit_ms"]),
            _greatest(state["last_commit_ms"], row["last_commit_ms"]),
        )
        if row["kafka_offset"] > state["kafka_offset"]:
            state = merged[slot] = _state(row)
        state["commits"], state["first_commit_ms"], state["last_commit_ms"] = totals
    return list(merged.values())


def mark_effective(
    states: list[dict], own_topics: dict[str, str], *, worker_topic: str
) -> list[dict]:
    """Set `effective` on each state (`_effective_sql`, transforms.effective_offsets): of a
    connector's live values for one key, its own topic's wins over the worker topic's; a value
    in any other topic, or a tombstone, is never the one the runtime reads."""

    def rank(state: dict) -> int | None:
        if state["offset_json"] is None:
            return None
        if state["topic"] == own_topics.get(state["connector"]):
            return 0
        if state["topic"] == worker_topic:
            return 1
        return None

    best: dict[tuple[str, str], tuple[int, dict]] = {}
    for state in states:
        state["effective"] = False
        place = rank(state)
        if place is None:
            continue
        slot = (state["connector"], state["key_hash"])
        if slot not in best or place < best[slot][0]:
            best[slot] = (place, state)
    for _, state in best.values():
        state["effective"] = True
    return states


def flag_stalls(
    states: list[dict], running: set[str], *, now_ms: int, threshold_ms: int
) -> list[dict]:
    """Set `stalled` (`_stalls_sql`): a live value of a running connector whose last commit is
    older than the threshold. Null, as in SQL, when it would be true but for an unknown last
    commit time."""
    for state in states:
        if state["connector"] in running and state["effective"]:
            last = state["last_commit_ms"]
            state["stalled"] = None if last is None else now_ms - last > threshold_ms
        else:
            state["stalled"] = False
    return states


def _descending(form: dict) -> tuple:
    # Spark orders structs field by field, a null before any value; descending reverses that.
    return tuple((value is not None, value) if value is not None else (False,) for value in form)


def key_drift(latest: list[dict]) -> list[dict]:
    """Logical partitions with more than one live key byte form (`_drift_sql`)."""
    forms: dict[tuple[str, str], list[tuple]] = defaultdict(list)
    for state in latest:
        if state["effective"]:
            forms[(state["connector"], state["identity"])].append(
                (
                    state["last_commit_ms"],
                    state["topic"],
                    state["key_hash"],
                    bytes(state["key"]).decode("utf-8", "replace"),
                    state["offset_json"],
                )
            )
    names = ("last_commit_ms", "topic", "key_hash", "key_text", "offset_json")
    return [
        {
            "connector": connector,
            "identity": identity,
            "forms_count": len(found),
            "forms": [
                dict(zip(names, form, strict=True))
                for form in sorted(found, key=_descending, reverse=True)
            ],
        }
        for (connector, identity), found in forms.items()
        if len(found) > 1
    ]


def rewinds(rows: list[dict], previous: dict[tuple[str, str], dict]) -> list[dict]:
    """The rewinds the tasks found, and each key's first new write that goes below its last
    value of the previous state (`_rewinds_sql`)."""
    found = []
    for row in rows:
        if row["kind"] == P.REWIND:
            found.append(
                {
                    name: row["progress" if name == "to_progress" else name]
                    for name in REWIND_COLUMNS
                }
            )
        elif row["kind"] == P.KEY:
            before = previous.get((row["topic"], row["key_hash"]))
            if (
                before is None
                or row["head_tombstone"] is not False
                or before["offset_json"] is None
                or row["head_progress"] is None
                or before["progress"] is None
                or not row["head_progress"] < before["progress"]
            ):
                continue
            found.append(
                {
                    "connector": row["connector"],
                    "topic": row["topic"],
                    "key_hash": row["key_hash"],
                    "partition_json": row["partition_json"],
                    "kafka_partition": row["kafka_partition"],
                    "kafka_offset": row["head_kafka_offset"],
                    "timestamp_ms": row["head_timestamp_ms"],
                    "from_progress": before["progress"],
                    "to_progress": row["head_progress"],
                }
            )
    return found


def _sums(rows: list[dict], kind: str, columns: tuple[str, ...]) -> dict[tuple, list]:
    """Rows of one kind grouped by `columns`: [sum of count, first example]."""
    sums: dict[tuple, list] = {}
    for row in rows:
        if row["kind"] == kind:
            slot = tuple(row[name] for name in columns)
            total = sums.setdefault(slot, [0, row["example"]])
            total[0] += row["count"]
    return sums


def merge_folds(
    rows: Iterable[dict],
    own_topics: dict[str, str],
    running: set[str],
    *,
    worker_topic: str,
    now_ms: int,
    stall_after_ms: int,
    reading: bool = True,
) -> dict[str, list[dict]]:
    """`transforms.merge_results` then `collect_results`: each result by name, as lists of dicts.

    `rows` are summary rows (partials.SUMMARY_SCHEMA) of the read tasks and of the previous
    state (kind PREVIOUS); commit rows are ignored. Without `reading` only the latest offsets
    and the drift are computed, as in the SQL.
    """
    rows = [row for row in rows if row["kind"] != P.COMMIT]
    states = [row for row in rows if row["kind"] in (P.KEY, PREVIOUS)]
    latest = flag_stalls(
        mark_effective(merge_states(states), own_topics, worker_topic=worker_topic),
        running,
        now_ms=now_ms,
        threshold_ms=stall_after_ms,
    )
    results = {"latest": latest, "drift": key_drift(latest)}  # UNREAD_RESULTS
    if not reading:
        return results
    previous = {(row["topic"], row["key_hash"]): row for row in states if row["kind"] == PREVIOUS}
    results["records"] = [
        {"topic": topic, "count": count}
        for (topic,), (count, _) in _sums(rows, P.RECORDS, ("topic",)).items()
    ]
    results["rewinds"] = rewinds(rows, previous)
    results["buckets"] = [
        {"connector": connector, "bucket_start_ms": start, "commits": count}
        for (connector, start), (count, _) in _sums(
            rows, P.BUCKET, ("connector", "timestamp_ms")
        ).items()
    ]
    results["malformed"] = [
        {"topic": topic, "connector": connector, "reason": reason, "count": count, "example": ex}
        for (topic, connector, reason), (count, ex) in _sums(
            rows, P.MALFORMED, ("topic", "connector", "reason")
        ).items()
    ]
    return results


# What `merge_results` yields: one struct column per result, a row holding one of them. The
# SQL route's schema must be the same (tests/spark/test_one_task_merge.py).
_FORM = StructType(
    [
        StructField("last_commit_ms", LongType()),
        StructField("topic", StringType()),
        StructField("key_hash", StringType()),
        StructField("key_text", StringType()),
        StructField("offset_json", StringType()),
    ]
)
RESULT_STRUCTS = {
    "latest": StructType(
        [
            *(StructField(field.name, field.dataType) for field in STATE_SCHEMA.fields),
            StructField("effective", BooleanType()),
            StructField("stalled", BooleanType()),
        ]
    ),
    "drift": StructType(
        [
            StructField("connector", StringType()),
            StructField("identity", StringType()),
            StructField("forms_count", LongType()),
            StructField("forms", ArrayType(_FORM)),
        ]
    ),
    "records": StructType([StructField("topic", StringType()), StructField("count", LongType())]),
    "rewinds": StructType(
        [
            StructField(name, P.SUMMARY_SCHEMA[name].dataType)
            if name in P.SUMMARY_SCHEMA.names
            else StructField(name, DoubleType())
            for name in REWIND_COLUMNS
        ]
    ),
    "buckets": StructType(
        [
            StructField("connector", StringType()),
            StructField("bucket_start_ms", LongType()),
            StructField("commits", LongType()),
        ]
    ),
    "malformed": StructType(
        [
            StructField("topic", StringType()),
            StructField("connector", StringType()),
            StructField("reason", StringType()),
            StructField("count", LongType()),
            StructField("example", StringType()),
        ]
    ),
}
# Without a read, only the first two (`merge_folds`).
UNREAD_RESULTS = ("latest", "drift")


def result_schema(*, reading: bool) -> StructType:
    names = RESULT_STRUCTS if reading else UNREAD_RESULTS
    return StructType([StructField(name, RESULT_STRUCTS[name]) for name in names])


RESULT_SCHEMA = result_schema(reading=True)
RESULT_ROWS_PER_BATCH = 10_000


def result_rows(results: dict[str, list[dict]]) -> Iterator[dict]:
    """Each result row in its own column of a `result_schema` row (the others null)."""
    for name, found in results.items():
        for row in found:
            yield {column: row if column == name else None for column in results}


def _result_batches(results: dict[str, list[dict]], arrow: pa.Schema) -> Iterator[pa.RecordBatch]:
    chunk: list[dict] = []
    for row in result_rows(results):
        chunk.append(row)
        if len(chunk) == RESULT_ROWS_PER_BATCH:
            yield pa.RecordBatch.from_pylist(chunk, schema=arrow)
            chunk = []
    if chunk:
        yield pa.RecordBatch.from_pylist(chunk, schema=arrow)


def merge_in_one_task(
    partials: DataFrame,
    previous: DataFrame | None,
    own_topics: dict[str, str],
    running: set[str],
    *,
    worker_topic: str,
    now_ms: int,
    stall_after_ms: int,
    reading: bool = True,
) -> DataFrame:
    """`transforms.merge_results`, computed by `merge_folds` in one task (see the module's
    docstring): the same arguments, but the connectors' own topics and the running
    connectors as plain values, which travel with the task."""
    frame = partials
    if previous is not None:
        frame = frame.unionByName(
            previous.withColumnRenamed("commits", "count").withColumn("kind", F.lit(PREVIOUS)),
            allowMissingColumns=True,
        )
    running = set(running)
    own_topics = dict(own_topics)
    schema = result_schema(reading=reading)
    arrow = to_arrow_schema(schema)

    def merge(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        rows = (row for batch in batches for row in batch.to_pylist())
        results = merge_folds(
            rows,
            own_topics,
            running,
            worker_topic=worker_topic,
            now_ms=now_ms,
            stall_after_ms=stall_after_ms,
            reading=reading,
        )
        yield from _result_batches(results, arrow)

    return frame.coalesce(1).mapInArrow(merge, schema)


def previous_rows(previous: pa.Table) -> Iterator[dict]:
    """The previous state (transforms.STATE_SCHEMA) as the PREVIOUS summary rows that
    `merge_in_one_task` makes of it (`count` holds the commits; other columns null)."""
    empty = dict.fromkeys(P.SUMMARY_SCHEMA.names)
    for row in previous.to_pylist():
        row["count"] = row.pop("commits")
        yield {**empty, **row, "kind": PREVIOUS}


def fold_and_merge_in_one_task(
    spark,
    kept: dict[str, tuple[dict[int, tuple[int, int]], pa.Table]],
    previous: pa.Table,
    own_topics: dict[str, str],
    running: set[str],
    *,
    bucket_seconds: int,
    history_dir: str | None,
    worker_topic: str,
    now_ms: int,
    stall_after_ms: int,
) -> DataFrame:
    """`merge_in_one_task` over the folds of records the planner kept, folded in the merge's
    own task. `kept` maps each topic to its plan and its kept records (as
    `kafka_source.kept_records_table` gives them); `previous` is the previous state as an
    Arrow table (transforms.STATE_SCHEMA).

    The records and the previous state travel with the task, as they would as DataFrames
    built from them (Spark broadcasts a task over 1 MB), and the task writes the history
    files a read task of each plan would. Built as DataFrames, they were two more frames
    to build and plan and a second Python stage in the task (the fold's, its rows sent back
    through the JVM to the merge's): ~0.13 s of the benchmark's incremental refresh, whose
    whole Spark part is ~0.4-0.5 s.
    """
    from offsets.spark.kafka_source import fold_kept_batches

    running = set(running)
    own_topics = dict(own_topics)
    schema = result_schema(reading=True)
    arrow = to_arrow_schema(schema)

    def fold_and_merge(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for _ in batches:  # the one row that makes the task
            pass
        folds = (
            row
            for topic, (plan, records) in kept.items()
            for batch in fold_kept_batches(
                topic,
                plan,
                iter(records.to_batches()),
                bucket_seconds=bucket_seconds,
                history_dir=history_dir,
            )
            for row in batch.to_pylist()
        )
        results = merge_folds(
            itertools.chain(folds, previous_rows(previous)),
            own_topics,
            running,
            worker_topic=worker_topic,
            now_ms=now_ms,
            stall_after_ms=stall_after_ms,
        )
        yield from _result_batches(results, arrow)

    return spark.range(0, 1, 1, numPartitions=1).mapInArrow(fold_and_merge, schema)
