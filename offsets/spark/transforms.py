"""Pure DataFrame -> DataFrame transforms over Connect's offsets topics.

Two routes give the same answers:
- The record-by-record transforms (`parse_offset_records`, `malformed_counts`,
  `valid_records`, `commits`, `commit_buckets`, `rewinds`, `latest_by_key`) work on one row
  per record, as the `kafka-snapshot` source yields them raw (or parsed, with
  `decode=connect-offsets`). The refresh no longer uses them: they are the plain reference
  model that the folded route is tested against (tests/spark), being easy to check by eye.
- The refresh reads with `decode=connect-offsets-summary`: each read task folds its records
  (offsets.spark.partials) and the `merge_*` functions and `commit_history` below combine the
  folds. `effective_offsets`, `key_drift` and `flag_stalls` serve both routes.
Every function takes and returns DataFrames so that tests can feed them small hand-made frames.

The incremental refresh feeds the previous results back in (`previous` arguments) so that a
refresh over new records only gives the same answer as a full one.
"""

import json
from collections.abc import Iterator

import pyarrow as pa
import pyarrow.compute
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from offsets.formats.history_rules import offset_progress
from offsets.formats.offset_records import MalformedRecord, parse_offset_record
from offsets.spark import partials as P

PARSED_SCHEMA = StructType(
    [
        StructField("topic", StringType(), False),
        StructField("kafka_partition", IntegerType(), False),
        StructField("kafka_offset", LongType(), False),
        StructField("timestamp_ms", LongType(), False),
        StructField("key", BinaryType(), True),
        StructField("connector", StringType(), True),
        StructField("partition_json", StringType(), True),
        StructField("identity", StringType(), True),
        StructField("offset_json", StringType(), True),
        StructField("tombstone", BooleanType(), True),
        StructField("progress", DoubleType(), True),
        StructField("malformed_reason", StringType(), True),
        StructField("example", StringType(), True),
    ]
)
_PARSED_ARROW = pa.schema(
    [
        pa.field("topic", pa.string(), False),
        pa.field("kafka_partition", pa.int32(), False),
        pa.field("kafka_offset", pa.int64(), False),
        pa.field("timestamp_ms", pa.int64(), False),
        pa.field("key", pa.binary()),
        pa.field("connector", pa.string()),
        pa.field("partition_json", pa.string()),
        pa.field("identity", pa.string()),
        pa.field("offset_json", pa.string()),
        pa.field("tombstone", pa.bool_()),
        pa.field("progress", pa.float64()),
        pa.field("malformed_reason", pa.string()),
        pa.field("example", pa.string()),
    ]
)
_COMPACT_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))

# What the refresh keeps per (topic, key): the last record plus running totals.
STATE_COLUMNS = [
    "topic",
    "key_hash",
    "key",
    "connector",
    "partition_json",
    "identity",
    "offset_json",
    "kafka_partition",
    "kafka_offset",
    "timestamp_ms",
    "progress",
    "commits",
    "first_commit_ms",
    "last_commit_ms",
]
STATE_SCHEMA = StructType(
    [
        StructField("topic", StringType(), False),
        StructField("key_hash", StringType(), False),
        StructField("key", BinaryType(), False),
        StructField("connector", StringType(), False),
        StructField("partition_json", StringType(), False),
        StructField("identity", StringType(), False),
        StructField("offset_json", StringType(), True),
        StructField("kafka_partition", IntegerType(), False),
        StructField("kafka_offset", LongType(), False),
        StructField("timestamp_ms", LongType(), False),
        StructField("progress", DoubleType(), True),
        StructField("commits", LongType(), False),
        StructField("first_commit_ms", LongType(), True),
        StructField("last_commit_ms", LongType(), True),
    ]
)


COMMIT_COLUMNS = P.COMMIT_COLUMNS
# What a rewind row holds, whichever route found it (`rewinds`, `merge_rewinds`).
REWIND_COLUMNS = [
    "connector",
    "topic",
    "key_hash",
    "partition_json",
    "kafka_partition",
    "kafka_offset",
    "timestamp_ms",
    "from_progress",
    "to_progress",
]


def parse_columns(
    topic: str, partitions: list, offsets: list, timestamps: list, keys: list, values: list
) -> pa.RecordBatch:
    """Parse one batch of offsets-topic records into PARSED_SCHEMA columns.

    Shared by the `parse_offset_records` transform and by the Kafka source's
    `decode=connect-offsets` option, which parses while reading so that Spark needs one
    Python stage instead of two.
    """
    out: dict[str, list] = {name: [] for name in _PARSED_ARROW.names[5:]}
    connector, partition_json, identity = out["connector"], out["partition_json"], out["identity"]
    offset_json, tombstone, progress = out["offset_json"], out["tombstone"], out["progress"]
    reason, example = out["malformed_reason"], out["example"]
    for key, value in zip(keys, values, strict=True):
        record = parse_offset_record(key, value)
        if isinstance(record, MalformedRecord):
            # With a good key and a bad value, the connector is still known.
            keyed = parse_offset_record(key, None) if key is not None else None
            connector.append(None if isinstance(keyed, MalformedRecord | None) else keyed.connector)
            for column in (partition_json, identity, offset_json, tombstone, progress):
                column.append(None)
            reason.append(record.reason.value)
            example.append(P.example(key, value))
            continue
        connector.append(record.connector)
        partition_json.append(
            json.dumps(record.partition, ensure_ascii=False, separators=(",", ":"))
        )
        identity.append(record.partition_identity)
        offset_json.append(None if value is None else value.decode("utf-8"))
        tombstone.append(value is None)
        progress.append(offset_progress(record.offset))
        reason.append(None)
        example.append(None)
    arrays = [
        pa.array([topic] * len(keys), pa.string()),
        pa.array(partitions, pa.int32()),
        pa.array(offsets, pa.int64()),
        pa.array(timestamps, pa.int64()),
        pa.array(keys, pa.binary()),
    ]
    arrays += [
        pa.array(out[name], _PARSED_ARROW.field(name).type) for name in _PARSED_ARROW.names[5:]
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=_PARSED_ARROW)


def _parse_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        topics = batch.column("topic").to_pylist()
        for topic in sorted(set(topics)):
            rows = (
                batch.filter(pa.compute.equal(batch.column("topic"), topic))
                if len(set(topics)) > 1
                else batch
            )
            yield parse_columns(
                topic,
                rows.column("partition").to_pylist(),
                rows.column("offset").to_pylist(),
                rows.column("timestamp").to_pylist(),
                rows.column("key").to_pylist(),
                rows.column("value").to_pylist(),
            )


def parse_offset_records(raw: DataFrame) -> DataFrame:
    """Parse offsets-topic records with the same rules as the Java runtime; never fails.

    Malformed records keep a reason and an example instead of raising (OffsetUtils logs and
    skips them): counting them is the job of `malformed_counts`.

    Reference model (see the module docstring): the refresh uses the folded route.
    """
    return raw.mapInArrow(_parse_batches, PARSED_SCHEMA)


def malformed_counts(parsed: DataFrame) -> DataFrame:
    """Count malformed records by topic, connector (null unless the key was good) and reason,
    with one example each.

    Reference model (see the module docstring): the refresh uses the folded route."""
    return (
        parsed.where(F.col("malformed_reason").isNotNull())
        .groupBy("topic", "connector", "malformed_reason")
        .agg(F.count(F.lit(1)).alias("count"), F.first("example").alias("example"))
        .withColumnRenamed("malformed_reason", "reason")
    )


def valid_records(parsed: DataFrame) -> DataFrame:
    """Keep well-formed records, with the hex SHA-1 of their exact key bytes.

    Reference model (see the module docstring): the refresh uses the folded route."""
    return parsed.where(F.col("malformed_reason").isNull()).withColumn("key_hash", F.sha1("key"))


def commits(valid: DataFrame) -> DataFrame:
    """Every offset commit (non-tombstone write): the history kept beyond compaction.

    Reference model (see the module docstring): the refresh uses the folded route."""
    return valid.where(~F.col("tombstone")).select(*COMMIT_COLUMNS)


def commit_buckets(commit_rows: DataFrame, bucket_seconds: int) -> DataFrame:
    """Count commits per connector per time bucket of `bucket_seconds`.

    Reference model (see the module docstring): the refresh uses the folded route."""
    bucket_ms = bucket_seconds * 1000
    return (
        commit_rows.withColumn(
            "bucket_start_ms", F.floor(F.col("timestamp_ms") / bucket_ms).cast("long") * bucket_ms
        )
        .groupBy("connector", "bucket_start_ms")
        .agg(F.count(F.lit(1)).alias("commits"))
    )


def rewinds(valid: DataFrame, previous: DataFrame | None = None) -> DataFrame:
    """Find commits whose progress field is lower than the write before it for the same key.

    `previous` (STATE_SCHEMA) supplies each key's last known record from earlier refreshes, so
    a rewind between two refreshes is found too. A tombstone in between resets the comparison.

    Reference model (see the module docstring): the refresh uses the folded route.
    """
    columns = [
        "topic",
        "key_hash",
        "connector",
        "partition_json",
        "kafka_partition",
        "kafka_offset",
        "timestamp_ms",
        "progress",
        "tombstone",
    ]
    current = valid.select(*columns).withColumn("is_previous", F.lit(False))
    if previous is not None:
        earlier = previous.select(
            *columns[:-1], F.col("offset_json").isNull().alias("tombstone")
        ).withColumn("is_previous", F.lit(True))
        current = current.unionByName(earlier)
    by_key = Window.partitionBy("topic", "key_hash").orderBy("kafka_offset")
    return (
        current.withColumn("from_progress", F.lag("progress").over(by_key))
        .withColumn("previous_tombstone", F.lag("tombstone").over(by_key))
        .where(
            ~F.col("is_previous")
            & ~F.col("tombstone")
            & ~F.coalesce(F.col("previous_tombstone"), F.lit(False))
            & (F.col("progress") < F.col("from_progress"))
        )
        .withColumnRenamed("progress", "to_progress")
        .select(*REWIND_COLUMNS)
    )


def latest_by_key(valid: DataFrame, previous: DataFrame | None = None) -> DataFrame:
    """Return the last write per (topic, exact key bytes) with running commit totals.

    One key always lands on one Kafka partition of a topic, so the highest Kafka offset is the
    last write, as `KafkaBasedLog` reads it. A tombstone wins like any write: its row keeps
    `offset_json` null (the partition is gone) and its history totals.

    Reference model (see the module docstring): the refresh uses the folded route.
    """
    rows = valid.select(
        "topic",
        "key_hash",
        "key",
        "connector",
        "partition_json",
        "identity",
        "offset_json",
        "kafka_partition",
        "kafka_offset",
        "timestamp_ms",
        "progress",
        F.when(F.col("tombstone"), 0).otherwise(1).cast("long").alias("commits"),
        F.when(F.col("tombstone"), None).otherwise(F.col("timestamp_ms")).alias("first_commit_ms"),
        F.when(F.col("tombstone"), None).otherwise(F.col("timestamp_ms")).alias("last_commit_ms"),
    )
    return _merge_states(rows, previous)


# The per-key and merge transforms below state their expressions as SQL text (selectExpr,
# F.expr, where(str)): the DataFrame API spends a py4j round trip per column and function
# (about two thousand to build the merge), and for the few thousand rows of an incremental
# refresh that building took longer than Spark's work on the rows. The plans are the same.
# Not spark.sql over temp views: an earlier measurement saw a query through a view miss the
# cached read (it ran again for every frame). A later check (issue 3's notes) did not see
# that: a view over the persisted read scanned the cache. One SQL text for the whole merge,
# analysed once, is the lead that follows from it.
_LAST_FIELDS = (
    "`key`, connector, partition_json, identity, offset_json, kafka_partition, kafka_offset, "
    "timestamp_ms, progress"
)


def _merge_states(rows: DataFrame, previous: DataFrame | None) -> DataFrame:
    """Reduce STATE_COLUMNS rows (single writes or partial folds) to one per (topic, key)."""
    if previous is not None:
        rows = rows.unionByName(previous)
    return (
        rows.groupBy("topic", "key_hash")
        .agg(
            F.expr(f"max_by(struct({_LAST_FIELDS}), kafka_offset) AS `last`"),
            F.expr("sum(commits) AS commits"),
            F.expr("min(first_commit_ms) AS first_commit_ms"),
            F.expr("max(last_commit_ms) AS last_commit_ms"),
        )
        .selectExpr("topic", "key_hash", "`last`.*", "commits", "first_commit_ms", "last_commit_ms")
    )


def effective_offsets(latest: DataFrame, own_topics: DataFrame, worker_topic: str) -> DataFrame:
    """Mark the value the runtime uses for each (connector, key): `effective`.

    `own_topics` has (connector, own_topic). A connector reads the worker topic and, if it has
    one, its own topic, whose live values take precedence (ConnectorOffsetBackingStore, KIP-618).
    Records in another connector's own topic are invisible to it; tombstoned keys are not live.
    """
    rank = F.when(
        F.col("offset_json").isNotNull(),
        F.when(F.col("topic") == F.col("own_topic"), 0).when(
            F.col("topic") == F.lit(worker_topic), 1
        ),
    )
    with_topics = latest.join(F.broadcast(own_topics), on="connector", how="left")
    columns = [f"`{name}`" for name in with_topics.columns if name != "own_topic"]
    return with_topics.select("*", rank.alias("rank")).selectExpr(
        *columns,
        "`rank` IS NOT NULL AND row_number() OVER "
        "(PARTITION BY connector, key_hash ORDER BY `rank` ASC NULLS LAST) = 1 AS effective",
    )


def key_drift(effective: DataFrame) -> DataFrame:
    """Find logical source partitions stored under more than one live key byte form.

    The runtime looks offsets up by exact key bytes, so only one form is ever read: the other
    is silently ignored and the connector may resume from the wrong place.
    """
    return (
        effective.where("effective")
        .groupBy("connector", "identity")
        .agg(
            F.expr("count(1) AS forms_count"),
            F.expr(
                "sort_array(collect_list(struct(last_commit_ms, topic, key_hash, "
                "CAST(`key` AS STRING) AS key_text, offset_json)), false) AS forms"
            ),
        )
        .where("forms_count > 1")
    )


def flag_stalls(
    effective: DataFrame, running: DataFrame, *, now_ms: int, threshold_ms: int
) -> DataFrame:
    """Mark live partitions of running connectors (`running`: one `connector` column) whose
    last commit is older than `threshold_ms` (N flush intervals) as `stalled`."""
    running_flag = running.selectExpr("connector", "true AS running").distinct()
    columns = [f"`{name}`" for name in effective.columns]
    return effective.join(F.broadcast(running_flag), on="connector", how="left").selectExpr(
        *columns,
        f"coalesce(running, false) AND effective "
        f"AND ({int(now_ms)}L - last_commit_ms > {int(threshold_ms)}L) AS stalled",
    )


# Merging the read tasks' partial folds (offsets.spark.partials; the source's
# decode=connect-offsets-summary). Each function gives the same answer as its record-level
# counterpart above over the same records.


def _kind(partials: DataFrame, kind: str) -> DataFrame:
    """The partials rows of one kind (a constant of offsets.spark.partials)."""
    assert kind.isidentifier(), kind
    return partials.where(f"kind = '{kind}'")


def merge_records_read(partials: DataFrame) -> DataFrame:
    """Records read per topic (malformed ones included)."""
    return (
        _kind(partials, P.RECORDS)
        .groupBy("topic")
        .agg(F.expr("CAST(sum(`count`) AS BIGINT) AS `count`"))
    )


def merge_latest(partials: DataFrame, previous: DataFrame | None = None) -> DataFrame:
    """Like `latest_by_key`, from the tasks' per-key folds plus the previous state."""
    rows = _kind(partials, P.KEY).selectExpr(
        *("`count` AS commits" if name == "commits" else f"`{name}`" for name in STATE_COLUMNS)
    )
    return _merge_states(rows, previous)


def merge_rewinds(partials: DataFrame, previous: DataFrame | None = None) -> DataFrame:
    """Like `rewinds`: those the tasks found, plus a key's first new commit that goes below
    its last commit of an earlier refresh (`previous`, STATE_SCHEMA)."""
    found = _kind(partials, P.REWIND).selectExpr(*REWIND_COLUMNS[:-1], "progress AS to_progress")
    if previous is None:
        return found
    heads = (
        _kind(partials, P.KEY)
        .where("NOT head_tombstone")
        .selectExpr(
            "connector",
            "topic",
            "key_hash",
            "partition_json",
            "kafka_partition",
            "head_kafka_offset AS kafka_offset",
            "head_timestamp_ms AS timestamp_ms",
            "head_progress AS to_progress",
        )
    )
    before = previous.where("offset_json IS NOT NULL").selectExpr(
        "topic", "key_hash", "progress AS from_progress"
    )
    across = (
        heads.join(before, on=["topic", "key_hash"])
        .where("to_progress < from_progress")
        .selectExpr(*REWIND_COLUMNS)
    )
    return found.unionByName(across)


def merge_commit_buckets(partials: DataFrame) -> DataFrame:
    """Like `commit_buckets` (the tasks bucketed with the same `bucket_seconds`)."""
    return (
        _kind(partials, P.BUCKET)
        .groupBy("connector", "timestamp_ms")
        .agg(F.expr("CAST(sum(`count`) AS BIGINT) AS commits"))
        .withColumnRenamed("timestamp_ms", "bucket_start_ms")
    )


def merge_malformed_counts(partials: DataFrame) -> DataFrame:
    """Like `malformed_counts`."""
    return (
        _kind(partials, P.MALFORMED)
        .groupBy("topic", "connector", "reason")
        .agg(
            F.expr("CAST(sum(`count`) AS BIGINT) AS `count`"),
            F.expr("first(example) AS example"),
        )
    )


def commit_history(partials: DataFrame) -> DataFrame:
    """Like `commits`: every offset commit, the history kept beyond compaction."""
    return _kind(partials, P.COMMIT).selectExpr(*COMMIT_COLUMNS)


def merge_results(
    partials: DataFrame,
    previous: DataFrame | None,
    own_topics: DataFrame,
    running: DataFrame,
    *,
    worker_topic: str,
    now_ms: int,
    stall_after_ms: int,
    reading: bool = True,
) -> dict[str, DataFrame]:
    """Everything a refresh keeps from the tasks' folds and the previous state, by name.

    latest (effective offsets with stalls flagged) and drift always; when something was read
    (`reading`), also records (read per topic), rewinds, buckets and malformed.
    """
    effective = effective_offsets(merge_latest(partials, previous), own_topics, worker_topic)
    flagged = flag_stalls(effective, running, now_ms=now_ms, threshold_ms=stall_after_ms)
    results = {"latest": flagged, "drift": key_drift(flagged)}
    if reading:  # else nothing new: no rewinds, commits or malformed records to add
        results |= {
            "records": merge_records_read(partials),
            "rewinds": merge_rewinds(partials, previous),
            "buckets": merge_commit_buckets(partials),
            "malformed": merge_malformed_counts(partials),
        }
    return results
