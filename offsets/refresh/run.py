"""A refresh from start to end: plan, compute, sample the sinks, save, record the run.

    run_refresh(cluster=cluster)            # incremental: only records not read before
    run_refresh(cluster=cluster, full=True) # rebuild from the beginning of the topics

A failure at any phase records a failed RefreshRun and leaves the previous results exactly as
they were.
"""

import functools
import logging
import shutil
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from django.db import OperationalError, connection, transaction
from django.utils import timezone

from offsets import connect_state
from offsets.alerts import evaluation
from offsets.history import store as history_store
from offsets.kafka.errors import KafkaUnavailable, TopicNotFound
from offsets.models import Cluster, RefreshRun
from offsets.refresh import (
    background,
    compute,
    memory,
    mirrors,
    plan,
    run_records,
    sinks,
    standalone,
    store,
)
from offsets.refresh.inputs import MergeInputs, merge_inputs
from offsets.refresh.results import SinkResults, SourcePlan, SourceResults
from offsets.spark.errors import ConnectUnreachable

logger = logging.getLogger(__name__)

Progress = Callable[[str], None]


@dataclass
class Refreshed:
    """Everything one refresh computed, ready to save."""

    state: connect_state.ConnectState
    plan: SourcePlan
    inputs: MergeInputs
    sources: SourceResults
    sinks: SinkResults
    full: bool


class _Phases:
    """Records the run's phase for the pages and tells it to the caller, timed from the start."""

    def __init__(self, run: RefreshRun, say: Progress, started: float):
        self.run, self.say, self.started = run, say, started

    def __call__(self, text: str) -> None:
        try:
            RefreshRun.objects.filter(pk=self.run.pk).update(phase=run_records.phase_text(text))
        except OperationalError as exc:
            # Progress is for people watching; a busy database must not fail the run for it.
            if connection.in_atomic_block:
                raise
            logger.warning("Could not record the refresh's phase (%s): %s", text, exc)
        self.say(f"[{time.monotonic() - self.started:6.1f}s] {text}")


def run_refresh(
    *,
    cluster: Cluster,
    full: bool = False,
    progress: Progress | None = None,
    spark=None,
    now_ms: int | None = None,
    run: RefreshRun | None = None,
    stopping: threading.Event | None = None,
) -> RefreshRun:
    """Refresh one cluster's results; return the recorded run (succeeded or failed).

    `run` is a RUNNING run claimed beforehand (offsets.refresh.background.claim_refresh
    claims one so that two refreshes of a cluster never run at once), whose lease the caller
    renews; without it the refresh records a new run. `stopping` is set once the process
    shuts down (the scheduler's stop cancels Spark's jobs): a refresh that fails then was
    interrupted by the shutdown, and is recorded so.
    """
    say = progress or (lambda text: None)
    started = time.monotonic()
    if run is None:
        now = background.database_now(Cluster.objects.filter(pk=cluster.pk))
        run = background.leased_run(cluster, full=full, now=now)
    phase = _Phases(run, say, started)
    run_dir = history_store.run_folder(cluster, run.pk)
    try:
        now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
        if cluster.is_standalone:
            done = _compute_standalone(cluster, now_ms=now_ms, run_dir=run_dir, phase=phase)
        else:
            done = _compute(
                cluster, run, full=full, spark=spark, now_ms=now_ms, run_dir=run_dir, phase=phase
            )
        _save(cluster, done, now_ms=now_ms, run_dir=run_dir, run_pk=run.pk, phase=phase)
        _succeeded(cluster, run, done)
    except KeyboardInterrupt:
        # Ctrl-C or SIGTERM: recorded, so that the run does not hold its cluster meanwhile.
        shutil.rmtree(run_dir, ignore_errors=True)
        _interrupted(cluster, run, run_records.INTERRUPTED, started)
        raise
    except Exception as exc:
        shutil.rmtree(run_dir, ignore_errors=True)
        if stopping is not None and stopping.is_set():
            # What Spark raised (SPARK_JOB_CANCELLED, a Py4J error of a gateway going away)
            # is the shutdown's doing, not the cluster's: no traceback, one warning.
            return _interrupted(cluster, run, run_records.STOPPED, started)
        _failed(cluster, run, exc)
    _finish(cluster, run, started, say)
    return run


def _interrupted(cluster: Cluster, run: RefreshRun, error: str, started: float) -> RefreshRun:
    run_records.record_interrupted(cluster, run, error=error, seconds=time.monotonic() - started)
    run.refresh_from_db(fields=run_records.RUN_OUTCOME_FIELDS)
    return run


def _compute(
    cluster: Cluster,
    run: RefreshRun,
    *,
    full: bool,
    spark,
    now_ms: int,
    run_dir: Path,
    phase: Progress,
) -> Refreshed:
    """Plan the read, run the Spark phase and sample the sinks' lag beside it.

    The sinks' lag is sampled from Kafka on another thread, from as soon as the connectors are
    known until the Spark phase ends, so that it is never on the critical path. The sampling
    reads no database (its recent samples are read here, on this thread).
    """
    phase("reading connector configs and status; planning the offsets topics snapshot")
    with ThreadPoolExecutor(max_workers=1) as side:
        sampling: Future[SinkResults] | None = None

        def prepare(state: connect_state.ConnectState, *, full: bool) -> MergeInputs:
            nonlocal sampling
            if sampling is None:  # sampled once, also when a recreated topic rebuilds
                sampling = side.submit(
                    sinks.sample_sinks,
                    cluster,
                    state.connectors,
                    now_ms=now_ms,
                    **sinks.database_reads(cluster, state.connectors),
                )
            return merge_inputs(spark, cluster, state.connectors, full=full)

        state, planned, inputs = plan.read_state_and_plan(
            cluster, full=full, prepare=functools.partial(prepare, full=full)
        )
        if planned.recreated:
            full = True
            state, planned, inputs = _plan_again_full(cluster, run, planned, prepare, phase)
        _say_plan(phase, state, planned)
        sources = compute.compute_sources(
            cluster, planned, inputs, now_ms=now_ms, run_dir=run_dir, phase=phase
        )
        phase(f"read {sources.records_read():,} records; sampling sink lag")
        assert sampling is not None  # started by the first prepare
        lags = sampling.result()
        _sample_mirrors(cluster, state, sources, lags, now_ms=now_ms, phase=phase)
        return Refreshed(state, planned, inputs, sources, lags, full)


def _compute_standalone(
    cluster: Cluster, *, now_ms: int, run_dir: Path, phase: Progress
) -> Refreshed:
    """A standalone worker's offsets file read and merged (never a full rebuild: the file
    holds every key, and the history of past refreshes stays)."""
    read = standalone.compute(cluster, now_ms=now_ms, run_dir=run_dir, phase=phase)
    return Refreshed(read.state, read.plan, read.inputs, read.sources, read.sinks, False)


def _plan_again_full(
    cluster: Cluster,
    run: RefreshRun,
    planned: SourcePlan,
    prepare: Callable[..., MergeInputs],
    phase: Progress,
) -> tuple[connect_state.ConnectState, SourcePlan, MergeInputs]:
    """Plan a full refresh instead: what was read from a recreated topic is gone, so the
    stored results are rebuilt."""
    for topic, how in planned.recreated.items():
        phase(f"{topic} was deleted and created again since the last refresh ({how})")
    phase("rebuilding from the beginning of the topics (a full refresh)")
    run.full = True
    RefreshRun.objects.filter(pk=run.pk).update(full=True)
    return plan.read_state_and_plan(
        cluster, full=True, prepare=functools.partial(prepare, full=True)
    )


def _sample_mirrors(
    cluster: Cluster,
    state: connect_state.ConnectState,
    sources: SourceResults,
    lags: SinkResults,
    *,
    now_ms: int,
    phase: Progress,
) -> None:
    """Add the MirrorSourceConnectors' lag to the sinks'.

    After the Spark phase, not beside it: a mirror's position is its offset, which this
    refresh's merge computes.
    """
    names = [c.name for c in mirrors.mirror_sources(state.connectors)]
    if not names:
        return
    phase("sampling the mirrors' lag on their upstream clusters")
    mirrors.sample_mirrors(
        cluster,
        state.connectors,
        sources.latest,
        now_ms=now_ms,
        upstreams=mirrors.upstream_clusters(cluster),
        recent=sinks.recent_samples(cluster, names),
        known=sinks.known_time_lags(cluster),
        results=lags,
    )


def _say_plan(phase: Progress, state: connect_state.ConnectState, planned: SourcePlan) -> None:
    phase(f"{len(state.connectors)} connectors")
    for topic, partitions in planned.plans.items():
        phase(
            f"{topic}: {planned.new_records(topic):,} new records in {len(partitions)} partitions"
        )
    phase(f"computing offsets and history ({planned.total_records():,} records)")


def _save(
    cluster: Cluster,
    done: Refreshed,
    *,
    now_ms: int,
    run_dir: Path,
    run_pk: int,
    phase: Progress,
) -> None:
    """Save the results in one transaction, then tidy the history's run folders (a merge of
    the run folders goes on beside the next round: `compact_history_later`)."""
    phase("saving results")
    if cluster.is_standalone:
        read = standalone.StandaloneRead(
            done.state, done.plan, done.inputs, done.sources, done.sinks
        )
        run_records.with_db_retries(
            "saving the results",
            lambda: _holding_claim(
                cluster, run_pk, lambda: standalone.save(cluster, read, now_ms=now_ms)
            ),
        )
        history_store.compact_history_later(cluster, run_pk)
        return
    saved = run_records.with_db_retries(
        "saving the results",
        lambda: _holding_claim(
            cluster,
            run_pk,
            lambda: store.save(
                cluster,
                done.state,
                done.plan,
                done.sources,
                done.sinks,
                full=done.full,
                now_ms=now_ms,
                stored_rows=done.inputs.stored_rows,
                only=done.sources.changed_keys,
            ),
        ),
    )
    _remember(cluster, done, saved)
    if done.full:
        history_store.drop_other_runs(cluster, keep=run_dir)
    else:
        history_store.compact_history_later(cluster, run_pk)


@transaction.atomic
def _holding_claim[T](cluster: Cluster, run_pk: int, save: Callable[[], T]) -> T:
    """Save in one transaction with the check that this refresh still holds its claim."""
    background.hold_claim(cluster, run_pk)
    return save()


def _remember(cluster: Cluster, done: Refreshed, saved: store.Saved) -> None:
    """Keep what was saved for the loop's next round (offsets.refresh.memory), when the save
    knows every stored row."""
    if saved.stored is None:
        memory.forget(cluster)
        return
    memory.remember(
        cluster,
        memory.Remembered(
            token=saved.token,
            stored=saved.stored,
            latest={(row["topic"], row["key_hash"]): row for row in done.sources.latest},
            drift=done.sources.drift,
            own_topics=done.inputs.own_topics,
            worker_topic=cluster.offsets_topic,
        ),
    )


def _succeeded(cluster: Cluster, run: RefreshRun, done: Refreshed) -> None:
    run.status = RefreshRun.Status.SUCCEEDED
    run.records_read = done.sources.records_read()
    run.records_by_topic = done.sources.records_by_topic
    run.malformed_by_reason = run_records.malformed_by_reason(
        cluster, done.state, done.sources.malformed
    )
    run.malformed = sum(
        count for reasons in run.malformed_by_reason.values() for count in reasons.values()
    )
    run.phase = "done"


def _failed(cluster: Cluster, run: RefreshRun, exc: Exception) -> None:
    run.status = RefreshRun.Status.FAILED
    run.error = run_records.describe_error(exc)
    run.phase = run_records.phase_text(f"failed: {run.error}")
    if isinstance(exc, store.RefreshOvertaken | background.LeaseLost):
        logger.warning("Refresh of %s dropped: %s", cluster.name, exc)
    elif isinstance(exc, ConnectUnreachable):
        # The server's outage, said in the run's one line: no traceback of this process's.
        logger.warning("Refresh of %s failed: %s", cluster.name, run.error)
    elif not isinstance(exc, KafkaUnavailable | TopicNotFound):
        logger.exception("Refresh of %s failed", cluster.name)


def _finish(cluster: Cluster, run: RefreshRun, started: float, say: Progress) -> None:
    """Record the run's outcome, expire old runs, queue alerts and tell the caller how it went."""
    run.finished_at = timezone.now()
    run.seconds = time.monotonic() - started
    if not run_records.with_db_retries(
        "recording the run", lambda: run_records.record_outcome(run)
    ):
        # Ended meanwhile: taken over, or marked interrupted by a stop. That record stands.
        run.refresh_from_db(fields=run_records.RUN_OUTCOME_FIELDS)
    try:
        run_records.drop_expired_runs(cluster, now=run.finished_at)
    except OperationalError as exc:
        # Housekeeping: the next refresh tries again.
        logger.warning("Could not delete the old refresh runs of %s: %s", cluster.name, exc)
    # After the run is recorded, so that "refresh failing" sees it. It only queues messages
    # (sent by offsets.alerts.delivery) and never raises: alerts cannot hold up or
    # fail the refresh.
    evaluation.evaluate_after_refresh(cluster=cluster)
    say(
        f"[{run.seconds or 0:6.1f}s] {run.status}: {run.records_read:,} records read, "
        f"{run.malformed:,} malformed{f'; {run.error}' if run.error else ''}"
    )
