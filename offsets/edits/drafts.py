"""Save a staged edit as a draft: the edit, one row per touched partition, its audit entry.

Every kind of edit stages through `save`, so each draft is written the same way: in one
transaction, its rows numbered in the order given, and audited "staged" (or "imported") with
the strategy, the parameters, the warnings and every row's before and after values.
"""

from collections.abc import Iterable
from dataclasses import dataclass, field

from django.db import transaction

from offsets.domain.edits.sink import SinkChange
from offsets.domain.rights import Action
from offsets.edits import audit
from offsets.models import AuditEvent, Cluster, OffsetEdit, OffsetEditChange
from offsets.rights import gate

EDITOR_ROLE = gate.ROLE_NEEDED[Action.STAGE]


def require_editor(user, cluster: Cluster, connector: str, message: str = EDITOR_ROLE) -> None:
    """The gate for staging on `connector` of `cluster`: 404 where `user` does not see it (as
    if it did not exist), 403 (`message`) where they see it without the editor role."""
    gate.admit(user, Action.STAGE, cluster, connector, message=message)


@dataclass
class Draft:
    """An edit about to be saved: its fields, its rows in order, what its audit entry adds."""

    cluster: Cluster
    connector: str
    connector_type: str
    strategy: str
    parameters: dict
    warnings: list[str]
    rows: list[OffsetEditChange]
    primary_topic: str = ""
    mirror_topic: str = ""
    group_id: str = ""
    target_cluster: Cluster | None = None
    connector_config: dict | None = None
    # What the staged audit entry holds besides strategy, parameters, warnings and changes.
    audit_extra: dict = field(default_factory=dict)
    # A removal's rows name the offsets topic of each tombstone in the audit entry too.
    audit_topics: bool = False


def save(draft: Draft, *, user, comment: str, action: str = AuditEvent.Action.STAGED) -> OffsetEdit:
    """Save the draft edit with its rows and audit it, in one transaction; return the edit.

    The gate is asked again here, whatever the kind asked before reading: a draft is saved
    only for a user who may stage on its connector (and, for a move, on its target)."""
    require_editor(user, draft.cluster, draft.connector)
    if draft.target_cluster is not None:
        require_editor(user, draft.target_cluster, draft.connector)
    with transaction.atomic():
        edit = OffsetEdit.objects.create(
            cluster=draft.cluster,
            connector=draft.connector,
            connector_type=draft.connector_type,
            strategy=draft.strategy,
            parameters=draft.parameters,
            comment=comment,
            created_by=user,
            primary_topic=draft.primary_topic,
            mirror_topic=draft.mirror_topic,
            group_id=draft.group_id,
            warnings=draft.warnings,
            target_cluster=draft.target_cluster,
            connector_config=draft.connector_config,
        )
        for position, row in enumerate(draft.rows):
            row.edit, row.position = edit, position
        OffsetEditChange.objects.bulk_create(draft.rows)
        audit.record(
            edit,
            action,
            user,
            comment,
            {
                "strategy": draft.strategy,
                "parameters": draft.parameters,
                **draft.audit_extra,
                "warnings": draft.warnings,
                "changes": [_row_details(row, draft.audit_topics) for row in draft.rows],
            },
        )
    return edit


def _row_details(row: OffsetEditChange, with_topic: bool) -> dict:
    details = audit.change_details(row)
    return {**details, "topic": row.topic} if with_topic else details


def source_row(
    *,
    partition: dict,
    key: bytes,
    before: dict | None,
    before_bytes: bytes | None,
    after: dict | None = None,
    after_bytes: bytes | None = None,
    topic: str = "",
    is_new: bool = False,
    is_delete: bool = False,
    warnings: Iterable[str] = (),
) -> OffsetEditChange:
    """One source partition's row: the exact key bytes, and the values as maps and bytes."""
    return OffsetEditChange(
        partition=partition,
        key_bytes=key,
        topic=topic,
        before=before,
        before_bytes=before_bytes,
        after=after,
        after_bytes=after_bytes,
        is_new=is_new,
        is_delete=is_delete,
        warnings=list(warnings),
    )


def sink_change_rows(changes: Iterable[SinkChange]) -> list[OffsetEditChange]:
    """The rows of a preview's sink changes, wherever the group (or store) they go to."""
    return [
        sink_row(
            topic=change.topic,
            partition=change.partition,
            before=change.before,
            after=change.after,
            is_new=change.is_new,
            is_delete=change.is_delete,
            warnings=change.warnings,
        )
        for change in changes
    ]


def sink_row(
    *,
    topic: str,
    partition: int,
    before: int | None,
    after: int | None,
    is_new: bool = False,
    is_delete: bool = False,
    warnings: Iterable[str] = (),
) -> OffsetEditChange:
    """One sink topic-partition's row: its committed offset before and after."""
    return OffsetEditChange(
        partition={"kafka_topic": topic, "kafka_partition": partition},
        topic=topic,
        kafka_partition=partition,
        before=None if before is None else {"kafka_offset": before},
        after=None if after is None else {"kafka_offset": after},
        is_new=is_new,
        is_delete=is_delete,
        warnings=list(warnings),
    )
