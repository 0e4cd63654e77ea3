"""The edit workflow as the pages and the API call it: stage, review, apply, reconcile, show.

One place to import from, so a view never reaches into the modules behind it; every kind of
edit goes through the same calls (its kind, `kinds.kind_for`, decides what each one does).
"""

from offsets.edits.apply import (
    apply_edit,
    can_resume_after_apply,
    controlled_since,
    resume_after_apply,
    stop_for_edit,
)
from offsets.edits.audit import audit_log
from offsets.edits.errors import (
    SERVICE_ERRORS,
    ConnectorNotFound,
    EditError,
    EditForbidden,
    EditInputError,
    EditStateConflict,
)
from offsets.edits.imports import IMPORT_MAX_BYTES, import_document
from offsets.edits.kinds import kind_for
from offsets.edits.kinds.move import kind as move
from offsets.edits.kinds.move.kind import can_resume_on_target, resume_on_target
from offsets.edits.kinds.move.reads import source_config
from offsets.edits.kinds.offline_file import kind as offline_file
from offsets.edits.kinds.offset_changes import kind as offset_changes
from offsets.edits.kinds.offset_changes.diff import (
    DIFF_PAGE_ROWS,
    STORE_STRATEGIES,
    Preview,
    StageRequest,
)
from offsets.edits.kinds.offset_changes.kind import can_stage_restore, stage_restore
from offsets.edits.kinds.offset_changes.writes import Route, choose_route
from offsets.edits.kinds.removal import kind as removal
from offsets.edits.kinds.sink_store import kind as sink_store
from offsets.edits.kinds.sink_store.kind import editable_store
from offsets.edits.live import current_offsets
from offsets.edits.reconcile import is_stale, reconcile_edit, stale_after
from offsets.edits.restage import can_restage, restage_edit
from offsets.edits.review import approve_edit, cancel_edit, reject_edit, submit_edit
from offsets.edits.roles import approves, can_approve, can_control_connectors, can_stage
from offsets.models import Cluster, OffsetEdit


def stage_edit(
    *, cluster: Cluster, connector: str, user, request: StageRequest, comment: str = ""
) -> OffsetEdit:
    """Stage an offset change (set, add, delete, restore, a sink strategy) as a draft.

    A source change of a standalone worker that does not run is staged as an offline edit of
    its offsets file: only a running worker writes them otherwise.
    """
    if offline_file.suits(cluster, request):
        return stage_offline(
            cluster=cluster, connector=connector, user=user, request=request, comment=comment
        )
    return offset_changes.KIND.stage(
        cluster=cluster, connector=connector, user=user, request=request, comment=comment
    )


def stage_store_offsets(
    *,
    cluster: Cluster,
    connector: str,
    user,
    request: StageRequest | None = None,
    value: int | None = None,
    partitions: list[tuple[str, int]] | None = None,
    comment: str = "",
) -> OffsetEdit:
    """Stage setting a sink's offsets in its own store (a group on another cluster, the
    plugin's file) with a sink strategy (`request`), or to `value`, as a draft."""
    if request is None:
        request = StageRequest(
            strategy="offset",
            value=value,
            partitions=tuple(partitions) if partitions else None,
        )
    return sink_store.KIND.stage(
        cluster=cluster, connector=connector, user=user, comment=comment, request=request
    )


def stage_offline(
    *, cluster: Cluster, connector: str, user, request: StageRequest, comment: str = ""
) -> OffsetEdit:
    """Stage an offset change of a stopped standalone worker, written to its offsets file."""
    return offline_file.KIND.stage(
        cluster=cluster, connector=connector, user=user, request=request, comment=comment
    )


def stage_move(
    *, cluster: Cluster, connector: str, target: Cluster, user, secrets: dict, comment: str = ""
) -> OffsetEdit:
    """Stage moving a connector to `target` (KIP-980) as a draft."""
    return move.KIND.stage(
        cluster=cluster,
        connector=connector,
        user=user,
        comment=comment,
        target=target,
        secrets=secrets,
    )


def stage_removal(*, cluster: Cluster, connector: str, user, comment: str = "") -> OffsetEdit:
    """Stage deleting an existing connector with all its offsets, as a draft."""
    return removal.KIND.stage(
        cluster=cluster,
        connector=connector,
        user=user,
        comment=comment,
        strategy=OffsetEdit.Strategy.REMOVE,
    )


def stage_cleanup(*, cluster: Cluster, connector: str, user, comment: str = "") -> OffsetEdit:
    """Stage tombstoning the offsets a deleted connector left behind, as a draft."""
    return removal.KIND.stage(
        cluster=cluster,
        connector=connector,
        user=user,
        comment=comment,
        strategy=OffsetEdit.Strategy.CLEANUP,
    )


def describe(edit: OffsetEdit) -> dict:
    """What the edit's page shows for its kind (a move's config, a removal's plan)."""
    return kind_for(edit).describe(edit)


def route_ahead(edit: OffsetEdit) -> Route | None:
    """How the edit would be written if applied now, when its kind writes offsets that way."""
    return kind_for(edit).route_ahead(edit)


__all__ = [
    "DIFF_PAGE_ROWS",
    "IMPORT_MAX_BYTES",
    "SERVICE_ERRORS",
    "STORE_STRATEGIES",
    "ConnectorNotFound",
    "EditError",
    "EditForbidden",
    "EditInputError",
    "EditStateConflict",
    "Preview",
    "Route",
    "StageRequest",
    "apply_edit",
    "approve_edit",
    "approves",
    "audit_log",
    "can_approve",
    "can_control_connectors",
    "can_restage",
    "can_resume_after_apply",
    "can_resume_on_target",
    "can_stage",
    "can_stage_restore",
    "cancel_edit",
    "choose_route",
    "controlled_since",
    "current_offsets",
    "describe",
    "editable_store",
    "import_document",
    "is_stale",
    "reconcile_edit",
    "reject_edit",
    "restage_edit",
    "resume_after_apply",
    "resume_on_target",
    "route_ahead",
    "source_config",
    "stage_cleanup",
    "stage_edit",
    "stage_move",
    "stage_offline",
    "stage_removal",
    "stage_restore",
    "stage_store_offsets",
    "stale_after",
    "stop_for_edit",
    "submit_edit",
]
