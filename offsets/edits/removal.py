"""Delete a connector with every offset it has, or clean up offsets that outlived it: staging.

A removal (REMOVE) stops and deletes a connector that exists and tombstones its offsets; a
clean-up (CLEANUP) only tombstones what a connector that is gone left behind. Either is one
edit, approved by a second person like any other: one change per (offsets topic, source
partition), with the exact key and value bytes read now, or one per committed partition of
a sink's group. The apply is in `removal_apply`.
"""

from dataclasses import dataclass, field

from django.db import transaction

from offsets.edits import audit, removal_apply
from offsets.edits.errors import (
    ConnectorNotFound,
    EditForbidden,
    EditStateConflict,
    NothingToChange,
)
from offsets.edits.live import LiveReader, read_connector
from offsets.edits.roles import can_stage
from offsets.formats import removal_rules
from offsets.formats.connectors import Connector
from offsets.formats.offset_records import SourceOffsetRecord
from offsets.kafka.connect_rest import ConnectRest, ConnectRestError
from offsets.models import AuditEvent, Cluster, OffsetEdit, OffsetEditChange, SourceOffset

Strategy = OffsetEdit.Strategy


@dataclass
class RemovalPlan:
    """What a removal touches, read live: source keys per topic, a sink group's offsets."""

    context: Connector
    topics: list[str]
    source: dict[removal_rules.TopicKey, SourceOffsetRecord] = field(default_factory=dict)
    committed: dict[tuple[str, int], int] = field(default_factory=dict)

    @property
    def change_count(self) -> int:
        return len(self.source) + len(self.committed)

    def tombstones(self) -> dict[str, int]:
        counts = dict.fromkeys(self.topics, 0)
        for topic, _key in self.source:
            counts[topic] += 1
        return counts


def stage_removal(*, cluster: Cluster, connector: str, user, comment: str = "") -> OffsetEdit:
    """Stage deleting an existing connector with all its offsets, as a draft edit."""
    return _stage(cluster, connector, user, comment, Strategy.REMOVE)


def stage_cleanup(*, cluster: Cluster, connector: str, user, comment: str = "") -> OffsetEdit:
    """Stage tombstoning the offsets a deleted connector left behind, as a draft edit."""
    return _stage(cluster, connector, user, comment, Strategy.CLEANUP)


def apply_claimed(edit: OffsetEdit, user) -> OffsetEdit:
    """Apply a claimed removal or clean-up (see `removal_apply`)."""
    return removal_apply.apply(edit, user)


def _stage(cluster: Cluster, connector: str, user, comment: str, strategy: str) -> OffsetEdit:
    if not can_stage(user):
        raise EditForbidden("Staging offset edits needs the editor role (stage_offsetedit).")
    reader = LiveReader(cluster)
    context = _context(cluster, connector, reader)
    on_worker, worker_note = worker_has(cluster, connector)
    _check_strategy(strategy, context, on_worker)
    warnings = [worker_note] if worker_note else []
    plan = read_plan(cluster, context, reader)
    if strategy == Strategy.CLEANUP and not plan.change_count:
        raise NothingToChange(
            f"Nothing to clean up: {connector!r} has no live offsets in "
            f"{', '.join(plan.topics) or 'any offsets topic'} and no committed offsets in its "
            "group.",
            field="connector",
        )
    warnings += _warnings(context, plan, strategy)
    with transaction.atomic():
        return _save(
            plan, cluster=cluster, user=user, comment=comment, strategy=strategy, warnings=warnings
        )


def _context(cluster: Cluster, connector: str, reader: LiveReader) -> Connector:
    """The connector as the config topic knows it, or the offsets of one it forgot.

    The config topic may have been compacted down to nothing for a deleted connector whose
    offsets remain in an offsets topic the refresh recorded, or whose sink group remains.
    """
    try:
        return read_connector(cluster=cluster, connector=connector, reader=reader)
    except ConnectorNotFound:
        known = SourceOffset.objects.filter(cluster=cluster, connector=connector).exists()
        group = f"connect-{connector}"
        common = {
            "name": connector,
            "deleted": True,
            "target_state": None,
            "connector_state": None,
            "task_states": {},
            "mirrormaker2": False,
        }
        if known:
            worker = cluster.offsets_topic
            return Connector(type="source", primary_topic=worker, worker_topic=worker, **common)
        if reader.committed(group):
            return Connector(type="sink", group_id=group, **common)
        raise


def worker_has(cluster: Cluster, connector: str) -> tuple[bool | None, str]:
    """Whether the cluster's worker has the connector (None: no worker, or no clear answer),
    and a note saying why it could not tell."""
    if not cluster.connect_url:
        return None, ""
    try:
        rest = ConnectRest.for_cluster(cluster, timeout=10)
        return removal_apply.connector_exists(rest, connector), ""
    except ConnectRestError as exc:
        return None, (
            f"The Connect worker could not be asked whether {connector!r} exists: {exc.message} "
            "The apply asks again and refuses if it still cannot tell."
        )


def _check_strategy(strategy: str, context: Connector, on_worker: bool | None) -> None:
    """Refuse a removal of a connector that is gone, or a clean-up of one that exists.

    The worker's answer and the config topic must agree that a connector is gone before its
    offsets are cleaned up: either one saying it exists is enough to refuse.
    """
    if strategy == Strategy.REMOVE:
        if on_worker is False or (on_worker is None and context.deleted):
            where = " on the worker" if on_worker is False else ""
            raise EditStateConflict(
                f"{context.name!r} does not exist{where} any more: stage a clean-up of the "
                "offsets it left instead."
            )
        return
    if on_worker or not context.deleted:
        where = "on the worker" if on_worker else "in the config topic"
        raise EditStateConflict(
            f"{context.name!r} still exists ({where}): use “Delete connector with its "
            "offsets”, which stops and deletes it first."
        )


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
    keys = removal_rules.connector_keys(removal_apply.read_latest(reader, topics), context.name)
    return RemovalPlan(context, topics, source=keys)


def _warnings(context: Connector, plan: RemovalPlan, strategy: str) -> list[str]:
    warnings = []
    if strategy == Strategy.REMOVE and not context.deleted and context.target_state != "STOPPED":
        warnings.append(
            f"The connector is {context.target_state}: the apply stops it first. Its offsets "
            "may move until then, which makes the apply a conflict; stop it before staging "
            "so that the offsets shown are its last."
        )
    if context.own_topic:
        warnings.append(
            f"The connector has its own offsets topic {context.primary_topic}: its keys are "
            f"deleted there and in the worker's topic {context.worker_topic}."
        )
    if context.mirrormaker2:
        warnings.append("MirrorMaker 2: offset syncs and checkpoints it wrote are not deleted.")
    if not plan.change_count:
        warnings.append("The connector has no offsets: only the connector is deleted.")
    return warnings


def _save(
    plan: RemovalPlan, *, cluster: Cluster, user, comment: str, strategy: str, warnings: list
) -> OffsetEdit:
    context = plan.context
    parameters = {"topics": plan.topics, "tombstones": plan.tombstones()}
    if not context.is_source:
        parameters.update(group=context.group_id, group_partitions=len(plan.committed))
    edit = OffsetEdit.objects.create(
        cluster=cluster,
        connector=context.name,
        connector_type=context.type,
        strategy=strategy,
        parameters=parameters,
        comment=comment,
        created_by=user,
        primary_topic=context.primary_topic,
        mirror_topic=context.worker_topic if context.own_topic else "",
        group_id=context.group_id,
        warnings=warnings,
    )
    rows = _rows(edit, plan)
    OffsetEditChange.objects.bulk_create(rows)
    audit.record(
        edit,
        AuditEvent.Action.STAGED,
        user,
        comment,
        {
            "strategy": strategy,
            "parameters": parameters,
            "warnings": warnings,
            "changes": [{**audit.change_details(row), "topic": row.topic} for row in rows],
        },
    )
    return edit


def _rows(edit: OffsetEdit, plan: RemovalPlan) -> list[OffsetEditChange]:
    rows = [
        OffsetEditChange(
            edit=edit,
            position=position,
            partition=record.partition,
            key_bytes=key,
            topic=topic,
            before=record.offset,
            before_bytes=record.value_bytes,
            is_delete=True,
        )
        for position, ((topic, key), record) in enumerate(plan.source.items())
    ]
    rows += [
        OffsetEditChange(
            edit=edit,
            position=position,
            partition={"kafka_topic": topic, "kafka_partition": partition},
            topic=topic,
            kafka_partition=partition,
            before={"kafka_offset": offset},
            is_delete=True,
        )
        for position, ((topic, partition), offset) in enumerate(sorted(plan.committed.items()))
    ]
    return rows
