"""Stage an edit whose lock check failed again with the same inputs, so a failed check is
never a dead end.

A conflict means the offsets moved between staging and the apply's lock check: the diff is
out of date, not the intent. Another failed check (the connector runs, the sink's group has
members, an offline edit's file changed) gives the edit back approved; some such checks pass
once fixed (stop the connector, apply again), others never will (the file changed). Either
way, re-staging asks the edit's kind for its input (`EditKind.restage_change`) and stages it
as a new draft, whose diff is computed against the offsets read now and which needs its own
submit, approval and lock check. The old edit is linked to the new one (`restaged_from`) and
audited "restaged"; a conflict stays a conflict, an approved edit is cancelled (two approved
edits of one intent would be one too many).
"""

from django.db import transaction
from django.utils import timezone

from offsets.edits import audit, drafts
from offsets.edits.errors import EditStateConflict
from offsets.edits.kinds import kind_for
from offsets.models import AuditEvent, OffsetEdit


def failed_lock_check(edit: OffsetEdit) -> bool:
    """A conflict, or an approved edit whose last lock check failed (given back approved)."""
    if edit.state == OffsetEdit.State.CONFLICT:
        return True
    return edit.state == OffsetEdit.State.APPROVED and any(
        not check.get("passed") for check in edit.lock_checks or []
    )


def can_restage(edit: OffsetEdit) -> bool:
    """An edit whose lock check failed, whose kind can stage it again, not already re-staged."""
    return (
        failed_lock_check(edit)
        and kind_for(edit).restage_change(edit) is not None
        and not edit.restaged_as.exists()
    )


def restage_edit(*, edit: OffsetEdit, user, comment: str = "") -> OffsetEdit:
    """Stage an edit whose lock check failed again with the same inputs as a new draft;
    return the new edit."""
    drafts.require_editor(user, edit.cluster, edit.connector)
    if not failed_lock_check(edit):
        raise EditStateConflict(
            f"Edit #{edit.pk} is {edit.state}: only an edit whose lock check failed (a "
            "conflict, or an approved edit the check refused) is staged again this way."
        )
    later = edit.restaged_as.first()
    if later is not None:
        raise EditStateConflict(f"Edit #{edit.pk} was already staged again as edit #{later.pk}.")
    kind = kind_for(edit)
    change = kind.restage_change(edit)
    if change is None:
        raise EditStateConflict(
            f"Edit #{edit.pk} ({edit.get_strategy_display()}) cannot be staged again with the "
            "same inputs: stage it again from the connector's page."
        )
    new = kind.stage(
        cluster=edit.cluster,
        connector=edit.connector,
        user=user,
        change=change,
        comment=comment or edit.comment,
    )
    # Two editors re-staging at once each get a draft: harmless, since each needs approval.
    with transaction.atomic():
        OffsetEdit.objects.filter(pk=new.pk).update(restaged_from=edit)
        new.restaged_from = edit
        # Conditional: an apply that claimed it meanwhile keeps it (its own checks decide).
        cancelled = OffsetEdit.objects.filter(pk=edit.pk, state=OffsetEdit.State.APPROVED).update(
            state=OffsetEdit.State.CANCELLED, finished_at=timezone.now(), updated=timezone.now()
        )
        audit.record(
            edit,
            AuditEvent.Action.RESTAGED,
            user,
            comment,
            {"restaged_as": new.pk, "reason": edit.error, "cancelled": bool(cancelled)},
        )
    edit.refresh_from_db()
    return new
