"""The edit workflow's verbs, as the pages, the API and the commands call them.

Every change goes through here: staging takes one typed input per kind (`OffsetChange`,
`StoreChange`, `OfflineChange`, `CommitBack`, `Move`, `Removal`, `Cleanup`), and the kind
that takes it (`kinds.kind_to_stage`) reads what it touches and saves the draft; review,
apply and reconcile are the same for every kind. What the pages read besides (the roles, the
audit log, the live offsets, what an edit's page offers next) they import from the module
that owns it.
"""

from offsets.edits.apply import apply_edit, resume_after_apply, stop_for_edit
from offsets.edits.errors import (
    SERVICE_ERRORS,
    ConnectorNotFound,
    EditError,
    EditForbidden,
    EditInputError,
    EditStateConflict,
)
from offsets.edits.imports import import_document
from offsets.edits.kinds import kind_for, kind_to_stage
from offsets.edits.kinds.move.kind import Move, resume_on_target
from offsets.edits.kinds.offline_file.kind import OfflineChange, suits
from offsets.edits.kinds.offset_changes.request import CommitBack, OffsetChange, StageRequest
from offsets.edits.kinds.offset_changes.writes import Route
from offsets.edits.kinds.removal.kind import Cleanup, Removal
from offsets.edits.kinds.sink_store.kind import StoreChange
from offsets.edits.reconcile import reconcile_edit
from offsets.edits.restage import restage_edit
from offsets.edits.review import approve_edit, cancel_edit, reject_edit, submit_edit
from offsets.models import Cluster, OffsetEdit


def stage(*, cluster: Cluster, connector: str, user, change, comment: str = "") -> OffsetEdit:
    """Stage `change` on `connector` as a draft edit: its diff against what is there now.

    A set, add, delete or import of a standalone worker that does not answer is staged as an
    offline edit of its offsets file: only a running worker writes them otherwise.
    """
    if isinstance(change, OffsetChange) and suits(cluster, change.request):
        change = OfflineChange(change.request)
    return kind_to_stage(change).stage(
        cluster=cluster, connector=connector, user=user, change=change, comment=comment
    )


def commit_back(*, edit: OffsetEdit, user, comment: str = "") -> OffsetEdit:
    """Stage a new edit committing back what `edit`, a failed partial sink delete, lost (its
    page's and the API's action on such an edit)."""
    return stage(
        cluster=edit.cluster,
        connector=edit.connector,
        user=user,
        change=CommitBack(edit),
        comment=comment,
    )


def describe(edit: OffsetEdit) -> dict:
    """What the edit's page shows for its kind (a move's config, a removal's plan)."""
    return kind_for(edit).describe(edit)


def route_ahead(edit: OffsetEdit) -> Route | None:
    """How the edit would be written if applied now, when its kind writes offsets that way."""
    return kind_for(edit).route_ahead(edit)


__all__ = [
    "SERVICE_ERRORS",
    "Cleanup",
    "CommitBack",
    "ConnectorNotFound",
    "EditError",
    "EditForbidden",
    "EditInputError",
    "EditStateConflict",
    "Move",
    "OfflineChange",
    "OffsetChange",
    "Removal",
    "StageRequest",
    "StoreChange",
    "apply_edit",
    "approve_edit",
    "cancel_edit",
    "commit_back",
    "describe",
    "import_document",
    "reconcile_edit",
    "reject_edit",
    "restage_edit",
    "resume_after_apply",
    "resume_on_target",
    "route_ahead",
    "stage",
    "stop_for_edit",
    "submit_edit",
]
