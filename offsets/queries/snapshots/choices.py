"""What the pages may filter and sort by, and how lag statuses rank."""

from django.db.models import (
    Case,
    F,
    IntegerField,
    Q,
    Value,
    When,
)

from offsets.domain.pauses import PAUSED, PLANNED_PAUSE_STATES

# Runtime states a connector can be in (AbstractStatus.State), plus "DELETED" for a connector
# whose config is gone but whose offsets remain.
CONNECTOR_STATES = ("RUNNING", "PAUSED", "STOPPED", "FAILED", "UNASSIGNED", "RESTARTING")
DELETED = "DELETED"
STATE_CHOICES = (*CONNECTOR_STATES, DELETED)
CONNECTOR_TYPES = ("source", "sink")
# A connector's status is the worst of its partitions' (Burrow); STALL, STOP and REWIND are
# shown as ERR at connector level, and kept as the reason beside it. PAUSED is the status of a
# connector its owner paused or stopped (offsets.domain.pauses), whatever its lag.
LAG_STATUSES = ("OK", "WARN", "STALL", "STOP", "REWIND", "ERR", PAUSED)
ERR_REASONS = ("STALL", "STOP", "REWIND")
SEVERITY_RANKS = {PAUSED: 1, "OK": 2, "WARN": 3, "REWIND": 4, "STALL": 5, "STOP": 6, "ERR": 7}

# `offsets.domain.pauses.paused_by_owner` as a database filter: the lists filter and count
# in the database, and tests/pages/test_planned_pauses.py holds the two to the same answers.
PLANNED_PAUSE = Q(target_state__in=PLANNED_PAUSE_STATES, deleted=False, failed_tasks=0) & ~Q(
    runtime_state="FAILED"
)

# A connector's place in the "problems first" order, worst first; the first that matches
# wins. A connector its owner paused or stopped (target state) is not running by design: it
# comes after every real problem and is never a lag error. Deleted ones come last of all.
PROBLEMS = (
    ("failed", Q(runtime_state="FAILED") | Q(failed_tasks__gt=0)),
    ("lag ERR", Q(lag_status="ERR") & ~PLANNED_PAUSE),
    ("stalled", Q(type="source", stalled_partitions__gt=0)),
    ("not running", ~Q(runtime_state="RUNNING") & ~PLANNED_PAUSE),
    ("lag WARN", Q(lag_status="WARN") | Q(uncommitted_partitions__gt=0)),
    ("paused by its owner", PLANNED_PAUSE),
)
PAUSED_RANK = len(PROBLEMS) - 1  # ranks below this are problems to look at
HEALTHY_RANK = len(PROBLEMS)
DELETED_RANK = len(PROBLEMS) + 1


def problem_case() -> Case:
    """Return an expression ranking a connector by PROBLEMS, worst lowest, for sorting."""
    return Case(
        When(deleted=True, then=Value(DELETED_RANK)),
        *(When(condition, then=Value(rank)) for rank, (_, condition) in enumerate(PROBLEMS)),
        default=Value(HEALTHY_RANK),
        output_field=IntegerField(),
    )


def problem_label(rank: int | None) -> str:
    """What a PROBLEMS rank says ("failed", "lag ERR", ...); "" for a healthy or deleted one."""
    return PROBLEMS[rank][0] if rank is not None and 0 <= rank < len(PROBLEMS) else ""


# Sort keys offered to users -> model fields (nulls always last). The list's default is
# "problems": what is wrong comes first.
CONNECTOR_SORTS = {
    "problems": "problem",
    "name": "name",
    "type": "type",
    "state": "state_order",
    "tasks": "task_count",
    "partitions": "partitions",
    "lag_records": "lag_records",
    "lag_ms": "lag_ms",
    "status": "severity",
    "last_commit": "last_commit_at",
    "malformed": "malformed",
}
PARTITION_SORTS = {
    "partition": "identity",
    "last_commit": "last_commit_at",
    "commits": "commits",
    "rewinds": "rewinds",
}
SINK_PARTITION_SORTS = {
    "partition": "topic",
    "lag_records": "lag_records",
    "lag_ms": "lag_ms",
    "status": "severity",
}

# Charts read at most this many points; older ones are left out.
MAX_COMMIT_BUCKETS = 288
MAX_LAG_SAMPLES = 500


def severity_case(field: str) -> Case:
    """Return an expression ranking `field` by lag status, worst highest, for sorting."""
    return Case(
        *(When(**{field: status}, then=Value(rank)) for status, rank in SEVERITY_RANKS.items()),
        default=Value(0),
        output_field=IntegerField(),
    )


def severity_rank(status: str | None) -> int:
    return SEVERITY_RANKS.get(status or "", 0)


# Sort fields that may be NULL; the others sort without NULLS LAST, which lets an index
# give the order (SQLite cannot use an ascending index for "ASC NULLS LAST").
_NULLABLE = {"task_count", "lag_records", "lag_ms", "last_commit_at"}


def order_by(sorts: dict[str, str], sort: str) -> list:
    """Return the ORDER BY of a user's sort key ("-" first: descending), nulls last."""
    descending = sort.startswith("-")
    field = sorts[sort.lstrip("-")]
    expression = F(field)
    nulls_last = True if field in _NULLABLE else None
    return [
        expression.desc(nulls_last=nulls_last)
        if descending
        else expression.asc(nulls_last=nulls_last)
    ]
