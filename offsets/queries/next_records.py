"""The record a stuck sink reads next, per lagging partition: "which record broke it?".

Shown for a sink whose task is FAILED or whose lag status is STALL or STOP, for each partition
with lag from the last refresh. Where the sink reads next comes from its committed offset (or
its `auto.offset.reset` before a first commit, `record_preview.next_position`); the record
there is read now, on request only (never during a page's poll). Its contents need the record
viewer role (Action.READ_RECORDS): a user without it sees the positions and not one byte.
"""

from dataclasses import dataclass, field
from datetime import UTC, datetime

from django.conf import settings

from offsets.domain import record_preview
from offsets.domain.rights import Action
from offsets.edits.skip import record_anchor
from offsets.kafka import records as kafka_records
from offsets.kafka.errors import KafkaError
from offsets.models import Cluster, ConnectorSnapshot, SinkPartitionLag
from offsets.rights import gate
from offsets.rights.grants import may

# Statuses that make a sink "stuck" enough to show its next records.
STUCK_STATUSES = (SinkPartitionLag.Status.STALL, SinkPartitionLag.Status.STOP)
# Partitions read per request, most lagging first (by one consumer, in one bounded time).
MAX_PARTITIONS = 20
NOTHING_YET = "Nothing to read yet: the sink has read to the log end."


@dataclass
class NextRecord:
    """One lagging partition: where the sink reads next and, for a record viewer, the record."""

    topic: str
    partition: int
    committed: int | None
    log_end: int
    lag_records: int
    status: str
    position: int | None = None  # the offset the sink reads next (None: nothing to read)
    note: str = ""  # why the position or record is not the committed offset, if it is not
    offset: int | None = None  # the record's offset, as read
    timestamp_ms: int | None = None
    timestamp_type: str = ""
    key: record_preview.Preview | None = None
    value: record_preview.Preview | None = None
    headers: list[record_preview.Header] = field(default_factory=list)
    error: str = ""

    @property
    def timestamp_text(self) -> str:
        """The record's timestamp in UTC, to the millisecond ("" when it has none)."""
        if self.timestamp_ms is None or self.timestamp_ms < 0:
            return ""
        try:
            at = datetime.fromtimestamp(self.timestamp_ms / 1000, tz=UTC)
        except (ValueError, OverflowError, OSError):  # a producer may set any long
            return "not a date"
        return at.isoformat(timespec="milliseconds").replace("+00:00", " UTC")

    @property
    def anchor(self) -> str:
        return record_anchor(self.topic, self.partition)


@dataclass
class NextRecords:
    shown: bool  # the sink is stuck: failed task, STALL or STOP
    may_read: bool  # the user has the record viewer role here
    rows: list[NextRecord]
    more: int = 0  # lagging partitions beyond MAX_PARTITIONS
    contact: str = ""


def is_stuck(snapshot: ConnectorSnapshot, statuses: set[str]) -> bool:
    """A sink whose task is FAILED, or with a partition whose status is STALL or STOP."""
    if snapshot.type != "sink" or snapshot.deleted:
        return False
    return snapshot.failed or bool(statuses & set(STUCK_STATUSES))


def next_records(*, user, cluster: Cluster, snapshot: ConnectorSnapshot) -> NextRecords:
    """The records the stuck sink `snapshot` reads next (contents for a record viewer only)."""
    gate.admit(user, Action.VIEW, cluster, snapshot.name)
    lags = SinkPartitionLag.objects.filter(
        cluster=cluster, connector=snapshot.name, upstream=""
    ).order_by("-lag_records", "topic", "partition")
    statuses = set(lags.values_list("status", flat=True))
    may_read = may(user, Action.READ_RECORDS, cluster, snapshot.name)
    result = NextRecords(
        shown=is_stuck(snapshot, statuses),
        may_read=may_read,
        rows=[],
        contact=settings.ACCESS_CONTACT,
    )
    if not result.shown:
        return result
    lagging = list(lags.filter(lag_records__gt=0)[: MAX_PARTITIONS + 1])
    result.more = max(0, len(lagging) - MAX_PARTITIONS)
    reset = record_preview.reset_policy(snapshot.config)
    for lag in lagging[:MAX_PARTITIONS]:
        row = NextRecord(
            topic=lag.topic,
            partition=lag.partition,
            committed=lag.committed,
            log_end=lag.log_end,
            lag_records=lag.lag_records,
            status=lag.status,
        )
        position = record_preview.next_position(lag.committed, reset, lag.log_start, lag.log_end)
        row.position, row.note = position.offset, position.note
        result.rows.append(row)
    if may_read:
        # The contents' own gate, asked before the read (the answer is known: `may` above).
        gate.admit(user, Action.READ_RECORDS, cluster, snapshot.name)
        _read(cluster, snapshot, [row for row in result.rows if row.position is not None])
    return result


def _read(cluster: Cluster, snapshot: ConnectorSnapshot, rows: list[NextRecord]) -> None:
    """Read the record at each row's position into it (or say why there is none)."""
    if not rows:
        return
    isolation = str(snapshot.config.get("consumer.override.isolation.level") or "read_uncommitted")
    try:
        found = kafka_records.records_at(
            cluster.kafka_settings(),
            {(row.topic, row.partition): row.position for row in rows},
            isolation_level=isolation,
            timeout=settings.KAFKA_READ_TIMEOUT,
        )
    except KafkaError as error:  # a refusal (KafkaNotAuthorized) says which ACL is missing
        for row in rows:
            row.error = str(error)
        return
    for row in rows:
        _fill(row, found[(row.topic, row.partition)])


def _fill(row: NextRecord, record: kafka_records.RecordRead | None) -> None:
    # Said after why the position is where it is, if it is not the committed offset.
    if record is None:
        row.note = f"{row.note} {NOTHING_YET}".strip()
        return
    if record.offset != row.position:
        row.note = (
            f"{row.note} No record at offset {row.position} (deleted by retention or "
            f"compaction, or a transaction marker): the sink reads offset {record.offset} next."
        ).strip()
    row.offset = record.offset
    row.timestamp_ms = record.timestamp_ms
    row.timestamp_type = {1: "create time", 2: "log append time"}.get(record.timestamp_type, "")
    row.key = record_preview.preview(record.key)
    row.value = record_preview.preview(record.value)
    row.headers = record_preview.headers(list(record.headers))
