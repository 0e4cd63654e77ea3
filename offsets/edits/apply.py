"""Apply an approved edit: claim it, then its kind's steps: prepare, lock check, write, verify.

The flow is the same for every kind (`kinds`); what each step does is the kind's. A step that
settles the edit itself (gives the claim back, fails it, rolls it back) ends the flow there.
"""

import logging
from collections.abc import Callable

from django.db import IntegrityError, transaction
from django.utils import timezone

from offsets.domain import edits as edit_rules
from offsets.edits import audit
from offsets.edits.audit import release, settle_checks
from offsets.edits.connector_control import control_connector, resume_for_edit
from offsets.edits.errors import EditStateConflict
from offsets.edits.kinds import Attempt, EditKind, kind_for
from offsets.edits.roles import require_approver, require_sight
from offsets.models import AuditEvent, OffsetEdit

logger = logging.getLogger(__name__)

State = OffsetEdit.State
Action = AuditEvent.Action


def apply_edit(
    *,
    edit: OffsetEdit,
    user,
    comment: str = "",
    before_commit: Callable[[], None] | None = None,
) -> OffsetEdit:
    """Claim, lock-check, write, verify. Returns the edit in its final (or in-doubt) state.

    Refused checks (connector running, group active, cluster unreachable during the check)
    write nothing and return the edit to "approved" so it can be applied once fixed. Moved
    offsets make it a "conflict": it must be staged again. ``before_commit`` is passed to the
    transactional writer (tests use it to fail at the worst moment).
    """
    require_approver(user, edit, "Applying needs the approver role.")
    # The claim and its audit entry are one write: a database that fails between them must
    # not leave an edit "applying" that the audit log never saw start.
    with transaction.atomic():
        _claim(edit, user)
        audit.record_state(edit, Action.APPLY_STARTED, user, comment)
    kind = kind_for(edit)
    attempt = Attempt(edit, user, before_commit)
    try:
        return _steps(kind, attempt)
    except Exception as exc:
        settled = kind.unexpected(attempt, exc)
        if settled is None:
            raise
        return settled


def _claim(edit: OffsetEdit, user) -> None:
    try:
        # A savepoint, so the unique-constraint error does not poison an outer transaction.
        with transaction.atomic():
            claimed = OffsetEdit.objects.filter(pk=edit.pk, state=State.APPROVED).update(
                state=State.APPLYING,
                applied_by=user,
                apply_started_at=timezone.now(),
                updated=timezone.now(),
                error="",
            )
    except IntegrityError:
        raise EditStateConflict(
            f"Another edit of {edit.connector} is being applied right now; nothing was done."
        ) from None
    if claimed != 1:
        current = OffsetEdit.objects.filter(pk=edit.pk).values_list("state", flat=True).first()
        raise EditStateConflict(
            f"Edit #{edit.pk} is {current}, not approved: someone else got there first or it "
            "was never approved. Nothing was done."
        )


def _steps(kind: EditKind, attempt: Attempt) -> OffsetEdit:
    if not kind.prepare(attempt):
        return attempt.edit
    checks = _lock_check(kind, attempt)
    if checks is None:
        return attempt.edit
    attempt.checks = checks
    written = kind.write(attempt)
    if written is None:
        return attempt.edit
    return kind.verify(attempt, written)


def _lock_check(kind: EditKind, attempt: Attempt) -> list[dict] | None:
    """Run the kind's lock check; its results to go on, or None once it settled the edit."""
    edit = attempt.edit
    try:
        results = lock_check(edit, kind)
    except Exception as exc:
        message = kind.unreadable(attempt, exc)
        if message is None:
            raise
        release(edit, attempt.user, [], message)
        return None
    return settle_checks(edit, attempt.user, results, **kind.settle_options(attempt))


def lock_check(edit: OffsetEdit, kind: EditKind | None = None) -> list[edit_rules.CheckResult]:
    """The lock check of `edit` read now: its kind's checks, then the claim this apply holds."""
    kind = kind or kind_for(edit)
    return [*kind.lock_checks(edit), edit_rules.check_single_apply(claimed=True)]


def stop_for_edit(*, edit: OffsetEdit, user, comment: str = "") -> OffsetEdit:
    """Stop the connector of an approved or conflicted edit; re-check an approved one.

    Offered where the lock check failed because the connector runs. An approved edit stays
    approved, and the page shows the fresh checks next to the Apply button. A conflicted one
    is settled: stopping it first lets its re-staged edit's diff hold until the apply.
    """
    require_sight(user, edit)
    if edit.state not in (State.APPROVED, State.CONFLICT):
        raise EditStateConflict(f"Edit #{edit.pk} is {edit.state}, not approved.")
    # Audited in the edit's history: the stop was done for it.
    outcome = control_connector(
        cluster=edit.cluster,
        connector=edit.connector,
        action="stop",
        user=user,
        comment=comment,
        edit=edit,
    )
    if not outcome.ok:
        raise EditStateConflict(outcome.message)
    if edit.state == State.CONFLICT:
        return edit
    checks = [check.as_dict() for check in lock_check(edit)]
    failed = "; ".join(check["message"] for check in checks if not check["passed"])
    error = f"The lock check still fails: {failed}" if failed else ""
    OffsetEdit.objects.filter(pk=edit.pk, state=OffsetEdit.State.APPROVED).update(
        lock_checks=checks, error=error, updated=timezone.now()
    )
    edit.refresh_from_db()
    return edit


def controlled_since(edit: OffsetEdit, action: str, since) -> bool:
    """Whether the connector was stopped or resumed (`action`) from here since `since`."""
    return AuditEvent.objects.filter(
        cluster_id=edit.cluster_id, connector=edit.connector, action=action, at__gte=since
    ).exists()


def can_resume_after_apply(edit: OffsetEdit) -> bool:
    """An applied offset change whose connector was stopped for it and not resumed from here.

    Moves resume on their target and removals delete the connector, so neither is offered;
    a connector that was deleted has nothing to resume.
    """
    return (
        edit.state == State.APPLIED
        and not (edit.is_move or edit.is_removal)
        and bool(edit.cluster.connect_url)
        and edit.finished_at is not None
        and any(
            check.get("name") == edit_rules.CONNECTOR_STOPPED
            and check.get("passed")
            and "is deleted" not in check.get("message", "")
            for check in edit.lock_checks or []
        )
        and not controlled_since(edit, Action.RESUMED, edit.finished_at)
    )


def resume_after_apply(*, edit: OffsetEdit, user, comment: str = "") -> OffsetEdit:
    """Resume the connector an applied edit left STOPPED; it starts from the new offsets.

    Audited in the edit's history (and the connector's log), so the edit's page says who
    resumed it and when.
    """
    require_sight(user, edit)
    if not can_resume_after_apply(edit):
        raise EditStateConflict(
            f"Edit #{edit.pk} is not an applied edit whose connector waits to be resumed."
        )
    resume_for_edit(
        cluster=edit.cluster,
        connector=edit.connector,
        user=user,
        comment=comment or f"Resumes the connector after edit #{edit.pk}.",
        edit=edit,
    )
    return edit
