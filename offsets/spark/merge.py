"""Merge the read tasks' folds with the previous state: the rules, and their route in Spark.

The read tasks fold their records (offsets.spark.partials) into summary rows; the previous
refresh's per-key state joins them as PREVIOUS rows. `merge_folds` states every rule of the
merge (the latest write per key, the effective value, stalls, key drift, rewinds, commit
buckets, malformed counts, records read) in plain Python over such rows, and `merge_results`
runs it with `mapInArrow` over partitions that each hold every row their results depend on.
One implementation serves a refresh of a few keys (one partition, in the read's own task) and
one of millions (a task per KEYS_PER_MERGE_TASK keys).
"""

from collections import defaultdict
from collections.abc import Iterable, Iterator, Set

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql.pandas.types import to_arrow_schema

from offsets import tuning
from offsets.spark import partials as P
from offsets.spark.schemas import REWIND_COLUMNS, STATE_COLUMNS, result_schema

# The previous state's rows (schemas.STATE_SCHEMA) travel with the folds, as summary rows of
# this kind: `count` holds their `commits`, and the head_* columns are null.
PREVIOUS = "previous"
# Every row one result row depends on shares these columns' values: a key's rows (its folds,
# its previous state, its rewinds) share its key bytes and so both; the effective value is
# chosen per (connector, key_hash), drift per (connector, identity); buckets and malformed
# counts group on the connector and have no identity; records-read rows have neither. Spark
# hashes a null like any value, so those rows meet too. Not the connector alone: one
# connector may hold most of a cluster's keys.
PARTITION_COLUMNS = ("connector", "identity")
RESULT_ROWS_PER_BATCH = 10_000


def _state(row: dict) -> dict:
    """A KEY or PREVIOUS row as STATE_COLUMNS (`count` holds the commits)."""
    return {name: row["count" if name == "commits" else name] for name in STATE_COLUMNS}


def _least(a, b):
    """The smaller of two values, a null (unknown) ignored."""
    return b if a is None else a if b is None else min(a, b)


def _greatest(a, b):
    """The larger of two values, a null (unknown) ignored."""
    return b if a is None else a if b is None else max(a, b)


def merge_states(rows: Iterable[dict]) -> list[dict]:
    """Reduce KEY and PREVIOUS rows to one state per (topic, key).

    One key always lands on one Kafka partition of a topic, so the highest Kafka offset is the
    last write, as `KafkaBasedLog` reads it. A tombstone wins like any write: its state keeps
    `offset_json` null (the partition is gone) and its history totals (commits summed, the
    first and last commit times).
    """
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
    """Set `effective` on each state: the value the runtime uses for its (connector, key).

    A connector reads the worker topic and, if it has one, its own topic (`own_topics`), whose
    live values take precedence (ConnectorOffsetBackingStore, KIP-618). A value in another
    connector's own topic is invisible to it; a tombstone is not live.
    """

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
    """Set `stalled`: a live value of a running connector whose last commit is older than the
    threshold (N flush intervals). Null when it would be true but for an unknown last commit
    time."""
    for state in states:
        state["stalled"] = stall_flag(state, running, now_ms=now_ms, threshold_ms=threshold_ms)
    return states


def stall_flag(state: dict, running: Set[str], *, now_ms: int, threshold_ms: int) -> bool | None:
    """A state's `stalled` (`flag_stalls`)."""
    if state["connector"] in running and state["effective"]:
        last = state["last_commit_ms"]
        return None if last is None else now_ms - last > threshold_ms
    return False


def _descending(form: dict) -> tuple:
    # Forms sort field by field, a null before any value; newest first reverses that.
    return tuple((value is not None, value) if value is not None else (False,) for value in form)


def key_drift(latest: list[dict]) -> list[dict]:
    """Find logical source partitions stored under more than one live key byte form.

    The runtime looks offsets up by exact key bytes, so only one form is ever read: the other
    is silently ignored and the connector may resume from the wrong place.
    """
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
    value of the previous state (a tombstone in between resets the comparison)."""
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
    """Merge summary rows into each result by name, as lists of dicts (schemas.RESULT_STRUCTS).

    `rows` are summary rows (partials.SUMMARY_SCHEMA) of the read tasks and of the previous
    state (kind PREVIOUS); commit rows are ignored. Without `reading` only the latest offsets
    and the drift are computed (schemas.UNREAD_RESULTS).
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
    return results | _read_results(rows, states)


def _read_results(rows: list[dict], states: list[dict]) -> dict[str, list[dict]]:
    """What only a read has: records per topic, rewinds, commit buckets, malformed and
    unstorable records."""
    results: dict[str, list[dict]] = {}
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
    results["unstorable"] = [
        {"topic": row["topic"], "key_hash": row["key_hash"], "kafka_offset": row["kafka_offset"]}
        for row in rows
        if row["kind"] == P.UNSTORABLE
    ]
    return results


def previous_row(state: dict) -> dict:
    """A stored state (STATE_COLUMNS) as a PREVIOUS summary row (`previous_frame`, in Python)."""
    row = dict.fromkeys(P.SUMMARY_ARROW.names)
    row.update({name: value for name, value in state.items() if name != "commits"})
    row.update(kind=PREVIOUS, count=state["commits"])
    return row


def previous_frame(spark, previous: pa.Table) -> DataFrame:
    """The previous state (schemas.STATE_SCHEMA, as Arrow) as PREVIOUS summary rows."""
    size = previous.num_rows
    columns = {name: previous.column(name) for name in STATE_COLUMNS if name != "commits"}
    columns |= {"kind": pa.array([PREVIOUS] * size, pa.string()), "count": previous["commits"]}
    arrays = [columns.get(field.name, pa.nulls(size, field.type)) for field in P.SUMMARY_ARROW]
    table = pa.Table.from_arrays(arrays, schema=P.SUMMARY_ARROW)
    return spark.createDataFrame(table, P.SUMMARY_SCHEMA)


def _result_rows(results: dict[str, list[dict]]) -> Iterator[dict]:
    """Each result row in its own column of a `result_schema` row (the others null)."""
    for name, found in results.items():
        for row in found:
            yield {column: row if column == name else None for column in results}


def _result_batches(results: dict[str, list[dict]], arrow: pa.Schema) -> Iterator[pa.RecordBatch]:
    chunk: list[dict] = []
    for row in _result_rows(results):
        chunk.append(row)
        if len(chunk) == RESULT_ROWS_PER_BATCH:
            yield pa.RecordBatch.from_pylist(chunk, schema=arrow)
            chunk = []
    if chunk:
        yield pa.RecordBatch.from_pylist(chunk, schema=arrow)


def merge_results(
    spark,
    partials: DataFrame | None,
    previous: pa.Table | None,
    own_topics: dict[str, str],
    running: Iterable[str],
    *,
    keys: int,
    parallel_read: bool,
    worker_topic: str,
    now_ms: int,
    stall_after_ms: int,
) -> DataFrame:
    """Everything a refresh keeps from the new records' folds and the previous state.

    `partials` are the read tasks' summary rows (partials.SUMMARY_SCHEMA; None when nothing was
    read), `previous` the previous state (schemas.STATE_SCHEMA as Arrow; None for a full
    refresh). `keys`, about how many keys the merge holds, sets its tasks
    (tuning.merge_tasks). A merge of one task runs in the task that folds the new records
    (coalesce: no shuffle, no extra stage) unless the read is `parallel_read` (several Kafka
    read tasks): those keep their tasks and send their folds across a shuffle.

    One struct column per result (schemas.result_schema), and each row holds one of them;
    `collect_results` collects them by name.
    """
    reading = partials is not None
    frames = [partials] if reading else []
    if previous is not None and previous.num_rows:
        frames.append(previous_frame(spark, previous))
    if not frames:
        frames.append(spark.createDataFrame([], P.SUMMARY_SCHEMA))
    frame = frames[0] if len(frames) == 1 else frames[0].unionByName(frames[1])
    tasks = tuning.merge_tasks(keys)
    if tasks == 1 and not parallel_read:
        frame = frame.coalesce(1)
    else:
        frame = frame.repartition(tasks, *PARTITION_COLUMNS)
    return _merge_partitions(
        frame,
        own_topics,
        running,
        reading=reading,
        worker_topic=worker_topic,
        now_ms=now_ms,
        stall_after_ms=stall_after_ms,
    )


def _merge_partitions(
    frame: DataFrame,
    own_topics: dict[str, str],
    running: Iterable[str],
    *,
    reading: bool,
    worker_topic: str,
    now_ms: int,
    stall_after_ms: int,
) -> DataFrame:
    """`merge_folds` over each partition of `frame` (summary rows, partitioned so that every
    row a result row depends on is in its partition: PARTITION_COLUMNS)."""
    own_topics, running = dict(own_topics), set(running)
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

    return frame.mapInArrow(merge, schema)


def collect_results(results: DataFrame) -> dict[str, list[dict]]:
    """The rows of `merge_results` as lists of dicts by result name: a result with no rows is
    an empty list; those not computed are left out.

    Collected as Arrow, cheaper than pickled Rows turned into dicts (and binary values come
    as bytes, not bytearray). The records read per
    topic are summed here: each partition gives the sum of the records rows it holds, and
    those, having no connector, meet in one partition, but the total must not depend on it.
    """
    split: dict[str, list[dict]] = {name: [] for name in results.columns}
    for row in results.toArrow().to_pylist():
        for name, value in row.items():
            if value is not None:
                split[name].append(value)
    if "records" in split:
        totals: dict[str, int] = defaultdict(int)
        for row in split["records"]:
            totals[row["topic"]] += row["count"]
        split["records"] = [{"topic": topic, "count": count} for topic, count in totals.items()]
    return split
