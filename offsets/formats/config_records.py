"""Fold config-topic records into connector configurations, like ``KafkaConfigBackingStore``.

The config topic has one partition and string keys; values are JsonConverter JSON
(schemas.enable=false). Key kinds, in the order ``KafkaConfigBackingStore.ConsumeCallback``
tests them: ``target-state-<name>``, ``connector-<name>``, ``task-<name>-<n>``,
``commit-<name>``, ``restart-connector-<name>``, ``tasks-fencing-<name>``, ``session-key``,
``logger-cluster-<namespace>``. Anything else, and any value the runtime would ignore, becomes
a ``MalformedConfigRecord``; nothing here raises on bad input.
"""

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import cast

from offsets.formats import jackson
from offsets.formats.jackson import JsonValue
from offsets.formats.offset_records import unstorable_name

TARGET_STATE_PREFIX = "target-state-"
CONNECTOR_PREFIX = "connector-"
TASK_PREFIX = "task-"
COMMIT_TASKS_PREFIX = "commit-"
RESTART_PREFIX = "restart-connector-"
TASK_COUNT_RECORD_PREFIX = "tasks-fencing-"
SESSION_KEY_KEY = "session-key"
LOGGER_CLUSTER_PREFIX = "logger-cluster-"

TARGET_STATES = ("STARTED", "PAUSED", "STOPPED")  # org.apache.kafka.connect.runtime.TargetState
_JAVA_INT_MAX = 2**31 - 1


class ConfigMalformedReason(StrEnum):
    """Why the runtime would ignore a config-topic record."""

    KEY_NULL = "key-null"
    KEY_NOT_RECOGNISED = "key-not-recognised"
    KEY_BAD_TASK_ID = "key-bad-task-id"
    VALUE_NOT_JSON = "value-not-json"
    VALUE_NOT_OBJECT = "value-not-object"
    VALUE_BAD_FIELD = "value-bad-field"
    VALUE_UNEXPECTED_TOMBSTONE = "value-unexpected-tombstone"
    # The runtime would use it, but the dashboard cannot store the name (`unstorable_name`).
    KEY_CONNECTOR_UNSTORABLE = "key-connector-unstorable"

    @property
    def label(self) -> str:
        """Return a sentence for people."""
        return _LABELS[self]


_LABELS = {
    ConfigMalformedReason.KEY_NULL: "The record has no key.",
    ConfigMalformedReason.KEY_NOT_RECOGNISED: "The key is not one the Connect runtime writes.",
    ConfigMalformedReason.KEY_BAD_TASK_ID: "The task key does not end in a task number.",
    ConfigMalformedReason.VALUE_NOT_JSON: "The value is not valid UTF-8 JSON.",
    ConfigMalformedReason.VALUE_NOT_OBJECT: "The value is not a JSON object.",
    ConfigMalformedReason.VALUE_BAD_FIELD: "A field of the value is missing or has the wrong type.",
    ConfigMalformedReason.VALUE_UNEXPECTED_TOMBSTONE: "The runtime never deletes such a record.",
    ConfigMalformedReason.KEY_CONNECTOR_UNSTORABLE: (
        "The connector name is longer than 249 characters or holds a NUL, which the database"
        " cannot store."
    ),
}


@dataclass(frozen=True)
class MalformedConfigRecord:
    """A config-topic record the runtime would log and ignore."""

    reason: ConfigMalformedReason
    detail: str
    key: str | None
    value_bytes: bytes | None


@dataclass(frozen=True)
class RestartRequest:
    """The last ``restart-connector-<name>`` request (an event, kept for display)."""

    connector: str
    only_failed: bool
    include_tasks: bool


@dataclass(frozen=True)
class ConnectorConfig:
    """A connector as the config topic describes it after the fold."""

    name: str
    # The last configuration read; kept after a deletion so a deleted connector can be shown.
    properties: dict[str, str | None] | None
    # "STARTED" when no target state is recorded, as the runtime assumes.
    target_state: str
    # From the last commit record; None when no commit was read (or after deletion).
    task_count: int | None
    # Committed task configs 0..task_count-1 (ClusterConfigState.taskConfig); empty while the
    # connector is inconsistent.
    task_configs: dict[int, dict[str, str | None]]
    deleted: bool
    # A commit named more tasks than there were task configs (compaction or a failed leader).
    inconsistent: bool = False
    # The last ``tasks-fencing-<name>`` record (exactly-once source), if any.
    fencing_task_count: int | None = None

    @property
    def connector_class(self) -> str | None:
        """Return ``connector.class`` from the last known properties."""
        if not self.properties:
            return None
        return self.properties.get("connector.class")


@dataclass(frozen=True)
class ConfigSnapshot:
    """The whole config topic, folded."""

    connectors: dict[str, ConnectorConfig]
    malformed: list[MalformedConfigRecord] = field(default_factory=list)
    restart_requests: dict[str, RestartRequest] = field(default_factory=dict)
    logger_levels: dict[str, str] = field(default_factory=dict)
    has_session_key: bool = False


@dataclass
class _Fold:
    # Mutable working state of fold_config_records; mirrors KafkaConfigBackingStore's maps.
    configs: dict[str, dict[str, str | None]] = field(default_factory=dict)
    last_properties: dict[str, dict[str, str | None]] = field(default_factory=dict)
    target_states: dict[str, str] = field(default_factory=dict)
    task_counts: dict[str, int] = field(default_factory=dict)
    task_configs: dict[str, dict[int, dict[str, str | None]]] = field(default_factory=dict)
    deferred: dict[str, dict[int, dict[str, str | None]]] = field(default_factory=dict)
    inconsistent: set[str] = field(default_factory=set)
    fencing_counts: dict[str, int] = field(default_factory=dict)
    restart_requests: dict[str, RestartRequest] = field(default_factory=dict)
    logger_levels: dict[str, str] = field(default_factory=dict)
    has_session_key: bool = False
    malformed: list[MalformedConfigRecord] = field(default_factory=list)


class _Skip(Exception):
    """Raised inside the fold to drop a record; becomes a MalformedConfigRecord."""

    def __init__(self, reason: ConfigMalformedReason, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


def fold_config_records(records: Iterable[tuple[bytes | None, bytes | None]]) -> ConfigSnapshot:
    """Fold config-topic records, in topic order, into a snapshot of every known connector.

    Follows ``KafkaConfigBackingStore``: a connector record applies at once; task configs wait
    for a ``commit-<name>`` record and apply only if every task below the committed count has a
    pending config (else the connector is marked inconsistent); a connector tombstone drops its
    task counts and task configs. A re-created connector is live again.

    Simplifications: a connector whose config record is gone (never read) is not listed even if
    task or target-state records remain; session keys and logging levels are only validated,
    not decoded; connector names must be non-empty (Java would accept ``connector-``).
    """
    fold = ConfigFold()
    fold.add(records)
    return fold.snapshot()


class ConfigFold:
    """`fold_config_records` that goes on: records are added as the topic grows, in topic
    order, and a snapshot taken at any time. A live loop folds only each round's new records,
    as the runtime's own backing store does."""

    def __init__(self) -> None:
        self._fold = _Fold()

    def add(self, records: Iterable[tuple[bytes | None, bytes | None]]) -> None:
        fold = self._fold
        for raw_key, raw_value in records:
            key = None if raw_key is None else bytes(raw_key).decode("utf-8", "replace")
            value_bytes = None if raw_value is None else bytes(raw_value)
            try:
                _apply(fold, key, value_bytes)
            except _Skip as skip:
                fold.malformed.append(
                    MalformedConfigRecord(skip.reason, skip.detail, key, value_bytes)
                )

    def snapshot(self) -> ConfigSnapshot:
        """The topic as folded so far; later records do not change it."""
        fold = self._fold
        connectors = {}
        for name, properties in fold.last_properties.items():
            count = fold.task_counts.get(name)
            inconsistent = name in fold.inconsistent
            committed = fold.task_configs.get(name, {})
            tasks = {}
            if count is not None and not inconsistent:
                tasks = {task: committed[task] for task in range(count) if task in committed}
            connectors[name] = ConnectorConfig(
                name=name,
                properties=properties,
                target_state=fold.target_states.get(name, "STARTED"),
                task_count=count,
                task_configs=tasks,
                deleted=name not in fold.configs,
                inconsistent=inconsistent,
                fencing_task_count=fold.fencing_counts.get(name),
            )
        return ConfigSnapshot(
            connectors=connectors,
            malformed=list(fold.malformed),
            restart_requests=dict(fold.restart_requests),
            logger_levels=dict(fold.logger_levels),
            has_session_key=fold.has_session_key,
        )


def _apply(fold: _Fold, key: str | None, value_bytes: bytes | None) -> None:
    if key is None:
        raise _Skip(ConfigMalformedReason.KEY_NULL, "the key is null")
    # ConsumeCallback converts the value before looking at the key: bad JSON drops the record.
    value = _decode(value_bytes)
    if key.startswith(TARGET_STATE_PREFIX):
        _target_state(fold, _name(key, TARGET_STATE_PREFIX), value)
    elif key.startswith(CONNECTOR_PREFIX):
        _connector(fold, _name(key, CONNECTOR_PREFIX), value)
    elif key.startswith(TASK_PREFIX):
        connector, task = _task_id(key)
        _task(fold, connector, task, value)
    elif key.startswith(COMMIT_TASKS_PREFIX):
        _commit(fold, _name(key, COMMIT_TASKS_PREFIX), value)
    elif key.startswith(RESTART_PREFIX):
        _restart(fold, _name(key, RESTART_PREFIX), value)
    elif key.startswith(TASK_COUNT_RECORD_PREFIX):
        mapping = _object(value, "task count record")
        fold.fencing_counts[_name(key, TASK_COUNT_RECORD_PREFIX)] = _int_field(
            mapping, "task-count"
        )
    elif key == SESSION_KEY_KEY:
        _session_key(fold, value)
    elif key.startswith(LOGGER_CLUSTER_PREFIX):
        mapping = _object(value, "logging level")
        level = mapping.get("level")
        if not isinstance(level, str):
            raise _Skip(ConfigMalformedReason.VALUE_BAD_FIELD, "'level' should be a string")
        fold.logger_levels[key.removeprefix(LOGGER_CLUSTER_PREFIX)] = level
    else:
        raise _Skip(ConfigMalformedReason.KEY_NOT_RECOGNISED, f"unknown key {key!r}")


def _target_state(fold: _Fold, name: str, value: JsonValue) -> None:
    if value is None:
        # processTargetStateRecord: a tombstone removes the state, but a connector that still
        # has a config falls back to STARTED (which is also our default).
        fold.target_states.pop(name, None)
        return
    mapping = _object(value, "target state")
    # Prefer "state.v2" (which can say STOPPED); older workers only wrote "state".
    state = mapping.get("state.v2")
    if not isinstance(state, str):
        state = mapping.get("state")
        if not isinstance(state, str):
            raise _Skip(
                ConfigMalformedReason.VALUE_BAD_FIELD, "neither 'state.v2' nor 'state' is a string"
            )
    if state not in TARGET_STATES:
        raise _Skip(ConfigMalformedReason.VALUE_BAD_FIELD, f"unknown target state {state!r}")
    fold.target_states[name] = state


def _connector(fold: _Fold, name: str, value: JsonValue) -> None:
    if value is None:
        # processConnectorConfigRecord: deletion also forgets task counts and task configs.
        fold.configs.pop(name, None)
        fold.task_counts.pop(name, None)
        fold.task_configs.pop(name, None)
        fold.deferred.pop(name, None)
        return
    properties = _properties(_object(value, "connector configuration"))
    fold.configs[name] = properties
    fold.last_properties[name] = properties


def _task(fold: _Fold, connector: str, task: int, value: JsonValue) -> None:
    if value is None:
        raise _Skip(
            ConfigMalformedReason.VALUE_UNEXPECTED_TOMBSTONE,
            "a task configuration is never deleted",
        )
    properties = _properties(_object(value, "task configuration"))
    # Deferred until the connector's next commit record (processTaskConfigRecord).
    fold.deferred.setdefault(connector, {})[task] = properties


def _commit(fold: _Fold, name: str, value: JsonValue) -> None:
    mapping = _object(value, "task commit")
    count = _int_field(mapping, "tasks")
    deferred = fold.deferred.get(name, {})
    # completeTaskIdSet: every task below the count must have a pending config; extra ones
    # (left over after compaction of a shrink) are fine.
    if all(task in deferred for task in range(count)):
        fold.task_configs.setdefault(name, {}).update(deferred)
        fold.inconsistent.discard(name)
    else:
        fold.inconsistent.add(name)
    # Pending configs are dropped either way: an inconsistent set needs a fresh full rewrite.
    deferred.clear()
    fold.task_counts[name] = count


def _restart(fold: _Fold, name: str, value: JsonValue) -> None:
    mapping = _object(value, "restart request")
    # recordToRestartRequest defaults both flags to false when they are not booleans.
    only_failed = mapping.get("only-failed")
    include_tasks = mapping.get("include-tasks")
    fold.restart_requests[name] = RestartRequest(
        connector=name,
        only_failed=only_failed if isinstance(only_failed, bool) else False,
        include_tasks=include_tasks if isinstance(include_tasks, bool) else False,
    )


def _session_key(fold: _Fold, value: JsonValue) -> None:
    if value is None:
        raise _Skip(
            ConfigMalformedReason.VALUE_UNEXPECTED_TOMBSTONE, "the session key is never deleted"
        )
    mapping = _object(value, "session key")
    for field_name in ("key", "algorithm"):
        if not isinstance(mapping.get(field_name), str):
            raise _Skip(ConfigMalformedReason.VALUE_BAD_FIELD, f"'{field_name}' should be a string")
    timestamp = mapping.get("creation-timestamp")
    if not isinstance(timestamp, int) or isinstance(timestamp, bool):
        raise _Skip(
            ConfigMalformedReason.VALUE_BAD_FIELD, "'creation-timestamp' should be an integer"
        )
    fold.has_session_key = True


def _decode(value_bytes: bytes | None) -> JsonValue:
    if value_bytes is None:
        return None
    try:
        value = jackson.loads(value_bytes)
    except jackson.JsonParseError as exc:
        raise _Skip(ConfigMalformedReason.VALUE_NOT_JSON, str(exc)) from None
    # Configs are shown and stored, never written back: a lone surrogate shows as U+FFFD.
    return jackson.replace_lone_surrogates(value)


def _name(key: str, prefix: str) -> str:
    name = key.removeprefix(prefix)
    if not name:
        raise _Skip(ConfigMalformedReason.KEY_NOT_RECOGNISED, f"no connector name after {prefix!r}")
    return _storable(name)


def _storable(name: str) -> str:
    problem = unstorable_name(name)
    if problem is not None:
        raise _Skip(ConfigMalformedReason.KEY_CONNECTOR_UNSTORABLE, problem)
    return name


def _task_id(key: str) -> tuple[str, int]:
    # KafkaConfigBackingStore.parseTaskId: the task number is after the LAST dash, so
    # connector names may contain dashes.
    connector, _, number = key.removeprefix(TASK_PREFIX).rpartition("-")
    if not connector or not number.isascii() or not number.isdigit() or int(number) > _JAVA_INT_MAX:
        raise _Skip(ConfigMalformedReason.KEY_BAD_TASK_ID, f"cannot read a task id from {key!r}")
    return _storable(connector), int(number)


def _object(value: JsonValue, what: str) -> dict[str, JsonValue]:
    if value is None:
        raise _Skip(ConfigMalformedReason.VALUE_UNEXPECTED_TOMBSTONE, f"a {what} is never deleted")
    if not isinstance(value, dict):
        raise _Skip(ConfigMalformedReason.VALUE_NOT_OBJECT, f"the {what} is not a JSON object")
    return value


def _properties(mapping: dict[str, JsonValue]) -> dict[str, str | None]:
    properties = mapping.get("properties")
    if not isinstance(properties, dict):
        raise _Skip(ConfigMalformedReason.VALUE_BAD_FIELD, "'properties' should be an object")
    # The schema is map<string, optional string>; the runtime casts without checking, so a
    # non-string would only fail later, inside the worker. Reject it here instead.
    for name, item in properties.items():
        if item is not None and not isinstance(item, str):
            raise _Skip(ConfigMalformedReason.VALUE_BAD_FIELD, f"property {name!r} is not a string")
    return cast(dict[str, str | None], properties)


def _int_field(mapping: dict[str, JsonValue], name: str) -> int:
    number = mapping.get(name)
    if not isinstance(number, int) or isinstance(number, bool) or not 0 <= number <= _JAVA_INT_MAX:
        raise _Skip(
            ConfigMalformedReason.VALUE_BAD_FIELD, f"'{name}' should be a non-negative integer"
        )
    return number
