"""A standalone worker's refresh: its offsets file read whole, folded like offsets-topic records.

The file holds each key's current value only, never when it was written. So each refresh
compares the file with the stored offsets and folds one record per key whose value changed (a
key gone from the file counts as reset), timed at the refresh's read of the file: the
history of a standalone worker is one commit per change seen between two refreshes, at the
time the refresh saw it. The records fold and merge with the same rules as a distributed
cluster's (offsets.spark.partials, offsets.spark.merge), in this process: a small local file
needs no Spark. Their "Kafka offsets" number the changes seen, partition 0 of a topic named
like the cluster's offsets topic.
"""

from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import transaction

from offsets import connect_state
from offsets.history import files as history_files
from offsets.kafka import standalone_worker
from offsets.models import Cluster, MalformedCount
from offsets.refresh import plan as planning
from offsets.refresh import sinks, store
from offsets.refresh.inputs import MergeInputs, previous_state
from offsets.refresh.results import SinkResults, SourcePlan, SourceResults
from offsets.spark import kafka_source, merge, partials


@dataclass
class StandaloneRead:
    """What a standalone refresh computed, in the shapes a distributed one hands to the save."""

    state: connect_state.ConnectState
    plan: SourcePlan
    inputs: MergeInputs
    sources: SourceResults
    sinks: SinkResults


def compute(cluster: Cluster, *, now_ms: int, run_dir: Path, phase) -> StandaloneRead:
    """Read the file and the worker, fold the changes, merge them with the stored offsets."""
    phase(f"reading the offsets file {cluster.offsets_file}")
    offsets = standalone_worker.read_offsets_file(cluster.offsets_file)
    state = connect_state.standalone_state(cluster, offsets)
    table, stored = previous_state(cluster)
    previous = table.to_pylist()
    topic = cluster.offsets_topic
    records = changed_records(offsets.entries, previous, topic=topic, now_ms=now_ms)
    phase(
        f"{len(state.connectors)} connectors; {len(records)} of the file's "
        f"{len(offsets.entries)} entries changed since the last refresh"
    )
    running = frozenset(c.name for c in state.connectors if c.consuming)
    rows = _folded(topic, records, run_dir) + [merge.previous_row(row) for row in previous]
    # Read positions as for a topic, so that the save sees another refresh saving meanwhile.
    read_from = planning.read_positions(cluster)[0]
    span = {0: (records[0][1], records[-1][1] + 1)} if records else {}
    plan = SourcePlan(plans={topic: span} if span else {}, read_from=read_from)
    results = merge.merge_folds(
        rows,
        {},
        set(running),
        worker_topic=topic,
        now_ms=now_ms,
        stall_after_ms=settings.STALL_AFTER_FLUSH_INTERVALS * cluster.offset_flush_interval_ms,
    )
    inputs = MergeInputs(
        spark=None,
        previous_table=table,
        stored_keys=len(stored),
        stored_rows=stored,
        own_topics={},
        running=running,
    )
    sources = SourceResults.collected(plan, results)
    return StandaloneRead(state, plan, inputs, sources, _sinks(cluster, state, now_ms, phase))


Record = tuple[int, int, int, bytes, bytes | None]


def changed_records(
    entries: dict[bytes, bytes | None], previous: list[dict], *, topic: str, now_ms: int
) -> list[Record]:
    """The records (partition, offset, timestamp, key, value) a refresh folds: each entry
    whose value differs from the stored one (a new key, a changed or malformed value), and a
    reset for each stored key the file no longer holds.

    `previous` are the stored offsets (schemas.STATE_COLUMNS). The offsets go on from the
    highest stored one, so that the merge takes the records as newer.
    """
    stored = {row["key"]: row for row in previous if row["topic"] == topic}
    next_offset = 1 + max((row["kafka_offset"] for row in stored.values()), default=-1)
    changed: list[tuple[bytes, bytes | None]] = []
    for key, value in entries.items():
        old = stored.get(key)
        text = None if value is None else value.decode("utf-8", "surrogateescape")
        if old is None or old["offset_json"] != text:
            changed.append((key, value))
    for key, row in stored.items():
        if key not in entries and row["offset_json"] is not None:
            changed.append((key, None))
    return [
        (0, next_offset + index, now_ms, key, value) for index, (key, value) in enumerate(changed)
    ]


def _folded(topic: str, records: list[Record], run_dir: Path) -> list[dict]:
    """The records folded as a read task folds them, their commits written to the history."""
    if not records:
        return []
    columns = list(zip(*records, strict=True))
    folded = partials.fold_record_batches(
        topic, settings.COMMIT_BUCKET_SECONDS, [kafka_source.raw_batch(topic, columns)]
    )
    stem = history_files.file_stem(topic, [0])
    return [
        row
        for batch in kafka_source.write_commit_batches(folded, run_dir, stem)
        for row in batch.to_pylist()
    ]


def _sinks(cluster: Cluster, state: connect_state.ConnectState, now_ms: int, phase) -> SinkResults:
    """The sinks' lag from their groups, when the worker's Kafka cluster is configured."""
    if not cluster.has_kafka:
        return SinkResults()
    phase("sampling sink lag")
    return sinks.sample_sinks(
        cluster, state.connectors, now_ms=now_ms, **sinks.database_reads(cluster, state.connectors)
    )


@transaction.atomic
def save(cluster: Cluster, done: StandaloneRead, *, now_ms: int) -> None:
    """Save like any refresh; the file's malformed counts are the current ones.

    The file is read whole every time and a malformed entry is folded again at each refresh,
    so its counts replace the stored ones instead of adding to them.
    """
    MalformedCount.objects.filter(cluster=cluster, topic=cluster.offsets_topic).delete()
    store.save(
        cluster,
        done.state,
        done.plan,
        done.sources,
        done.sinks,
        full=False,
        now_ms=now_ms,
        stored_rows=done.inputs.stored_rows,
    )
