"""Parse offsets-topic records and fold them the way the Java runtime reads them back.

Key: the JSON array ``[connectorName, partitionMap]``; value: the JSON offset map, or null
(a tombstone: "no offset"). The runtime keeps its offsets in a ``HashMap<ByteBuffer,
ByteBuffer>`` keyed by the RAW key bytes (``KafkaOffsetBackingStore``), so everything here keeps
the exact key bytes and compares keys byte for byte.
"""

import json
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum

from offsets.formats import jackson
from offsets.formats.jackson import JsonValue


class MalformedReason(StrEnum):
    """Why an offsets-topic record cannot be a source connector's offset."""

    KEY_NULL = "key-null"
    KEY_NOT_UTF8 = "key-not-utf8"
    KEY_NOT_JSON = "key-not-json"
    KEY_NOT_ARRAY = "key-not-array"
    KEY_CONNECTOR_NOT_STRING = "key-connector-not-string"
    KEY_PARTITION_NOT_OBJECT = "key-partition-not-object"
    KEY_PARTITION_NOT_FLAT = "key-partition-not-flat"
    VALUE_NOT_UTF8 = "value-not-utf8"
    VALUE_NOT_JSON = "value-not-json"
    VALUE_NOT_OBJECT = "value-not-object"
    VALUE_NOT_FLAT = "value-not-flat"
    # Records the runtime would use but the refresh cannot keep (see `refresh_key_reason`).
    KEY_CONNECTOR_UNSTORABLE = "key-connector-unstorable"
    KEY_PARTITION_UNSTORABLE = "key-partition-unstorable"
    VALUE_UNSTORABLE = "value-unstorable"
    TIMESTAMP_OUT_OF_RANGE = "timestamp-out-of-range"

    @property
    def label(self) -> str:
        """Return a sentence for people."""
        return _LABELS[self]


_LABELS = {
    MalformedReason.KEY_NULL: "The record has no key.",
    MalformedReason.KEY_NOT_UTF8: "The key is not valid UTF-8.",
    MalformedReason.KEY_NOT_JSON: "The key is not valid JSON.",
    MalformedReason.KEY_NOT_ARRAY: "The key is not a JSON array of two elements.",
    MalformedReason.KEY_CONNECTOR_NOT_STRING: "The key's connector is not a string.",
    MalformedReason.KEY_PARTITION_NOT_OBJECT: "The key's partition is not an object.",
    MalformedReason.KEY_PARTITION_NOT_FLAT: "The partition holds a nested array or object.",
    MalformedReason.VALUE_NOT_UTF8: "The value is not valid UTF-8.",
    MalformedReason.VALUE_NOT_JSON: "The value is not valid JSON.",
    MalformedReason.VALUE_NOT_OBJECT: "The value is not a JSON object.",
    MalformedReason.VALUE_NOT_FLAT: "The offset holds a nested array or object.",
    MalformedReason.VALUE_UNSTORABLE: (
        "An offset field holds a NUL or a lone UTF-16 surrogate, which the database cannot store."
    ),
    MalformedReason.KEY_CONNECTOR_UNSTORABLE: (
        "The connector name is longer than 249 characters or holds a NUL or a lone UTF-16"
        " surrogate, which the database cannot store."
    ),
    MalformedReason.KEY_PARTITION_UNSTORABLE: (
        "The partition holds a NUL or a lone UTF-16 surrogate, which the database cannot store."
    ),
    MalformedReason.TIMESTAMP_OUT_OF_RANGE: (
        "The record's timestamp is outside the years 1 to 9999 that dates can hold."
    ),
}

# The longest connector name the database holds (SourceOffset.connector, max_length).
MAX_CONNECTOR_LENGTH = 249
# What no database text or JSON column takes: NUL (PostgreSQL text and jsonb) and lone
# surrogates, which have no UTF-8 form. A str decoded from JSON holds a surrogate code point
# only when it is lone: Python joins an escaped pair into one character.
_UNSTORABLE_CHAR = re.compile("[\x00\ud800-\udfff]")
# The record timestamps a refresh keeps: Python dates hold the years 1 to 9999; a day is kept
# free at each end because a commit bucket's start and a page's time zone move a moment by
# up to a day.
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MIN_TIMESTAMP_MS = (datetime(1, 1, 2, tzinfo=UTC) - _EPOCH) // timedelta(milliseconds=1)
MAX_TIMESTAMP_MS = (datetime(9999, 12, 31, tzinfo=UTC) - _EPOCH) // timedelta(milliseconds=1) - 1


@dataclass(frozen=True)
class SourceOffsetRecord:
    """One well-formed offsets-topic record; ``offset`` is None for a tombstone."""

    connector: str
    partition: dict[str, JsonValue]
    offset: dict[str, JsonValue] | None
    key_bytes: bytes
    value_bytes: bytes | None

    @property
    def is_tombstone(self) -> bool:
        """Tell whether this record removes the partition's offset."""
        return self.value_bytes is None

    @property
    def partition_identity(self) -> str:
        """Return the logical partition's canonical text (see ``partition_identity``)."""
        return partition_identity(self.partition)


@dataclass(frozen=True)
class MalformedRecord:
    """An offsets-topic record the runtime would skip or fail to use."""

    reason: MalformedReason
    detail: str
    key_bytes: bytes | None
    value_bytes: bytes | None


@dataclass(frozen=True)
class LatestOffsets:
    """The offsets a Java worker would see after reading the whole topic."""

    # Exact key bytes -> the last live (non-tombstone) record for those bytes.
    offsets: dict[bytes, SourceOffsetRecord]
    # Every malformed record read, by reason (records later overwritten included).
    malformed: Counter[MalformedReason] = field(default_factory=Counter)
    # (connector, partition identity) -> the live records whose keys spell the same logical
    # partition with different bytes; only groups of two or more.
    drift: dict[tuple[str, str], list[SourceOffsetRecord]] = field(default_factory=dict)


def partition_identity(partition: dict[str, JsonValue]) -> str:
    """Return canonical text for a logical partition: sorted keys, compact, raw Unicode.

    Two keys that differ only in field order or whitespace give the same identity, which is
    how key drift is detected. Types stay distinct (``1``, ``1.0``, ``"1"`` and ``true`` differ),
    as they do for ``Map.equals`` in Java.
    """
    return _IDENTITY_ENCODER.encode(partition)


def parse_offset_record(
    key: bytes | None, value: bytes | None
) -> SourceOffsetRecord | MalformedRecord:
    """Parse one offsets-topic record; never raises, whatever the bytes.

    The key checks follow ``OffsetUtils.processPartitionKey``: a JSON array of exactly
    ``[string, object]``. The value is a tombstone (None) or a JSON object. Map values must be
    primitives or null (``OffsetUtils.validateFormat``, which the runtime applies on write and
    ``OffsetStorageReaderImpl`` on read). A JSON ``null`` value is reported as
    VALUE_NOT_OBJECT: a task reads it as "no offset", but it is not a tombstone.
    """
    if key is None:
        return MalformedRecord(MalformedReason.KEY_NULL, "the key is null", None, value)
    key = bytes(key)
    value = None if value is None else bytes(value)

    def malformed(reason: MalformedReason, detail: str) -> MalformedRecord:
        return MalformedRecord(reason, detail, key, value)

    decoded_key = _decode(key, MalformedReason.KEY_NOT_UTF8, MalformedReason.KEY_NOT_JSON)
    if isinstance(decoded_key, MalformedRecord):
        return malformed(decoded_key.reason, decoded_key.detail)
    if not isinstance(decoded_key, list) or len(decoded_key) != 2:
        return malformed(
            MalformedReason.KEY_NOT_ARRAY,
            f"expected [connector, partition], got {jackson.describe_type(decoded_key)}",
        )
    connector, partition = decoded_key
    if not isinstance(connector, str):
        return malformed(
            MalformedReason.KEY_CONNECTOR_NOT_STRING,
            f"the connector is {jackson.describe_type(connector)}",
        )
    if not isinstance(partition, dict):
        return malformed(
            MalformedReason.KEY_PARTITION_NOT_OBJECT,
            f"the partition is {jackson.describe_type(partition)}",
        )
    nested = _first_nested_field(partition)
    if nested is not None:
        return malformed(
            MalformedReason.KEY_PARTITION_NOT_FLAT, f"partition field {nested!r} is not a primitive"
        )

    if value is None:
        return SourceOffsetRecord(connector, partition, None, key, None)
    offset = parse_offset_value(value)
    if isinstance(offset, MalformedRecord):
        return malformed(offset.reason, offset.detail)
    return SourceOffsetRecord(connector, partition, offset, key, value)


def parse_offset_value(value: bytes) -> dict[str, JsonValue] | MalformedRecord:
    """Parse a non-null offsets-topic value: a flat JSON object, or why it is not one.

    The second half of ``parse_offset_record``, for callers that parsed the key once and
    reuse it (the Spark read task sees each key hundreds of times). A MalformedRecord returned
    here carries no key.
    """
    offset = _decode(value, MalformedReason.VALUE_NOT_UTF8, MalformedReason.VALUE_NOT_JSON)
    if isinstance(offset, MalformedRecord):
        return MalformedRecord(offset.reason, offset.detail, None, value)
    if not isinstance(offset, dict):
        return MalformedRecord(
            MalformedReason.VALUE_NOT_OBJECT,
            f"the offset is {jackson.describe_type(offset)}",
            None,
            value,
        )
    nested = _first_nested_field(offset)
    if nested is not None:
        return MalformedRecord(
            MalformedReason.VALUE_NOT_FLAT,
            f"offset field {nested!r} is not a primitive",
            None,
            value,
        )
    return offset


def unstorable_name(connector: str) -> str | None:
    """Tell why the database cannot store a connector name, or None if it can."""
    if len(connector) > MAX_CONNECTOR_LENGTH:
        return f"the connector name has {len(connector)} characters"
    if _UNSTORABLE_CHAR.search(connector):
        return "the connector name holds a NUL or a lone surrogate"
    return None


def refresh_key_reason(connector: str, partition: dict[str, JsonValue]) -> MalformedRecord | None:
    """Tell why the refresh cannot keep a well-formed key's records, or None if it can.

    The runtime uses such a key, but its name or partition cannot go into the database: the
    refresh counts its records as malformed instead of failing on them.
    """
    name_problem = unstorable_name(connector)
    if name_problem is not None:
        return MalformedRecord(MalformedReason.KEY_CONNECTOR_UNSTORABLE, name_problem, None, None)
    if _has_unstorable_field(partition):
        return MalformedRecord(
            MalformedReason.KEY_PARTITION_UNSTORABLE,
            "a partition field holds a NUL or a lone surrogate",
            None,
            None,
        )
    return None


def refresh_value_reason(offset: dict[str, JsonValue], value: bytes) -> MalformedRecord | None:
    """Tell why the refresh cannot keep a well-formed offset, or None if it can.

    Jackson reads a lone surrogate or a NUL in a string, so the runtime uses such an offset;
    PostgreSQL's jsonb refuses both. The refresh counts the record as malformed instead of
    failing on it, the same on every database.
    """
    if _has_unstorable_field(offset):
        return MalformedRecord(
            MalformedReason.VALUE_UNSTORABLE,
            "an offset field holds a NUL or a lone surrogate",
            None,
            value,
        )
    return None


def _has_unstorable_field(mapping: dict[str, JsonValue]) -> bool:
    """Whether a field name or string value holds a NUL or a lone surrogate."""
    return any(
        _UNSTORABLE_CHAR.search(name) or (isinstance(item, str) and _UNSTORABLE_CHAR.search(item))
        for name, item in mapping.items()
    )


def timestamp_in_range(timestamp_ms: int) -> bool:
    """Tell whether the refresh can keep a record of this timestamp (a date it can hold)."""
    return MIN_TIMESTAMP_MS <= timestamp_ms <= MAX_TIMESTAMP_MS


def latest_offsets(records: Iterable[tuple[bytes | None, bytes | None]]) -> LatestOffsets:
    """Fold records in topic order into what ``KafkaOffsetBackingStore`` holds at the end.

    Like the runtime's read-back callback, the last write per exact key bytes wins and a
    tombstone removes the key. A record with a well-formed key but a malformed value also
    replaces what that key held: the runtime stores the raw bytes and the task then fails to
    read them, so the earlier offset is gone for it too. Records must come in the order the
    runtime would read them; for one key that is the order within its partition.
    """
    live: dict[bytes, SourceOffsetRecord] = {}
    malformed: Counter[MalformedReason] = Counter()
    for key, value in records:
        parsed = parse_offset_record(key, value)
        if isinstance(parsed, MalformedRecord):
            malformed[parsed.reason] += 1
            if parsed.key_bytes is not None:
                live.pop(parsed.key_bytes, None)
        elif parsed.is_tombstone:
            live.pop(parsed.key_bytes, None)
        else:
            # Re-inserting moves a rewritten key to the end, keeping "most recent last" order.
            live.pop(parsed.key_bytes, None)
            live[parsed.key_bytes] = parsed

    forms: dict[tuple[str, str], list[SourceOffsetRecord]] = {}
    for record in live.values():
        forms.setdefault((record.connector, record.partition_identity), []).append(record)
    drift = {identity: group for identity, group in forms.items() if len(group) > 1}
    return LatestOffsets(offsets=live, malformed=malformed, drift=drift)


def _decode(
    data: bytes, not_utf8: MalformedReason, not_json: MalformedReason
) -> JsonValue | MalformedRecord:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return MalformedRecord(not_utf8, f"invalid UTF-8 at byte {exc.start}", None, None)
    try:
        return jackson.loads(data)
    except jackson.JsonParseError as exc:
        return MalformedRecord(not_json, str(exc), None, None)


def _first_nested_field(mapping: dict[str, JsonValue]) -> str | None:
    for name, item in mapping.items():
        if isinstance(item, dict | list):
            return name
    return None


# One encoder for every call (json.dumps with options builds a new one each time).
_IDENTITY_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
