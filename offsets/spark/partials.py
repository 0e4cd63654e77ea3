"""Fold one read task's offsets records into partial results, like a MapReduce combiner.

Connect writes every record of one key to one Kafka partition (murmur2 of the key bytes),
in order, so the Spark task that reads a Kafka partition already sees each key's whole
sequence of writes. It can therefore fold them on the spot (the last write, commit totals,
rewinds, commits per time bucket, malformed counts) and send Spark a few thousand partial
rows instead of a million parsed records. Spark then merges the partials across tasks,
topics and earlier refreshes (offsets.spark.merge): own topic versus worker topic, key drift,
totals.

Every commit also comes out as one slim `commit` row, because the per-commit history is kept
(Parquet) beyond compaction. The refresh's read tasks write those to the history files
themselves (offsets.history.files), and Spark never sees them.

The Spark tests check the fold and the merge against a record-by-record reference model
(tests/support/reference_merge.py). Pure Python: no Spark needed to run or test it.
"""

import hashlib
import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator

import pyarrow as pa
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

from offsets.domain.history import progress_fields, progress_of
from offsets.domain.masking import prefix_between_tokens
from offsets.formats.offset_records import (
    MalformedReason,
    MalformedRecord,
    parse_offset_record,
    parse_offset_value,
    partition_identity,
    refresh_key_reason,
    refresh_value_reason,
    timestamp_in_range,
)

# What a row of the folded read holds, by `kind`. One schema for all kinds because a data
# source yields one DataFrame; the columns a kind does not use are null.
COMMIT = "commit"  # one per offset commit: the history (connector .. offset_json)
KEY = "key"  # one per (topic, key bytes): the last write and totals (schemas.STATE_COLUMNS)
#              plus the key's first write in this read (head_*), to find a rewind against
#              the state of the previous refresh
REWIND = "rewind"  # a commit whose progress is lower than the write before it
BUCKET = "bucket"  # commits per connector and time bucket (timestamp_ms = the bucket start)
MALFORMED = "malformed"  # malformed records per topic, connector (or null) and reason
UNSTORABLE = "unstorable"  # a key whose last record in this read the database cannot hold
#                            (kafka_offset: that record's), so its stored value is older
RECORDS = "records"  # records read from the topic by this task (count)

SUMMARY_SCHEMA = StructType(
    [
        StructField("kind", StringType(), False),
        StructField("topic", StringType(), False),
        StructField("connector", StringType(), True),
        StructField("key_hash", StringType(), True),
        StructField("kafka_partition", IntegerType(), True),
        StructField("kafka_offset", LongType(), True),
        StructField("timestamp_ms", LongType(), True),
        StructField("progress", DoubleType(), True),
        StructField("offset_json", StringType(), True),
        StructField("key", BinaryType(), True),
        StructField("partition_json", StringType(), True),
        StructField("identity", StringType(), True),
        StructField("count", LongType(), True),
        StructField("first_commit_ms", LongType(), True),
        StructField("last_commit_ms", LongType(), True),
        StructField("head_kafka_offset", LongType(), True),
        StructField("head_timestamp_ms", LongType(), True),
        StructField("head_progress", DoubleType(), True),
        StructField("head_tombstone", BooleanType(), True),
        StructField("from_progress", DoubleType(), True),
        StructField("reason", StringType(), True),
        StructField("example", StringType(), True),
    ]
)
# The Arrow schema must match SUMMARY_SCHEMA exactly (Spark checks the first batch).
_ARROW_TYPES = {
    StringType(): pa.string(),
    IntegerType(): pa.int32(),
    LongType(): pa.int64(),
    DoubleType(): pa.float64(),
    BinaryType(): pa.binary(),
    BooleanType(): pa.bool_(),
}
SUMMARY_ARROW = pa.schema(
    [pa.field(f.name, _ARROW_TYPES[f.dataType], f.nullable) for f in SUMMARY_SCHEMA.fields]
)
# One commit of the history: what the history store keeps.
COMMIT_COLUMNS = (
    "connector",
    "topic",
    "key_hash",
    "kafka_partition",
    "kafka_offset",
    "timestamp_ms",
    "progress",
    "offset_json",
)
# What the fold keeps per commit: the topic is the task's own, added when the batch is made.
_COMMIT_COLUMNS = tuple(name for name in COMMIT_COLUMNS if name != "topic")
COMMITS_PER_BATCH = 50_000
EXAMPLE_BYTES = 200


def example(key: bytes | None, value: bytes | None) -> str:
    """Show a malformed record's first bytes, for people.

    Each part ends between tokens, so that the refresh, which masks the example before
    storing it (`mask_text`), sees every secret whole.
    """

    def show(data: bytes | None) -> str:
        if data is None:
            return "null"
        return repr(prefix_between_tokens(bytes(data[: EXAMPLE_BYTES + 1]), EXAMPLE_BYTES))[2:-1]

    return f"key={show(key)} value={show(value)}"


class _Key:
    """One (Kafka partition, key bytes) as folded so far."""

    __slots__ = (
        "commits",
        "connector",
        "first_commit_ms",
        "head",
        "identity",
        "key",
        "key_hash",
        "last",
        "last_commit_ms",
        "partition_json",
        "progress",
        "unstorable",
    )

    def __init__(self, key: bytes, connector: str, partition: dict) -> None:
        self.key = key
        self.key_hash = hashlib.sha1(key).hexdigest()
        self.connector = connector
        self.partition_json = json.dumps(partition, ensure_ascii=False, separators=(",", ":"))
        self.identity = partition_identity(partition)
        self.head: tuple | None = None  # (kafka_offset, timestamp_ms, progress, tombstone)
        self.last: tuple | None = None  # (offset_json, kafka_offset, timestamp_ms, progress)
        self.commits = 0
        self.first_commit_ms: int | None = None
        self.last_commit_ms: int | None = None
        # The previous write's progress (None after a tombstone), to spot rewinds.
        self.progress: float | None = None
        # The Kafka offset of a write after the last kept one that the database cannot hold.
        self.unstorable: int | None = None


def key_group(key: bytes | None) -> tuple[str, str] | None:
    """The (connector, identity) a key's rows are merged by (merge.PARTITION_COLUMNS), as
    `_Key` has them; None for a key that is malformed."""
    parsed = parse_offset_record(key, None)
    if isinstance(parsed, MalformedRecord):
        return None
    return parsed.connector, partition_identity(parsed.partition)


class Folder:
    """Fold the records of one topic read by one task; `batches()` yields the partials.

    Records must arrive in Kafka order within each partition (partitions may interleave).
    """

    def __init__(self, topic: str, bucket_seconds: int) -> None:
        self.topic = topic
        self.bucket_ms = bucket_seconds * 1000
        # Per Kafka partition, key bytes -> _Key; or the reason a key is malformed.
        self.keys: dict[int, dict[bytes, _Key | MalformedRecord]] = {}
        self.records = 0
        self.rewinds: list[tuple] = []
        self.buckets: Counter = Counter()
        self.malformed: Counter = Counter()
        self.malformed_examples: dict[tuple, str] = {}
        self.commits: tuple[list, ...] = tuple([] for _ in _COMMIT_COLUMNS)

    def add(self, partition: int, offset: int, timestamp_ms: int, key, value) -> None:
        """Fold one record (its key and value as bytes, or None)."""
        self.records += 1
        keys = self.keys.get(partition)
        if keys is None:
            keys = self.keys[partition] = {}
        state = keys.get(key) if key is not None else None
        if state is None:
            state = self._new_key(key)
            if key is not None:
                keys[key] = state
        if isinstance(state, MalformedRecord):
            self._malformed(None, state.reason, key, value)
            return
        if not timestamp_in_range(timestamp_ms):
            # Skipped whole, a tombstone too: the history and the pages need a date for it.
            self._malformed(state.connector, MalformedReason.TIMESTAMP_OUT_OF_RANGE, key, value)
            return
        if value is None:
            state.progress = None  # a tombstone resets the comparison: no rewind across it
            state.last = (None, offset, timestamp_ms, None)
            state.unstorable = None
            if state.head is None:
                state.head = (offset, timestamp_ms, None, True)
            return
        parsed = parse_offset_value(value)
        if not isinstance(parsed, MalformedRecord):
            parsed = refresh_value_reason(parsed, value) or parsed
        if isinstance(parsed, MalformedRecord):
            # Skipped like the runtime's reader skips it: neither a write nor a rewind. The
            # runtime does use an unstorable value, so the value kept is no longer current.
            if parsed.reason == MalformedReason.VALUE_UNSTORABLE:
                state.unstorable = offset
            self._malformed(state.connector, parsed.reason, key, value)
            return
        self._write(state, partition, offset, timestamp_ms, parsed, value)

    def _write(
        self, state: _Key, partition: int, offset: int, timestamp_ms: int, parsed, value: bytes
    ) -> None:
        """Fold one write the runtime uses: the key's last value, its totals, a rewind."""
        progress = progress_of(parsed, progress_fields(tuple(parsed)))
        text = value.decode("utf-8")
        if state.head is None:
            state.head = (offset, timestamp_ms, progress, False)
        elif progress is not None and state.progress is not None and progress < state.progress:
            self.rewinds.append((state, partition, offset, timestamp_ms, state.progress, progress))
        state.progress = progress
        state.last = (text, offset, timestamp_ms, progress)
        state.unstorable = None
        state.commits += 1
        if state.first_commit_ms is None or timestamp_ms < state.first_commit_ms:
            state.first_commit_ms = timestamp_ms
        if state.last_commit_ms is None or timestamp_ms > state.last_commit_ms:
            state.last_commit_ms = timestamp_ms
        self.buckets[(state.connector, timestamp_ms // self.bucket_ms)] += 1
        commits = self.commits
        commits[0].append(state.connector)
        commits[1].append(state.key_hash)
        commits[2].append(partition)
        commits[3].append(offset)
        commits[4].append(timestamp_ms)
        commits[5].append(progress)
        commits[6].append(text)

    def _new_key(self, key: bytes | None) -> "_Key | MalformedRecord":
        parsed = parse_offset_record(key, None)
        if isinstance(parsed, MalformedRecord):
            return parsed
        unstorable = refresh_key_reason(parsed.connector, parsed.partition)
        if unstorable is not None:
            return unstorable
        return _Key(bytes(key), parsed.connector, parsed.partition)

    def _malformed(self, connector: str | None, reason: MalformedReason, key, value) -> None:
        slot = (connector, reason.value)
        self.malformed[slot] += 1
        if slot not in self.malformed_examples:
            self.malformed_examples[slot] = example(key, value)

    def pending_commits(self) -> int:
        return len(self.commits[0])

    def commit_batch(self) -> pa.RecordBatch:
        """Take the commit rows folded so far as one batch."""
        columns = dict(zip(_COMMIT_COLUMNS, self.commits, strict=True))
        self.commits = tuple([] for _ in _COMMIT_COLUMNS)
        return _batch(COMMIT, self.topic, len(columns["connector"]), columns)

    def summary_batch(self) -> pa.RecordBatch:
        """The key, rewind, bucket, malformed and records rows (call once, at the end).

        Built column by column, each kind with only its own columns (`_batch` fills the rest
        with nulls): a dict per row over every column costs several times more.
        """
        batches = [
            _batch(kind, self.topic, len(next(iter(columns.values()))), columns)
            for kind, columns in (
                (KEY, self._key_columns()),
                (REWIND, self._rewind_columns()),
                (BUCKET, self._bucket_columns()),
                (MALFORMED, self._malformed_columns()),
                (UNSTORABLE, self._unstorable_columns()),
                (RECORDS, {"count": [self.records] if self.records else []}),
            )
        ]
        batches = [batch for batch in batches if batch.num_rows]
        if not batches:
            return pa.RecordBatch.from_pylist([], schema=SUMMARY_ARROW)
        return pa.concat_batches(batches)

    def _key_columns(self) -> dict[str, list]:
        keyed = [
            (partition, state)
            for partition, keys in self.keys.items()
            for state in keys.values()
            if not isinstance(state, MalformedRecord) and state.last is not None
        ]
        states = [state for _, state in keyed]
        lasts = [state.last for state in states]  # (offset_json, kafka_offset, timestamp, progress)
        heads = [state.head for state in states]  # (kafka_offset, timestamp, progress, tombstone)
        return {
            "connector": [state.connector for state in states],
            "key_hash": [state.key_hash for state in states],
            "kafka_partition": [partition for partition, _ in keyed],
            "kafka_offset": [last[1] for last in lasts],
            "timestamp_ms": [last[2] for last in lasts],
            "progress": [last[3] for last in lasts],
            "offset_json": [last[0] for last in lasts],
            "key": [state.key for state in states],
            "partition_json": [state.partition_json for state in states],
            "identity": [state.identity for state in states],
            "count": [state.commits for state in states],
            "first_commit_ms": [state.first_commit_ms for state in states],
            "last_commit_ms": [state.last_commit_ms for state in states],
            "head_kafka_offset": [head[0] for head in heads],
            "head_timestamp_ms": [head[1] for head in heads],
            "head_progress": [head[2] for head in heads],
            "head_tombstone": [head[3] for head in heads],
        }

    def _unstorable_columns(self) -> dict[str, list]:
        found = [
            (partition, state)
            for partition, keys in self.keys.items()
            for state in keys.values()
            if not isinstance(state, MalformedRecord) and state.unstorable is not None
        ]
        return {
            "connector": [state.connector for _, state in found],
            "key_hash": [state.key_hash for _, state in found],
            "identity": [state.identity for _, state in found],
            "kafka_partition": [partition for partition, _ in found],
            "kafka_offset": [state.unstorable for _, state in found],
        }

    def _rewind_columns(self) -> dict[str, list]:
        # (state, partition, offset, timestamp_ms, progress before, progress after)
        rewinds = self.rewinds
        return {
            "connector": [rewind[0].connector for rewind in rewinds],
            "key_hash": [rewind[0].key_hash for rewind in rewinds],
            "partition_json": [rewind[0].partition_json for rewind in rewinds],
            "kafka_partition": [rewind[1] for rewind in rewinds],
            "kafka_offset": [rewind[2] for rewind in rewinds],
            "timestamp_ms": [rewind[3] for rewind in rewinds],
            "from_progress": [rewind[4] for rewind in rewinds],
            "progress": [rewind[5] for rewind in rewinds],
        }

    def _bucket_columns(self) -> dict[str, list]:
        buckets = list(self.buckets.items())
        return {
            "connector": [connector for (connector, _), _ in buckets],
            "timestamp_ms": [bucket * self.bucket_ms for (_, bucket), _ in buckets],
            "count": [count for _, count in buckets],
        }

    def _malformed_columns(self) -> dict[str, list]:
        malformed = list(self.malformed.items())
        return {
            "connector": [connector for (connector, _), _ in malformed],
            "reason": [reason for (_, reason), _ in malformed],
            "count": [count for _, count in malformed],
            "example": [self.malformed_examples[slot] for slot, _ in malformed],
        }


def _batch(kind: str | None, topic: str, size: int, columns: dict[str, list]) -> pa.RecordBatch:
    arrays = []
    for field in SUMMARY_ARROW:
        if field.name == "kind" and kind is not None:
            arrays.append(pa.array([kind] * size, field.type))
        elif field.name == "topic":
            arrays.append(pa.array([topic] * size, field.type))
        elif field.name in columns:
            arrays.append(pa.array(columns[field.name], field.type))
        else:
            arrays.append(pa.nulls(size, field.type))
    return pa.RecordBatch.from_arrays(arrays, schema=SUMMARY_ARROW)


def fold_messages(
    topic: str, bucket_seconds: int, message_lists: Iterable[list]
) -> Iterator[pa.RecordBatch]:
    """Fold lists of confluent-kafka messages (as `reading.read_range` yields them)."""

    def feed(add: Callable) -> Iterator[None]:
        for messages in message_lists:
            for message in messages:
                add(
                    message.partition(),
                    message.offset(),
                    message.timestamp()[1],
                    message.key(),
                    message.value(),
                )
            yield

    return _fold(topic, bucket_seconds, feed)


# The record columns `fold_record_batches` reads (kafka_source.SCHEMA's, less the topic).
RECORD_COLUMNS = ("partition", "offset", "timestamp", "key", "value")


def fold_record_batches(
    topic: str, bucket_seconds: int, batches: Iterable[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """Fold Arrow batches of raw records (kafka_source.SCHEMA), in Kafka order per partition."""

    def feed(add: Callable) -> Iterator[None]:
        for batch in batches:
            columns = [batch.column(name).to_pylist() for name in RECORD_COLUMNS]
            for record in zip(*columns, strict=True):
                add(*record)
            yield

    return _fold(topic, bucket_seconds, feed)


def _fold(
    topic: str, bucket_seconds: int, feed: Callable[[Callable], Iterator[None]]
) -> Iterator[pa.RecordBatch]:
    """Yield the folds of the records `feed(add)` adds, commit rows every COMMITS_PER_BATCH
    (it yields after each chunk of records)."""
    folder = Folder(topic, bucket_seconds)
    for _ in feed(folder.add):
        if folder.pending_commits() >= COMMITS_PER_BATCH:
            yield folder.commit_batch()
    if folder.pending_commits():
        yield folder.commit_batch()
    if folder.records:
        yield folder.summary_batch()
