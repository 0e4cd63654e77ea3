"""A refresh run's record: its outcome, its error for people, its counts, and old runs' expiry."""

import logging
import re
import time
from collections import defaultdict
from collections.abc import Callable
from datetime import datetime, timedelta

from django.conf import settings
from django.db import OperationalError, connection
from django.db.models import Q
from django.utils import timezone

from offsets import connect_state
from offsets.domain.masking import mask_text
from offsets.models import Cluster, RefreshRun
from offsets.spark.errors import python_worker_error

logger = logging.getLogger(__name__)

# Waits between attempts at the refresh's database writes when the database is locked (SQLite:
# another writer held the lock past the busy timeout) or the connection dropped (PostgreSQL
# restarting). Minutes of Spark work are not thrown away for a database busy for a moment.
DB_RETRY_DELAYS = (0.5, 1.0, 2.0, 4.0, 8.0)
# What a run cut short by its process's shutdown says: a refresh_offsets stopped by Ctrl-C or
# SIGTERM, and a scheduler stopped while it ran.
INTERRUPTED = "Interrupted: its process was stopped (Ctrl-C or SIGTERM)."
STOPPED = "Interrupted: the scheduler running it was stopped."

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


def record_outcome(run: RefreshRun) -> bool:
    """Record how `run` ended, unless it ended meanwhile; return whether it was recorded.

    Only while it is RUNNING: a run taken over (its lease ran out) or marked interrupted by a
    stop keeps what was recorded then. Only the outcome's fields: the run's lease, host and
    pid are written by others meanwhile (background.heartbeat, the command taking a claimed
    run over).
    """
    outcome = {field: getattr(run, field) for field in RUN_OUTCOME_FIELDS}
    return bool(
        RefreshRun.objects.filter(pk=run.pk, status=RefreshRun.Status.RUNNING).update(**outcome)
    )


def record_interrupted(
    cluster: Cluster, run: RefreshRun, *, error: str, seconds: float | None = None
) -> bool:
    """Record a run cut short by its process's shutdown as failed, so that it does not hold
    its cluster until its lease runs out, and say so in one line; return whether it was
    recorded (not if it had ended already: whoever ended it said so).

    A warning, not an error: nothing is wrong with the cluster, and what Spark raised on the
    way (its cancelled job, a closed gateway) is the stop's doing, not worth a traceback.
    """
    recorded = RefreshRun.objects.filter(pk=run.pk, status=RefreshRun.Status.RUNNING).update(
        status=RefreshRun.Status.FAILED,
        finished_at=timezone.now(),
        seconds=seconds,
        error=error,
        phase=f"failed: {error}",
    )
    if recorded:
        logger.warning("%s: refresh #%s interrupted by shutdown", cluster.name, run.pk)
    return bool(recorded)


def drop_expired_runs(cluster: Cluster, *, now: datetime) -> int:
    """Delete the cluster's runs that ended over REFRESH_RUN_RETENTION_DAYS ago, and its
    finished runs past the newest REFRESH_RUNS_KEPT; return how many.

    A `--every 60` loop records 1,440 runs a day, a `--every 1` loop 86,400: the count limit
    bounds the table whatever the period. The last successful run stays whatever its age (the
    pages say how old the results on show are), and so does every run still going.
    """
    days, kept = settings.REFRESH_RUN_RETENTION_DAYS, settings.REFRESH_RUNS_KEPT
    finished = RefreshRun.objects.filter(cluster=cluster).exclude(status=RefreshRun.Status.RUNNING)
    expired = Q(pk__in=[])
    if days > 0:
        expired |= Q(finished_at__lt=now - timedelta(days=days))
    if kept > 0:
        # Run ids grow with time: the oldest kept one is the kept-th newest id.
        oldest_kept = finished.order_by("-pk").values_list("pk", flat=True)[kept - 1 : kept]
        if oldest_kept:
            expired |= Q(pk__lt=oldest_kept[0])
    last_success = (
        RefreshRun.objects.filter(cluster=cluster, status=RefreshRun.Status.SUCCEEDED)
        .order_by("-started_at", "-pk")
        .values_list("pk", flat=True)
        .first()
    )
    deleted, _ = finished.filter(expired).exclude(pk=last_success).delete()
    return deleted


def with_db_retries[T](what: str, write: Callable[[], T]) -> T:
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


def phase_text(text: str) -> str:
    """`text` cut to what RefreshRun.phase holds, an ellipsis at the end if cut.

    A failed run's phase quotes its error, which can be longer (up to 500 characters, kept
    whole in RefreshRun.error): PostgreSQL refuses a longer value where SQLite stores it, and
    the run's outcome would then never be recorded.
    """
    limit = RefreshRun._meta.get_field("phase").max_length
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe_error(exc: BaseException) -> str:
    """A one-line message for the user; Spark wraps executor errors in long traces.

    Masked before it is cut: an error may quote a record or a config value.
    """
    text = mask_text(str(exc).strip()) or type(exc).__name__
    for name in ("KafkaNotAuthorized", "KafkaUnavailable", "TopicNotFound"):
        match = re.search(rf"{name}: (.+)", text)
        if match:
            return match.group(1).strip()
    # A Spark Connect call's gRPC failure (a server gone mid-refresh) is a multi-line dump
    # whose first line says nothing; its details say what happened.
    if worker := python_worker_error(text):
        return worker[:500]
    details = re.search(r'details = "(.+?)"', text)
    if details and text.startswith("<_"):
        return f"Spark Connect: {details.group(1)}"[:500]
    return text.splitlines()[0][:500] if "\n" in text else text[:500]
