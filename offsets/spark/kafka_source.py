"""A PySpark Python data source that reads and folds an offsets topic as a consistent snapshot.

    spark.read.format("kafka-snapshot")
        .option("topic", "connect-offsets")
        .option("kafka.settings", json.dumps({"bootstrap.servers": "...", ...}))
        .option("ranges", json.dumps({"0": [start, end], ...}))   # optional: planned here
        .option("max_tasks", "8")
        .option("bucket_seconds", "300")
        .option("history_dir", "/path/to/run")   # optional: where the commits go
        .option("timeout", "30")   # optional: seconds without a record before the read fails
        .load()

Each task folds what it read into partial results (offsets.spark.partials), and Spark gets
those plus one slim row per commit instead of every record. With `history_dir`, the tasks
write the commit rows there as the per-commit history (offsets.history.files) and Spark
gets only the folds.

One input partition per Kafka partition, packed into at most `max_tasks` Spark tasks (each
Python task has a fixed cost). The ranges are fixed when the read is planned, so every action
on the loaded DataFrame sees the same records. Reads use read_committed. Batches are Arrow.
Spark's own Kafka source is a JVM jar this project cannot ship, hence this reader.
"""

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import BinaryType, IntegerType, LongType, StringType, StructField, StructType

from offsets import faults
from offsets.kafka import planner, reading

NAME = "kafka-snapshot"

# Raw records of one topic: the records the planner kept travel to their fold as these
# (`kept_records_frame`).
SCHEMA = StructType(
    [
        StructField("topic", StringType(), False),
        StructField("partition", IntegerType(), False),
        StructField("offset", LongType(), False),
        StructField("timestamp", LongType(), False),
        StructField("key", BinaryType(), True),
        StructField("value", BinaryType(), True),
    ]
)
# The first batch's Arrow schema must match SCHEMA exactly (binary, not large_binary).
ARROW_SCHEMA = pa.schema(
    [
        pa.field("topic", pa.string(), False),
        pa.field("partition", pa.int32(), False),
        pa.field("offset", pa.int64(), False),
        pa.field("timestamp", pa.int64(), False),
        pa.field("key", pa.binary(), True),
        pa.field("value", pa.binary(), True),
    ]
)


@dataclass
class KafkaRanges(InputPartition):
    """What one Spark task reads: everything it needs travels with it (readers are pickled)."""

    settings: dict
    topic: str
    ranges: dict[int, tuple[int, int]]
    isolation_level: str
    bucket_seconds: int = 300
    timeout: float = 30.0
    history_dir: str | None = None


def pack(ranges: dict[int, tuple[int, int]], max_tasks: int) -> list[dict[int, tuple[int, int]]]:
    """Spread Kafka partitions over at most `max_tasks` groups with similar record counts."""
    groups: list[dict[int, tuple[int, int]]] = [{} for _ in range(max(1, max_tasks))]
    sizes = [0] * len(groups)
    for partition, (start, end) in sorted(ranges.items(), key=lambda item: item[1][0] - item[1][1]):
        if end <= start:
            continue
        smallest = sizes.index(min(sizes))
        groups[smallest][partition] = (start, end)
        sizes[smallest] += end - start
    return [group for group in groups if group]


class KafkaSnapshotSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> StructType:
        from offsets.spark.partials import SUMMARY_SCHEMA

        return SUMMARY_SCHEMA

    def reader(self, schema: StructType) -> "KafkaSnapshotReader":
        return KafkaSnapshotReader(self.options)


class KafkaSnapshotReader(DataSourceReader):
    def __init__(self, options: dict) -> None:
        self.topic = options["topic"]
        self.settings = json.loads(options["kafka.settings"])
        self.isolation_level = options.get("isolation.level", "read_committed")
        self.max_tasks = int(options.get("max_tasks", "8"))
        # A broker that goes away mid-read fails the task after this long without a record.
        self.timeout = float(options.get("timeout", "30"))
        self.bucket_seconds = int(options.get("bucket_seconds", "300"))
        self.history_dir = options.get("history_dir")
        ranges = options.get("ranges")
        self.ranges = (
            {int(p): (int(start), int(end)) for p, (start, end) in json.loads(ranges).items()}
            if ranges
            else None
        )

    def partitions(self) -> list[InputPartition]:
        ranges = self.ranges
        if ranges is None:
            ranges = planner.plan_read(
                self.settings, self.topic, isolation_level=self.isolation_level
            )
        # A list, not a tuple (Spark rejects tuples); [] would become one InputPartition(None).
        return [
            KafkaRanges(
                self.settings,
                self.topic,
                group,
                self.isolation_level,
                self.bucket_seconds,
                self.timeout,
                self.history_dir,
            )
            for group in pack(ranges, self.max_tasks)
        ]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, KafkaRanges):
            return  # nothing to read: Spark's stand-in for an empty partition list
        faults.pause_point("refresh-reading")
        from offsets.spark.partials import fold_messages

        folded = fold_messages(
            partition.topic,
            partition.bucket_seconds,
            reading.read_range(
                partition.settings,
                partition.topic,
                partition.ranges,
                isolation_level=partition.isolation_level,
                timeout=partition.timeout,
            ),
        )
        yield from _history_written(
            folded, partition.history_dir, partition.topic, partition.ranges
        )


def raw_batch(topic: str, columns) -> pa.RecordBatch:
    """Raw records of one topic (ARROW_SCHEMA) from their other five columns: partition,
    offset, timestamp, key and value."""
    arrays = [pa.array([topic] * len(columns[0]), pa.string())]
    arrays += [pa.array(c, f.type) for c, f in zip(columns, list(ARROW_SCHEMA)[1:], strict=True)]
    return pa.RecordBatch.from_arrays(arrays, schema=ARROW_SCHEMA)


def _history_written(
    folded: Iterator[pa.RecordBatch], history_dir: str | None, topic: str, partitions
) -> Iterator[pa.RecordBatch]:
    """A task's folds, less their commit rows when they go to `history_dir` as files."""
    if not history_dir:
        return folded
    from offsets.history import files as history_files

    return write_commit_batches(
        folded, Path(history_dir), history_files.file_stem(topic, partitions)
    )


def write_commit_batches(
    batches: Iterable[pa.RecordBatch], run_dir: Path, stem: str
) -> Iterator[pa.RecordBatch]:
    """Pass a read task's folded batches (partials.SUMMARY_ARROW) on without their commit
    rows, which are written to `run_dir` instead (files `<stem>-<n>`)."""
    from offsets.history import files as history_files
    from offsets.spark import partials as P

    pending: list[pa.RecordBatch] = []
    written = 0

    def flush() -> None:
        nonlocal pending, written
        if pending:
            history_files.write_commits(
                pa.Table.from_batches(pending), run_dir, f"{stem}-{written:03d}"
            )
            written += 1
            pending = []

    for batch in batches:
        is_commit = pc.equal(batch.column("kind"), P.COMMIT)
        commits = batch.filter(is_commit)
        if commits.num_rows:
            pending.append(commits.select(list(P.COMMIT_COLUMNS)))
            if sum(b.num_rows for b in pending) >= history_files.COMMITS_PER_FILE:
                flush()
        rest = batch.filter(pc.invert(is_commit))
        if rest.num_rows:
            yield rest
    flush()


def fold_kept(
    topic: str,
    plan: dict[int, tuple[int, int]],
    records: list[planner.KeptRecord],
    *,
    bucket_seconds: int,
    history_dir: str | None = None,
) -> list[dict]:
    """The folds of records the planner kept, as rows (partials.SUMMARY_SCHEMA), folded and
    their history written as `kept_records_frame`'s task does, in the calling process."""
    folded = _fold_kept_batches(
        topic, plan, bucket_seconds, history_dir, [_kept_batch(topic, records)]
    )
    return [row for batch in folded for row in batch.to_pylist()]


def _kept_batch(topic: str, records: list[planner.KeptRecord]) -> pa.RecordBatch:
    """The planner's kept records of `topic` as raw records (ARROW_SCHEMA)."""
    columns = list(zip(*records, strict=True)) if records else [[] for _ in range(5)]
    return raw_batch(topic, columns)


def _fold_kept_batches(
    topic: str,
    plan: dict[int, tuple[int, int]],
    bucket_seconds: int,
    history_dir: str | None,
    batches: Iterable[pa.RecordBatch],
) -> Iterator[pa.RecordBatch]:
    """Fold raw batches of kept records and write their history as a read task of `plan`
    would, under the same names."""
    from offsets.spark.partials import fold_record_batches

    partitions = sorted(p for p, (start, end) in plan.items() if end > start)
    folded = fold_record_batches(topic, bucket_seconds, batches)
    return _history_written(folded, history_dir, topic, partitions)


def kept_records_frame(
    spark,
    topic: str,
    plan: dict[int, tuple[int, int]],
    records: list[planner.KeptRecord],
    *,
    bucket_seconds: int,
    history_dir: str | None = None,
):
    """The folds of records the planner already read (`planner.plan_snapshot`): what a read
    of `plan` gives, with `history_dir` as well.

    An incremental refresh's planner reads on through the new records to find the ends; for
    a small read, folding the records it kept saves fetching them again (on the embedded
    broker a read task's fetches were ~0.4-0.7 s of an incremental refresh). The records
    travel with the plan to one task (one partition: the fold needs each Kafka partition's
    records in order, in one place), as a read task would get them from Kafka, and the task
    writes the history files a read task of `plan` would, under the same names.
    """
    from offsets.spark.partials import SUMMARY_SCHEMA

    def fold(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        yield from _fold_kept_batches(topic, plan, bucket_seconds, history_dir, batches)

    return (
        spark.createDataFrame(pa.Table.from_batches([_kept_batch(topic, records)]), SCHEMA)
        .coalesce(1)
        .mapInArrow(fold, SUMMARY_SCHEMA)
    )
