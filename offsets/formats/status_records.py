"""Fold status-topic records into connector and task states, like ``KafkaStatusBackingStore``.

Keys (strings): ``status-connector-<name>``, ``status-task-<name>-<n>`` and
``status-topic-<topic>:connector-<name>``. Status values are
``{"state":..,"trace":..,"worker_id":..,"generation":..}``; topic values are
``{"topic":{"name":..,"connector":..,"task":..,"discoverTimestamp":..}}``. A tombstone means
destroyed (or, for a topic record, "no longer used"). Nothing here raises on bad input.
"""

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from enum import StrEnum

from offsets.formats import jackson
from offsets.formats.jackson import JsonValue
from offsets.formats.offset_records import unstorable_name

CONNECTOR_STATUS_PREFIX = "status-connector-"
TASK_STATUS_PREFIX = "status-task-"
TOPIC_STATUS_PREFIX = "status-topic-"
TOPIC_STATUS_SEPARATOR = ":connector-"

# AbstractStatus.State. DESTROYED is never written (a tombstone is), but the runtime would
# accept it when reading, so it is not treated as malformed.
STATES = ("UNASSIGNED", "RUNNING", "PAUSED", "STOPPED", "FAILED", "RESTARTING", "DESTROYED")
_JAVA_INT_MAX = 2**31 - 1


# The first line of a trace shown beside a task's state; the whole trace is a click away.
TRACE_SUMMARY_CHARS = 300


def trace_summary(trace: str | None) -> str:
    """Return a trace's first non-blank line (Java's "exception class: message"), shortened."""
    for line in (trace or "").splitlines():
        line = line.strip()
        if line:
            return (
                line if len(line) <= TRACE_SUMMARY_CHARS else line[: TRACE_SUMMARY_CHARS - 1] + "…"
            )
    return ""


@dataclass(frozen=True)
class TaskRow:
    """A connector's task as the pages and the API show it."""

    task: int
    state: str
    worker_id: str
    error: str  # the trace's first line
    trace: str  # masked


def task_rows(
    task_states: Mapping[int | str, str], task_details: Mapping[int | str, Mapping[str, str]]
) -> list[TaskRow]:
    """Each task in order with its state, worker and trace (first line and whole).

    `task_details` holds each task's worker and masked trace under the keys of `task_states`
    (ints when read from the status topic, strings once stored as JSON).
    """
    rows = []
    for task, state in sorted(task_states.items(), key=lambda item: int(item[0])):
        details = task_details.get(task) or {}
        trace = details.get("trace") or ""
        rows.append(
            TaskRow(
                task=int(task),
                state=state,
                worker_id=details.get("worker_id") or "",
                error=trace_summary(trace),
                trace=trace,
            )
        )
    return rows


class StatusMalformedReason(StrEnum):
    """Why the runtime would discard a status-topic record."""

    KEY_NULL = "key-null"
    KEY_NOT_RECOGNISED = "key-not-recognised"
    KEY_BAD_TASK_ID = "key-bad-task-id"
    KEY_BAD_TOPIC = "key-bad-topic"
    VALUE_NOT_JSON = "value-not-json"
    VALUE_NOT_OBJECT = "value-not-object"
    VALUE_BAD_FIELD = "value-bad-field"
    # The runtime would use it, but the dashboard cannot store the name (`unstorable_name`).
    KEY_CONNECTOR_UNSTORABLE = "key-connector-unstorable"

    @property
    def label(self) -> str:
        """Return a sentence for people."""
        return _LABELS[self]


_LABELS = {
    StatusMalformedReason.KEY_NULL: "The record has no key.",
    StatusMalformedReason.KEY_NOT_RECOGNISED: "The key is not one the Connect runtime writes.",
    StatusMalformedReason.KEY_BAD_TASK_ID: "The task status key does not end in a task number.",
    StatusMalformedReason.KEY_BAD_TOPIC: "The topic status key lacks a topic or a connector.",
    StatusMalformedReason.VALUE_NOT_JSON: "The value is not valid UTF-8 JSON.",
    StatusMalformedReason.VALUE_NOT_OBJECT: "The value is not a JSON object.",
    StatusMalformedReason.VALUE_BAD_FIELD: "A field of the value is missing or has the wrong type.",
    StatusMalformedReason.KEY_CONNECTOR_UNSTORABLE: (
        "The connector name is longer than 249 characters or holds a NUL, which the database"
        " cannot store."
    ),
}


@dataclass(frozen=True)
class MalformedStatusRecord:
    """A status-topic record the runtime would log and discard."""

    reason: StatusMalformedReason
    detail: str
    key: str | None
    value_bytes: bytes | None


@dataclass(frozen=True)
class TaskStatus:
    """The last status written for one task."""

    connector: str
    task: int
    state: str
    trace: str | None
    worker_id: str | None
    generation: int
    # The record's Kafka timestamp (ms): when the worker wrote this state; None unknown.
    written_ms: int | None = None


@dataclass(frozen=True)
class ConnectorStatus:
    """A connector's last status, its tasks' statuses and the topics it used.

    ``state`` (and its trace, worker and generation) is None when only task or topic records
    are live for the connector.
    """

    name: str
    state: str | None
    trace: str | None
    worker_id: str | None
    generation: int | None
    tasks: dict[int, TaskStatus] = field(default_factory=dict)
    topics: frozenset[str] = frozenset()
    # The connector record's Kafka timestamp (ms): when the worker wrote `state`.
    written_ms: int | None = None


@dataclass(frozen=True)
class StatusSnapshot:
    """The whole status topic, folded."""

    connectors: dict[str, ConnectorStatus]
    malformed: list[MalformedStatusRecord] = field(default_factory=list)


@dataclass(frozen=True)
class _Status:
    state: str
    trace: str | None
    worker_id: str | None
    generation: int
    written_ms: int | None = None


class _Skip(Exception):
    """Raised inside the fold to drop a record; becomes a MalformedStatusRecord."""

    def __init__(self, reason: StatusMalformedReason, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


# A status-topic record as read: (key, value), or (key, value, its Kafka timestamp in ms).
StatusRecord = tuple[bytes | None, bytes | None] | tuple[bytes | None, bytes | None, int | None]


def fold_status_records(records: Iterable[StatusRecord]) -> StatusSnapshot:
    """Fold status-topic records, in the order read, into each connector's latest status.

    On read the runtime keeps the LAST record per connector or task whatever its generation:
    ``KafkaStatusBackingStore.read`` calls ``CacheEntry.put`` unconditionally; the generation
    and worker checks (``canWriteSafely``) only guard the ``putSafe`` write path. So a later
    record with an older generation still wins here. A connector tombstone removes the
    connector's status and all its task statuses, but not its topic records (the runtime
    writes separate tombstones for those).
    """
    fold = StatusFold()
    fold.add(records)
    return fold.snapshot()


class StatusFold:
    """`fold_status_records` that goes on: records are added as the topic grows, in the order
    read, and a snapshot taken at any time (a live loop folds only each round's new ones)."""

    def __init__(self) -> None:
        self._folded = _Folded()
        self._malformed: list[MalformedStatusRecord] = []

    def add(self, records: Iterable[StatusRecord]) -> None:
        for raw_key, raw_value, *timestamp in records:
            # StringDeserializer: undecodable bytes become U+FFFD rather than an error.
            key = None if raw_key is None else bytes(raw_key).decode("utf-8", "replace")
            value_bytes = None if raw_value is None else bytes(raw_value)
            try:
                # Kafka says -1 for a record without a timestamp (message format v0).
                written_ms = timestamp[0] if timestamp and (timestamp[0] or 0) >= 0 else None
                _fold_record(self._folded, key, value_bytes, written_ms)
            except _Skip as skip:
                self._malformed.append(
                    MalformedStatusRecord(skip.reason, skip.detail, key, value_bytes)
                )

    def snapshot(self) -> StatusSnapshot:
        """The topic as folded so far; later records do not change it."""
        return StatusSnapshot(
            connectors=_connector_statuses(self._folded), malformed=list(self._malformed)
        )


@dataclass
class _Folded:
    """The latest status of each connector, task and topic, as the fold goes."""

    connectors: dict[str, _Status] = field(default_factory=dict)
    tasks: dict[str, dict[int, TaskStatus]] = field(default_factory=dict)
    # Per connector, its topics in the order first seen (a dict as an ordered set).
    topics: dict[str, dict[str, None]] = field(default_factory=dict)


def _fold_record(
    folded: _Folded, key: str | None, value_bytes: bytes | None, written_ms: int | None = None
) -> None:
    """Apply one record, written at `written_ms` (its timestamp), to the fold, or raise _Skip."""
    if key is None:
        raise _Skip(StatusMalformedReason.KEY_NULL, "the key is null")
    if key.startswith(CONNECTOR_STATUS_PREFIX):
        name = key.removeprefix(CONNECTOR_STATUS_PREFIX)
        if not name:
            raise _Skip(StatusMalformedReason.KEY_NOT_RECOGNISED, "no connector name")
        _check_name(name)
        if value_bytes is None:
            folded.connectors.pop(name, None)
            folded.tasks.pop(name, None)
        else:
            folded.connectors[name] = _parse_status(value_bytes, written_ms)
    elif key.startswith(TASK_STATUS_PREFIX):
        name, task = _task_id(key)
        if value_bytes is None:
            folded.tasks.get(name, {}).pop(task, None)
        else:
            status = asdict(_parse_status(value_bytes, written_ms))
            folded.tasks.setdefault(name, {})[task] = TaskStatus(
                connector=name, task=task, **status
            )
    elif key.startswith(TOPIC_STATUS_PREFIX):
        topic, name = _topic_key(key)
        if value_bytes is None:
            folded.topics.get(name, {}).pop(topic, None)
        else:
            _check_topic_status(value_bytes)
            folded.topics.setdefault(name, {})[topic] = None
    else:
        raise _Skip(StatusMalformedReason.KEY_NOT_RECOGNISED, f"unknown key {key!r}")


def _connector_statuses(folded: _Folded) -> dict[str, ConnectorStatus]:
    """Each connector the fold left a status, a task or a topic of."""
    snapshot: dict[str, ConnectorStatus] = {}
    for name in [*folded.connectors, *folded.tasks, *folded.topics]:
        if name in snapshot:
            continue
        status = folded.connectors.get(name)
        connector_tasks = folded.tasks.get(name, {})
        connector_topics = folded.topics.get(name, {})
        if status is None and not connector_tasks and not connector_topics:
            continue
        snapshot[name] = ConnectorStatus(
            name=name,
            state=status.state if status else None,
            trace=status.trace if status else None,
            worker_id=status.worker_id if status else None,
            generation=status.generation if status else None,
            tasks=dict(sorted(connector_tasks.items())),
            topics=frozenset(connector_topics),
            written_ms=status.written_ms if status else None,
        )
    return snapshot


def _parse_status(value_bytes: bytes, written_ms: int | None = None) -> _Status:
    # parseConnectorStatus / parseTaskStatus: state must name an enum constant, trace and
    # worker_id are cast to String (null allowed), generation is cast to Long (required).
    mapping = _object(value_bytes)
    state = mapping.get("state")
    if not isinstance(state, str) or state not in STATES:
        raise _Skip(StatusMalformedReason.VALUE_BAD_FIELD, f"unknown state {state!r}")
    generation = mapping.get("generation")
    if not isinstance(generation, int) or isinstance(generation, bool):
        raise _Skip(StatusMalformedReason.VALUE_BAD_FIELD, "'generation' should be an integer")
    return _Status(
        state,
        _optional_str(mapping, "trace"),
        _optional_str(mapping, "worker_id"),
        generation,
        written_ms,
    )


def _optional_str(mapping: dict[str, JsonValue], name: str) -> str | None:
    item = mapping.get(name)
    if item is not None and not isinstance(item, str):
        raise _Skip(StatusMalformedReason.VALUE_BAD_FIELD, f"'{name}' should be a string")
    return item


def _check_topic_status(value_bytes: bytes) -> None:
    # parseTopicStatus: {"topic": {"name": str, "connector": str, "task": int,
    # "discoverTimestamp": int}}; it casts the strings to String and the numbers to Long.
    inner = _object(value_bytes).get("topic")
    if not isinstance(inner, dict):
        raise _Skip(StatusMalformedReason.VALUE_BAD_FIELD, "'topic' should be an object")
    for name in ("name", "connector"):
        _optional_str(inner, name)
    for name in ("task", "discoverTimestamp"):
        number = inner.get(name)
        if not isinstance(number, int) or isinstance(number, bool):
            raise _Skip(
                StatusMalformedReason.VALUE_BAD_FIELD, f"'topic.{name}' should be an integer"
            )


def _object(value_bytes: bytes) -> dict[str, JsonValue]:
    try:
        # Statuses are only shown: a lone surrogate (in a trace, say) shows as U+FFFD.
        value = jackson.replace_lone_surrogates(jackson.loads(value_bytes))
    except jackson.JsonParseError as exc:
        raise _Skip(StatusMalformedReason.VALUE_NOT_JSON, str(exc)) from None
    if not isinstance(value, dict):
        raise _Skip(StatusMalformedReason.VALUE_NOT_OBJECT, "the value is not a JSON object")
    return value


def _task_id(key: str) -> tuple[str, int]:
    # parseConnectorTaskId: the task number follows the LAST dash; names may contain dashes.
    name, _, number = key.removeprefix(TASK_STATUS_PREFIX).rpartition("-")
    if not name or not number.isascii() or not number.isdigit() or int(number) > _JAVA_INT_MAX:
        raise _Skip(StatusMalformedReason.KEY_BAD_TASK_ID, f"cannot read a task id from {key!r}")
    _check_name(name)
    return name, int(number)


def _check_name(name: str) -> None:
    problem = unstorable_name(name)
    if problem is not None:
        raise _Skip(StatusMalformedReason.KEY_CONNECTOR_UNSTORABLE, problem)


def _topic_key(key: str) -> tuple[str, str]:
    # readTopicStatus splits at the first ':'; Kafka topic names cannot contain one.
    topic, separator, name = key.removeprefix(TOPIC_STATUS_PREFIX).partition(TOPIC_STATUS_SEPARATOR)
    if not separator or not topic or not name:
        raise _Skip(
            StatusMalformedReason.KEY_BAD_TOPIC, f"cannot read topic and connector from {key!r}"
        )
    _check_name(name)
    return topic, name
