"""Pure DataFrame -> DataFrame transforms over Connect's offsets topics.

Two routes give the same answers:
- The record-by-record transforms (`parse_offset_records`, `malformed_counts`,
  `valid_records`, `commits`, `commit_buckets`, `rewinds`, `latest_by_key`) work on one row
  per record, as the `kafka-snapshot` source yields them raw (or parsed, with
  `decode=connect-offsets`). The refresh no longer uses them: they are the plain reference
  model that the folded route is tested against (tests/spark), being easy to check by eye.
- The refresh reads with `decode=connect-offsets-summary`: each read task folds its records
  (offsets.spark.partials) and the `merge_*` functions and `commit_history` below combine the
  folds. `effective_offsets`, `key_drift` and `flag_stalls` serve both routes. A small merge
  (tuning.ONE_TASK_MERGE_MAX_KEYS), an incremental refresh's above all, runs the same rules in
  one task instead (offsets.spark.one_task_merge), tested against `merge_results`.
Every function takes and returns DataFrames so that tests can feed them small hand-made frames.

The incremental refresh feeds the previous results back in (`previous` arguments) so that a
refresh over new records only gives the same answer as a full one.
"""

import json
import uuid
from collections.abc import Iterator

import pyarrow as pa
import pyarrow.compute
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DataType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from offsets.formats.history_rules import offset_progress
from offsets.formats.offset_records import (
    MalformedReason,
    MalformedRecord,
    parse_offset_record,
    refresh_key_reason,
    refresh_value_reason,
    timestamp_in_range,
)
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
    for key, value, timestamp_ms in zip(keys, values, timestamps, strict=True):
        # The same order of checks as partials.Folder: the key, the timestamp, the value.
        keyed = parse_offset_record(key, None)
        if not isinstance(keyed, MalformedRecord):
            keyed = refresh_key_reason(keyed.connector, keyed.partition) or keyed
        if isinstance(keyed, MalformedRecord):
            record = keyed
        elif not timestamp_in_range(timestamp_ms):
            record = MalformedRecord(MalformedReason.TIMESTAMP_OUT_OF_RANGE, "", key, value)
        else:
            record = parse_offset_record(key, value)
            if not isinstance(record, MalformedRecord) and record.offset is not None:
                record = refresh_value_reason(record.offset, value) or record
        if isinstance(record, MalformedRecord):
            # With a good key and a bad value or timestamp, the connector is still known.
            connector.append(None if isinstance(keyed, MalformedRecord) else keyed.connector)
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
    return _query(
        {"state_rows": rows, "previous": previous},
        {"latest": _merge_states_sql("state_rows", previous="previous" if previous else None)},
        "SELECT * FROM latest",
    )


# The per-key and merge transforms below are SQL text, run by `_query`: the refresh's whole
# merge is then one query, analysed once. Built with the DataFrame API (a py4j call and an
# analysis per operation, ~40 operations) the merge of an incremental refresh took its driver
# 0.8-0.9 s to build in a warm session, longer than Spark's work on its few thousand rows; as
# one text, 0.45-0.6 s (both measured in one warm session). Each function below
# states one step as a SELECT over named relations; the DataFrame functions run one step
# (the tests check each against the record-level model), `merge_results` chains them all.
# Column names are quoted where they are also SQL words (key, count, last, rank).
_LAST_FIELDS = (
    "`key`, connector, partition_json, identity, offset_json, kafka_partition, kafka_offset, "
    "timestamp_ms, progress"
)


def _query(
    frames: dict[str, DataFrame | None], steps: dict[str, str], result: str, **args
) -> DataFrame:
    """Run SQL over DataFrames: `frames` are the relations the text names (None: left out),
    `steps` named SELECTs over them and over earlier steps (a WITH clause), `result` the final
    SELECT, and `args` the values of its :name parameters.

    Not spark.sql's own `{frame}` arguments: PySpark names them as temporary views and drops
    the views through the catalog, and dropping a view uncaches any cached plan equal to the
    view's. A persisted frame given as itself (the refresh's cached read) then lost its cache,
    and the query read Kafka again. The views here are dropped from the session's catalog
    directly, which leaves the cache alone.
    """
    given = {name: frame for name, frame in frames.items() if frame is not None}
    spark = next(iter(given.values())).sparkSession
    views = {name: f"offsets_{name}_{uuid.uuid4().hex}" for name in given}
    for name, frame in given.items():
        frame.createOrReplaceTempView(views[name])
    relations = [f"{name} AS (SELECT * FROM {view})" for name, view in views.items()]
    relations += [f"{name} AS ({select})" for name, select in steps.items()]
    try:
        return spark.sql(f"WITH {', '.join(relations)} {result}", args=args or None)
    finally:
        catalog = spark._jsparkSession.sessionState().catalog()
        for view in views.values():
            catalog.dropTempView(view)


def _merge_states_sql(state_rows: str, *, previous: str | None = None) -> str:
    """STATE_COLUMNS rows (single writes or partial folds), plus `previous` ones, reduced to
    one per (topic, key)."""
    columns = ", ".join(f"`{name}`" for name in STATE_COLUMNS)
    rows = f"SELECT {columns} FROM {state_rows}"
    if previous:
        rows += f" UNION ALL SELECT {columns} FROM {previous}"
    return (
        "SELECT topic, key_hash, `last`.*, commits, first_commit_ms, last_commit_ms FROM ("
        f"SELECT topic, key_hash, max_by(struct({_LAST_FIELDS}), kafka_offset) AS `last`, "
        "sum(commits) AS commits, min(first_commit_ms) AS first_commit_ms, "
        f"max(last_commit_ms) AS last_commit_ms FROM ({rows}) GROUP BY topic, key_hash)"
    )


def _effective_sql(latest: str, own_topics: str) -> str:
    """`effective_offsets` (parameter :worker_topic)."""
    ranked = (
        "SELECT l.*, CASE WHEN l.offset_json IS NOT NULL THEN CASE "
        "WHEN l.topic = o.own_topic THEN 0 WHEN l.topic = :worker_topic THEN 1 END END AS `rank` "
        f"FROM {latest} l LEFT JOIN {own_topics} o ON l.connector = o.connector"
    )
    return (
        "SELECT * EXCEPT (`rank`), `rank` IS NOT NULL AND row_number() OVER "
        "(PARTITION BY connector, key_hash ORDER BY `rank` ASC NULLS LAST) = 1 AS effective "
        f"FROM ({ranked})"
    )


def _drift_sql(effective: str) -> str:
    """`key_drift`."""
    return (
        "SELECT connector, identity, count(1) AS forms_count, "
        "sort_array(collect_list(struct(last_commit_ms, topic, key_hash, "
        "CAST(`key` AS STRING) AS key_text, offset_json)), false) AS forms "
        f"FROM {effective} WHERE effective GROUP BY connector, identity HAVING forms_count > 1"
    )


def _stalls_sql(effective: str, running: str) -> str:
    """`flag_stalls` (parameters :now_ms and :threshold_ms)."""
    return (
        "SELECT e.*, r.connector IS NOT NULL AND e.effective "
        "AND :now_ms - e.last_commit_ms > :threshold_ms AS stalled "
        f"FROM {effective} e LEFT JOIN (SELECT DISTINCT connector FROM {running}) r "
        "ON e.connector = r.connector"
    )


def effective_offsets(latest: DataFrame, own_topics: DataFrame, worker_topic: str) -> DataFrame:
    """Mark the value the runtime uses for each (connector, key): `effective`.

    `own_topics` has (connector, own_topic). A connector reads the worker topic and, if it has
    one, its own topic, whose live values take precedence (ConnectorOffsetBackingStore, KIP-618).
    Records in another connector's own topic are invisible to it; tombstoned keys are not live.
    """
    return _query(
        {"latest": latest, "own_topics": own_topics},
        {},
        _effective_sql("latest", "own_topics"),
        worker_topic=worker_topic,
    )


def key_drift(effective: DataFrame) -> DataFrame:
    """Find logical source partitions stored under more than one live key byte form.

    The runtime looks offsets up by exact key bytes, so only one form is ever read: the other
    is silently ignored and the connector may resume from the wrong place.
    """
    return _query({"effective": effective}, {}, _drift_sql("effective"))


def flag_stalls(
    effective: DataFrame, running: DataFrame, *, now_ms: int, threshold_ms: int
) -> DataFrame:
    """Mark live partitions of running connectors (`running`: one `connector` column) whose
    last commit is older than `threshold_ms` (N flush intervals) as `stalled`."""
    return _query(
        {"effective": effective, "running": running},
        {},
        _stalls_sql("effective", "running"),
        now_ms=int(now_ms),
        threshold_ms=int(threshold_ms),
    )


# Merging the read tasks' partial folds (offsets.spark.partials; the source's
# decode=connect-offsets-summary). Each function gives the same answer as its record-level
# counterpart above over the same records.


def _kind(partials: str, kind: str) -> str:
    """The partials rows of one kind (a constant of offsets.spark.partials)."""
    assert kind.isidentifier(), kind
    return f"(SELECT * FROM {partials} WHERE kind = '{kind}')"


def _records_read_sql(partials: str) -> str:
    return (
        "SELECT topic, CAST(sum(`count`) AS BIGINT) AS `count` "
        f"FROM {_kind(partials, P.RECORDS)} GROUP BY topic"
    )


def _key_rows_sql(partials: str) -> str:
    columns = ("`count` AS commits" if name == "commits" else f"`{name}`" for name in STATE_COLUMNS)
    return f"SELECT {', '.join(columns)} FROM {_kind(partials, P.KEY)}"


def _rewinds_sql(partials: str, previous: str | None) -> str:
    found = ", ".join(REWIND_COLUMNS[:-1])
    text = f"SELECT {found}, progress AS to_progress FROM {_kind(partials, P.REWIND)}"
    if previous:
        # A key's first new commit that goes below its last commit of an earlier refresh.
        text += (
            " UNION ALL SELECT h.connector, h.topic, h.key_hash, h.partition_json, "
            "h.kafka_partition, h.head_kafka_offset AS kafka_offset, "
            "h.head_timestamp_ms AS timestamp_ms, b.progress AS from_progress, "
            f"h.head_progress AS to_progress FROM {_kind(partials, P.KEY)} h "
            f"JOIN {previous} b ON h.topic = b.topic AND h.key_hash = b.key_hash "
            "WHERE NOT h.head_tombstone AND b.offset_json IS NOT NULL "
            "AND h.head_progress < b.progress"
        )
    return text


def _commit_buckets_sql(partials: str) -> str:
    return (
        "SELECT connector, timestamp_ms AS bucket_start_ms, CAST(sum(`count`) AS BIGINT) AS "
        f"commits FROM {_kind(partials, P.BUCKET)} GROUP BY connector, timestamp_ms"
    )


def _malformed_counts_sql(partials: str) -> str:
    return (
        "SELECT topic, connector, reason, CAST(sum(`count`) AS BIGINT) AS `count`, "
        f"first(example) AS example FROM {_kind(partials, P.MALFORMED)} "
        "GROUP BY topic, connector, reason"
    )


def merge_records_read(partials: DataFrame) -> DataFrame:
    """Records read per topic (malformed ones included)."""
    return _query({"partials": partials}, {}, _records_read_sql("partials"))


def merge_latest(partials: DataFrame, previous: DataFrame | None = None) -> DataFrame:
    """Like `latest_by_key`, from the tasks' per-key folds plus the previous state."""
    return _query(
        {"partials": partials, "previous": previous},
        {"key_rows": _key_rows_sql("partials")},
        _merge_states_sql("key_rows", previous="previous" if previous else None),
    )


def merge_rewinds(partials: DataFrame, previous: DataFrame | None = None) -> DataFrame:
    """Like `rewinds`: those the tasks found, plus a key's first new commit that goes below
    its last commit of an earlier refresh (`previous`, STATE_SCHEMA)."""
    return _query(
        {"partials": partials, "previous": previous},
        {},
        _rewinds_sql("partials", "previous" if previous else None),
    )


def merge_commit_buckets(partials: DataFrame) -> DataFrame:
    """Like `commit_buckets` (the tasks bucketed with the same `bucket_seconds`)."""
    return _query({"partials": partials}, {}, _commit_buckets_sql("partials"))


def merge_malformed_counts(partials: DataFrame) -> DataFrame:
    """Like `malformed_counts`."""
    return _query({"partials": partials}, {}, _malformed_counts_sql("partials"))


def commit_history(partials: DataFrame) -> DataFrame:
    """Like `commits`: every offset commit, the history kept beyond compaction."""
    return partials.where(f"kind = '{P.COMMIT}'").selectExpr(*COMMIT_COLUMNS)


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
) -> DataFrame:
    """Everything a refresh keeps from the tasks' folds and the previous state, in one query.

    One struct column per result, and each row holds one of them (the others are null):
    latest (effective offsets with stalls flagged) and drift always; when something was read
    (`reading`), also records (read per topic), rewinds, buckets and malformed. One query,
    because each is small and its time mostly fixed costs (building, planning, scheduling):
    one query pays them once. `collect_results` collects them as lists by name.
    """
    prior = "previous" if previous is not None else None
    steps = {
        "key_rows": _key_rows_sql("partials"),
        "merged": _merge_states_sql("key_rows", previous=prior),
        "effective": _effective_sql("merged", "own_topics"),
        "latest": _stalls_sql("effective", "running"),
        "drift": _drift_sql("latest"),
    }
    if reading:  # else nothing new: no rewinds, commits or malformed records to add
        steps |= {
            "records": _records_read_sql("partials"),
            "rewinds": _rewinds_sql("partials", prior),
            "buckets": _commit_buckets_sql("partials"),
            "malformed": _malformed_counts_sql("partials"),
        }
    names = [name for name in RESULTS if name in steps]
    result = " UNION ALL ".join(
        "SELECT "
        + ", ".join(f"struct(*) AS {n}" if n == name else f"NULL AS {n}" for n in names)
        + f" FROM {name}"
        for name in names
    )
    return _query(
        {"partials": partials, "previous": previous, "own_topics": own_topics, "running": running},
        steps,
        result,
        worker_topic=worker_topic,
        now_ms=int(now_ms),
        threshold_ms=int(stall_after_ms),
    )


# The results of `merge_results`, in the order of its columns.
RESULTS = ("latest", "drift", "records", "rewinds", "buckets", "malformed")


def _nullable(data_type: DataType) -> DataType:
    """The same type with every struct field and array element nullable."""
    if isinstance(data_type, StructType):
        return StructType(
            [StructField(field.name, _nullable(field.dataType)) for field in data_type.fields]
        )
    if isinstance(data_type, ArrayType):
        return ArrayType(_nullable(data_type.elementType))
    return data_type


def collect_results(results: DataFrame) -> dict[str, list[dict]]:
    """The rows of `merge_results` (or of its one-task twin) as lists of dicts by result
    name: a result with no rows is an empty list; those not computed are left out.

    Collected as Arrow: collect() sent ~2,000 rows of an incremental refresh as pickled Rows
    and turned each into dicts (asDict), ~0.06 s more (binary values come as bytes, not
    bytearray).
    """
    # Every field nullable: a null struct of the SQL's UNION ALL (a row of another result)
    # holds nulls in its NOT NULL fields, which toArrow() refuses to cast. The one-task merge's
    # are nullable already, and a projection less is a plan less to analyse.
    schema = results.schema
    nullable = (
        results
        if _nullable(schema) == schema
        else results.select(
            *(F.col(field.name).cast(_nullable(field.dataType)) for field in schema.fields)
        )
    )
    split: dict[str, list[dict]] = {}
    for row in nullable.toArrow().to_pylist():
        for name, value in row.items():
            found = split.setdefault(name, [])
            if value is not None:
                found.append(value)
    return split
