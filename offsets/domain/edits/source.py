"""Source edits: the runtime's view of a connector's offsets and the diff of an edit against it.

Source partitions are identified the way the Java runtime does: by their exact key bytes
(``KafkaOffsetBackingStore`` keys a ``HashMap<ByteBuffer, ByteBuffer>``).
"""

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from offsets.domain.edits.checks import show_offset
from offsets.domain.edits.inputs import EditRuleError
from offsets.formats import jackson
from offsets.formats.jackson import JsonValue
from offsets.formats.offset_records import (
    SourceOffsetRecord,
    latest_offsets,
    partition_identity,
)
from offsets.formats.offsets_json import PartitionOffset


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
        if existing:
            for record in existing:
                if record.value_bytes == after_bytes:
                    unchanged.append(f"{identity}: already {show_offset(after_bytes)}")
                else:
                    changes.append(_existing_change(record, entry, after_bytes, len(existing)))
        elif entry.offset is None:
            unchanged.append(f"{identity}: no offset to delete")
        elif allow_new:
            changes.append(_new_change(connector, entry, after_bytes))
        else:
            raise EditRuleError(
                f"entries[{index}].partition", f"{identity} has no offset in the topic"
            )
    return SourceDiff(changes=changes, unchanged=unchanged)


def _new_change(connector: str, entry: PartitionOffset, after_bytes: bytes | None) -> SourceChange:
    """Write a partition the topic has no offset for, under a key serialized as Connect would."""
    return SourceChange(
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


def _existing_change(
    record: SourceOffsetRecord, entry: PartitionOffset, after_bytes: bytes | None, forms: int
) -> SourceChange:
    """Change one byte form of a partition the topic holds (``forms`` of them in all)."""
    drift = (
        (
            f"Key drift: this partition is stored under {forms} byte forms; "
            "every form gets the same change so the task sees it whichever form it reads.",
        )
        if forms > 1
        else ()
    )
    return SourceChange(
        partition=record.partition,
        key_bytes=record.key_bytes,
        before=record.offset,
        before_bytes=record.value_bytes,
        after=entry.offset,
        after_bytes=after_bytes,
        warnings=drift,
    )


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
