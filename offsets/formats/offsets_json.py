"""Build and validate offsets documents: the KIP-875 REST shape and the KIP-199 tool shape.

KIP-875 (``GET/PATCH /connectors/{name}/offsets``)::

    {"offsets": [{"partition": {...}, "offset": {...} | null}, ...]}

KIP-199 (the offline tool, several connectors at once)::

    {"<connector>": [{"partition": {...}, "offset": {...} | null}, ...], ...}

Sink connector entries are ``{"kafka_topic": "t", "kafka_partition": 0}`` ->
``{"kafka_offset": 5}``. ``"offset": null`` removes a partition's offset.
"""

import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from offsets.formats import jackson
from offsets.formats.jackson import JsonValue
from offsets.formats.offset_records import partition_identity

_SINK_PARTITION_FIELDS = ("kafka_topic", "kafka_partition")
_SINK_OFFSET_FIELD = "kafka_offset"
_ENTRY_FIELDS = ("partition", "offset")
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_\-]+")
_JAVA_INT_MAX = 2**31 - 1
_JAVA_LONG_MAX = 2**63 - 1
_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class PartitionOffset:
    """One entry: a partition and its offset, or None to remove the offset."""

    partition: dict[str, JsonValue]
    offset: dict[str, JsonValue] | None


class OffsetsDocumentError(ValueError):
    """A document that cannot be used, naming the field at fault.

    ``field`` is a path such as ``offsets[2].partition.kafka_partition`` or
    ``orders-sink[0].offset``; ``document`` stands for the whole document.
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def to_kip875(entries: Iterable[PartitionOffset]) -> dict[str, JsonValue]:
    """Build the KIP-875 document for one connector's entries."""
    return {"offsets": [_entry_to_json(entry) for entry in entries]}


def parse_kip875(doc: object, *, connector_type: str | None = None) -> list[PartitionOffset]:
    """Validate a KIP-875 document and return its entries.

    With ``connector_type="sink"`` every entry must have the sink shape; with "source" or
    None the partition and offset may be any flat maps (``OffsetUtils.validateFormat``).
    """
    if not isinstance(doc, dict):
        raise OffsetsDocumentError(
            "document", f"must be a JSON object, not {jackson.describe_type(doc)}"
        )
    for name in doc:
        if name != "offsets":
            raise OffsetsDocumentError(
                _join("", name), "unexpected field; only 'offsets' is allowed"
            )
    if "offsets" not in doc:
        raise OffsetsDocumentError("offsets", "is required")
    return _parse_entries(doc["offsets"], "offsets", connector_type)


def to_kip199(mapping: Mapping[str, Iterable[PartitionOffset]]) -> dict[str, JsonValue]:
    """Build the KIP-199 document for several connectors."""
    return {name: [_entry_to_json(entry) for entry in entries] for name, entries in mapping.items()}


def parse_kip199(
    doc: object, *, connector_types: Mapping[str, str] | None = None
) -> dict[str, list[PartitionOffset]]:
    """Validate a KIP-199 document and return each connector's entries.

    ``connector_types`` maps connector names to "source" or "sink"; connectors not in it are
    checked with the generic (source) rules.
    """
    if not isinstance(doc, dict):
        raise OffsetsDocumentError(
            "document", f"must be a JSON object, not {jackson.describe_type(doc)}"
        )
    types = connector_types or {}
    parsed: dict[str, list[PartitionOffset]] = {}
    for name, entries in doc.items():
        if not isinstance(name, str) or not name:
            raise OffsetsDocumentError("document", "connector names must be non-empty strings")
        if "\x00" in name or _SURROGATE.search(name):
            # No connector is named so, and PostgreSQL cannot even look such a name up.
            raise OffsetsDocumentError(
                "document", "connector names must be valid Unicode without NUL (U+0000)"
            )
        parsed[name] = _parse_entries(entries, name, types.get(name))
    return parsed


def load_document(data: bytes | str) -> object:
    """Parse an uploaded document; bad JSON or bad UTF-8 names the line and column."""
    try:
        return jackson.loads(data)
    except jackson.JsonParseError as exc:
        raise OffsetsDocumentError(
            "document", f"invalid JSON at line {exc.line}, column {exc.column}: {exc.message}"
        ) from None


def _entry_to_json(entry: PartitionOffset) -> dict[str, JsonValue]:
    return {"partition": entry.partition, "offset": entry.offset}


def _parse_entries(entries: object, path: str, connector_type: str | None) -> list[PartitionOffset]:
    if not isinstance(entries, list):
        raise OffsetsDocumentError(path, f"must be a list, not {jackson.describe_type(entries)}")
    parsed: list[PartitionOffset] = []
    # The runtime would silently keep the last of two entries for one partition
    # (ConnectorOffsets.toMap); a document saying two things about one partition is refused.
    first_seen: dict[str, int] = {}
    for index, entry in enumerate(entries):
        entry_path = f"{path}[{index}]"
        item = _parse_entry(entry, entry_path, connector_type)
        identity = partition_identity(item.partition)
        if identity in first_seen:
            raise OffsetsDocumentError(
                f"{entry_path}.partition", f"duplicates {path}[{first_seen[identity]}].partition"
            )
        first_seen[identity] = index
        parsed.append(item)
    return parsed


def _parse_entry(entry: object, path: str, connector_type: str | None) -> PartitionOffset:
    if not isinstance(entry, dict):
        raise OffsetsDocumentError(path, f"must be an object, not {jackson.describe_type(entry)}")
    for name in entry:
        if name not in _ENTRY_FIELDS:
            raise OffsetsDocumentError(
                _join(path, name), "unexpected field; only 'partition' and 'offset' are allowed"
            )
    for name in _ENTRY_FIELDS:
        # "offset" must be spelled out even when null: a forgotten offset must not delete one.
        if name not in entry:
            raise OffsetsDocumentError(_join(path, name), "is required")
    partition = entry["partition"]
    offset = entry["offset"]
    partition_path = _join(path, "partition")
    offset_path = _join(path, "offset")
    if not isinstance(partition, dict):
        raise OffsetsDocumentError(
            partition_path, f"must be an object, not {jackson.describe_type(partition)}"
        )
    if not partition:
        raise OffsetsDocumentError(partition_path, "must not be empty")
    _check_flat(partition, partition_path)
    if offset is not None:
        if not isinstance(offset, dict):
            raise OffsetsDocumentError(
                offset_path, f"must be an object or null, not {jackson.describe_type(offset)}"
            )
        _check_flat(offset, offset_path)
    if connector_type == "sink":
        _check_sink(partition, offset, partition_path, offset_path)
    return PartitionOffset(partition=partition, offset=offset)


def flat_map_problem(mapping: dict[str, JsonValue]) -> tuple[str, str] | None:
    """Return (field name, why) for the first value Connect could not take, or None.

    OffsetUtils.validateFormat wants primitive (or null) values. Beyond that, what a task would
    read back differently from what was typed is refused too: JsonConverter reads every JSON
    integer as a Java long (a wider one wraps), a double cannot be infinite in JSON (Jackson
    writes "Infinity" as a string), and a lone surrogate is not Unicode (UTF-8 cannot hold it).
    The NUL character is refused as well: Connect could take it, but PostgreSQL's text and
    JSON columns cannot store it, so the edit and its audit trail could not be kept.
    """
    for name, item in mapping.items():
        if _SURROGATE.search(name):
            return name, "the field name is not valid Unicode (a lone surrogate)"
        if "\x00" in name:
            return (
                name,
                "the field name contains the NUL character (U+0000), which cannot be stored",
            )
        if isinstance(item, dict | list):
            return name, "must be a string, number, boolean or null"
        if isinstance(item, bool) or item is None:
            continue
        if isinstance(item, int) and not -_JAVA_LONG_MAX - 1 <= item <= _JAVA_LONG_MAX:
            return name, "must fit a Java long (-2^63 to 2^63-1): Connect reads integers as int64"
        if isinstance(item, float) and not math.isfinite(item):
            return name, "must be a finite number"
        if isinstance(item, str) and _SURROGATE.search(item):
            return name, "is not valid Unicode (a lone surrogate)"
        if isinstance(item, str) and "\x00" in item:
            return name, "contains the NUL character (U+0000), which cannot be stored"
    return None


def _check_flat(mapping: dict[str, JsonValue], path: str) -> None:
    problem = flat_map_problem(mapping)
    if problem is not None:
        raise OffsetsDocumentError(_join(path, problem[0]), problem[1])


def _check_sink(
    partition: dict[str, JsonValue],
    offset: dict[str, JsonValue] | None,
    partition_path: str,
    offset_path: str,
) -> None:
    # SinkUtils.parseSinkConnectorOffsets also accepts numbers written as strings ("10");
    # this stricter check keeps documents unambiguous.
    for name in partition:
        if name not in _SINK_PARTITION_FIELDS:
            raise OffsetsDocumentError(
                _join(partition_path, name),
                "unexpected field; a sink partition has only kafka_topic and kafka_partition",
            )
    for name in _SINK_PARTITION_FIELDS:
        if name not in partition:
            raise OffsetsDocumentError(_join(partition_path, name), "is required")
    topic = partition["kafka_topic"]
    if not isinstance(topic, str) or not topic:
        raise OffsetsDocumentError(
            _join(partition_path, "kafka_topic"), "must be a non-empty string"
        )
    if not _is_int_in(partition["kafka_partition"], _JAVA_INT_MAX):
        raise OffsetsDocumentError(
            _join(partition_path, "kafka_partition"), "must be an integer >= 0"
        )
    if offset is None:
        return
    for name in offset:
        if name != _SINK_OFFSET_FIELD:
            raise OffsetsDocumentError(
                _join(offset_path, name), "unexpected field; a sink offset has only kafka_offset"
            )
    if _SINK_OFFSET_FIELD not in offset:
        raise OffsetsDocumentError(
            _join(offset_path, _SINK_OFFSET_FIELD), "is required (or make the offset null)"
        )
    if not _is_int_in(offset[_SINK_OFFSET_FIELD], _JAVA_LONG_MAX):
        raise OffsetsDocumentError(
            _join(offset_path, _SINK_OFFSET_FIELD), "must be an integer >= 0"
        )


def _is_int_in(value: JsonValue, maximum: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= maximum


def _join(path: str, name: str) -> str:
    if _PLAIN_NAME.fullmatch(name):
        return f"{path}.{name}" if path else name
    return f"{path}[{json.dumps(name, ensure_ascii=False)}]"
