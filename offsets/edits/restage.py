"""Stage a conflicted edit again with the same inputs, so a conflict is never a dead end.

A conflict means the offsets moved between staging and the apply's lock check: the diff is
out of date, not the intent. Re-staging asks the edit's kind for its input
(`EditKind.restage_change`) and stages it as a new draft, whose diff is computed against
the offsets read now and which needs its own submit, approval and lock check. The old edit
stays a conflict, linked to the new one (`restaged_from`) and audited "restaged".
"""

from django.db import transaction

from offsets.edits import audit, drafts
from offsets.edits.errors import EditStateConflict
from offsets.edits.kinds import kind_for
from offsets.models import AuditEvent, OffsetEdit


def can_restage(edit: OffsetEdit) -> bool:
    """A conflicted edit whose kind can stage it again, not already re-staged."""
    return (
        edit.state == OffsetEdit.State.CONFLICT
        and kind_for(edit).restage_change(edit) is not None
        and not edit.restaged_as.exists()
    )


def restage_edit(*, edit: OffsetEdit, user, comment: str = "") -> OffsetEdit:
    """Stage a conflicted edit again with the same inputs as a new draft; return the new edit."""
    drafts.require_editor(user, edit.cluster, edit.connector)
    if edit.state != OffsetEdit.State.CONFLICT:
        raise EditStateConflict(
            f"Edit #{edit.pk} is {edit.state}: only a conflicted edit is staged again this way."
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
        audit.record(
            edit,
            AuditEvent.Action.RESTAGED,
            user,
            comment,
            {"restaged_as": new.pk, "reason": edit.error},
        )
    return new
