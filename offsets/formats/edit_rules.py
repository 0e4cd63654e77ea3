"""The rules of an offset edit, as pure functions: diffs, sink targets, lock-check decisions.

Nothing here touches Kafka or the database; the services read the live topics, call these,
and act on the answers. Source partitions are identified the way the Java runtime does: by
their exact key bytes (``KafkaOffsetBackingStore`` keys a ``HashMap<ByteBuffer, ByteBuffer>``).
"""

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta

from offsets.formats import jackson
from offsets.formats.jackson import JsonValue
from offsets.formats.offset_records import (
    SourceOffsetRecord,
    latest_offsets,
    partition_identity,
)
from offsets.formats.offsets_json import PartitionOffset


class EditRuleError(ValueError):
    """An edit that cannot be staged, naming the input field at fault."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


# ---------------------------------------------------------------------------------------------
# Lock-check decisions. Each returns a named result; the service runs them at apply time.

CONNECTOR_STOPPED = "connector-stopped"
GROUP_INACTIVE = "group-inactive"
NOTHING_MOVED = "nothing-moved"
SINGLE_APPLY = "single-apply"

CHECK_LABELS = {
    CONNECTOR_STOPPED: "The connector is stopped",
    GROUP_INACTIVE: "The sink's consumer group has no active members",
    NOTHING_MOVED: "Nothing moved since staging",
    SINGLE_APPLY: "One apply at a time for this connector",
}

# Task states that mean a task may be writing offsets right now. UNASSIGNED is what a task of
# a stopped connector is left with; RESTARTING is about to run again.
_ACTIVE_TASK_STATES = ("RUNNING", "RESTARTING")
# Consumer group states with no members that could commit (ConsumerGroupState).
_INACTIVE_GROUP_STATES = ("EMPTY", "DEAD")


@dataclass(frozen=True)
class CheckResult:
    name: str
    passed: bool
    message: str

    @property
    def label(self) -> str:
        return CHECK_LABELS.get(self.name, self.name)

    def as_dict(self) -> dict[str, JsonValue]:
        return {"name": self.name, "passed": self.passed, "message": self.message}


def check_connector_stopped(
    *,
    connector: str,
    deleted: bool,
    target_state: str | None,
    connector_state: str | None,
    task_states: Mapping[int, str],
) -> CheckResult:
    """Pass when the config topic says STOPPED (or deleted) and no task runs (as in KIP-875).

    PAUSED is not enough: a paused connector's tasks still exist with their offsets in memory
    and carry on from those when resumed, which is why KIP-875 asks for STOPPED (zero tasks).
    """
    running = sorted(task for task, state in task_states.items() if state in _ACTIVE_TASK_STATES)
    if running:
        tasks = ", ".join(f"{task} ({task_states[task]})" for task in running)
        return CheckResult(
            CONNECTOR_STOPPED,
            False,
            f"Task(s) {tasks} of {connector} are still running according to the status topic.",
        )
    if deleted:
        return CheckResult(
            CONNECTOR_STOPPED, True, f"{connector} is deleted and no task of it is running."
        )
    if target_state != "STOPPED":
        return CheckResult(
            CONNECTOR_STOPPED,
            False,
            f"The target state of {connector} is {target_state or 'unknown'}; stop it first "
            f"(PUT /connectors/{connector}/stop). PAUSED is not enough.",
        )
    if connector_state in _ACTIVE_TASK_STATES:
        return CheckResult(
            CONNECTOR_STOPPED,
            False,
            f"{connector} is asked to stop but its status is still {connector_state}; "
            "wait for the workers to stop it.",
        )
    return CheckResult(
        CONNECTOR_STOPPED, True, f"{connector} is STOPPED and none of its tasks is running."
    )


def check_group_inactive(*, group_id: str, state: str, member_count: int) -> CheckResult:
    """Pass when the sink's consumer group is Empty or Dead with no members."""
    normalized = state.upper()
    if normalized in _INACTIVE_GROUP_STATES and member_count == 0:
        return CheckResult(
            GROUP_INACTIVE, True, f"Group {group_id} is {normalized.lower()}: no active members."
        )
    members = f" with {member_count} member(s)" if member_count else ""
    return CheckResult(
        GROUP_INACTIVE,
        False,
        f"Group {group_id} is {normalized.lower()}{members}: a consumer is still in it, and the "
        "broker only lets members commit to a non-empty group.",
    )


@dataclass(frozen=True)
class Observed:
    """A touched partition's value captured at staging and its value now."""

    label: str
    expected: object
    current: object


def check_nothing_moved(observed: Iterable[Observed]) -> CheckResult:
    """Pass when every touched partition still holds the value captured at staging."""
    moved = [item for item in observed if item.expected != item.current]
    if not moved:
        return CheckResult(
            NOTHING_MOVED, True, "Every touched partition still holds its before value."
        )
    shown = "; ".join(
        f"{item.label}: {_show(item.expected)} at staging, {_show(item.current)} now"
        for item in moved[:5]
    )
    more = f" (and {len(moved) - 5} more)" if len(moved) > 5 else ""
    return CheckResult(
        NOTHING_MOVED,
        False,
        f"{len(moved)} partition(s) moved since the edit was staged: {shown}{more}. "
        "Stage the edit again.",
    )


def check_single_apply(*, claimed: bool, detail: str = "") -> CheckResult:
    if claimed:
        return CheckResult(SINGLE_APPLY, True, "This apply holds the connector's claim.")
    return CheckResult(
        SINGLE_APPLY, False, detail or "Another apply got there first; nothing was done."
    )


def _show(value: object) -> str:
    if value is None:
        return "no offset"
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).decode("utf-8", "backslashreplace")
    return str(value)


# ---------------------------------------------------------------------------------------------
# Source connectors: the runtime's view and the diff of an edit against it.


@dataclass(frozen=True)
class SourceChange:
    """One source key an edit writes: ``after_bytes`` None is a tombstone."""

    partition: dict[str, JsonValue]
    key_bytes: bytes
    before: dict[str, JsonValue] | None
    before_bytes: bytes | None
    after: dict[str, JsonValue] | None
    after_bytes: bytes | None
    is_new: bool = False
    warnings: tuple[str, ...] = ()

    @property
    def is_delete(self) -> bool:
        return self.after_bytes is None


@dataclass(frozen=True)
class SourceDiff:
    changes: list[SourceChange]
    # Entries that change nothing (same value, or deleting what is not there), for people.
    unchanged: list[str] = field(default_factory=list)


def runtime_view(
    connector: str,
    worker: Mapping[bytes, SourceOffsetRecord],
    own: Mapping[bytes, SourceOffsetRecord] | None = None,
) -> dict[bytes, SourceOffsetRecord]:
    """Return a connector's offsets as its tasks see them, by exact key bytes.

    ``ConnectorOffsetBackingStore.get`` reads both stores and lets the connector's own topic
    win: ``result = worker; result.putAll(connector)``. A key tombstoned only in the own topic
    therefore still shows the worker topic's value, which is why deletions go to both.
    """
    view = {key: record for key, record in worker.items() if record.connector == connector}
    if own is not None:
        view.update({key: record for key, record in own.items() if record.connector == connector})
    return view


def source_diff(
    *,
    connector: str,
    current: Mapping[bytes, SourceOffsetRecord],
    entries: Sequence[PartitionOffset],
    allow_new: bool = True,
) -> SourceDiff:
    """Diff requested partition offsets against the runtime's view of one connector.

    An existing partition is written with the exact key bytes read from the topic: every byte
    form when the key drifted (the task reads whichever form its map serializes to today). A
    partition not in the topic gets a key serialized like JsonConverter, field order as given.
    """
    forms: dict[str, list[SourceOffsetRecord]] = {}
    for record in current.values():
        if record.connector == connector:
            forms.setdefault(record.partition_identity, []).append(record)
    changes: list[SourceChange] = []
    unchanged: list[str] = []
    for index, entry in enumerate(entries):
        identity = partition_identity(entry.partition)
        after_bytes = None if entry.offset is None else _offset_bytes(entry.offset, index)
        existing = forms.get(identity, [])
        if not existing:
            if entry.offset is None:
                unchanged.append(f"{identity}: no offset to delete")
                continue
            if not allow_new:
                raise EditRuleError(
                    f"entries[{index}].partition", f"{identity} has no offset in the topic"
                )
            changes.append(
                SourceChange(
                    partition=entry.partition,
                    key_bytes=jackson.dumps_key(connector, entry.partition),
                    before=None,
                    before_bytes=None,
                    after=entry.offset,
                    after_bytes=after_bytes,
                    is_new=True,
                    warnings=(
                        "New partition: its key is serialized like Connect's JsonConverter with "
                        "the fields in the order given. The runtime matches keys byte for byte, "
                        "so check the field order against what the connector writes.",
                    ),
                )
            )
            continue
        drift = (
            (
                f"Key drift: this partition is stored under {len(existing)} byte forms; "
                "every form gets the same change so the task sees it whichever form it reads.",
            )
            if len(existing) > 1
            else ()
        )
        for record in existing:
            if record.value_bytes == after_bytes:
                unchanged.append(f"{identity}: already {_show(after_bytes)}")
                continue
            changes.append(
                SourceChange(
                    partition=record.partition,
                    key_bytes=record.key_bytes,
                    before=record.offset,
                    before_bytes=record.value_bytes,
                    after=entry.offset,
                    after_bytes=after_bytes,
                    warnings=drift,
                )
            )
    return SourceDiff(changes=changes, unchanged=unchanged)


def _offset_bytes(offset: dict[str, JsonValue], index: int) -> bytes:
    try:
        return jackson.dumps(offset)
    except (TypeError, ValueError) as exc:
        raise EditRuleError(f"entries[{index}].offset", str(exc)) from None


def offsets_as_of(
    records: Iterable[tuple[bytes | None, bytes | None, int]], at_ms: int
) -> dict[bytes, SourceOffsetRecord]:
    """Fold an offsets topic's history, in topic order, up to and including time ``at_ms``.

    The last value per exact key bytes written at or before ``at_ms`` wins, a tombstone
    removes the key: what the runtime would have read back at that moment.
    """
    return latest_offsets(
        (key, value) for key, value, timestamp_ms in records if timestamp_ms <= at_ms
    ).offsets


def restore_diff(
    *,
    connector: str,
    current: Mapping[bytes, SourceOffsetRecord],
    as_of: Mapping[bytes, SourceOffsetRecord],
    at_label: str,
) -> SourceDiff:
    """Diff that brings every key of ``connector`` back to its value in ``as_of``.

    Keys written after the time are deleted (the connector had no offset for them then); keys
    deleted since are written again with their exact old bytes.
    """
    now = {key: record for key, record in current.items() if record.connector == connector}
    then = {key: record for key, record in as_of.items() if record.connector == connector}
    changes: list[SourceChange] = []
    unchanged = 0
    for key in [*now, *(key for key in then if key not in now)]:
        before = now.get(key)
        target = then.get(key)
        before_bytes = before.value_bytes if before else None
        after_bytes = target.value_bytes if target else None
        if before_bytes == after_bytes:
            unchanged += 1
            continue
        warnings: tuple[str, ...] = ()
        if target is None:
            warnings = (f"This partition had no offset at {at_label}: it will be deleted.",)
        elif before is None:
            warnings = (f"This partition was deleted after {at_label}: it is written again.",)
        record = before or target
        assert record is not None
        changes.append(
            SourceChange(
                partition=record.partition,
                key_bytes=key,
                before=before.offset if before else None,
                before_bytes=before_bytes,
                after=target.offset if target else None,
                after_bytes=after_bytes,
                warnings=warnings,
            )
        )
    notes = (
        [f"{unchanged} partition(s) already hold their value as of {at_label}"] if unchanged else []
    )
    return SourceDiff(changes=changes, unchanged=notes)


# ---------------------------------------------------------------------------------------------
# Sink connectors: where each strategy puts a topic-partition's committed offset.

SINK_STRATEGIES = ("earliest", "latest", "offset", "shift", "datetime", "duration", "copy-group")


@dataclass(frozen=True)
class PartitionLog:
    """A data topic partition's log: first offset still there, and the end (next offset)."""

    topic: str
    partition: int
    log_start: int
    log_end: int

    @property
    def label(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True)
class SinkTarget:
    """Where one partition goes: ``offset`` None with ``skip`` set means "leave it alone"."""

    offset: int | None
    warnings: tuple[str, ...] = ()
    skip: str = ""


def clamp(target: int, log: PartitionLog) -> SinkTarget:
    """Keep a target inside [log start, log end], with a visible warning when it was outside."""
    if target < log.log_start:
        return SinkTarget(
            log.log_start,
            (
                f"{target} is before the log start of {log.label} (records removed by retention); "
                f"clamped to {log.log_start}.",
            ),
        )
    if target > log.log_end:
        return SinkTarget(
            log.log_end,
            (f"{target} is beyond the log end of {log.label}; clamped to {log.log_end}.",),
        )
    return SinkTarget(target)


def sink_target(
    strategy: str,
    *,
    log: PartitionLog,
    committed: int | None,
    value: int | None = None,
    copied: int | None = None,
    time_offset: int | None = None,
) -> SinkTarget:
    """Compute one partition's new committed offset for a sink strategy, clamped to the log.

    ``value`` is the offset ("offset") or the signed amount ("shift"); ``copied`` the other
    group's committed offset ("copy-group"); ``time_offset`` the checked offsets-for-times
    answer ("datetime", "duration"), None meaning no record at or after the time.
    """
    if strategy == "earliest":
        return SinkTarget(log.log_start)
    if strategy == "latest":
        return SinkTarget(log.log_end)
    if strategy == "offset":
        if value is None:
            raise EditRuleError("offset", "is required")
        return clamp(value, log)
    if strategy == "shift":
        if value is None:
            raise EditRuleError("shift", "is required")
        if committed is None:
            # Like kafka-consumer-groups --shift-by: there is nothing to shift from.
            return SinkTarget(None, skip=f"{log.label} has no committed offset to shift from")
        return clamp(committed + value, log)
    if strategy in ("datetime", "duration"):
        if time_offset is None:
            # ListOffsets found no record at or after the time: everything is older, so the
            # sink resumes at the end (what kafka-consumer-groups --to-datetime does too).
            return SinkTarget(
                log.log_end, (f"No record of {log.label} is that recent; set to the log end.",)
            )
        return clamp(time_offset, log)
    if strategy == "copy-group":
        if copied is None:
            return SinkTarget(None, skip=f"the other group has no committed offset for {log.label}")
        return clamp(copied, log)
    raise EditRuleError("strategy", f"unknown sink strategy {strategy!r}")


@dataclass(frozen=True)
class SinkChange:
    topic: str
    partition: int
    before: int | None
    after: int | None  # None: delete the committed offset
    warnings: tuple[str, ...] = ()

    @property
    def is_delete(self) -> bool:
        return self.after is None

    @property
    def is_new(self) -> bool:
        return self.before is None and self.after is not None


def check_offset_for_time(
    *,
    at_ms: int,
    answer: int | None,
    log: PartitionLog,
    timestamp_at: int | None,
    timestamp_before: int | None,
) -> CheckResult:
    """Check a broker's offsets-for-times answer against the records around it.

    Kafka answers "the first offset whose timestamp is >= t" (None: no such record). So the
    record at the answer must be at or after t and the record before it before t. Brokers that
    answer nonsense (some Kafka-compatible brokers answer 0 for any time) are caught here
    instead of trusted.
    ``timestamp_at`` is None when there is no record at the answer (it is the log end);
    ``timestamp_before`` when there is none before it (it is the log start).
    """
    name = "offset-for-time"
    position = log.log_end if answer is None else answer
    if not log.log_start <= position <= log.log_end:
        return CheckResult(
            name,
            False,
            f"The broker answered offset {answer} for {log.label}, outside its log "
            f"[{log.log_start}, {log.log_end}].",
        )
    if timestamp_at is not None and timestamp_at < at_ms:
        return CheckResult(
            name,
            False,
            f"The broker answered offset {position} for {log.label}, but that record was written "
            f"at {timestamp_at} ms, before the requested {at_ms} ms.",
        )
    if timestamp_before is not None and timestamp_before >= at_ms:
        return CheckResult(
            name,
            False,
            f"The broker answered offset {position} for {log.label}, but an earlier record was "
            f"written at {timestamp_before} ms, not before the requested {at_ms} ms.",
        )
    return CheckResult(name, True, f"Offset {position} of {log.label} checks out.")


# ---------------------------------------------------------------------------------------------
# Settling an edit found in "applying" (a crash or an outage between the claim and the record).


@dataclass(frozen=True)
class Settled:
    """What reading the topic back says about an edit.

    ``outcome`` is "applied", "not-applied", "mixed" (something else wrote) or, for a sink
    edit that deletes some of a group's partitions, "incomplete": the group was deleted but
    the partitions it had to keep are not all back; ``restore`` holds those offsets.
    """

    outcome: str
    message: str
    restore: Mapping[tuple[str, int], int] = field(default_factory=dict)


def settle(observed: Sequence[tuple[str, object, object, object]]) -> Settled:
    """Decide from (label, before, after, current) of every touched partition.

    All at their after value: the write committed. All at their before value: it did not.
    Anything else: someone else moved them, which one transaction alone cannot explain.
    """
    if not observed:
        return Settled("not-applied", "The edit touches no partition.")
    at_after = [label for label, _before, after, current in observed if current == after]
    at_before = [label for label, before, _after, current in observed if current == before]
    if len(at_after) == len(observed):
        return Settled("applied", f"All {len(observed)} partition(s) hold their new value.")
    if len(at_before) == len(observed):
        return Settled(
            "not-applied", f"All {len(observed)} partition(s) still hold their old value."
        )
    others = [
        label
        for label, before, after, current in observed
        if current != after and current != before
    ]
    return Settled(
        "mixed",
        f"{len(at_after)} partition(s) hold the new value, {len(at_before)} the old one and "
        f"{len(others)} another value ({', '.join(others[:5])}): something else wrote to them.",
    )


def settle_sink_group(
    observed: Sequence[tuple[str, object, object, object]],
    *,
    deleted: Iterable[tuple[str, int]],
    keep: Mapping[tuple[str, int], int],
    group: Mapping[tuple[str, int], int],
) -> Settled:
    """Decide a partial sink delete from the WHOLE group, not only the edit's partitions.

    Such an edit deletes the group (Kafka cannot delete one partition's committed offset of
    a group) and commits ``keep`` back: the other partitions and the edit's new values. The
    edit's own partitions alone would call it "applied" as soon as the deleted ones are gone,
    even if the other partitions were never committed back. So: "applied" only when the
    edit's partitions hold their new values AND every kept partition holds its offset;
    "incomplete" (never applied) when the delete happened (every ``deleted`` partition is
    gone) but a kept partition is missing or different, with ``restore`` naming exactly
    those offsets; otherwise what ``settle`` says about the edit's partitions (the group was
    not deleted: "not-applied", or "mixed" when something else wrote).
    """
    own = settle(observed)
    missing = {tp: offset for tp, offset in keep.items() if group.get(tp) != offset}
    if own.outcome == "applied" and not missing:
        return Settled("applied", f"{own.message} Every kept partition ({len(keep)}) is back.")
    delete_happened = all(tp not in group for tp in deleted)
    if delete_happened and missing:
        absent = sum(1 for tp in missing if tp not in group)
        return Settled(
            "incomplete",
            f"The group was deleted but {len(missing)} of the {len(keep)} partition(s) it had "
            f"to keep are not back ({absent} missing, {len(missing) - absent} at another "
            f"offset). Commit these offsets to restore them: {restore_text(missing)}",
            restore=missing,
        )
    return own


def restore_text(restore: Mapping[tuple[str, int], int]) -> str:
    """Return offsets to restore as "topic-partition=offset, ...", sorted."""
    return ", ".join(f"{t}-{p}={o}" for (t, p), o in sorted(restore.items()))


def restore_details(restore: Mapping[tuple[str, int], int]) -> dict[str, int]:
    """Return offsets to restore for the audit log: {"topic-partition": offset}, sorted."""
    return {f"{t}-{p}": o for (t, p), o in sorted(restore.items())}


def keep_as_json(keep: Mapping[tuple[str, int], int]) -> list[list[str | int]]:
    """Return a group's offsets as [[topic, partition, offset], ...] for a JSON field.

    A list of triples, not "topic-partition" keys: topic names may contain '-'.
    """
    return [[topic, partition, offset] for (topic, partition), offset in sorted(keep.items())]


def keep_from_json(stored: Iterable[list]) -> dict[tuple[str, int], int]:
    """Read back what ``keep_as_json`` stored."""
    return {(str(topic), int(partition)): int(offset) for topic, partition, offset in stored}


# ---------------------------------------------------------------------------------------------
# Inputs.

_ISO_DURATION = re.compile(
    r"^P(?:(?P<weeks>\d+)W)?(?:(?P<days>\d+)D)?"
    r"(?:T(?:(?P<hours>\d+)H)?(?:(?P<minutes>\d+)M)?(?:(?P<seconds>\d+(?:\.\d+)?)S)?)?$"
)
_SHORT_DURATION = re.compile(r"^(?P<amount>\d+)\s*(?P<unit>[smhdw])$")
_SHORT_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


# Longer than any retention that makes sense, short enough that "now minus it" is a date.
MAX_DURATION = timedelta(days=36_500)


def parse_duration(text: str) -> timedelta:
    """Parse an ISO-8601 duration (``PT1H30M``, ``P1DT2H``, as ``--by-duration``) or ``90m``.

    Raises ValueError for anything else, and for durations beyond MAX_DURATION (100 years):
    timedelta itself overflows past 999,999,999 days, and subtracting even 100,000 years
    from now leaves the calendar.
    """
    cleaned = text.strip()
    short = _SHORT_DURATION.match(cleaned.lower())
    if short:
        parts = {_SHORT_UNITS[short["unit"]]: float(short["amount"])}
    else:
        match = _ISO_DURATION.match(cleaned.upper())
        if not match or cleaned.upper() in ("P", "PT") or cleaned.upper().endswith("T"):
            raise ValueError(f"{text!r} is not a duration like PT1H30M, P2D or 90m")
        parts = {name: float(value) for name, value in match.groupdict().items() if value}
    # float(): the digits may be any number long; a float overflows to inf, never raises.
    seconds = sum(value * _UNIT_SECONDS[name] for name, value in parts.items())
    if seconds > MAX_DURATION.total_seconds():
        raise ValueError(f"{text!r} is too long: at most {MAX_DURATION.days:,} days")
    return timedelta(**parts)


_UNIT_SECONDS = {"weeks": 604_800, "days": 86_400, "hours": 3_600, "minutes": 60, "seconds": 1}
