"""Stage an edit: compute its diff against the live topics and save it as a draft."""

from collections.abc import Sequence

from django.db import transaction

from offsets.edits import audit
from offsets.edits.errors import EditForbidden, EditInputError, EditStateConflict, NothingToChange
from offsets.edits.live import LiveReader, read_connector
from offsets.edits.preview import SINK_STRATEGIES, SOURCE_STRATEGIES, Preview, StageRequest
from offsets.edits.roles import can_stage
from offsets.edits.sink_preview import preview_sink
from offsets.edits.source_preview import preview_source
from offsets.formats.connectors import Connector
from offsets.formats.offsets_json import PartitionOffset
from offsets.models import AuditEvent, Cluster, OffsetEdit, OffsetEditChange

# How many per-partition notes a message quotes: a connector may have tens of thousands.
NOTES_QUOTED = 10


def preview_edit(
    *,
    cluster: Cluster,
    connector: str,
    request: StageRequest,
    reader: LiveReader | None = None,
    context: Connector | None = None,
) -> Preview:
    """Compute an edit's diff against the live topics without saving anything."""
    reader = reader or LiveReader(cluster)
    context = context or read_connector(cluster=cluster, connector=connector, reader=reader)
    strategies = SOURCE_STRATEGIES if context.is_source else SINK_STRATEGIES
    if request.strategy not in (*strategies, "import"):
        raise EditInputError(
            f"{request.strategy!r} is not a strategy for a {context.type} connector; use one "
            f"of {', '.join(strategies)}.",
            field="strategy",
        )
    if context.is_source:
        preview = preview_source(context=context, request=request, reader=reader)
    else:
        preview = preview_sink(context=context, request=request, reader=reader)
    preview.warnings = _context_warnings(context) + preview.warnings
    if not preview.change_count:
        reason = _quote_notes(preview.unchanged) or "every partition already has that offset"
        raise NothingToChange(f"Nothing to change: {reason}.", field=_main_field(request))
    return preview


def stage_edit(
    *, cluster: Cluster, connector: str, user, request: StageRequest, comment: str = ""
) -> OffsetEdit:
    """Stage an edit as a draft with its diff and the before values read now."""
    if not can_stage(user):
        raise EditForbidden("Staging offset edits needs the editor role (stage_offsetedit).")
    preview = preview_edit(cluster=cluster, connector=connector, request=request)
    with transaction.atomic():
        return save_preview(
            preview, cluster=cluster, user=user, comment=comment, action=AuditEvent.Action.STAGED
        )


def can_stage_restore(edit: OffsetEdit) -> bool:
    """Whether `stage_restore` applies: a failed sink edit that stored what its group must hold."""
    return edit.state == OffsetEdit.State.FAILED and not edit.is_source and bool(edit.sink_keep)


def stage_restore(*, edit: OffsetEdit, user, comment: str = "") -> OffsetEdit:
    """Stage, as a new draft edit, committing back what a failed partial sink delete lost.

    Such an edit deleted the whole group, then failed (or was killed) before committing the
    other partitions back; `sink_keep` holds what the group must hold, stored before the
    delete. The new edit imports exactly that: its diff against the group as it is now shows
    only what is missing or different (NothingToChange if nothing is), and it goes through
    approval and the lock check like any other edit. Returns the new edit.
    """
    if not can_stage(user):
        raise EditForbidden("Staging offset edits needs the editor role (stage_offsetedit).")
    if not can_stage_restore(edit):
        raise EditStateConflict(
            f"Edit #{edit.pk} is not a failed sink edit with offsets to commit back."
        )
    entries = tuple(
        PartitionOffset(
            partition={"kafka_topic": topic, "kafka_partition": partition},
            offset={"kafka_offset": offset},
        )
        for topic, partition, offset in edit.sink_keep
    )
    return stage_edit(
        cluster=edit.cluster,
        connector=edit.connector,
        user=user,
        request=StageRequest(strategy="import", entries=entries),
        comment=comment
        or f"Commits back what edit #{edit.pk} lost: the group's offsets it stored before "
        "deleting the group.",
    )


def save_preview(
    preview: Preview, *, cluster: Cluster, user, comment: str, action: str
) -> OffsetEdit:
    """Save a preview as a draft edit with one row per touched partition, and audit it."""
    context = preview.context
    edit = OffsetEdit.objects.create(
        cluster=cluster,
        connector=context.name,
        connector_type=context.type,
        strategy=preview.strategy,
        parameters=preview.parameters,
        comment=comment,
        created_by=user,
        primary_topic=context.primary_topic,
        mirror_topic=context.worker_topic if context.own_topic else "",
        group_id=context.group_id,
        warnings=preview.warnings,
    )
    rows = _change_rows(edit, preview)
    OffsetEditChange.objects.bulk_create(rows)
    audit.record(
        edit,
        action,
        user,
        comment,
        {
            "strategy": preview.strategy,
            "parameters": preview.parameters,
            "warnings": preview.warnings,
            "changes": [audit.change_details(row) for row in rows],
        },
    )
    return edit


def _change_rows(edit: OffsetEdit, preview: Preview) -> list[OffsetEditChange]:
    rows = [
        OffsetEditChange(
            edit=edit,
            position=position,
            partition=change.partition,
            key_bytes=change.key_bytes,
            before=change.before,
            before_bytes=change.before_bytes,
            after=change.after,
            after_bytes=change.after_bytes,
            is_delete=change.is_delete,
            is_new=change.is_new,
            warnings=list(change.warnings),
        )
        for position, change in enumerate(preview.source_changes)
    ]
    rows += [
        OffsetEditChange(
            edit=edit,
            position=position,
            partition={"kafka_topic": change.topic, "kafka_partition": change.partition},
            topic=change.topic,
            kafka_partition=change.partition,
            before=None if change.before is None else {"kafka_offset": change.before},
            after=None if change.after is None else {"kafka_offset": change.after},
            is_delete=change.is_delete,
            is_new=change.is_new,
            warnings=list(change.warnings),
        )
        for position, change in enumerate(preview.sink_changes)
    ]
    return rows


def _quote_notes(notes: Sequence[str]) -> str:
    """Join the first notes, counting the rest: one per partition can be tens of thousands."""
    quoted = "; ".join(notes[:NOTES_QUOTED])
    rest = len(notes) - NOTES_QUOTED
    return f"{quoted}; and {rest:,} more" if rest > 0 else quoted


def _main_field(request: StageRequest) -> str:
    return {
        "set": "offset",
        "add": "partition",
        "delete": "partition",
        "restore": "at",
        "import": "document",
    }.get(request.strategy, "partitions")


def _context_warnings(context: Connector) -> list[str]:
    warnings = []
    if context.deleted:
        warnings.append(
            "The connector is deleted: its offsets remain and are used again if a connector "
            "with this name is created."
        )
    elif context.target_state != "STOPPED":
        warnings.append(
            f"The connector's target state is {context.target_state}: stop it before applying "
            "(the lock check refuses otherwise; PAUSED is not enough)."
        )
    if context.own_topic:
        warnings.append(
            f"The connector uses its own offsets topic {context.primary_topic} (KIP-618): the "
            f"edit is written there and mirrored to the worker topic {context.worker_topic} in "
            "the same transaction."
        )
    if context.mirrormaker2:
        warnings.append(
            "MirrorMaker 2: these offsets only say where replication resumes on the source "
            "cluster; offset syncs and checkpoints already written are not changed."
        )
    return warnings
