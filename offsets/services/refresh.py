"""The refresh: read Connect's topics with Spark, compute offsets, history and lag, store them.

    run_refresh(cluster=cluster)            # incremental: only records not read before
    run_refresh(cluster=cluster, full=True) # rebuild from the beginning of the topics

Phases: read the config and status topics (who exists, who runs); plan a consistent snapshot
of every offsets topic (from where the last refresh stopped to the current end); run the
Spark fold and merge over the new records plus the previous per-key state; sample the sinks'
lag; then save everything in one database transaction. A failure at any phase records a
failed RefreshRun and leaves the previous results exactly as they were.
"""

import contextlib
import functools
import json
import logging
import re
import shutil
import time
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, OperationalError, connection, connections, transaction
from django.db.models import Count
from django.utils import timezone

from offsets import tuning
from offsets.formats.connectors import sink_topics
from offsets.formats.history_rules import (
    LagPoint,
    LagStatus,
    connector_lag_status,
    partition_lag_status,
)
from offsets.formats.masking import mask_text
from offsets.formats.offset_records import parse_offset_record
from offsets.kafka import admin, groups, planner, reading
from offsets.kafka.errors import KafkaUnavailable, TopicNotFound
from offsets.models import (
    Cluster,
    CommitBucket,
    ConnectorSnapshot,
    KeyDrift,
    LagSample,
    MalformedCount,
    ReadPosition,
    RefreshRun,
    RewindEvent,
    SinkPartitionLag,
    SourceOffset,
)
from offsets.services import background, connect_state
from offsets.services.connect_state import ConnectorSummary
from offsets.spark import history_files

logger = logging.getLogger(__name__)

Progress = Callable[[str], None]

# Waits between attempts at the refresh's database writes when the database is locked (SQLite:
# another writer held the lock past the busy timeout) or the connection dropped (PostgreSQL
# restarting). Minutes of Spark work are not thrown away for a database busy for a moment.
DB_RETRY_DELAYS = (0.5, 1.0, 2.0, 4.0, 8.0)
# What a run stopped by Ctrl-C says (run_refresh, and refresh_offsets while Spark starts).
INTERRUPTED = "Interrupted (Ctrl-C)."


def _ms_to_datetime(ms: int | None) -> datetime | None:
    return None if ms is None else datetime.fromtimestamp(ms / 1000, tz=UTC)


def history_path(cluster: Cluster) -> Path:
    """Where the cluster's per-commit history (Parquet, one folder per run) lives."""
    return Path(settings.OFFSETS_HISTORY_PATH) / cluster.name / "commits"


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


# The fields of a RefreshRun that `run_refresh` fills in when the run ends.
RUN_OUTCOME_FIELDS = [
    "status",
    "full",
    "phase",
    "records_read",
    "records_by_topic",
    "malformed",
    "malformed_by_reason",
    "error",
    "finished_at",
    "seconds",
]


class RefreshOvertaken(Exception):
    """Another refresh of the cluster saved its results after this one planned its read."""


@dataclass
class SourceResults:
    plans: dict[str, dict[int, tuple[int, int]]]
    records_by_topic: dict[str, int]
    # The cluster's read positions when this refresh planned: {(topic, partition): next offset}
    read_from: dict[tuple[str, int], int] = field(default_factory=dict)
    topic_ids: dict[str, str] = field(default_factory=dict)  # of the topics planned, if known
    # Topics deleted and created again since the last refresh: {topic: how it shows}
    recreated: dict[str, str] = field(default_factory=dict)
    # The new records of some topics, as the planner read them (`_identify_and_plan`):
    # {topic: records}. Spark folds these instead of reading them from Kafka again.
    kept: dict[str, list[planner.KeptRecord]] = field(default_factory=dict)
    latest: list = field(default_factory=list)
    drift: list = field(default_factory=list)
    rewinds: list = field(default_factory=list)
    buckets: list = field(default_factory=list)
    malformed: list = field(default_factory=list)


@dataclass
class SinkResults:
    lags: list[SinkPartitionLag] = field(default_factory=list)
    samples: list[LagSample] = field(default_factory=list)
    externally_managed: set[str] = field(default_factory=set)


def run_refresh(
    *,
    cluster: Cluster,
    full: bool = False,
    progress: Progress | None = None,
    spark=None,
    now_ms: int | None = None,
    run: RefreshRun | None = None,
) -> RefreshRun:
    """Refresh one cluster's results; return the recorded run (succeeded or failed).

    `run` is a RUNNING run claimed beforehand (offsets.services.background.start_refresh
    claims one so that two refreshes of a cluster never run at once); without it the
    refresh records a new run.
    """
    say = progress or (lambda text: None)
    started = time.monotonic()
    if run is None:
        run = RefreshRun.objects.create(
            cluster=cluster,
            started_at=timezone.now(),
            full=full,
            phase="starting",
            **background.this_process(),
        )

    def phase(text: str) -> None:
        try:
            RefreshRun.objects.filter(pk=run.pk).update(phase=text)
        except OperationalError as exc:
            # Progress is for people watching; a busy database must not fail the run for it.
            if connection.in_atomic_block:
                raise
            logger.warning("Could not record the refresh's phase (%s): %s", text, exc)
        say(f"[{time.monotonic() - started:6.1f}s] {text}")

    run_dir = history_path(cluster) / f"run={run.pk}"
    try:
        now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
        phase("reading connector configs and status; planning the offsets topics snapshot")
        # The sinks' lag is sampled from Kafka on another thread, from as soon as the
        # connectors are known until the Spark phase ends: sampling while only Spark worked
        # put it on the critical path when it took longer (~0.1-0.27 s against ~0.16-0.23 s
        # for the Spark part of the benchmark's incremental refresh). The sampling reads no
        # database (its recent samples are read here, on this thread).
        with ThreadPoolExecutor(max_workers=1) as side:
            sampling: Future[SinkResults] | None = None

            def prepare(state: connect_state.ConnectState, *, full: bool) -> MergeInputs:
                nonlocal sampling
                if sampling is None:  # sampled once, also when a recreated topic rebuilds
                    sink_names = [c.name for c in _sink_connectors(state.connectors)]
                    sampling = side.submit(
                        _sample_sinks,
                        cluster,
                        state.connectors,
                        now_ms=now_ms,
                        recent=_recent_samples(cluster, sink_names),
                        known=_known_time_lags(cluster),
                    )
                return _merge_inputs(spark, cluster, state.connectors, full=full)

            state, sources, inputs = _read_state_and_plan(
                cluster, full=full, prepare=functools.partial(prepare, full=full)
            )
            if sources.recreated:
                # What was read from the old topic is gone: the stored results are rebuilt.
                for topic, how in sources.recreated.items():
                    phase(f"{topic} was deleted and created again since the last refresh ({how})")
                phase("rebuilding from the beginning of the topics (a full refresh)")
                full = run.full = True
                RefreshRun.objects.filter(pk=run.pk).update(full=True)
                state, sources, inputs = _read_state_and_plan(
                    cluster, full=True, prepare=functools.partial(prepare, full=True)
                )
            phase(f"{len(state.connectors)} connectors")
            total = total_records(sources)
            for topic, plan in sources.plans.items():
                phase(
                    f"{topic}: {sum(e - s for s, e in plan.values()):,} new records in {len(plan)} partitions"
                )
            phase(f"computing offsets and history with Spark ({total:,} records)")
            _compute_sources(
                cluster,
                sources,
                inputs,
                now_ms=now_ms,
                run_dir=run_dir,
                phase=phase,
            )
            phase(f"read {sum(sources.records_by_topic.values()):,} records; sampling sink lag")
            assert sampling is not None  # started by the first prepare
            sinks = sampling.result()
        phase("saving results")
        _with_db_retries(
            "saving the results",
            lambda: _save(
                cluster,
                run,
                state,
                sources,
                sinks,
                full=full,
                now_ms=now_ms,
                stored_rows=inputs.stored_rows,
            ),
        )
        if full:
            _drop_other_runs(cluster, keep=run_dir)
        else:
            _compact_history(cluster, phase)
        run.status = RefreshRun.Status.SUCCEEDED
        run.records_read = sum(sources.records_by_topic.values())
        run.records_by_topic = sources.records_by_topic
        run.malformed_by_reason = malformed_by_reason(cluster, state, sources.malformed)
        run.malformed = sum(
            count for reasons in run.malformed_by_reason.values() for count in reasons.values()
        )
        run.phase = "done"
    except KeyboardInterrupt:
        # Ctrl-C: recorded, so that the run does not block the next refresh as "running".
        shutil.rmtree(run_dir, ignore_errors=True)
        RefreshRun.objects.filter(pk=run.pk).update(
            status=RefreshRun.Status.FAILED,
            finished_at=timezone.now(),
            seconds=time.monotonic() - started,
            error=INTERRUPTED,
            phase=f"failed: {INTERRUPTED}",
        )
        raise
    except Exception as exc:
        shutil.rmtree(run_dir, ignore_errors=True)
        run.status = RefreshRun.Status.FAILED
        run.error = describe_error(exc)
        run.phase = f"failed: {run.error}"
        if isinstance(exc, RefreshOvertaken):
            logger.warning("Refresh of %s dropped: %s", cluster.name, exc)
        elif not isinstance(exc, KafkaUnavailable | TopicNotFound):
            logger.exception("Refresh of %s failed", cluster.name)
    run.finished_at = timezone.now()
    run.seconds = time.monotonic() - started
    # Only what this function decides: the run's heartbeat, host and pid are written by others
    # meanwhile (background.heartbeat, the command taking a claimed run over).
    _with_db_retries("recording the run", lambda: run.save(update_fields=RUN_OUTCOME_FIELDS))
    try:
        drop_expired_runs(cluster, now=run.finished_at)
    except OperationalError as exc:
        # Housekeeping: the next refresh tries again.
        logger.warning("Could not delete the old refresh runs of %s: %s", cluster.name, exc)
    say(
        f"[{run.seconds:6.1f}s] {run.status}: {run.records_read:,} records read, "
        f"{run.malformed:,} malformed{f'; {run.error}' if run.error else ''}"
    )
    return run


def drop_expired_runs(cluster: Cluster, *, now: datetime) -> int:
    """Delete the cluster's runs that ended over REFRESH_RUN_RETENTION_DAYS ago; return how many.

    A `--every 60` loop records 1,440 runs a day. The last successful run stays whatever its
    age (the pages say how old the results on show are), and so does every run still going.
    """
    days = settings.REFRESH_RUN_RETENTION_DAYS
    if days <= 0:
        return 0
    last_success = (
        RefreshRun.objects.filter(cluster=cluster, status=RefreshRun.Status.SUCCEEDED)
        .order_by("-started_at", "-pk")
        .values_list("pk", flat=True)
        .first()
    )
    deleted, _ = (
        RefreshRun.objects.filter(cluster=cluster, finished_at__lt=now - timedelta(days=days))
        .exclude(status=RefreshRun.Status.RUNNING)
        .exclude(pk=last_success)
        .delete()
    )
    return deleted


def _with_db_retries[T](what: str, write: Callable[[], T]) -> T:
    """Run a database write, again after DB_RETRY_DELAYS while the database is unavailable.

    The write must be one transaction (a failed attempt leaves nothing behind). Inside an outer
    transaction (tests) nothing is retried: the outer transaction is what failed.
    """
    for delay in (*DB_RETRY_DELAYS, None):
        try:
            return write()
        except OperationalError as exc:
            if delay is None or connection.in_atomic_block:
                raise
            logger.warning("Refresh: %s failed (%s); trying again in %.1fs", what, exc, delay)
            # A connection the error left unusable (PostgreSQL restarted) is replaced.
            connection.close_if_unusable_or_obsolete()
            time.sleep(delay)
    raise AssertionError("unreachable")


def malformed_by_reason(
    cluster: Cluster, state: connect_state.ConnectState, offsets_malformed: list[dict]
) -> dict[str, dict[str, int]]:
    """Count this run's malformed records: {topic: {reason: count}}.

    Offsets topics: the records read by this run (an incremental run only sees new ones).
    Config and status topics: every record, since each refresh reads them whole.
    """
    counts: dict[str, dict[str, int]] = defaultdict(dict)
    for row in offsets_malformed:
        reasons = counts[row["topic"]]
        reasons[row["reason"]] = reasons.get(row["reason"], 0) + row["count"]
    for topic, reasons in (
        (cluster.configs_topic, state.config_malformed),
        (cluster.status_topic, state.status_malformed),
    ):
        for reason, count in reasons.items():
            counts[topic][reason] = counts[topic].get(reason, 0) + count
    return {topic: dict(sorted(reasons.items())) for topic, reasons in sorted(counts.items())}


def describe_error(exc: BaseException) -> str:
    """A one-line message for the user; Spark wraps executor errors in long traces.

    Masked before it is cut: an error may quote a record or a config value.
    """
    text = mask_text(str(exc).strip()) or type(exc).__name__
    for name in ("KafkaUnavailable", "TopicNotFound"):
        match = re.search(rf"{name}: (.+)", text)
        if match:
            return match.group(1).strip()
    return text.splitlines()[0][:500] if "\n" in text else text[:500]


def _offsets_topics(cluster: Cluster, connectors: list[ConnectorSummary]) -> list[str]:
    topics = [cluster.offsets_topic]
    for connector in connectors:
        if connector.own_offsets_topic and connector.own_offsets_topic not in topics:
            topics.append(connector.own_offsets_topic)
    return topics


def _read_state_and_plan[T](
    cluster: Cluster, *, full: bool, prepare: Callable[[connect_state.ConnectState], T]
) -> tuple[connect_state.ConnectState, SourceResults, T]:
    """Read the connectors' state and plan the offsets topics snapshot, overlapping the two;
    also return what `prepare(state)` returns, run while the planning goes on.

    Which offsets topics to read depends on the connectors' configs (their own topics,
    KIP-618), but waiting for the configs before planning costs a round of broker requests
    every refresh. So the topics the previous refresh read are planned while the configs are
    read, and only a topic new since then is planned afterwards. Planning a topic a moment
    before reading the configs is as good a snapshot as a moment after.
    """
    kafka = cluster.kafka_settings()
    timeout = settings.KAFKA_READ_TIMEOUT
    positions: dict[str, dict[int, int]] = {cluster.offsets_topic: {}}
    # Database reads stay on this thread (a test's transaction is not visible to another).
    read_from, stored_ids = _read_positions(cluster)
    for (topic, partition), next_offset in read_from.items():
        positions.setdefault(topic, {})[partition] = next_offset
    starts = {topic: None if full else known for topic, known in positions.items()}
    with ThreadPoolExecutor(max_workers=1) as pool:
        planning = pool.submit(_identify_and_plan, kafka, starts, stored_ids, timeout=timeout)
        state = connect_state.read_connect_state(cluster=cluster)
        prepared = prepare(state)
        snapshot, ids = planning.result()
    plans = snapshot.plans
    if cluster.offsets_topic not in plans:
        raise TopicNotFound(
            f"The offsets topic {cluster.offsets_topic!r} does not exist on "
            f"{cluster.bootstrap_servers}"
        )
    wanted = _offsets_topics(cluster, state.connectors)
    new = [topic for topic in wanted if topic not in starts]
    if new:
        plans |= planner.plan_snapshot(kafka, dict.fromkeys(new), timeout=timeout).plans
        ids |= admin.ids_of(admin.describe_topics(kafka, new, timeout=timeout))
    # A topic of the previous refresh that no connector names any more is not read; topics
    # that do not exist (an own topic not created yet) are left out by plan_reads.
    plans = {topic: plans[topic] for topic in wanted if topic in plans}
    sources = SourceResults(
        plans=plans,
        records_by_topic={topic: 0 for topic in plans},
        read_from=read_from,
        topic_ids={topic: ids[topic] for topic in plans if topic in ids},
        recreated={} if full else recreated_topics(read_from, stored_ids, plans, ids),
        kept={topic: records for topic, records in snapshot.records.items() if topic in plans},
    )
    return state, sources, prepared


def _identify_and_plan(
    kafka: dict,
    starts: dict[str, dict[int, int] | None],
    stored_ids: dict[str, str],
    *,
    timeout: float,
) -> tuple[planner.Snapshot, dict[str, str]]:
    """Plan the snapshot of the topics read before; return it and the topic IDs.

    A topic that still has the ID it was read under holds the previous positions, so the
    planner reads on from them to find the ends (`planner.plan_snapshot`, `read_on`) instead
    of asking for the ends first. Asking for the IDs first costs one DescribeTopics request
    (~2-10 ms), which tells the planner the partition counts too. On its way the planner keeps
    up to tuning.PLANNER_KEEPS_RECORDS of the records it reads on through, which Spark then folds
    without fetching them again.
    """
    described = admin.describe_topics(kafka, list(starts), timeout=timeout)
    ids = admin.ids_of(described)
    same = [
        topic
        for topic, known in starts.items()
        if known and stored_ids.get(topic) and ids.get(topic) == stored_ids[topic]
    ]
    snapshot = planner.plan_snapshot(
        kafka,
        starts,
        read_on=same,
        keep_records=tuning.PLANNER_KEEPS_RECORDS,
        partition_counts={topic: facts.partitions for topic, facts in described.items()},
        timeout=timeout,
    )
    return snapshot, ids


def recreated_topics(
    read_from: dict[tuple[str, int], int],
    stored_ids: dict[str, str],
    plans: dict[str, dict[int, tuple[int, int]]],
    ids: dict[str, str],
) -> dict[str, str]:
    """Which topics read before were deleted and created again since: {topic: how it shows}.

    The records read from such a topic are gone, so an incremental refresh would keep their
    results and read on from a position that means nothing in the new topic (the demo's
    broker, memory only, is new at every `make demo`: the second one read no records at
    all). A different topic ID tells (KIP-516); without IDs, a partition that now ends before
    where the last refresh stopped, or a partition that is gone, does too (a topic's end
    never moves back, and its partitions are never fewer).
    """
    recreated: dict[str, str] = {}
    for topic, plan in plans.items():
        before = {p: offset for (t, p), offset in read_from.items() if t == topic}
        if not before:
            continue
        if stored_ids.get(topic) and ids.get(topic) and stored_ids[topic] != ids[topic]:
            recreated[topic] = f"its topic ID changed from {stored_ids[topic]} to {ids[topic]}"
        elif gone := sorted(set(before) - set(plan)):
            recreated[topic] = f"it has {len(plan)} partitions, and partition {gone[0]} was read"
        elif behind := sorted(p for p, offset in before.items() if plan[p][1] < offset):
            p = behind[0]
            recreated[topic] = (
                f"partition {p} ends at offset {plan[p][1]:,}, before offset {before[p]:,} "
                "where the last refresh stopped"
            )
    return recreated


def has_read_before(cluster: Cluster) -> bool:
    """Whether a refresh of the cluster has stored read positions, so that an incremental
    refresh reads on from them; without any it reads the topics from their beginning."""
    return ReadPosition.objects.filter(cluster=cluster).exists()


def _read_positions(cluster: Cluster) -> tuple[dict[tuple[str, int], int], dict[str, str]]:
    """The cluster's read positions {(topic, partition): next offset} and the topic IDs
    they were read under {topic: ID} (topics read without an ID left out)."""
    positions: dict[tuple[str, int], int] = {}
    ids: dict[str, str] = {}
    for topic, partition, next_offset, topic_id in ReadPosition.objects.filter(
        cluster=cluster
    ).values_list("topic", "partition", "next_offset", "topic_id"):
        positions[(topic, partition)] = next_offset
        if topic_id:
            ids[topic] = topic_id
    return positions, ids


# A cluster's stored SourceOffset rows as the save compares them:
# {(topic, key_hash): (pk, the values of SOURCE_OFFSET_FIELDS)}.
StoredRows = dict[tuple[str, str], tuple[int, list]]


@dataclass
class MergeInputs:
    """The merge's inputs that need no Kafka read (`_merge_inputs`)."""

    spark: object
    # The stored per-key state (STATE_SCHEMA) as an Arrow table; None for a full refresh.
    previous_table: object | None
    stored_keys: int  # how many keys the last run stored (a full refresh counts them too)
    # The stored SourceOffset rows the previous state was read from, as the save compares
    # them (`StoredRows`); None for a full refresh, whose save reads them itself.
    stored_rows: StoredRows | None
    own_topics: dict[str, str]  # connector -> its own offsets topic (KIP-618)
    running: frozenset[str]  # connectors that commit offsets now


def _merge_inputs(
    spark, cluster: Cluster, connectors: list[ConnectorSummary], *, full: bool
) -> MergeInputs:
    """Start Spark if needed and build the merge's inputs from the database and the configs.

    Built while the snapshot is planned (`_read_state_and_plan`): that is mostly waiting on
    the broker, and the merge's inputs were ~0.3-0.5 s of its building, which is what an
    incremental refresh's merge waited for. The previous state stays an Arrow table until the
    merge makes its frame.
    """
    from offsets.spark.session import get_spark

    spark = spark or get_spark(settings.SPARK_MASTER, settings.SPARK_CONF)
    if full:
        table = stored_rows = None
        stored_keys = SourceOffset.objects.filter(cluster=cluster).count()
    else:
        table, stored_rows = _previous_state(cluster)
        stored_keys = table.num_rows
    return MergeInputs(
        spark=spark,
        previous_table=table,
        stored_keys=stored_keys,
        stored_rows=stored_rows,
        own_topics={c.name: c.own_offsets_topic for c in connectors if c.own_offsets_topic},
        running=frozenset(c.name for c in connectors if c.consuming),
    )


def _previous_state(cluster: Cluster):
    """Return the stored per-key state as an Arrow table (STATE_SCHEMA) and as the stored
    rows the save compares its results with (`StoredRows`).

    An Arrow table, for a frame with no pandas conversion (`merge.previous_frame`).

    The save reuses the rows read here rather than read them again (~0.03 s of an incremental
    refresh of 2,000 keys): only a refresh writes SourceOffset rows, and the save's lock and
    read-position check stop it when another refresh saved since this one began.
    """
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    from offsets.spark.schemas import STATE_COLUMNS, STATE_SCHEMA

    def ms(moment: datetime | None) -> int | None:
        return None if moment is None else int(moment.timestamp() * 1000)

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
                ms(field["last_commit_at"]) or 0,
                field["progress"],
                field["commits"],
                ms(field["first_commit_at"]),
                ms(field["last_commit_at"]),
            )
        )
    columns = zip(*rows, strict=True) if rows else ([] for _ in STATE_COLUMNS)
    table = pa.table(
        {name: list(column) for name, column in zip(STATE_COLUMNS, columns, strict=True)},
        schema=to_arrow_schema(STATE_SCHEMA),
    )
    return table, stored


def _compute_sources(
    cluster: Cluster,
    sources: SourceResults,
    inputs: MergeInputs,
    *,
    now_ms: int,
    run_dir: Path,
    phase: Progress,
) -> None:
    # The read tasks fold what they read (offsets.spark.partials) and write every commit to
    # the run's history files themselves (offsets.spark.history_files): Spark gets only the
    # partial results per key, and merges them with the previous state (offsets.spark.merge):
    # the commits (a row each) never pass through Spark. Topics with nothing new get no read
    # at all (not even an empty frame: each of its partitions would cost a task).
    reading_topics = [
        topic
        for topic, plan in sources.plans.items()
        if any(end > start for start, end in plan.values())
    ]
    if reading_topics:
        phase(
            "reading, folding and writing the commit history (Parquet); "
            "merging the latest offsets, key drift, rewinds, buckets and malformed records"
        )
    else:
        phase("merging the latest offsets, key drift and stalls")
    collected = _read_and_merge(
        cluster, sources, inputs, reading_topics, now_ms=now_ms, run_dir=run_dir
    )
    sources.records_by_topic.update(
        {row["topic"]: row["count"] for row in collected.pop("records", [])}
    )
    for name, rows in collected.items():
        setattr(sources, name, rows)


def _read_and_merge(
    cluster: Cluster,
    sources: SourceResults,
    inputs: MergeInputs,
    reading_topics: list[str],
    *,
    now_ms: int,
    run_dir: Path,
) -> dict[str, list[dict]]:
    """Fold the new records in Spark tasks (read from Kafka, or those the planner kept) and
    merge them with the previous state: the collected results by name.

    One Spark job: the read tasks write the commit history as they fold, and their folds go
    straight on to the merge.
    """
    from pyspark.sql import DataFrame

    from offsets.spark import merge

    spark = inputs.spark
    frames = _folded_reads(spark, cluster, sources, reading_topics, run_dir=run_dir)
    read_tasks = sum(_read_tasks(sources.plans[t]) for t in reading_topics if t not in sources.kept)
    # The keys the last run stored; with none stored, the records to read count instead.
    keys = inputs.stored_keys or total_records(sources)
    # A merge of one task runs without generated code (tuning.NO_CODEGEN_CONF); the settings
    # are read when the query is planned, which collecting it does.
    one_task = tuning.merge_tasks(keys) == 1
    with spark_conf(spark, tuning.NO_CODEGEN_CONF if one_task else {}):
        results = merge.merge_results(
            spark,
            functools.reduce(DataFrame.unionByName, frames) if frames else None,
            inputs.previous_table,
            inputs.own_topics,
            inputs.running,
            keys=keys,
            parallel_read=read_tasks > 1,
            worker_topic=cluster.offsets_topic,
            now_ms=now_ms,
            stall_after_ms=settings.STALL_AFTER_FLUSH_INTERVALS * cluster.offset_flush_interval_ms,
        )
        return merge.collect_results(results)


def _folded_reads(
    spark, cluster: Cluster, sources: SourceResults, reading_topics: list[str], *, run_dir: Path
) -> list:
    """A frame of the folds (partials.SUMMARY_SCHEMA) of each topic's new records: the
    records the planner kept, or a read of Kafka whose tasks fold what they read."""
    from offsets.spark.kafka_source import NAME, kept_records_frame

    kafka_json = json.dumps(cluster.kafka_settings())
    return [
        kept_records_frame(
            spark,
            topic,
            sources.plans[topic],
            sources.kept[topic],
            bucket_seconds=settings.COMMIT_BUCKET_SECONDS,
            history_dir=str(run_dir),
        )
        if topic in sources.kept
        else spark.read.format(NAME)
        .option("topic", topic)
        .option("kafka.settings", kafka_json)
        .option("ranges", json.dumps({str(p): list(r) for p, r in sources.plans[topic].items()}))
        .option("max_tasks", str(_read_tasks(sources.plans[topic])))
        .option("bucket_seconds", str(settings.COMMIT_BUCKET_SECONDS))
        # A broker gone mid-read fails the run after this long, not after 30 s.
        .option("timeout", str(settings.KAFKA_READ_TIMEOUT))
        .option("history_dir", str(run_dir))
        .load()
        for topic in reading_topics
    ]


def total_records(sources: SourceResults) -> int:
    """The records the planned snapshot covers (compaction gaps included)."""
    return sum(end - start for plan in sources.plans.values() for start, end in plan.values())


def _read_tasks(plan: dict[int, tuple[int, int]]) -> int:
    records = sum(end - start for start, end in plan.values())
    return tuning.read_tasks(records, settings.SPARK_MAX_READ_TASKS)


def _sink_topics(
    connector: ConnectorSummary, existing: dict[str, int], committed: dict[tuple[str, int], int]
) -> set[str]:
    topics = sink_topics(
        connector.topics, connector.topics_regex, existing, connector=connector.name
    )
    topics |= {topic for topic, _ in committed if topic in existing}
    return topics


def _sink_connectors(connectors: list[ConnectorSummary]) -> list[ConnectorSummary]:
    return [c for c in connectors if c.type == "sink" and not c.deleted]


def _consumer_position(committed: int | None, log_start: int) -> int:
    """Where a sink's consumer reads next: its committed offset, or the log start when it
    never committed or its offset fell below the log start (connect-formats.md)."""
    return max(committed if committed is not None else log_start, log_start)


# A sink partition's lag in time as the last refresh found it:
# {(connector, (topic, partition)): ((the consumer's position, log end), lag in ms)}.
KnownTimeLags = dict[tuple[str, tuple[str, int]], tuple[tuple[int, int], int]]


def _known_time_lags(cluster: Cluster) -> KnownTimeLags:
    """The lags in time of the cluster's lagging sink partitions at the last refresh, with
    the offsets they were measured between (`_sample_sinks` reuses them)."""
    known: KnownTimeLags = {}
    rows = SinkPartitionLag.objects.filter(
        cluster=cluster, lag_records__gt=0, lag_ms__isnull=False
    ).values_list("connector", "topic", "partition", "committed", "log_start", "log_end", "lag_ms")
    for connector, topic, partition, committed, low, high, lag_ms in rows:
        known[(connector, (topic, partition))] = (
            (_consumer_position(committed, low), high),
            lag_ms,
        )
    return known


def _sample_sinks(
    cluster: Cluster,
    connectors: list[ConnectorSummary],
    *,
    now_ms: int,
    recent: dict[tuple[str, str, int], list[LagPoint]],
    known: KnownTimeLags | None = None,
) -> SinkResults:
    """Sample every sink partition's lag and rate it with `recent` (`_recent_samples`).

    The lag in time is the newest record's timestamp less that of the record at the
    consumer's position. A partition whose position and log end are both where they were at
    the last refresh (`known`, `_known_time_lags`) has the same two records, so its lag in
    time is reused rather than read again (a topic deleted and created again in between
    whose offsets came back to the same two would keep the old value until one moves).
    Reading the two records of every lagging partition was most of the sampling's broker
    work: a consumer per round, a fetch per partition, on every refresh, also for a sink
    that has not moved (for the benchmark's 17 lagging partitions ~0.06-0.15 s; the embedded
    broker's CPU per incremental refresh fell from ~0.17-0.24 s to ~0.13-0.14 s without it).

    Reads Kafka only, not the database: it runs beside the Spark phase, on another thread.
    """
    known = known or {}
    sinks = _sink_connectors(connectors)
    results = SinkResults()
    if not sinks:
        return results
    kafka = cluster.kafka_settings()
    existing = admin.topic_partition_counts(kafka)
    committed_by_group = groups.committed_offsets_of(kafka, [c.sink_group for c in sinks])
    wanted: dict[str, list[tuple[str, int]]] = {}
    for connector in sinks:
        committed = committed_by_group.get(connector.sink_group, {})
        topics = _sink_topics(connector, existing, committed)
        wanted[connector.name] = [
            (topic, p) for topic in sorted(topics) for p in range(existing[topic])
        ]
    all_partitions = sorted({tp for tps in wanted.values() for tp in tps})
    marks = admin.watermarks(kafka, all_partitions)
    # Where each lagging connector's consumer stands: {(connector, partition): offset}. Two
    # sinks may read one topic from different offsets, each its own lag.
    positions: dict[tuple[str, tuple[str, int]], int] = {}
    for connector in sinks:
        committed = committed_by_group.get(connector.sink_group, {})
        for tp in wanted[connector.name]:
            low, high = marks[tp]
            position = _consumer_position(committed.get(tp), low)
            if position < high:
                positions[(connector.name, tp)] = position
    # The lag in time needs the record at each position and the newest record (at high - 1, or
    # a little before in a topic of transactions), unless the last refresh measured it between
    # the same two offsets.
    reused: dict[tuple[str, tuple[str, int]], int] = {}
    for slot, position in positions.items():
        offsets, lag_ms = known.get(slot, (None, None))
        if offsets == (position, marks[slot[1]][1]):
            reused[slot] = lag_ms
    asked = {slot: position for slot, position in positions.items() if slot not in reused}
    stamps = reading.timestamps_at(
        kafka,
        {(tp, marks[tp][1] - 1) for _, tp in asked}
        | {(tp, position) for (_, tp), position in asked.items()},
    )
    newest = {
        tp: stamps[(tp, marks[tp][1] - 1)] for _, tp in asked if (tp, marks[tp][1] - 1) in stamps
    }
    # Nothing at high - 1: a topic of transactions ends with a commit marker, which no consumer
    # returns (an exactly-once source's output); its newest record is a little before.
    newest |= reading.newest_timestamps(
        kafka, {tp: marks[tp] for _, tp in asked if tp not in newest}
    )

    sampled_at = _ms_to_datetime(now_ms)
    for connector in sinks:
        committed = committed_by_group.get(connector.sink_group, {})
        if not committed:
            # preCommit returns {} for connectors that store offsets themselves: no lag to report.
            results.externally_managed.add(connector.name)
        for tp in wanted[connector.name]:
            low, high = marks[tp]
            offset = committed.get(tp)
            # A partition with no commit counts from the log start (connect-formats.md).
            lag = max(high - _consumer_position(offset, low), 0)
            lag_ms = None
            if lag == 0:
                lag_ms = 0
            elif (connector.name, tp) in reused:
                lag_ms = reused[(connector.name, tp)]
            else:
                newest_at = newest.get(tp)
                oldest_unread = stamps.get((tp, positions[(connector.name, tp)]))
                if newest_at is not None and oldest_unread is not None:
                    lag_ms = max(newest_at - oldest_unread, 0)
            window = recent.get((connector.name, *tp), [])[-(settings.LAG_WINDOW_SAMPLES - 1) :]
            window = [*window, LagPoint(offset if offset is not None else low, lag)]
            status = (
                LagStatus.OK
                if connector.name in results.externally_managed
                else partition_lag_status(window, consuming=connector.consuming)
            )
            results.lags.append(
                SinkPartitionLag(
                    cluster=cluster,
                    connector=connector.name,
                    group=connector.sink_group,
                    topic=tp[0],
                    partition=tp[1],
                    committed=offset,
                    log_start=low,
                    log_end=high,
                    lag_records=lag,
                    lag_ms=lag_ms,
                    status=status,
                    sampled_at=sampled_at,
                )
            )
            results.samples.append(
                LagSample(
                    cluster=cluster,
                    connector=connector.name,
                    topic=tp[0],
                    partition=tp[1],
                    sampled_at=sampled_at,
                    committed=offset,
                    log_end=high,
                    lag_records=lag,
                    lag_ms=lag_ms,
                )
            )
    return results


def _recent_samples(
    cluster: Cluster, connectors: list[str]
) -> dict[tuple[str, str, int], list[LagPoint]]:
    """The lag samples of every sink partition at the cluster's last N-1 samplings, oldest
    first (samples with no committed offset left out).

    A refresh samples every sink at one time (`sampled_at`), so the window is found as those
    times first, through the (cluster, sampled_at) index, and only their rows are read.
    Reading every sample kept and skipping the older ones took 2.6 s per refresh after one
    day of `--every 60` over 1,000 sink partitions (1.44M samples, SQLite): more than the rest
    of an incremental refresh, and growing with every refresh.
    """
    window: dict[tuple[str, str, int], list[LagPoint]] = defaultdict(list)
    times = _last_samplings(cluster, settings.LAG_WINDOW_SAMPLES - 1)
    if not times or not connectors:
        return window
    samples = (
        LagSample.objects.filter(
            cluster=cluster, connector__in=connectors, sampled_at__gte=times[-1]
        )
        .order_by("sampled_at")
        .values_list("connector", "topic", "partition", "committed", "lag_records")
    )
    for connector, topic, partition, committed, lag in samples:
        if committed is not None:
            window[(connector, topic, partition)].append(LagPoint(committed, lag))
    return window


def _last_samplings(cluster: Cluster, count: int) -> list[datetime]:
    """The times of the cluster's last `count` lag samplings, newest first."""
    if count <= 0:
        return []
    return list(
        LagSample.objects.filter(cluster=cluster)
        .order_by("-sampled_at")
        .values_list("sampled_at", flat=True)
        .distinct()[:count]
    )


def _drop_expired_lag_samples(cluster: Cluster, *, now_ms: int) -> None:
    """Delete lag samples older than LAG_SAMPLE_RETENTION_DAYS (0: keep every sample).

    A refresh adds a sample per sink partition, so a `--every` loop would grow the table
    without end. The samples of the last LAG_WINDOW_SAMPLES samplings stay whatever their age:
    Burrow's rules need them when refreshes are further apart than the retention.
    """
    days = settings.LAG_SAMPLE_RETENTION_DAYS
    if days <= 0:
        return
    cutoff = _ms_to_datetime(now_ms) - timedelta(days=days)
    window = _last_samplings(cluster, settings.LAG_WINDOW_SAMPLES)
    if window:
        cutoff = min(cutoff, window[-1])
    LagSample.objects.filter(cluster=cluster, sampled_at__lt=cutoff).delete()


# The SourceOffset fields a refresh computes (key_bytes, partition and offset follow from
# key_hash, partition_text and offset_text), in the order _source_offset_values gives them.
SOURCE_OFFSET_FIELDS = (
    "connector",
    "identity",
    "partition_text",
    "offset_text",
    "kafka_partition",
    "kafka_offset",
    "progress",
    "first_commit_at",
    "last_commit_at",
    "commits",
    "rewinds",
    "stalled",
    "effective",
)
# Rows deleted per statement (SQLite limits the parameters of one statement).
DELETE_BATCH = 500


def _source_offset_values(row: dict, rewinds: int) -> tuple:
    return (
        row["connector"],
        row["identity"],
        row["partition_json"],
        row["offset_json"],
        row["kafka_partition"],
        row["kafka_offset"],
        row["progress"],
        _ms_to_datetime(row["first_commit_ms"]),
        _ms_to_datetime(row["last_commit_ms"]),
        row["commits"],
        rewinds,
        bool(row["stalled"]),
        bool(row["effective"]),
    )


def stored_source_offsets(cluster: Cluster) -> StoredRows:
    """The cluster's stored SourceOffset rows as the save compares them."""
    return {
        (topic, key_hash): (pk, values)
        for pk, topic, key_hash, *values in SourceOffset.objects.filter(
            cluster=cluster
        ).values_list("pk", "topic", "key_hash", *SOURCE_OFFSET_FIELDS)
    }


def _save_source_offsets(
    cluster: Cluster, latest: list[dict], stored_rows: StoredRows | None = None
) -> None:
    """Make the stored SourceOffset rows equal the Spark result, writing only what differs.

    The result holds every key (the previous state included), so a stored key missing from it
    is gone (a full refresh of a topic that lost it). An incremental refresh of a big cluster
    usually touches few keys: rewriting all of them every time cost more than the Spark work.
    Changed rows are updated in place (`_update_source_offsets`), new ones inserted. Runs inside
    the refresh's transaction, after this run's RewindEvents are stored.

    `stored_rows` are the rows as the refresh read them at its start (`_previous_state`); without
    them they are read here.
    """
    rewinds = {
        (topic, key_hash): count
        for topic, key_hash, count in RewindEvent.objects.filter(cluster=cluster)
        .values("topic", "key_hash")
        .annotate(n=Count("id"))
        .values_list("topic", "key_hash", "n")
    }
    # A copy: a retried save starts from the same rows.
    stored = stored_source_offsets(cluster) if stored_rows is None else dict(stored_rows)
    changed, created = [], []
    for row in latest:
        slot = (row["topic"], row["key_hash"])
        values = _source_offset_values(row, rewinds.get(slot, 0))
        old = stored.pop(slot, None)
        if old is None:
            created.append(_source_offset(cluster, row, values))
        elif fields := _changed_fields(old[1], values, row):
            changed.append((old[0], fields))
    gone = [pk for pk, _ in stored.values()]
    for start in range(0, len(gone), DELETE_BATCH):
        SourceOffset.objects.filter(pk__in=gone[start : start + DELETE_BATCH]).delete()
    _update_source_offsets(changed)
    SourceOffset.objects.bulk_create(created, batch_size=2000)


def _changed_fields(stored: list, values: tuple, row: dict) -> dict[str, object]:
    """The SOURCE_OFFSET_FIELDS whose value differs from the stored one, {name: new value},
    with the parsed `offset` beside a changed `offset_text`."""
    fields = {
        name: new
        for name, old, new in zip(SOURCE_OFFSET_FIELDS, stored, values, strict=True)
        if old != new
    }
    if "offset_text" in fields:
        fields["offset"] = _parsed_offset(row)
    return fields


def _update_source_offsets(changed: list[tuple[int, dict[str, object]]]) -> None:
    """UPDATE rows by primary key: `changed` is [(pk, {field name: new value})].

    One statement per set of changed fields, run for every row that changed those
    (executemany), each value prepared by its model field for the database at hand (JSON,
    datetimes). New commits change the same few fields of every key they touch (the offset,
    its Kafka position, the progress, the last commit and the count), so there are few such
    sets. Django's bulk_update would write a CASE WHEN per column instead; deleting and
    inserting the rows again (as before) made the save of an incremental refresh that touched
    2,000 keys take ~0.45 s on SQLite, an UPDATE of every field ~0.1 s, and one of the changed
    fields only ~0.06 s (preparing each value for the database was most of it).
    """
    by_fields: dict[tuple[str, ...], list[tuple[int, list]]] = defaultdict(list)
    for pk, fields in changed:
        by_fields[tuple(fields)].append((pk, list(fields.values())))
    # This thread's connection itself: each attribute read through the `connection` proxy
    # looks the thread's connection up again, ~30,000 times for 2,000 changed keys.
    database = connections[DEFAULT_DB_ALIAS]
    quote = database.ops.quote_name
    for names, rows in by_fields.items():
        fields = [SourceOffset._meta.get_field(name) for name in names]
        assignments = ", ".join(f"{quote(field.column)} = %s" for field in fields)
        statement = (
            f"UPDATE {quote(SourceOffset._meta.db_table)} SET {assignments} "
            f"WHERE {quote(SourceOffset._meta.pk.column)} = %s"
        )
        with database.cursor() as cursor:
            cursor.executemany(
                statement,
                [
                    [
                        field.get_db_prep_save(value, database)
                        for field, value in zip(fields, values, strict=True)
                    ]
                    + [pk]
                    for pk, values in rows
                ],
            )


def _parsed_offset(row: dict) -> dict | None:
    """The offset of a result row as JSON data (None: a tombstone)."""
    return None if row["offset_json"] is None else json.loads(row["offset_json"])


def _source_offset(cluster: Cluster, row: dict, values: tuple) -> SourceOffset:
    key = bytes(row["key"])
    return SourceOffset(
        cluster=cluster,
        topic=row["topic"],
        key_hash=row["key_hash"],
        key_bytes=key,
        partition=parse_offset_record(key, None).partition,
        offset=_parsed_offset(row),
        **dict(zip(SOURCE_OFFSET_FIELDS, values, strict=True)),
    )


@transaction.atomic
def _save(
    cluster: Cluster,
    run: RefreshRun,
    state: connect_state.ConnectState,
    sources: SourceResults,
    sinks: SinkResults,
    *,
    full: bool,
    now_ms: int,
    stored_rows: StoredRows | None = None,
) -> None:
    """Replace the current results and append the history, all or nothing.

    `stored_rows`: the SourceOffset rows as the refresh read them (`_save_source_offsets`).
    """
    # One save of a cluster at a time, each checking what the one before it saved.
    cluster.lock()
    if not full and _read_positions(cluster)[0] != sources.read_from:
        # Another refresh (a loop beside a button press, a run deemed abandoned that was not)
        # read the same new records and saved first: adding this one's counts too would
        # count those commits twice. A full refresh replaces everything, so it may go on.
        raise RefreshOvertaken(
            f"Another refresh of {cluster.name} saved its results while this one ran, so this "
            "one's were dropped rather than count the same commits twice; the next refresh "
            "reads on from where that one stopped."
        )
    connectors = state.connectors
    if full:
        for model in (CommitBucket, RewindEvent, MalformedCount, ReadPosition):
            model.objects.filter(cluster=cluster).delete()

    RewindEvent.objects.bulk_create(
        (
            RewindEvent(
                cluster=cluster,
                connector=row["connector"],
                topic=row["topic"],
                key_hash=row["key_hash"],
                partition=json.loads(row["partition_json"]),
                at=_ms_to_datetime(row["timestamp_ms"]),
                kafka_partition=row["kafka_partition"],
                kafka_offset=row["kafka_offset"],
                from_progress=row["from_progress"],
                to_progress=row["to_progress"],
            )
            for row in sources.rewinds
        ),
        ignore_conflicts=True,
    )
    _save_source_offsets(cluster, sources.latest, stored_rows)

    add_commit_buckets(
        cluster,
        {
            (row["connector"], _ms_to_datetime(row["bucket_start_ms"])): row["commits"]
            for row in sources.buckets
        },
    )
    _add_counts(
        MalformedCount,
        cluster,
        {
            (row["topic"], row["connector"] or "", row["reason"]): row["count"]
            for row in sources.malformed
        },
        key_fields=("topic", "connector", "reason"),
        count_field="count",
        extra={
            # Examples are raw bytes of hostile records: masked before they are stored.
            (row["topic"], row["connector"] or "", row["reason"]): {
                "example": mask_text(row["example"] or "")
            }
            for row in sources.malformed
        },
    )

    _save_connect_topics_malformed(cluster, state)

    KeyDrift.objects.filter(cluster=cluster).delete()
    KeyDrift.objects.bulk_create(
        KeyDrift(
            cluster=cluster,
            connector=row["connector"],
            identity=row["identity"],
            forms=[
                {
                    "topic": form["topic"],
                    "key": form["key_text"],
                    "key_hash": form["key_hash"],
                    "offset": form["offset_json"],
                    "last_commit_at": _ms_to_datetime(form["last_commit_ms"]).isoformat()
                    if form["last_commit_ms"]
                    else None,
                }
                for form in row["forms"]
            ],
        )
        for row in sources.drift
    )

    SinkPartitionLag.objects.filter(cluster=cluster).delete()
    SinkPartitionLag.objects.bulk_create(sinks.lags)
    LagSample.objects.bulk_create(sinks.samples)
    _drop_expired_lag_samples(cluster, now_ms=now_ms)

    ReadPosition.objects.bulk_create(
        (
            ReadPosition(
                cluster=cluster,
                topic=topic,
                partition=partition,
                next_offset=end,
                topic_id=sources.topic_ids.get(topic, ""),
            )
            for topic, plan in sources.plans.items()
            for partition, (_, end) in plan.items()
        ),
        update_conflicts=True,
        unique_fields=["cluster", "topic", "partition"],
        update_fields=["next_offset", "topic_id"],
    )
    _save_snapshots(cluster, connectors, sinks, now_ms=now_ms)


def _save_connect_topics_malformed(cluster: Cluster, state: connect_state.ConnectState) -> None:
    """Replace the malformed counts of the config and status topics.

    Unlike the offsets topics (read incrementally, so counts add up), these two are read whole
    by every refresh: their counts are the current ones, not increments.
    """
    topics = {
        cluster.configs_topic: (state.config_malformed, state.config_examples),
        cluster.status_topic: (state.status_malformed, state.status_examples),
    }
    MalformedCount.objects.filter(cluster=cluster, topic__in=topics).delete()
    MalformedCount.objects.bulk_create(
        MalformedCount(
            cluster=cluster,
            topic=topic,
            connector="",
            reason=reason,
            count=count,
            example=examples.get(reason, ""),
        )
        for topic, (counts, examples) in topics.items()
        for reason, count in counts.items()
    )


def add_commit_buckets(cluster: Cluster, counts: dict[tuple[str, datetime], int]) -> None:
    """Add commits to the cluster's buckets: {(connector, bucket start): commits}."""
    _add_counts(
        CommitBucket,
        cluster,
        counts,
        key_fields=("connector", "bucket_start"),
        count_field="commits",
        # New commits are recent: only the buckets from the earliest one on can change.
        narrow=lambda counts: {"bucket_start__gte": min(start for _, start in counts)},
    )


def _add_counts(
    model,
    cluster: Cluster,
    counts: dict[tuple, int],
    *,
    key_fields: tuple[str, ...],
    count_field: str,
    extra: dict | None = None,
    narrow: Callable[[dict[tuple, int]], dict] | None = None,
) -> None:
    """Add counts to existing rows (incremental refresh) or create them, in bulk.

    `narrow` gives filters that keep every existing row the counts can touch, so that a long
    history is not loaded to add a few counts. Runs inside the refresh's transaction; one
    refresh writes a cluster at a time.
    """
    if not counts:
        return
    existing = {
        tuple(getattr(row, name) for name in key_fields): row
        for row in model.objects.filter(cluster=cluster, **(narrow(counts) if narrow else {}))
    }
    changed, created = [], []
    for key, count in counts.items():
        row = existing.get(key)
        if row is None:
            fields = dict(zip(key_fields, key, strict=True))
            created.append(
                model(
                    cluster=cluster, **fields, **{count_field: count}, **(extra or {}).get(key, {})
                )
            )
        else:
            setattr(row, count_field, getattr(row, count_field) + count)
            changed.append(row)
    model.objects.bulk_update(changed, [count_field], batch_size=1000)
    model.objects.bulk_create(created, batch_size=1000)


def _save_snapshots(
    cluster: Cluster, connectors: list[ConnectorSummary], sinks: SinkResults, *, now_ms: int
) -> None:
    stats: dict[str, dict] = defaultdict(
        lambda: {"partitions": 0, "last": None, "rewinds": 0, "stalled": 0}
    )
    for name, last, rewinds, stalled in SourceOffset.objects.filter(
        cluster=cluster, effective=True, offset_text__isnull=False
    ).values_list("connector", "last_commit_at", "rewinds", "stalled"):
        entry = stats[name]
        entry["partitions"] += 1
        entry["last"] = max(filter(None, (entry["last"], last)), default=None)
        entry["rewinds"] += rewinds
        entry["stalled"] += int(stalled)
    drift = dict(
        KeyDrift.objects.filter(cluster=cluster).values_list("connector").annotate(n=Count("id"))
    )
    malformed: dict[str, int] = defaultdict(int)
    for name, count in (
        MalformedCount.objects.filter(cluster=cluster)
        .exclude(connector="")
        .values_list("connector", "count")
    ):
        malformed[name] += count
    lags: dict[str, list[SinkPartitionLag]] = defaultdict(list)
    for lag in sinks.lags:
        lags[lag.connector].append(lag)

    known = {c.name for c in connectors}
    # Connectors whose config is gone entirely (compacted tombstone) but whose offsets remain.
    orphans = sorted(set(stats) - known)
    updated_at = timezone.now()
    ConnectorSnapshot.objects.filter(cluster=cluster).delete()
    snapshots = []
    for connector in connectors:
        entry = stats.get(connector.name, {})
        sink_lags = lags.get(connector.name, [])
        external = connector.name in sinks.externally_managed
        snapshots.append(
            ConnectorSnapshot(
                cluster=cluster,
                name=connector.name,
                type=connector.type,
                connector_class=connector.connector_class,
                target_state=connector.target_state,
                runtime_state=connector.runtime_state or "",
                task_states={str(k): v for k, v in connector.task_states.items()},
                task_count=connector.task_count,
                deleted=connector.deleted,
                mirrormaker2=connector.mirrormaker2,
                own_offsets_topic=connector.own_offsets_topic or "",
                sink_group=connector.sink_group or "",
                config=connector.config,
                trace=connector.trace or "",
                partitions=len(sink_lags)
                if connector.type == "sink"
                else entry.get("partitions", 0),
                last_commit_at=entry.get("last"),
                rewinds=entry.get("rewinds", 0),
                stalled_partitions=entry.get("stalled", 0),
                drifted_partitions=drift.get(connector.name, 0),
                malformed=malformed.get(connector.name, 0),
                offsets_managed_externally=external,
                lag_records=None
                if external or connector.type != "sink"
                else sum(lag.lag_records for lag in sink_lags),
                lag_ms=None
                if external or connector.type != "sink"
                else max((lag.lag_ms or 0 for lag in sink_lags), default=0),
                lag_status=""
                if external or connector.type != "sink"
                else connector_lag_status([LagStatus(lag.status) for lag in sink_lags]),
                updated_at=updated_at,
            )
        )
    for name in orphans:
        entry = stats[name]
        snapshots.append(
            ConnectorSnapshot(
                cluster=cluster,
                name=name,
                type="source",
                deleted=True,
                partitions=entry["partitions"],
                last_commit_at=entry["last"],
                rewinds=entry["rewinds"],
                drifted_partitions=drift.get(name, 0),
                malformed=malformed.get(name, 0),
                updated_at=updated_at,
            )
        )
    ConnectorSnapshot.objects.bulk_create(snapshots)


def _compact_history(cluster: Cluster, phase: Progress) -> None:
    """Merge the history's newest run folders when there are too many (history_files).

    The results are saved by now: a merge that fails leaves the run folders as they were (the
    next refresh tries again), so it is logged, and the refresh still succeeded.
    """
    try:
        merged = history_files.compact_runs(history_path(cluster), history_files.MAX_RUN_FOLDERS)
    except Exception:
        logger.exception("Refresh of %s: merging the history's run folders failed", cluster.name)
        return
    if merged is not None:
        phase(f"merged the history of runs {merged.name.removeprefix('run=')} into one folder")


def _drop_other_runs(cluster: Cluster, *, keep: Path) -> None:
    """After a full refresh, the history of earlier runs is superseded."""
    root = history_path(cluster)
    if not root.exists():
        return
    for path in root.iterdir():
        if path != keep:
            shutil.rmtree(path, ignore_errors=True)
