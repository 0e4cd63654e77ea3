"""The shapes the refresh's Spark side shares: the per-key state, a rewind, the merge's results."""

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

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

# One key byte form of a drifted logical partition.
_FORM = StructType(
    [
        StructField("last_commit_ms", LongType()),
        StructField("topic", StringType()),
        StructField("key_hash", StringType()),
        StructField("key_text", StringType()),
        StructField("offset_json", StringType()),
    ]
)
# The merge's results (offsets.spark.merge), in the order of its columns: one struct column per
# result, a row holding one of them. Every field is nullable: a row of one result holds nulls
# in the others, and Arrow refuses nulls in a field that says it has none.
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
            StructField("connector", StringType()),
            StructField("topic", StringType()),
            StructField("key_hash", StringType()),
            StructField("partition_json", StringType()),
            StructField("kafka_partition", IntegerType()),
            StructField("kafka_offset", LongType()),
            StructField("timestamp_ms", LongType()),
            StructField("from_progress", DoubleType()),
            StructField("to_progress", DoubleType()),
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
    # Keys whose newest record the database cannot hold (partials.UNSTORABLE).
    "unstorable": StructType(
        [
            StructField("topic", StringType()),
            StructField("key_hash", StringType()),
            StructField("kafka_offset", LongType()),
        ]
    ),
}
# What a rewind row holds, whether a read task found it or the merge did.
REWIND_COLUMNS = RESULT_STRUCTS["rewinds"].names
# Without a read, only these: the previous state alone has no new rewinds, commits or records.
UNREAD_RESULTS = ("latest", "drift")


def result_schema(*, reading: bool) -> StructType:
    """The merge's columns: every result after a read, UNREAD_RESULTS without one."""
    names = RESULT_STRUCTS if reading else UNREAD_RESULTS
    return StructType([StructField(name, RESULT_STRUCTS[name]) for name in names])
