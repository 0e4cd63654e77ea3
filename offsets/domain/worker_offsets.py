"""An edit as a KIP-875 request to the Connect worker, and whether the worker's answer shows it.

The worker writes offsets itself (`PATCH /connectors/{c}/offsets`): it checks the connector
is stopped, fences exactly-once zombies and lets the connector validate the offsets. What it
writes is not our bytes: `Worker.normalizeSourceConnectorOffsets` passes every partition and
offset through JsonConverter, whose schemaless maps are `java.util.HashMap`s, so the key it
writes lists the partition's fields in HashMap order. A key stored in another order would stay
beside the new one, and the runtime reads only one of them; such an edit, and one the worker
refuses outright (nested values, integers wider than a long), goes to the topic instead.
"""

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from offsets.domain.masking import mask_text
from offsets.formats import jackson
from offsets.formats.java_hashmap import java_hashmap_order

_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1
# How many refused partitions a reason quotes.
QUOTED = 3


@dataclass(frozen=True)
class WorkerEntry:
    """One partition of a KIP-875 request: its partition map and new offset (None deletes it)."""

    partition: dict
    offset: dict | None

    def as_json(self) -> dict:
        return {"partition": self.partition, "offset": self.offset}


@dataclass(frozen=True)
class WorkerRequest:
    """The request an edit becomes, or why it cannot go through the worker (`refusal`)."""

    entries: tuple[WorkerEntry, ...] = ()
    refusal: str = ""

    @property
    def possible(self) -> bool:
        return not self.refusal


def worker_bytes(value: object) -> bytes:
    """The bytes the worker writes for a JSON value: every map's fields in HashMap order."""
    return jackson.dumps(_hashmap_ordered(value))


def source_request(connector: str, changes: Iterable[tuple[bytes, dict | None]]) -> WorkerRequest:
    """A source edit's PATCH entries from (key bytes, new offset) pairs, or why not."""
    entries, refused, seen = [], [], set()
    for key_bytes, offset in changes:
        reason = _source_refusal(connector, key_bytes, offset)
        if reason:
            refused.append(reason)
            continue
        partition = jackson.loads(key_bytes)[1]
        identity = canonical(partition)
        if identity in seen:
            refused.append(f"{_show(key_bytes)} is stored under several byte forms (key drift)")
            continue
        seen.add(identity)
        entries.append(WorkerEntry(partition, offset))
    if refused:
        more = f" (and {len(refused) - QUOTED} more)" if len(refused) > QUOTED else ""
        return WorkerRequest(refusal="; ".join(refused[:QUOTED]) + more)
    return WorkerRequest(entries=tuple(entries))


def sink_request(changes: Iterable[tuple[str, int, int | None]]) -> WorkerRequest:
    """A sink edit's PATCH entries from (topic, partition, new offset or None) triples."""
    return WorkerRequest(
        entries=tuple(
            WorkerEntry(
                {"kafka_topic": topic, "kafka_partition": partition},
                None if offset is None else {"kafka_offset": offset},
            )
            for topic, partition, offset in changes
        )
    )


def answer_entries(body: object) -> list[dict]:
    """The entries of a `GET .../offsets` answer; ValueError when it is not Connect's shape."""
    if not isinstance(body, dict) or not isinstance(body.get("offsets"), list):
        raise ValueError(f"GET .../offsets answered no offsets list: {_quoted(body)}")
    entries = body["offsets"]
    if not all(isinstance(entry, dict) for entry in entries):
        raise ValueError(f"GET .../offsets answered entries that are not objects: {_quoted(body)}")
    return entries


def resets_everything(request: WorkerRequest, worker_offsets: Iterable[Mapping]) -> bool:
    """Whether the edit deletes exactly the partitions the worker has: then it is a DELETE.

    Only then: a partition the edit does not name must keep its offset.
    """
    if not request.entries or any(entry.offset is not None for entry in request.entries):
        return False
    held = {canonical(item.get("partition")) for item in worker_offsets}
    return held == {canonical(entry.partition) for entry in request.entries}


def worker_mismatches(request: WorkerRequest, worker_offsets: Iterable[Mapping]) -> list[str]:
    """The partitions whose offset in the worker's GET answer is not the one written."""
    held = {canonical(item.get("partition")): item.get("offset") for item in worker_offsets}
    wrong = []
    for entry in request.entries:
        now = held.get(canonical(entry.partition))
        if canonical(now) != canonical(entry.offset):
            wrong.append(
                f"{canonical(entry.partition)}: expected {canonical(entry.offset)}, the worker "
                f"has {canonical(now)}"
            )
    return wrong


def canonical(value: object) -> str:
    """An order-free text form of a JSON value that still tells 1 from 1.0 and "1"."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _source_refusal(connector: str, key_bytes: bytes, offset: dict | None) -> str:
    try:
        key = jackson.loads(key_bytes)
    except ValueError:
        return f"the key {_show(key_bytes)} is not JSON"
    if not (isinstance(key, list) and len(key) == 2 and isinstance(key[1], dict)):
        return f"the key {_show(key_bytes)} is not [name, partition map]"
    if key[0] != connector:
        return f"the key {_show(key_bytes)} names another connector"
    problem = _primitive_problem(key[1]) or (offset is not None and _primitive_problem(offset))
    if problem:
        return f"{_show(key_bytes)}: {problem}"
    try:
        rewritten = worker_bytes(key)
    except ValueError as exc:  # a HashMap bucket treeified: its order is not modelled
        return f"the key {_show(key_bytes)}: {exc}"
    if rewritten != key_bytes:
        return (
            f"the key {_show(key_bytes)} lists its fields in another order than the worker "
            "writes them (it would add a second key instead of replacing this one)"
        )
    return ""


def _primitive_problem(mapping: dict) -> str:
    """Why `OffsetUtils.validateFormat` would refuse the map, or ""."""
    for name, value in mapping.items():
        if isinstance(value, dict | list):
            kind = type(value).__name__
            return f"the worker accepts only primitive values, and {name!r} holds a {kind}"
        wide = isinstance(value, int) and not isinstance(value, bool)
        if wide and not _LONG_MIN <= value <= _LONG_MAX:
            return f"{name!r} is wider than a Java long"
    return ""


def _hashmap_ordered(value: object) -> object:
    if isinstance(value, dict):
        return {key: _hashmap_ordered(value[key]) for key in java_hashmap_order(value)}
    if isinstance(value, list):
        return [_hashmap_ordered(item) for item in value]
    return value


def _show(key_bytes: bytes) -> str:
    text = key_bytes.decode("utf-8", "backslashreplace")
    return text if len(text) <= 80 else text[:77] + "..."


def _quoted(body: object) -> str:
    # The worker's answer reaches error messages and the audit log: masked like any trace.
    return mask_text(f"{body!r:.200}")
