"""Review an edit: submit, approve, reject, cancel, each a checked state change."""

from collections.abc import Sequence

from django.db import transaction
from django.utils import timezone

from offsets.edits import audit
from offsets.edits.errors import EditForbidden, EditStateConflict
from offsets.edits.roles import approves, can_stage, require_approver, require_sight
from offsets.models import AuditEvent, OffsetEdit

State = OffsetEdit.State
Action = AuditEvent.Action


def submit_edit(*, edit: OffsetEdit, user, comment: str = "") -> OffsetEdit:
    """Send a draft for approval (its author, with the editor role)."""
    require_sight(user, edit)
    if not can_stage(user, edit.cluster, edit.connector) or edit.created_by_id != user.pk:
        raise EditForbidden("Only the editor who staged the edit can submit it.")
    return _move(
        edit,
        user,
        comment,
        (State.DRAFT,),
        State.SUBMITTED,
        Action.SUBMITTED,
        submitted_at=timezone.now(),
    )


def approve_edit(*, edit: OffsetEdit, user, comment: str = "") -> OffsetEdit:
    """Approve a submitted edit: another person than its author, with the approver role."""
    _require_other_approver(
        edit, user, "Approving", "Nobody approves their own edit: ask another approver."
    )
    return _move(
        edit,
        user,
        comment,
        (State.SUBMITTED,),
        State.APPROVED,
        Action.APPROVED,
        approved_by=user,
        approved_at=timezone.now(),
    )


def reject_edit(*, edit: OffsetEdit, user, comment: str = "") -> OffsetEdit:
    """Reject a submitted or approved edit (an approver other than its author)."""
    _require_other_approver(
        edit, user, "Rejecting", "Cancel your own edit instead of rejecting it."
    )
    return _move(
        edit,
        user,
        comment,
        (State.SUBMITTED, State.APPROVED),
        State.REJECTED,
        Action.REJECTED,
        finished_at=timezone.now(),
    )


def cancel_edit(*, edit: OffsetEdit, user, comment: str = "") -> OffsetEdit:
    """Withdraw an edit that is not applied yet: its author, or an approver."""
    require_sight(user, edit)
    is_author = edit.created_by_id == user.pk and can_stage(user, edit.cluster, edit.connector)
    if not (is_author or approves(user, edit)):
        raise EditForbidden("Only the edit's author or an approver can cancel it.")
    return _move(
        edit,
        user,
        comment,
        OffsetEdit.OPEN_STATES,
        State.CANCELLED,
        Action.CANCELLED,
        finished_at=timezone.now(),
    )


def _require_other_approver(edit: OffsetEdit, user, doing: str, own_edit: str) -> None:
    require_approver(user, edit, f"{doing} needs the approver role.")
    if edit.created_by_id == user.pk:
        raise EditForbidden(own_edit)


def _move(
    edit: OffsetEdit,
    user,
    comment: str,
    from_states: Sequence[str],
    to_state: str,
    action: str,
    **fields,
) -> OffsetEdit:
    """Change the state if it is still one of ``from_states``, and audit it in one write."""
    with transaction.atomic():
        # .update() skips auto_now, so "updated" is set by hand.
        updated = OffsetEdit.objects.filter(pk=edit.pk, state__in=from_states).update(
            state=to_state, updated=timezone.now(), **fields
        )
        if updated != 1:
            current = OffsetEdit.objects.filter(pk=edit.pk).values_list("state", flat=True).first()
            raise EditStateConflict(
                f"Edit #{edit.pk} is {current}, so it cannot become {to_state} "
                "(someone may have acted on it just now)."
            )
        return audit.record_state(edit, action, user, comment)
