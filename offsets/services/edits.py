"""Offset edits: stage a diff, review it, run the lock check, apply, verify, reconcile.

Shared by the pages, the API and the management commands. Every function here is
keyword-only. The "before" values, the lock check and the verification read Connect's topics
LIVE, the way the Java runtime reads them (last write per exact key bytes; a connector's own
offsets topic wins over the worker's), never a stored snapshot.

State changes are conditional updates whose row count is checked: if it is not 1, someone
else changed the edit first and the caller gets ``EditStateConflict``.
"""

import logging
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from offsets import faults
from offsets.formats import edit_rules
from offsets.formats.config_records import ConfigSnapshot, fold_config_records
from offsets.formats.connectors import (
    connector_type,
    is_mirrormaker2,
    sink_group_id,
    source_offsets_topics,
)
from offsets.formats.edit_rules import (
    CheckResult,
    EditRuleError,
    Observed,
    PartitionLog,
    SinkChange,
    SourceChange,
)
from offsets.formats.offset_records import (
    LatestOffsets,
    SourceOffsetRecord,
    latest_offsets,
    partition_identity,
)
from offsets.formats.offsets_json import (
    OffsetsDocumentError,
    PartitionOffset,
    load_document,
    parse_kip199,
    parse_kip875,
)
from offsets.formats.status_records import StatusSnapshot, fold_status_records
from offsets.kafka import admin, groups, offsets_writer, reading
from offsets.kafka.errors import KafkaUnavailable, TopicNotFound
from offsets.models import AuditEvent, ChangeCounts, Cluster, OffsetEdit, OffsetEditChange

logger = logging.getLogger(__name__)

STAGE_PERMISSION = "offsets.stage_offsetedit"
APPROVE_PERMISSION = "offsets.approve_offsetedit"

SOURCE_STRATEGIES = ("set", "add", "delete", "restore")
SINK_STRATEGIES = (*edit_rules.SINK_STRATEGIES, "delete-offsets")

# Live reads (staging, lock check, verification) run to the end of the topic and are waited
# on by a person. At the end, the broker holds an empty fetch for fetch.wait.max.ms (500 ms by
# default), and a consume call asking for a batch waits for it to fill until its timeout:
# asking for one message at a time returns as soon as anything (the end included) arrives,
# and measured no slower per record (78k records: 0.3 s against 0.8 s in batches of 10,000).
LIVE_READ_SETTINGS = {"fetch.wait.max.ms": 10}
LIVE_READ_BATCH = 1

# An imported document is read and parsed whole, in memory: this bounds what one upload costs.
IMPORT_MAX_BYTES = 20 * 1024 * 1024
# How many rows of a diff one answer shows (a page of an edit, an import's preview), and how
# many per-partition notes a message quotes: a connector may have tens of thousands.
DIFF_PAGE_ROWS = 100
NOTES_QUOTED = 10

State = OffsetEdit.State
Action = AuditEvent.Action


class EditError(Exception):
    """Base of the errors a caller shows to people; ``field`` names the input at fault."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class EditInputError(EditError):
    """Bad input: the pages show it by the field, the API answers 400."""


class DocumentInputError(EditInputError):
    """Bad input at a place in an imported document; ``field`` is that place's path
    (``orders-sink[0].partition``, a connector's name, or ``document`` for all of it)."""


class NothingToChange(EditInputError):
    """Every requested offset is already in place: there is no diff to stage."""


class ConnectorNotFound(EditError):
    """No such connector in the config topic nor in the offsets topic (404)."""


class EditForbidden(EditError):
    """The user may not do this (403): missing role, or approving their own edit."""


class EditStateConflict(EditError):
    """The edit is not in a state that allows this, or someone else acted first (409)."""


class SinkWriteIncomplete(KafkaUnavailable):
    """A partial sink delete deleted the group, then committing the other partitions failed.

    Not "in doubt": the group is known to be gone, and the other partitions with it. Reading
    the edit's own partitions back would say "applied"; ``restore`` holds what was lost.
    """

    def __init__(self, cause: str, restore: dict[tuple[str, int], int]) -> None:
        super().__init__(
            f"The group was deleted but committing the other partitions again failed: {cause}. "
            f"Commit these offsets to restore them: {edit_rules.restore_text(restore)}"
        )
        self.cause = cause
        self.restore = restore


def can_stage(user) -> bool:
    return bool(user and user.is_active and user.has_perm(STAGE_PERMISSION))


def can_approve(user) -> bool:
    return bool(user and user.is_active and user.has_perm(APPROVE_PERMISSION))


def _read_timeout() -> float:
    return float(settings.KAFKA_READ_TIMEOUT)


def _write_timeout() -> float:
    return float(settings.KAFKA_WRITE_TIMEOUT)


# ---------------------------------------------------------------------------------------------
# Live reads.


class LiveReader:
    """Read a cluster's Connect topics now, each at most once per instance.

    One instance serves one step (a staging, a lock check, a verification); a new step needs
    a new instance so it sees the topics as they are then.
    """

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.kafka = cluster.kafka_settings()
        self._records: dict[str, list[reading.RawRecord]] = {}
        self._configs: ConfigSnapshot | None = None
        self._statuses: StatusSnapshot | None = None
        self._latest: dict[str, LatestOffsets] = {}
        self._counts: dict[str, int] | None = None

    def records(self, topic: str) -> list[reading.RawRecord]:
        if topic not in self._records:
            self._records[topic] = list(
                reading.read_topic(
                    {**self.kafka, **LIVE_READ_SETTINGS},
                    topic,
                    timeout=_read_timeout(),
                    batch_size=LIVE_READ_BATCH,
                )
            )
        return self._records[topic]

    def configs(self) -> ConfigSnapshot:
        if self._configs is None:
            self._configs = fold_config_records(
                (r.key, r.value) for r in self.records(self.cluster.configs_topic)
            )
        return self._configs

    def statuses(self) -> StatusSnapshot:
        if self._statuses is None:
            self._statuses = fold_status_records(
                (r.key, r.value) for r in self.records(self.cluster.status_topic)
            )
        return self._statuses

    def latest(self, topic: str) -> LatestOffsets:
        if topic not in self._latest:
            self._latest[topic] = latest_offsets((r.key, r.value) for r in self.records(topic))
        return self._latest[topic]

    def partition_counts(self) -> dict[str, int]:
        if self._counts is None:
            self._counts = admin.topic_partition_counts(self.kafka, timeout=_read_timeout())
        return self._counts


@dataclass(frozen=True)
class ConnectorContext:
    """What the config and status topics say about one connector, read live."""

    name: str
    type: str
    in_config: bool
    deleted: bool
    target_state: str | None
    connector_state: str | None
    task_states: dict[int, str]
    mirrormaker2: bool
    # Source: where its offsets live (primary = own topic when it has one).
    primary_topic: str = ""
    worker_topic: str = ""
    own_topic: bool = False
    # Sink: its consumer group and input topics.
    group_id: str = ""
    sink_topics: tuple[str, ...] = ()
    sink_topics_regex: str = ""

    @property
    def is_source(self) -> bool:
        return self.type == "source"

    def stopped_check(self) -> CheckResult:
        return edit_rules.check_connector_stopped(
            connector=self.name,
            deleted=self.deleted,
            target_state=self.target_state,
            connector_state=self.connector_state,
            task_states=self.task_states,
        )


def read_connector(
    *, cluster: Cluster, connector: str, reader: LiveReader | None = None
) -> ConnectorContext:
    """Return the connector's live context, or raise ConnectorNotFound."""
    reader = reader or LiveReader(cluster)
    config = reader.configs().connectors.get(connector)
    status = reader.statuses().connectors.get(connector)
    if config is None:
        # The config may be compacted away while offsets remain: still a (deleted) source.
        worker = reader.latest(cluster.offsets_topic)
        if not any(record.connector == connector for record in worker.offsets.values()):
            raise ConnectorNotFound(
                f"No connector {connector!r} on {cluster.name}: it is neither in "
                f"{cluster.configs_topic} nor in {cluster.offsets_topic}.",
                field="connector",
            )
        properties: dict[str, str | None] = {}
        deleted, target_state = True, None
    else:
        properties = config.properties or {}
        deleted, target_state = config.deleted, config.target_state
    kind = connector_type(properties)
    task_states = (
        {task: task_status.state for task, task_status in status.tasks.items()} if status else {}
    )
    common = {
        "name": connector,
        "type": kind,
        "in_config": config is not None,
        "deleted": deleted,
        "target_state": None if deleted else target_state,
        "connector_state": status.state if status else None,
        "task_states": task_states,
        "mirrormaker2": is_mirrormaker2(properties),
    }
    if kind == "source":
        topics = source_offsets_topics(properties, cluster.offsets_topic)
        return ConnectorContext(
            **common,
            primary_topic=topics.primary,
            worker_topic=topics.worker,
            own_topic=topics.own_topic,
        )
    listed = tuple(t.strip() for t in (properties.get("topics") or "").split(",") if t.strip())
    return ConnectorContext(
        **common,
        group_id=sink_group_id(connector, properties),
        sink_topics=listed,
        sink_topics_regex=(properties.get("topics.regex") or "").strip(),
    )


def source_view(
    *, context: ConnectorContext, reader: LiveReader
) -> dict[bytes, SourceOffsetRecord]:
    """Return the connector's offsets as its tasks would read them now, by exact key bytes."""
    worker = reader.latest(context.worker_topic).offsets
    own = None
    if context.own_topic:
        try:
            own = reader.latest(context.primary_topic).offsets
        except TopicNotFound:
            # The runtime creates the connector's topic when the connector first starts.
            own = {}
    return edit_rules.runtime_view(context.name, worker, own)


def sink_partitions(
    *, context: ConnectorContext, reader: LiveReader, committed: Iterable[tuple[str, int]]
) -> list[tuple[str, int]]:
    """Every partition of the sink's input topics, plus any its group has offsets for."""
    counts = reader.partition_counts()
    topics = [topic for topic in context.sink_topics if topic in counts]
    if context.sink_topics_regex:
        try:
            pattern = re.compile(context.sink_topics_regex)
        except re.error:
            pattern = None
        if pattern is not None:
            topics += [t for t in counts if pattern.fullmatch(t) and not t.startswith("__")]
    wanted = {(topic, p) for topic in set(topics) for p in range(counts[topic])}
    wanted |= {tp for tp in committed if tp[0] in counts}
    return sorted(wanted)


# ---------------------------------------------------------------------------------------------
# Staging.


@dataclass(frozen=True)
class StageRequest:
    """What to change; which fields matter depends on the strategy."""

    strategy: str
    partition: dict | None = None  # source set/add/delete
    offset: dict | None = None  # source set/add
    at: datetime | None = None  # source restore, sink datetime
    duration: timedelta | None = None  # sink duration
    value: int | None = None  # sink offset (target) or shift (signed amount)
    group: str = ""  # sink copy-group: the group to copy from
    partitions: tuple[tuple[str, int], ...] | None = None  # sink scope; None = all
    entries: tuple[PartitionOffset, ...] | None = None  # import

    def parameters(self) -> dict:
        """Return the inputs as JSON, for display and the audit log."""
        params: dict = {}
        if self.partition is not None:
            params["partition"] = self.partition
        if self.offset is not None:
            params["offset"] = self.offset
        if self.at is not None:
            params["at"] = self.at.isoformat()
        if self.duration is not None:
            params["duration_seconds"] = self.duration.total_seconds()
        if self.value is not None:
            params["value"] = self.value
        if self.group:
            params["group"] = self.group
        if self.partitions is not None:
            params["partitions"] = [f"{t}-{p}" for t, p in self.partitions]
        if self.entries is not None:
            params["entries"] = len(self.entries)
        return params


@dataclass
class Preview:
    """A staged edit before it is saved: the diff and its warnings."""

    context: ConnectorContext
    strategy: str
    parameters: dict
    source_changes: list[SourceChange] = field(default_factory=list)
    sink_changes: list[SinkChange] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)

    @property
    def changes(self) -> list[SourceChange | SinkChange]:
        return [*self.source_changes, *self.sink_changes]

    @property
    def change_count(self) -> int:
        return len(self.source_changes) + len(self.sink_changes)

    def counts(self) -> ChangeCounts:
        changes = self.changes
        return ChangeCounts(
            total=len(changes),
            added=sum(change.is_new for change in changes),
            deleted=sum(change.is_delete for change in changes),
        )

    def as_text(self) -> str:
        """Return the diff as lines for a terminal (import --dry-run)."""
        lines = [f"{self.context.name} ({self.context.type}): {self.change_count} change(s)"]
        for warning in self.warnings:
            lines.append(f"  ! {warning}")
        for change in self.source_changes:
            before = (
                change.before_bytes.decode("utf-8", "backslashreplace")
                if change.before_bytes
                else "(none)"
            )
            after = (
                change.after_bytes.decode("utf-8", "backslashreplace")
                if change.after_bytes
                else "(delete)"
            )
            marker = "+" if change.is_new else ("-" if change.is_delete else "~")
            lines.append(f"  {marker} {change.key_bytes.decode('utf-8', 'backslashreplace')}")
            lines.append(f"      {before} -> {after}")
            lines.extend(f"      ! {w}" for w in change.warnings)
        for change in self.sink_changes:
            marker = "+" if change.is_new else ("-" if change.is_delete else "~")
            before = "(none)" if change.before is None else change.before
            after = "(delete)" if change.after is None else change.after
            lines.append(f"  {marker} {change.topic}-{change.partition}: {before} -> {after}")
            lines.extend(f"      ! {w}" for w in change.warnings)
        for note in self.unchanged:
            lines.append(f"  = {note}")
        return "\n".join(lines)


def preview_edit(
    *,
    cluster: Cluster,
    connector: str,
    request: StageRequest,
    reader: LiveReader | None = None,
    context: ConnectorContext | None = None,
) -> Preview:
    """Compute an edit's diff against the live topics without saving anything."""
    reader = reader or LiveReader(cluster)
    context = context or read_connector(cluster=cluster, connector=connector, reader=reader)
    if context.is_source:
        preview = _preview_source(cluster, context, request, reader)
    else:
        preview = _preview_sink(context, request, reader)
    preview.warnings = _context_warnings(context) + preview.warnings
    if not preview.change_count:
        reason = _quote_notes(preview.unchanged) or "every partition already has that offset"
        raise NothingToChange(f"Nothing to change: {reason}.", field=_main_field(request))
    return preview


def stage_edit(
    *, cluster: Cluster, connector: str, user, request: StageRequest, comment: str = ""
) -> OffsetEdit:
    """Stage an edit as a draft with its diff and the before values read now."""
    if not can_stage(user):
        raise EditForbidden("Staging offset edits needs the editor role (stage_offsetedit).")
    preview = preview_edit(cluster=cluster, connector=connector, request=request)
    with transaction.atomic():
        return _save(preview, cluster=cluster, user=user, comment=comment, action=Action.STAGED)


def _quote_notes(notes: Sequence[str]) -> str:
    """Join the first notes, counting the rest: one per partition can be tens of thousands."""
    quoted = "; ".join(notes[:NOTES_QUOTED])
    rest = len(notes) - NOTES_QUOTED
    return f"{quoted}; and {rest:,} more" if rest > 0 else quoted


def _main_field(request: StageRequest) -> str:
    return {
        "set": "offset",
        "add": "partition",
        "delete": "partition",
        "restore": "at",
        "import": "document",
    }.get(request.strategy, "partitions")


def _context_warnings(context: ConnectorContext) -> list[str]:
    warnings = []
    if context.deleted:
        warnings.append(
            "The connector is deleted: its offsets remain and are used again if a connector "
            "with this name is created."
        )
    elif context.target_state != "STOPPED":
        warnings.append(
            f"The connector's target state is {context.target_state}: stop it before applying "
            "(the lock check refuses otherwise; PAUSED is not enough)."
        )
    if context.own_topic:
        warnings.append(
            f"The connector uses its own offsets topic {context.primary_topic} (KIP-618): the "
            f"edit is written there and mirrored to the worker topic {context.worker_topic} in "
            "the same transaction."
        )
    if context.mirrormaker2:
        warnings.append(
            "MirrorMaker 2: these offsets only say where replication resumes on the source "
            "cluster; offset syncs and checkpoints already written are not changed."
        )
    return warnings


def _preview_source(
    cluster: Cluster, context: ConnectorContext, request: StageRequest, reader: LiveReader
) -> Preview:
    strategy = request.strategy
    if strategy not in (*SOURCE_STRATEGIES, "import"):
        raise EditInputError(
            f"{strategy!r} is not a strategy for a source connector; use one of "
            f"{', '.join(SOURCE_STRATEGIES)}.",
            field="strategy",
        )
    view = source_view(context=context, reader=reader)
    preview = Preview(context=context, strategy=strategy, parameters=request.parameters())
    if strategy == "restore":
        if request.at is None:
            raise EditInputError("A time to restore to is required.", field="at")
        at_ms = int(request.at.timestamp() * 1000)
        history = _history(reader, context.worker_topic)
        then = edit_rules.offsets_as_of(history, at_ms)
        own_then = None
        if context.own_topic:
            try:
                own_then = edit_rules.offsets_as_of(_history(reader, context.primary_topic), at_ms)
            except TopicNotFound:
                own_then = {}
        as_of = edit_rules.runtime_view(context.name, then, own_then)
        diff = edit_rules.restore_diff(
            connector=context.name,
            current=view,
            as_of=as_of,
            at_label=request.at.isoformat(timespec="seconds"),
        )
    else:
        entries = _source_entries(request, view, context.name)
        try:
            diff = edit_rules.source_diff(
                connector=context.name,
                current=view,
                entries=entries,
                allow_new=strategy in ("add", "import"),
            )
        except EditRuleError as exc:
            raise EditInputError(exc.message, field="partition") from None
    preview.source_changes = diff.changes
    preview.unchanged = diff.unchanged
    return preview


def _source_entries(
    request: StageRequest, view: dict[bytes, SourceOffsetRecord], connector: str
) -> list[PartitionOffset]:
    strategy = request.strategy
    if strategy == "import":
        return list(request.entries or ())
    if not isinstance(request.partition, dict) or not request.partition:
        raise EditInputError("A partition (a JSON object) is required.", field="partition")
    identity = partition_identity(request.partition)
    exists = any(
        record.connector == connector and record.partition_identity == identity
        for record in view.values()
    )
    if strategy == "add" and exists:
        raise EditInputError(
            "This partition has an offset already; use 'set' to change it.", field="partition"
        )
    if strategy in ("set", "delete") and not exists:
        raise EditInputError(
            f"{identity} has no offset in the topic"
            + ("; use 'add' to create it." if strategy == "set" else "."),
            field="partition",
        )
    if strategy == "delete":
        return [PartitionOffset(request.partition, None)]
    if not isinstance(request.offset, dict) or not request.offset:
        raise EditInputError("An offset (a JSON object) is required.", field="offset")
    return [PartitionOffset(request.partition, request.offset)]


def _history(reader: LiveReader, topic: str) -> list[tuple[bytes | None, bytes | None, int]]:
    return [(r.key, r.value, r.timestamp_ms) for r in reader.records(topic)]


def _preview_sink(context: ConnectorContext, request: StageRequest, reader: LiveReader) -> Preview:
    strategy = request.strategy
    if strategy not in (*SINK_STRATEGIES, "import"):
        raise EditInputError(
            f"{strategy!r} is not a strategy for a sink connector; use one of "
            f"{', '.join(SINK_STRATEGIES)}.",
            field="strategy",
        )
    kafka, timeout = reader.kafka, _read_timeout()
    committed = groups.committed_offsets(kafka, context.group_id, timeout=timeout)
    preview = Preview(context=context, strategy=strategy, parameters=request.parameters())
    if not committed:
        preview.warnings.append(
            f"Group {context.group_id} has no committed offsets: the connector may manage its "
            "offsets outside Kafka (KIP-875 'manages offsets externally'), in which case "
            "changing the group has no effect on where it resumes."
        )
    targets: dict[tuple[str, int], int | None] = {}
    if strategy == "import":
        targets = _import_sink_targets(request.entries or ())
        scope = sorted(targets)
    elif request.partitions is not None:
        scope = sorted(set(request.partitions))
        if not scope:
            raise EditInputError("Choose at least one partition.", field="partitions")
    else:
        scope = sink_partitions(context=context, reader=reader, committed=committed)
        if not scope:
            raise EditInputError(
                "The sink's topics have no partitions on this cluster.", field="partitions"
            )
    counts = reader.partition_counts()
    for topic, partition in scope:
        if topic not in counts or partition >= counts[topic]:
            raise EditInputError(
                f"{topic}-{partition} does not exist on this cluster.", field="partitions"
            )

    logs = reading.confirmed_watermarks(kafka, scope, timeout=timeout)
    time_offsets: dict[tuple[str, int], int | None] = {}
    if strategy in ("datetime", "duration"):
        time_offsets = _checked_offsets_for_times(kafka, request, logs, timeout)
    copied: dict[tuple[str, int], int] = {}
    if strategy == "copy-group":
        if not request.group:
            raise EditInputError("The group to copy from is required.", field="group")
        copied = groups.committed_offsets(kafka, request.group, timeout=timeout)
        if not copied:
            raise EditInputError(f"Group {request.group} has no committed offsets.", field="group")
    if strategy in ("offset", "shift") and request.value is None:
        raise EditInputError("A number is required.", field="value")
    if strategy == "offset" and request.value is not None and request.value < 0:
        raise EditInputError("An offset is 0 or more.", field="value")

    for tp in scope:
        watermark = logs[tp]
        log = PartitionLog(tp[0], tp[1], watermark.low, watermark.high)
        before = committed.get(tp)
        if strategy == "delete-offsets" or (strategy == "import" and targets[tp] is None):
            if before is None:
                preview.unchanged.append(f"{log.label}: no committed offset to delete")
            else:
                preview.sink_changes.append(SinkChange(tp[0], tp[1], before, None))
            continue
        rule = "offset" if strategy == "import" else strategy
        value = targets.get(tp) if strategy == "import" else request.value
        target = edit_rules.sink_target(
            rule,
            log=log,
            committed=before,
            value=value,
            copied=copied.get(tp),
            time_offset=time_offsets.get(tp),
        )
        if target.skip:
            preview.unchanged.append(target.skip)
            continue
        if target.offset == before:
            preview.unchanged.append(f"{log.label}: already {before}")
            continue
        preview.sink_changes.append(
            SinkChange(tp[0], tp[1], before, target.offset, warnings=target.warnings)
        )
    preview.warnings += _sink_deletion_warnings(committed, preview.sink_changes)
    return preview


def _sink_deletion_warnings(
    committed: dict[tuple[str, int], int], changes: list[SinkChange]
) -> list[str]:
    """Say so when the apply will take two steps (see ``_write_sink``)."""
    deleting = {(c.topic, c.partition) for c in changes if c.is_delete}
    if not deleting:
        return []
    recommitted = (set(committed) - deleting) | {
        (c.topic, c.partition) for c in changes if not c.is_delete
    }
    if not recommitted:
        return []
    return [
        "Deleting the committed offsets of only some partitions: the Kafka client used here "
        "cannot delete single partitions' offsets, so the apply deletes the whole group and "
        f"commits {len(recommitted)} partition(s) again. That is two steps, not one atomic "
        "write: if the second fails, the edit is marked failed and its error and the audit "
        "log hold every offset to restore."
    ]


def _import_sink_targets(entries: Iterable[PartitionOffset]) -> dict[tuple[str, int], int | None]:
    targets: dict[tuple[str, int], int | None] = {}
    for entry in entries:
        key = (str(entry.partition["kafka_topic"]), int(entry.partition["kafka_partition"]))
        targets[key] = None if entry.offset is None else int(entry.offset["kafka_offset"])
    return targets


def _checked_offsets_for_times(
    kafka: dict, request: StageRequest, logs: dict, timeout: float
) -> dict[tuple[str, int], int | None]:
    if request.strategy == "datetime":
        if request.at is None:
            raise EditInputError("A date-time is required.", field="at")
        at = request.at
    else:
        if request.duration is None:
            raise EditInputError("A duration is required.", field="duration")
        at = timezone.now() - request.duration
    at_ms = int(at.timestamp() * 1000)
    if at_ms < 0:
        # Record timestamps are milliseconds since 1970; the client refuses a negative one
        # (-1 and -2 even mean "latest" and "earliest" in ListOffsets).
        raise EditInputError(
            f"{at.isoformat(timespec='seconds')} is before 1970-01-01 UTC, where Kafka's record "
            "timestamps begin; use 'to earliest' instead.",
            field="at" if request.strategy == "datetime" else "duration",
        )
    answers = admin.offsets_for_times(kafka, dict.fromkeys(logs, at_ms), timeout=timeout)
    for tp, answer in answers.items():
        watermark = logs[tp]
        log = PartitionLog(tp[0], tp[1], watermark.low, watermark.high)
        position = log.log_end if answer is None else answer
        around = reading.RecordsAround(None, None)
        if log.log_start < log.log_end and log.log_start <= position <= log.log_end:
            around = reading.records_around(
                kafka, tp[0], tp[1], position, log_start=log.log_start, timeout=timeout
            )
        check = edit_rules.check_offset_for_time(
            at_ms=at_ms,
            answer=answer,
            log=log,
            timestamp_at=around.at.timestamp_ms if around.at else None,
            timestamp_before=around.before.timestamp_ms if around.before else None,
        )
        if not check.passed:
            raise EditInputError(
                f"{check.message} The broker's offsets-for-times answer cannot be trusted, so "
                "nothing was staged; use 'to an offset' instead.",
                field="at" if request.strategy == "datetime" else "duration",
            )
    return answers


def _save(preview: Preview, *, cluster: Cluster, user, comment: str, action: str) -> OffsetEdit:
    context = preview.context
    edit = OffsetEdit.objects.create(
        cluster=cluster,
        connector=context.name,
        connector_type=context.type,
        strategy=preview.strategy,
        parameters=preview.parameters,
        comment=comment,
        created_by=user,
        primary_topic=context.primary_topic,
        mirror_topic=context.worker_topic if context.own_topic else "",
        group_id=context.group_id,
        warnings=preview.warnings,
    )
    rows = []
    for position, change in enumerate(preview.source_changes):
        rows.append(
            OffsetEditChange(
                edit=edit,
                position=position,
                partition=change.partition,
                key_bytes=change.key_bytes,
                before=change.before,
                before_bytes=change.before_bytes,
                after=change.after,
                after_bytes=change.after_bytes,
                is_delete=change.is_delete,
                is_new=change.is_new,
                warnings=list(change.warnings),
            )
        )
    for position, change in enumerate(preview.sink_changes):
        rows.append(
            OffsetEditChange(
                edit=edit,
                position=position,
                partition={"kafka_topic": change.topic, "kafka_partition": change.partition},
                topic=change.topic,
                kafka_partition=change.partition,
                before=None if change.before is None else {"kafka_offset": change.before},
                after=None if change.after is None else {"kafka_offset": change.after},
                is_delete=change.is_delete,
                is_new=change.is_new,
                warnings=list(change.warnings),
            )
        )
    OffsetEditChange.objects.bulk_create(rows)
    _audit(
        edit,
        action,
        user,
        comment,
        {
            "strategy": preview.strategy,
            "parameters": preview.parameters,
            "warnings": preview.warnings,
            "changes": [_change_details(row) for row in rows],
        },
    )
    return edit


# ---------------------------------------------------------------------------------------------
# Review: submit, approve, reject, cancel.


def submit_edit(*, edit: OffsetEdit, user, comment: str = "") -> OffsetEdit:
    """Send a draft for approval (its author, with the editor role)."""
    if not can_stage(user) or edit.created_by_id != user.pk:
        raise EditForbidden("Only the editor who staged the edit can submit it.")
    with transaction.atomic():
        _transition(edit, (State.DRAFT,), State.SUBMITTED, submitted_at=timezone.now())
        return _after(edit, Action.SUBMITTED, user, comment)


def approve_edit(*, edit: OffsetEdit, user, comment: str = "") -> OffsetEdit:
    """Approve a submitted edit: another person than its author, with the approver role."""
    if not can_approve(user):
        raise EditForbidden("Approving needs the approver role (approve_offsetedit).")
    if edit.created_by_id == user.pk:
        raise EditForbidden("Nobody approves their own edit: ask another approver.")
    with transaction.atomic():
        _transition(
            edit, (State.SUBMITTED,), State.APPROVED, approved_by=user, approved_at=timezone.now()
        )
        return _after(edit, Action.APPROVED, user, comment)


def reject_edit(*, edit: OffsetEdit, user, comment: str = "") -> OffsetEdit:
    """Reject a submitted or approved edit (an approver other than its author)."""
    if not can_approve(user):
        raise EditForbidden("Rejecting needs the approver role (approve_offsetedit).")
    if edit.created_by_id == user.pk:
        raise EditForbidden("Cancel your own edit instead of rejecting it.")
    with transaction.atomic():
        _transition(
            edit, (State.SUBMITTED, State.APPROVED), State.REJECTED, finished_at=timezone.now()
        )
        return _after(edit, Action.REJECTED, user, comment)


def cancel_edit(*, edit: OffsetEdit, user, comment: str = "") -> OffsetEdit:
    """Withdraw an edit that is not applied yet: its author, or an approver."""
    is_author = edit.created_by_id == user.pk and can_stage(user)
    if not (is_author or can_approve(user)):
        raise EditForbidden("Only the edit's author or an approver can cancel it.")
    with transaction.atomic():
        _transition(edit, OffsetEdit.OPEN_STATES, State.CANCELLED, finished_at=timezone.now())
        return _after(edit, Action.CANCELLED, user, comment)


def _transition(edit: OffsetEdit, from_states: Sequence[str], to_state: str, **fields) -> None:
    # .update() skips auto_now, so "updated" is set by hand.
    updated = OffsetEdit.objects.filter(pk=edit.pk, state__in=from_states).update(
        state=to_state, updated=timezone.now(), **fields
    )
    if updated != 1:
        current = OffsetEdit.objects.filter(pk=edit.pk).values_list("state", flat=True).first()
        raise EditStateConflict(
            f"Edit #{edit.pk} is {current}, so it cannot become {to_state} "
            "(someone may have acted on it just now)."
        )


def _after(edit: OffsetEdit, action: str, user, comment: str, details: dict | None = None):
    edit.refresh_from_db()
    _audit(edit, action, user, comment, details or {"state": edit.state})
    return edit


def _audit(edit: OffsetEdit, action: str, user, comment: str, details: dict) -> AuditEvent:
    return AuditEvent.objects.create(
        cluster_id=edit.cluster_id,
        connector=edit.connector,
        edit=edit,
        action=action,
        actor=user if user is not None and user.pk else None,
        actor_name=user.get_username() if user is not None and user.pk else "system",
        comment=comment,
        details=details,
    )


def _change_details(change: OffsetEditChange) -> dict:
    details = {
        "partition": change.partition,
        "before": change.before,
        "after": change.after,
        "is_new": change.is_new,
        "is_delete": change.is_delete,
    }
    if change.key_bytes is not None:
        details["key"] = change.key_text
    return details


# ---------------------------------------------------------------------------------------------
# The lock check and the apply.


@dataclass(frozen=True)
class LockCheck:
    checks: list[CheckResult]
    context: ConnectorContext | None = None

    @property
    def passed(self) -> bool:
        return all(check.passed for check in self.checks)

    def failed(self, name: str) -> bool:
        return any(check.name == name and not check.passed for check in self.checks)


def lock_check(*, edit: OffsetEdit, claimed: bool = True) -> LockCheck:
    """Run the lock check now, reading the topics and the group live.

    Checks, in order: connector stopped, (sinks) group without members, nothing moved since
    staging, and the claim this apply holds.
    """
    reader = LiveReader(edit.cluster)
    context = read_connector(cluster=edit.cluster, connector=edit.connector, reader=reader)
    checks = [context.stopped_check()]
    changes = list(edit.changes.all())
    if edit.is_source:
        view = source_view(context=context, reader=reader)
        observed = [
            Observed(
                change.key_text,
                _bytes_or_none(change.before_bytes),
                view[key].value_bytes if (key := bytes(change.key_bytes)) in view else None,
            )
            for change in changes
        ]
    else:
        group = groups.describe_group(reader.kafka, edit.group_id, timeout=_read_timeout())
        checks.append(
            edit_rules.check_group_inactive(
                group_id=edit.group_id, state=group.state, member_count=group.member_count
            )
        )
        committed = groups.committed_offsets(reader.kafka, edit.group_id, timeout=_read_timeout())
        observed = [
            Observed(
                f"{change.topic}-{change.kafka_partition}",
                _sink_offset(change.before),
                committed.get((change.topic, change.kafka_partition)),
            )
            for change in changes
        ]
    checks.append(edit_rules.check_nothing_moved(observed))
    checks.append(edit_rules.check_single_apply(claimed=claimed))
    return LockCheck(checks=checks, context=context)


def apply_edit(
    *,
    edit: OffsetEdit,
    user,
    comment: str = "",
    before_commit: Callable[[], None] | None = None,
) -> OffsetEdit:
    """Claim, lock-check, write, verify. Returns the edit in its final (or in-doubt) state.

    Refused checks (connector running, group active, cluster unreachable during the check)
    write nothing and return the edit to "approved" so it can be applied once fixed. Moved
    offsets make it a "conflict": it must be staged again. ``before_commit`` is passed to the
    transactional writer (tests use it to fail at the worst moment).
    """
    if not can_approve(user):
        raise EditForbidden("Applying needs the approver role (approve_offsetedit).")
    # The claim and its audit entry are one write: a database that fails between them must
    # not leave an edit "applying" that the audit log never saw start.
    with transaction.atomic():
        _claim(edit, user)
        edit.refresh_from_db()
        _audit(edit, Action.APPLY_STARTED, user, comment, {"state": edit.state})

    try:
        check = lock_check(edit=edit)
    except (KafkaUnavailable, ConnectorNotFound) as exc:
        return _release(edit, user, [], f"The lock check could not read the cluster: {exc}")
    except Exception as exc:
        # Nothing has been written yet: give the claim back rather than strand the edit.
        logger.exception("Lock check of edit %s failed", edit.pk)
        return _release(edit, user, [], f"The lock check failed unexpectedly: {exc}")
    checks = [c.as_dict() for c in check.checks]
    moved = [c for c in check.checks if c.name == edit_rules.NOTHING_MOVED and not c.passed]
    if moved:
        return _finish(
            edit, State.CONFLICT, Action.CONFLICT, user, checks=checks, error=moved[0].message
        )
    if not check.passed:
        failed = "; ".join(c.message for c in check.checks if not c.passed)
        return _release(edit, user, checks, f"The lock check refused the apply: {failed}")

    OffsetEdit.objects.filter(pk=edit.pk).update(lock_checks=checks)

    def pause_then_before_commit() -> None:
        faults.pause_point("apply-before-commit")
        if before_commit is not None:
            before_commit()

    try:
        if edit.is_source:
            written = _write_source(edit, pause_then_before_commit)
        else:
            pause_then_before_commit()
            written = _write_sink(edit)
    except offsets_writer.WriteNotCommitted as exc:
        return _fail(edit, user, checks, str(exc), {"committed": False})
    except TopicNotFound as exc:
        return _fail(edit, user, checks, f"{exc} Nothing was written.", {"committed": False})
    except SinkWriteIncomplete as exc:
        # The second step's answer was lost or refused, but its request may have landed (a
        # lost response looks the same): judge the WHOLE group with the same rule as
        # reconciliation. The edit's own partitions alone would call it applied while the
        # others may have lost their offsets.
        try:
            now = groups.committed_offsets(
                edit.cluster.kafka_settings(), edit.group_id, timeout=_read_timeout()
            )
        except KafkaUnavailable as read_error:
            restore = exc.restore
            seen = (
                f"The group could not be read back: {read_error}. Commit these offsets to "
                f"restore them: {edit_rules.restore_text(restore)}"
            )
        else:
            settled = _settle_sink_group(edit, exc.restore, now)
            if settled.outcome == "applied":
                written = {"committed": len(exc.restore), "second_step_error": exc.cause}
                return _verify(edit, user, checks, written)
            if settled.outcome == "incomplete":
                # Exactly the kept partitions that are not back (the message lists them).
                restore, seen = settled.restore, f"Read back: {settled.message}"
            else:
                # Something else wrote to the group: every kept offset is left to check.
                restore = exc.restore
                seen = (
                    f"Read back: {settled.message} Commit these offsets to restore them: "
                    f"{edit_rules.restore_text(restore)}"
                )
        return _fail(
            edit,
            user,
            checks,
            f"The group was deleted but committing the other partitions again failed: "
            f"{exc.cause}. {seen}",
            {"committed": "partial", "restore": edit_rules.restore_details(restore)},
        )
    except Exception as exc:
        # The outcome is unknown (a commit that timed out, a sink request that may have
        # reached the coordinator): read the offsets back to find out.
        logger.warning("Apply of edit %s ended in doubt: %s", edit.pk, exc)
        return _settle_in_doubt(edit, user, checks, str(exc))
    faults.pause_point("apply-after-commit")
    return _verify(edit, user, checks, written)


def _claim(edit: OffsetEdit, user) -> None:
    try:
        # A savepoint, so the unique-constraint error does not poison an outer transaction.
        with transaction.atomic():
            claimed = OffsetEdit.objects.filter(pk=edit.pk, state=State.APPROVED).update(
                state=State.APPLYING,
                applied_by=user,
                apply_started_at=timezone.now(),
                updated=timezone.now(),
                error="",
            )
    except IntegrityError:
        raise EditStateConflict(
            f"Another edit of {edit.connector} is being applied right now; nothing was done."
        ) from None
    if claimed != 1:
        current = OffsetEdit.objects.filter(pk=edit.pk).values_list("state", flat=True).first()
        raise EditStateConflict(
            f"Edit #{edit.pk} is {current}, not approved: someone else got there first or it "
            "was never approved. Nothing was done."
        )


def _release(edit: OffsetEdit, user, checks: list[dict], message: str) -> OffsetEdit:
    """Give the claim back: nothing was written, the edit can be applied again later."""
    with transaction.atomic():
        OffsetEdit.objects.filter(pk=edit.pk, state=State.APPLYING).update(
            state=State.APPROVED, lock_checks=checks, error=message, updated=timezone.now()
        )
        edit.refresh_from_db()
        _audit(edit, Action.APPLY_REFUSED, user, "", {"checks": checks, "error": message})
    return edit


def _finish(
    edit: OffsetEdit,
    state: str,
    action: str,
    user,
    *,
    checks: list[dict] | None = None,
    error: str = "",
    extra: dict | None = None,
    comment: str = "",
) -> OffsetEdit:
    """Leave "applying" for a final state and record it with every partition's values."""
    fields = {
        "state": state,
        "error": error,
        "finished_at": timezone.now(),
        "updated": timezone.now(),
    }
    if checks is not None:
        fields["lock_checks"] = checks
    # The final state and its audit entry are one write: if the database fails here the edit
    # stays "applying" (truthfully in doubt) for reconcile_edits, never settled unaudited.
    with transaction.atomic():
        moved = OffsetEdit.objects.filter(pk=edit.pk, state=State.APPLYING).update(**fields)
        edit.refresh_from_db()
        if moved != 1:
            # Another process (reconcile_edits) settled it first; its record stands.
            logger.info("Edit %s was settled elsewhere (now %s)", edit.pk, edit.state)
            return edit
        details = {
            "state": state,
            "checks": edit.lock_checks,
            "changes": [_change_details(change) for change in edit.changes.all()],
            **(extra or {}),
        }
        if error:
            details["error"] = error
        _audit(edit, action, user, comment, details)
    return edit


def _fail(edit: OffsetEdit, user, checks: list[dict], error: str, extra: dict) -> OffsetEdit:
    """Finish an apply as failed, audited "failed" with the lock check and the details."""
    return _finish(edit, State.FAILED, Action.FAILED, user, checks=checks, error=error, extra=extra)


def _source_writes(edit: OffsetEdit) -> list[offsets_writer.OffsetWrite]:
    writes = []
    for change in edit.changes.all():
        key, value = bytes(change.key_bytes), _bytes_or_none(change.after_bytes)
        writes.append(offsets_writer.OffsetWrite(edit.primary_topic, key, value))
        if edit.mirror_topic:
            # The runtime copies offsets to the worker topic too, and since KAFKA-15018 also
            # the tombstones: its reads overlay the own topic on the worker topic, so a key
            # deleted only in the own topic would show the worker topic's old value again.
            writes.append(offsets_writer.OffsetWrite(edit.mirror_topic, key, value))
    return writes


def _write_source(edit: OffsetEdit, before_commit) -> dict:
    result = offsets_writer.write_transaction(
        edit.cluster.kafka_settings(),
        _source_writes(edit),
        transactional_id=offsets_writer.transactional_id(edit.cluster.name, edit.connector),
        timeout=_write_timeout(),
        before_commit=before_commit,
    )
    return {
        "transactional_id": result.transactional_id,
        "records": [
            {"topic": r.topic, "partition": r.partition, "offset": r.offset} for r in result.records
        ],
    }


def _write_sink(edit: OffsetEdit) -> dict:
    kafka, timeout = edit.cluster.kafka_settings(), _write_timeout()
    changes = list(edit.changes.all())
    sets = {(c.topic, c.kafka_partition): _sink_offset(c.after) for c in changes if not c.is_delete}
    deletes = {(c.topic, c.kafka_partition) for c in changes if c.is_delete}
    if not deletes:
        groups.alter_offsets(kafka, edit.group_id, sets, timeout=timeout)
        return {"committed": len(sets)}
    committed = groups.committed_offsets(kafka, edit.group_id, timeout=timeout)
    keep = {tp: offset for tp, offset in committed.items() if tp not in deletes}
    keep.update(sets)
    # What the group must hold after the two steps goes to the database first, and is
    # committed there (apply_edit runs outside any transaction: ATOMIC_REQUESTS is off), so a
    # process killed between the delete and the re-commit leaves the list behind for
    # reconciliation, which then compares the whole group with it instead of calling the
    # edit applied because its own deleted partitions are gone.
    edit.sink_keep = edit_rules.keep_as_json(keep)
    OffsetEdit.objects.filter(pk=edit.pk, state=State.APPLYING).update(
        sink_keep=edit.sink_keep, updated=timezone.now()
    )
    groups.delete_group(kafka, edit.group_id, timeout=timeout)
    faults.pause_point("apply-between-sink-steps")
    if keep:
        try:
            groups.alter_offsets(kafka, edit.group_id, keep, timeout=timeout)
        except KafkaUnavailable as exc:
            raise SinkWriteIncomplete(str(exc), keep) from exc
    return {"deleted": len(deletes), "committed": len(keep)}


def _current_values(edit: OffsetEdit) -> list[tuple[str, object, object, object]]:
    """Read every touched partition now: (label, before, after, current)."""
    changes = list(edit.changes.all())
    if edit.is_source:
        reader = LiveReader(edit.cluster)
        context = read_connector(cluster=edit.cluster, connector=edit.connector, reader=reader)
        view = source_view(context=context, reader=reader)
        return [
            (
                change.key_text,
                _bytes_or_none(change.before_bytes),
                _bytes_or_none(change.after_bytes),
                view[key].value_bytes if (key := bytes(change.key_bytes)) in view else None,
            )
            for change in changes
        ]
    committed = groups.committed_offsets(
        edit.cluster.kafka_settings(), edit.group_id, timeout=_read_timeout()
    )
    return _sink_values(changes, committed)


def _sink_values(
    changes: Iterable[OffsetEditChange], committed: dict[tuple[str, int], int]
) -> list[tuple[str, object, object, object]]:
    return [
        (
            f"{change.topic}-{change.kafka_partition}",
            _sink_offset(change.before),
            _sink_offset(change.after),
            committed.get((change.topic, change.kafka_partition)),
        )
        for change in changes
    ]


def _settle_sink_group(
    edit: OffsetEdit, keep: dict[tuple[str, int], int], group: dict[tuple[str, int], int]
) -> edit_rules.Settled:
    changes = list(edit.changes.all())
    return edit_rules.settle_sink_group(
        _sink_values(changes, group),
        deleted=[(c.topic, c.kafka_partition) for c in changes if c.is_delete],
        keep=keep,
        group=group,
    )


def _settle_live(edit: OffsetEdit) -> edit_rules.Settled:
    """Read the edit's offsets now and decide whether its write landed.

    A partial sink delete that reached its two steps (``sink_keep`` stored) is judged on the
    whole group: its own partitions alone cannot tell whether the others came back.
    """
    if edit.is_source or edit.sink_keep is None:
        return edit_rules.settle(_current_values(edit))
    group = groups.committed_offsets(
        edit.cluster.kafka_settings(), edit.group_id, timeout=_read_timeout()
    )
    return _settle_sink_group(edit, edit_rules.keep_from_json(edit.sink_keep), group)


def _verify(edit: OffsetEdit, user, checks: list[dict], written: dict) -> OffsetEdit:
    try:
        settled = _settle_live(edit)
    except (KafkaUnavailable, ConnectorNotFound) as exc:
        # The commit was acknowledged, so the edit is applied; only the read-back failed.
        return _finish(
            edit,
            State.APPLIED,
            Action.APPLIED,
            user,
            checks=checks,
            extra={**written, "verified": False, "verify_error": str(exc)},
        )
    if settled.outcome == "applied":
        return _finish(
            edit,
            State.APPLIED,
            Action.APPLIED,
            user,
            checks=checks,
            extra={**written, "verified": True, "verification": settled.message},
        )
    extra = {**written, "verified": False}
    if settled.outcome == "incomplete":
        extra.update(committed="partial", restore=edit_rules.restore_details(settled.restore))
    return _fail(
        edit,
        user,
        checks,
        f"The write was acknowledged but reading it back disagrees: {settled.message}",
        extra,
    )


def _settle_in_doubt(edit: OffsetEdit, user, checks: list[dict], error: str) -> OffsetEdit:
    try:
        return _reconcile(edit, user, error=error)
    except (KafkaUnavailable, ConnectorNotFound) as exc:
        with transaction.atomic():
            OffsetEdit.objects.filter(pk=edit.pk, state=State.APPLYING).update(
                error=error, lock_checks=checks, updated=timezone.now()
            )
            edit.refresh_from_db()
            _audit(edit, Action.IN_DOUBT, user, "", {"error": error, "read_back_error": str(exc)})
        return edit


# ---------------------------------------------------------------------------------------------
# Reconciling edits left in "applying" (a crash, or an outage at the commit).


# How long past its start an apply can still be alive. A live apply makes at most three
# write calls (a partial sink delete: read the group, delete it, commit the rest), each
# bounded by KAFKA_WRITE_TIMEOUT; the margin covers the lock check's and the verification's
# reads and a slow database. Reconciling a live sink apply would judge the group between its
# two steps and call the edit failed while it is about to succeed, so the page and the API
# refuse younger edits, and the refresh loop leaves them alone.
APPLY_MARGIN = timedelta(minutes=5)


def stale_after() -> timedelta:
    """Return the age after which an edit still "applying" has lost its process."""
    return timedelta(seconds=3 * _write_timeout()) + APPLY_MARGIN


def is_stale(edit: OffsetEdit) -> bool:
    """Say whether an "applying" edit is old enough to be reconciled from outside."""
    return (
        edit.state == State.APPLYING
        and edit.apply_started_at is not None
        and timezone.now() - edit.apply_started_at >= stale_after()
    )


def reconcile_edit(*, edit: OffsetEdit, user, comment: str = "") -> OffsetEdit:
    """Settle one edit stuck in "applying" (an approver) by reading the topic or group back.

    Refused (EditStateConflict) unless the edit is applying and older than ``stale_after()``.
    If the cluster cannot be read, KafkaUnavailable propagates and the edit is unchanged.
    """
    if not can_approve(user):
        raise EditForbidden("Reconciling needs the approver role (approve_offsetedit).")
    if edit.state != State.APPLYING:
        raise EditStateConflict(f"Edit #{edit.pk} is {edit.state}, not applying.")
    if not is_stale(edit):
        raise EditStateConflict(
            f"Edit #{edit.pk} started applying less than {stale_after().total_seconds():.0f} s "
            "ago: its apply may still be running. Reconcile it once that much time has passed."
        )
    return _reconcile(edit, user, comment=comment)


def can_stage_restore(edit: OffsetEdit) -> bool:
    """Whether `stage_restore` applies: a failed sink edit that stored what its group must hold."""
    return edit.state == State.FAILED and not edit.is_source and bool(edit.sink_keep)


def stage_restore(*, edit: OffsetEdit, user, comment: str = "") -> OffsetEdit:
    """Stage, as a new draft edit, committing back what a failed partial sink delete lost.

    Such an edit deleted the whole group, then failed (or was killed) before committing the
    other partitions back; `sink_keep` holds what the group must hold, stored before the
    delete. The new edit imports exactly that: its diff against the group as it is now shows
    only what is missing or different (NothingToChange if nothing is), and it goes through
    approval and the lock check like any other edit. Returns the new edit.
    """
    if not can_stage(user):
        raise EditForbidden("Staging offset edits needs the editor role (stage_offsetedit).")
    if not can_stage_restore(edit):
        raise EditStateConflict(
            f"Edit #{edit.pk} is not a failed sink edit with offsets to commit back."
        )
    entries = tuple(
        PartitionOffset(
            partition={"kafka_topic": topic, "kafka_partition": partition},
            offset={"kafka_offset": offset},
        )
        for topic, partition, offset in edit.sink_keep
    )
    return stage_edit(
        cluster=edit.cluster,
        connector=edit.connector,
        user=user,
        request=StageRequest(strategy="import", entries=entries),
        comment=comment
        or f"Commits back what edit #{edit.pk} lost: the group's offsets it stored before "
        "deleting the group.",
    )


def reconcile_edits(
    *, cluster: Cluster | None = None, min_age: timedelta = timedelta(0), user=None
) -> list[tuple[OffsetEdit, str]]:
    """Reconcile every edit in "applying" (started at least ``min_age`` ago).

    Returns (edit, error) pairs; error is "" for a settled edit and the reason for one that
    stays in doubt because the cluster could not be read.
    """
    pending = OffsetEdit.objects.filter(
        state=State.APPLYING, apply_started_at__lte=timezone.now() - min_age
    ).select_related("cluster")
    if cluster is not None:
        pending = pending.filter(cluster=cluster)
    results = []
    for edit in pending:
        try:
            results.append((_reconcile(edit, user), ""))
        except (KafkaUnavailable, ConnectorNotFound) as exc:
            results.append((edit, str(exc)))
    return results


# Why a reconciled edit failed, by what reading Kafka back found (unless the apply said why).
_INTERRUPTED = {
    "not-applied": "The apply was interrupted before its write committed.",
    "incomplete": (
        "The apply was interrupted between deleting the group and committing the other "
        "partitions back."
    ),
}


def _reconcile(edit: OffsetEdit, user, *, error: str = "", comment: str = "") -> OffsetEdit:
    if edit.is_source:
        # Fencing first: a transaction an earlier process left open is aborted (or, if its
        # commit had begun, completed) before the read, so the read shows the final outcome.
        offsets_writer.fence(
            edit.cluster.kafka_settings(),
            offsets_writer.transactional_id(edit.cluster.name, edit.connector),
            timeout=_write_timeout(),
        )
    settled = _settle_live(edit)
    details: dict = {"reconciled": settled.message}
    if settled.outcome == "applied":
        return _finish(edit, State.APPLIED, Action.RECONCILED, user, comment=comment, extra=details)
    if settled.outcome in _INTERRUPTED:
        if settled.outcome == "incomplete":
            # Never "applied": the edit's own partitions are right, the rest of the group is not.
            details.update(committed="partial", restore=edit_rules.restore_details(settled.restore))
        return _finish(
            edit,
            State.FAILED,
            Action.RECONCILED,
            user,
            comment=comment,
            error=f"{error or _INTERRUPTED[settled.outcome]} {settled.message}",
            extra=details,
        )
    return _finish(
        edit,
        State.CONFLICT,
        Action.RECONCILED,
        user,
        comment=comment,
        error=settled.message,
        extra=details,
    )


# ---------------------------------------------------------------------------------------------
# Import.


@dataclass
class ImportResult:
    previews: list[Preview]
    edits: list[OffsetEdit]
    # Connectors named in the document whose offsets already match.
    unchanged: dict[str, str]


def import_document(
    *,
    cluster: Cluster,
    user,
    data: bytes | str | object,
    connector: str = "",
    dry_run: bool = False,
    comment: str = "",
) -> ImportResult:
    """Stage one draft edit per connector from a KIP-875 or KIP-199 document.

    Never applies anything. Everything is checked before anything is saved: a bad entry
    anywhere stages nothing (EditInputError naming the field). With ``dry_run`` nothing is
    saved at all and the previews are returned.
    """
    if not dry_run and not can_stage(user):
        raise EditForbidden("Importing offsets needs the editor role (stage_offsetedit).")
    try:
        document = load_document(data) if isinstance(data, bytes | str) else data
    except OffsetsDocumentError as exc:
        raise DocumentInputError(exc.message, field=exc.field) from None
    reader = LiveReader(cluster)
    if connector:
        context = read_connector(cluster=cluster, connector=connector, reader=reader)
        try:
            entries = {connector: parse_kip875(document, connector_type=context.type)}
        except OffsetsDocumentError as exc:
            raise DocumentInputError(exc.message, field=exc.field) from None
        contexts = {connector: context}
    else:
        if isinstance(document, dict) and set(document) == {"offsets"}:
            raise EditInputError(
                "This is a KIP-875 document (one connector): say which connector it is for.",
                field="connector",
            )
        try:
            names = list(parse_kip199(document))
        except OffsetsDocumentError as exc:
            raise DocumentInputError(exc.message, field=exc.field) from None
        contexts = {}
        for name in names:
            try:
                contexts[name] = read_connector(cluster=cluster, connector=name, reader=reader)
            except ConnectorNotFound as exc:
                raise DocumentInputError(exc.message, field=name) from None
        try:
            entries = parse_kip199(
                document, connector_types={n: c.type for n, c in contexts.items()}
            )
        except OffsetsDocumentError as exc:
            raise DocumentInputError(exc.message, field=exc.field) from None

    previews: list[Preview] = []
    unchanged: dict[str, str] = {}
    for name, connector_entries in entries.items():
        request = StageRequest(strategy="import", entries=tuple(connector_entries))
        try:
            previews.append(
                preview_edit(
                    cluster=cluster,
                    connector=name,
                    request=request,
                    reader=reader,
                    context=contexts[name],
                )
            )
        except NothingToChange as exc:
            unchanged[name] = exc.message
        except EditInputError as exc:
            where = f"{exc.field}: " if exc.field else ""
            raise DocumentInputError(f"{where}{exc.message}", field=name) from None
    if dry_run:
        return ImportResult(previews=previews, edits=[], unchanged=unchanged)
    with transaction.atomic():
        edits = [
            _save(preview, cluster=cluster, user=user, comment=comment, action=Action.IMPORTED)
            for preview in previews
        ]
    return ImportResult(previews=previews, edits=edits, unchanged=unchanged)


# ---------------------------------------------------------------------------------------------
# Small helpers.


def _bytes_or_none(value) -> bytes | None:
    return None if value is None else bytes(value)


def _sink_offset(value: dict | None) -> int | None:
    return None if value is None else int(value["kafka_offset"])


def audit_log(*, cluster: Cluster, connector: str | None = None, limit: int = 50):
    """Return the newest audit events of a cluster (or one connector), newest first."""
    events = AuditEvent.objects.filter(cluster=cluster).select_related("edit")
    if connector is not None:
        events = events.filter(connector=connector)
    return events[:limit]
