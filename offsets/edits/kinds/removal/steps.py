"""What a removal reads and does on the cluster: its plan read live, the worker's answers,
the reset, the tombstones, the group delete, the connector delete, and what is left.

`kind` runs these in order (stop, lock check, reset, tombstones, delete, read back);
each step is recorded in `Steps`, so a failure midway says what was done before it.
"""

import json
import time
from dataclasses import dataclass, field

from django.conf import settings

from offsets.domain.connectors import Connector
from offsets.domain.masking import mask_text
from offsets.edits.kinds.offset_changes.writes import worker_may_hang
from offsets.edits.kinds.removal import rules
from offsets.edits.kinds.removal.rules import Steps
from offsets.edits.live import LiveReader
from offsets.formats.offset_records import SourceOffsetRecord
from offsets.kafka import groups, offsets_writer
from offsets.kafka.connect_rest import ConnectorUnknown, ConnectRest, ConnectRestError, WorkerInfo
from offsets.kafka.errors import KafkaUnavailable, TopicNotFound
from offsets.models import Cluster, OffsetEdit, SourceOffset

Via = OffsetEdit.AppliedVia
KAFKA_ERRORS = (KafkaUnavailable, TopicNotFound)
# How long the read-back waits for a deleted connector's configuration to go.
GONE_WAIT_SECONDS = 5.0
POLL_SECONDS = 0.5


@dataclass
class RemovalPlan:
    """What a removal touches, read live: source keys per topic, a sink group's offsets."""

    context: Connector
    topics: list[str]
    source: dict[rules.TopicKey, SourceOffsetRecord] = field(default_factory=dict)
    committed: dict[tuple[str, int], int] = field(default_factory=dict)

    @property
    def change_count(self) -> int:
        return len(self.source) + len(self.committed)

    def tombstones(self) -> dict[str, int]:
        counts = dict.fromkeys(self.topics, 0)
        for topic, _key in self.source:
            counts[topic] += 1
        return counts


def offsets_topics(cluster: Cluster, context: Connector) -> list[str]:
    """Every offsets topic that may hold the connector's keys: the worker's, its own, and any
    other the refresh found its keys in (an own topic it used under an earlier config)."""
    topics = [context.worker_topic or cluster.offsets_topic]
    if context.own_topic:
        topics.append(context.primary_topic)
    stored = SourceOffset.objects.filter(cluster=cluster, connector=context.name)
    for topic in stored.values_list("topic", flat=True).distinct().order_by("topic"):
        if topic not in topics:
            topics.append(topic)
    return topics


def read_plan(cluster: Cluster, context: Connector, reader: LiveReader) -> RemovalPlan:
    """Read what the removal touches now."""
    if not context.is_source:
        return RemovalPlan(context, [], committed=reader.committed(context.group_id))
    topics = offsets_topics(cluster, context)
    keys = rules.connector_keys(read_latest(reader, topics), context.name)
    return RemovalPlan(context, topics, source=keys)


def worker_has(cluster: Cluster, connector: str) -> tuple[bool | None, str]:
    """Whether the cluster's worker has the connector (None: no worker, or no clear answer),
    and a note saying why it could not tell."""
    if not cluster.connect_url:
        return None, ""
    try:
        rest = ConnectRest.for_cluster(cluster, timeout=10)
        return connector_exists(rest, connector), ""
    except ConnectRestError as exc:
        return None, (
            f"The Connect worker could not be asked whether {connector!r} exists: {exc.message} "
            "The apply asks again and refuses if it still cannot tell."
        )


def connector_exists(rest: ConnectRest, name: str, *, wait: float = 0.0) -> bool:
    """Whether the worker has the connector's configuration, waiting up to `wait` seconds for
    it to go.

    The configuration, not the status: a deleted connector's status may still answer for a
    moment, while its configuration is gone once the worker acknowledged the delete.
    """
    deadline = time.monotonic() + wait
    while True:
        try:
            rest.config(name)
        except ConnectorUnknown:
            return False
        if time.monotonic() >= deadline:
            return True
        time.sleep(POLL_SECONDS)


def read_latest(reader: LiveReader, topics: list[str]) -> dict[str, dict]:
    """Each offsets topic's live records (a topic that does not exist holds nothing)."""
    return {topic: reader.offsets_if_any(topic) for topic in topics}


def live_values(edit: OffsetEdit, reader: LiveReader) -> dict[rules.TopicKey, bytes]:
    """Every live key of the edit's connector in the topics it was staged over, with its value."""
    latest = read_latest(reader, edit.parameters.get("topics", []))
    keys = rules.connector_keys(latest, edit.connector)
    return {key: record.value_bytes for key, record in keys.items()}


def reset(edit: OffsetEdit, rest: ConnectRest, info: WorkerInfo, steps: Steps) -> str:
    """Reset the offsets through the worker when it can (KIP-875); return how they went."""
    if worker_may_hang(edit, resets=True):
        # The tombstones below reach both topics instead.
        steps.add(
            "reset-skipped",
            f"The connector has its own offsets topic ({edit.primary_topic}): its offsets are "
            "deleted directly, since a worker's reset of such a connector can hang.",
        )
        return Via.TOPIC
    if not info.capabilities.offsets_write:
        steps.add(
            "reset-skipped",
            f"The worker (version {info.version}) cannot reset offsets (KIP-875 needs Connect "
            "3.6+): they are deleted directly.",
        )
        return Via.TOPIC
    try:
        answer = rest.reset_offsets(edit.connector)
    except ConnectRestError as exc:
        # Whatever the worker did or not, the tombstones below cover every key still live.
        steps.add(
            "reset-refused",
            f"The worker did not reset the offsets ({exc.message}): they are deleted directly.",
        )
        return Via.TOPIC
    steps.add(
        "reset",
        "The worker reset the connector's offsets.",
        answer=mask_text(json.dumps(answer)) if answer is not None else "",
    )
    return Via.WORKER


def write_leftovers(edit: OffsetEdit, steps: Steps) -> None:
    """Tombstone each staged key still live (one transaction per topic, the exact key bytes),
    or delete the sink's group if it still has offsets."""
    reader = LiveReader(edit.cluster)
    kafka, timeout = edit.cluster.kafka_settings(), settings.KAFKA_WRITE_TIMEOUT
    if not edit.is_source:
        if edit.group_id and reader.committed(edit.group_id):
            try:
                groups.delete_group(kafka, edit.group_id, timeout=timeout)
            except KafkaUnavailable as exc:
                steps.failed("group-delete", f"Deleting group {edit.group_id} failed: {exc}.")
                return
            steps.add("group-delete", f"Deleted group {edit.group_id}.")
        return
    live = live_values(edit, reader)
    by_topic: dict[str, list[offsets_writer.OffsetWrite]] = {}
    for change in edit.changes.all():
        key = bytes(change.key_bytes)
        if (change.topic, key) in live:
            by_topic.setdefault(change.topic, []).append(
                offsets_writer.OffsetWrite(change.topic, key, None)
            )
    for topic, writes in by_topic.items():
        if not _tombstones(edit, topic, writes, steps):
            return


def _tombstones(
    edit: OffsetEdit, topic: str, writes: list[offsets_writer.OffsetWrite], steps: Steps
) -> bool:
    try:
        result = offsets_writer.write_transaction(
            edit.cluster.kafka_settings(),
            writes,
            transactional_id=offsets_writer.transactional_id(edit.cluster.name, edit.connector),
            timeout=settings.KAFKA_WRITE_TIMEOUT,
        )
    except offsets_writer.WriteNotCommitted as exc:
        steps.failed("tombstones", f"No tombstone was written to {topic}: {exc}")
        return False
    except KAFKA_ERRORS as exc:
        steps.failed("tombstones", f"The tombstones to {topic} may not have been committed: {exc}")
        return False
    steps.add(
        "tombstones",
        f"Wrote {len(writes)} tombstone(s) to {topic}.",
        topic=topic,
        records=[{"partition": r.partition, "offset": r.offset} for r in result.records],
    )
    return True


def delete(edit: OffsetEdit, rest: ConnectRest, steps: Steps) -> None:
    try:
        rest.delete(edit.connector)
    except ConnectRestError as exc:
        # A lost answer may hide a delete that landed: the read-back below tells.
        steps.failed("delete", f"Deleting the connector on the worker failed: {exc.message}")
        return
    steps.add("delete", f"Deleted the connector {edit.connector!r} on the worker.")


def left(edit: OffsetEdit, rest: ConnectRest | None) -> list[str]:
    reader = LiveReader(edit.cluster)
    keys = list(live_values(edit, reader)) if edit.is_source else []
    group = reader.committed(edit.group_id) if edit.group_id else {}
    exists = rest is not None and connector_exists(rest, edit.connector, wait=GONE_WAIT_SECONDS)
    return rules.leftovers(keys, edit.group_id, group, exists)
