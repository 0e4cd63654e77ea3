"""Apply an approved edit: claim it, run the lock check, write, then verify by reading back."""

import logging
from collections.abc import Callable

from django.db import IntegrityError, transaction
from django.utils import timezone

from offsets import faults
from offsets.edits import audit, move, removal, route
from offsets.edits.errors import (
    ConnectorNotFound,
    EditForbidden,
    EditStateConflict,
    SinkWriteIncomplete,
)
from offsets.edits.live import LiveReader
from offsets.edits.lock_check import lock_check
from offsets.edits.outcome import (
    fail,
    finish,
    partial,
    release,
    settle_checks,
    settle_live,
    settle_sink_group,
)
from offsets.edits.reconcile import reconcile
from offsets.edits.roles import can_approve
from offsets.edits.writes import write_sink, write_source
from offsets.formats import edit_rules
from offsets.kafka import offsets_writer
from offsets.kafka.connect_rest import (
    ConnectAuthFailed,
    ConnectBadRequest,
    ConnectNotJson,
    ConnectorUnknown,
    ConnectRebalancing,
    ConnectRestError,
)
from offsets.kafka.errors import KafkaUnavailable, TopicNotFound
from offsets.models import AuditEvent, OffsetEdit

logger = logging.getLogger(__name__)

State = OffsetEdit.State
Action = AuditEvent.Action
# Answers that mean the worker wrote nothing: refused (400, 404, 409 rebalance), other
# credentials needed, another server at that URL, or never asked.
WORKER_REFUSALS = (
    route.NothingSent,
    ConnectBadRequest,
    ConnectorUnknown,
    ConnectRebalancing,
    ConnectAuthFailed,
    ConnectNotJson,
)


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
    if not can_approve(user):
        raise EditForbidden("Applying needs the approver role (approve_offsetedit).")
    # The claim and its audit entry are one write: a database that fails between them must
    # not leave an edit "applying" that the audit log never saw start.
    with transaction.atomic():
        _claim(edit, user)
        audit.record_state(edit, Action.APPLY_STARTED, user, comment)
    if edit.is_move:
        return move.apply_claimed(edit, user)
    if edit.is_removal:
        return removal.apply_claimed(edit, user)
    checks = _check(edit, user)
    if checks is None:
        return edit
    return _write_and_verify(edit, user, checks, before_commit)


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


def _check(edit: OffsetEdit, user) -> list[dict] | None:
    """Run the lock check and return its results, or None once a failed check settled the edit."""
    try:
        results = lock_check(edit=edit)
    except (KafkaUnavailable, ConnectorNotFound) as exc:
        release(edit, user, [], f"The lock check could not read the cluster: {exc}")
        return None
    except Exception as exc:
        # Nothing has been written yet: give the claim back rather than strand the edit.
        logger.exception("Lock check of edit %s failed", edit.pk)
        release(edit, user, [], f"The lock check failed unexpectedly: {exc}")
        return None
    return settle_checks(edit, user, results)


def _write_and_verify(
    edit: OffsetEdit, user, checks: list[dict], before_commit: Callable[[], None] | None
) -> OffsetEdit:
    chosen = route.choose_route(edit)
    if chosen.refusal:
        release(edit, user, checks, f"The Connect worker: {chosen.refusal}", _route(chosen))
        return edit
    _mark_applied_via(edit, chosen.via)
    if chosen.through_worker:
        return _through_worker(edit, user, checks, chosen)
    return _through_topic(edit, user, checks, chosen, before_commit)


def _mark_applied_via(edit: OffsetEdit, via: str) -> None:
    """Record the way before writing: an apply that dies midway is reconciled on that basis."""
    OffsetEdit.objects.filter(pk=edit.pk, state=State.APPLYING).update(applied_via=via)
    edit.applied_via = via


def _route(chosen: route.Route) -> dict:
    return {"applied_via": chosen.via, "route": chosen.reason}


def _through_worker(edit: OffsetEdit, user, checks: list[dict], chosen: route.Route) -> OffsetEdit:
    """PATCH (or DELETE) through the worker, then check its GET answer and the topic agree."""
    faults.pause_point("apply-before-commit")
    try:
        written = {**_route(chosen), **route.write_through_worker(edit, chosen)}
    except WORKER_REFUSALS as exc:
        message = f"The Connect worker refused the offsets, nothing was written: {exc.message}"
        release(edit, user, checks, message, {**_route(chosen), "worker_status": exc.status})
        return edit
    except ConnectRestError as exc:
        # A timeout, a 5xx or a garbled answer: the offsets may have been written.
        logger.warning("Apply of edit %s through the worker ended in doubt: %s", edit.pk, exc)
        message = exc.message.rstrip(".")
        return _settle_in_doubt(edit, user, checks, f"The Connect worker: {message}.")
    faults.pause_point("apply-after-commit")
    try:
        wrong = route.worker_shows(edit, chosen)
    except ConnectRestError as exc:
        written["worker_verify_error"] = exc.message
    else:
        if wrong:
            error = "The worker accepted the offsets but GET /offsets shows " + "; ".join(wrong)
            return fail(edit, user, checks, error, {**written, "verified": False})
        written["worker_verified"] = True
    return _verify(edit, user, checks, written)


def _through_topic(
    edit: OffsetEdit,
    user,
    checks: list[dict],
    chosen: route.Route,
    before_commit: Callable[[], None] | None,
) -> OffsetEdit:
    """Write the offsets topic (or the group) directly, in one transaction, then read back."""

    def pause_then_before_commit() -> None:
        faults.pause_point("apply-before-commit")
        if before_commit is not None:
            before_commit()

    try:
        if edit.is_source:
            written = write_source(edit, pause_then_before_commit)
        else:
            pause_then_before_commit()
            written = write_sink(edit)
    except offsets_writer.WriteNotCommitted as exc:
        return fail(edit, user, checks, str(exc), {"committed": False})
    except TopicNotFound as exc:
        return fail(edit, user, checks, f"{exc} Nothing was written.", {"committed": False})
    except SinkWriteIncomplete as exc:
        return _settle_incomplete_sink(edit, user, checks, exc)
    except Exception as exc:
        # The outcome is unknown (a commit that timed out, a sink request that may have
        # reached the coordinator): read the offsets back to find out.
        logger.warning("Apply of edit %s ended in doubt: %s", edit.pk, exc)
        return _settle_in_doubt(edit, user, checks, str(exc))
    faults.pause_point("apply-after-commit")
    return _verify(edit, user, checks, {**_route(chosen), **written})


def _settle_incomplete_sink(
    edit: OffsetEdit, user, checks: list[dict], exc: SinkWriteIncomplete
) -> OffsetEdit:
    """Judge a partial sink delete whose second step failed, on the WHOLE group.

    The second step's answer was lost or refused, but its request may have landed (a lost
    response looks the same): the same rule as reconciliation decides. The edit's own
    partitions alone would call it applied while the others may have lost their offsets.
    """
    try:
        now = LiveReader(edit.cluster).committed(edit.group_id)
    except KafkaUnavailable as read_error:
        restore = exc.restore
        seen = (
            f"The group could not be read back: {read_error}. Commit these offsets to "
            f"restore them: {edit_rules.restore_text(restore)}"
        )
    else:
        settled = settle_sink_group(edit, exc.restore, now)
        if settled.outcome == "applied":
            written = {"committed": len(exc.restore), "second_step_error": exc.cause}
            return _verify(edit, user, checks, written)
        if settled.outcome == "incomplete":
            # Exactly the kept partitions that are not back (the message lists them).
            restore, seen = settled.restore, f"Read back: {settled.message}"
        else:
            # Something else wrote to the group: every kept offset is left to check.
            restore = exc.restore
            seen = (
                f"Read back: {settled.message} Commit these offsets to restore them: "
                f"{edit_rules.restore_text(restore)}"
            )
    return fail(
        edit,
        user,
        checks,
        f"The group was deleted but committing the other partitions again failed: "
        f"{exc.cause}. {seen}",
        partial(restore),
    )


def _verify(edit: OffsetEdit, user, checks: list[dict], written: dict) -> OffsetEdit:
    try:
        settled = settle_live(edit)
    except (KafkaUnavailable, ConnectorNotFound) as exc:
        # The commit was acknowledged, so the edit is applied; only the read-back failed.
        extra = {**written, "verified": False, "verify_error": str(exc)}
        return finish(edit, State.APPLIED, Action.APPLIED, user, checks=checks, extra=extra)
    if settled.outcome == "applied":
        extra = {**written, "verified": True, "verification": settled.message}
        return finish(edit, State.APPLIED, Action.APPLIED, user, checks=checks, extra=extra)
    extra = {**written, "verified": False}
    if settled.outcome == "incomplete":
        extra.update(partial(settled.restore))
    return fail(
        edit,
        user,
        checks,
        f"The write was acknowledged but reading it back disagrees: {settled.message}",
        extra,
    )


def _settle_in_doubt(edit: OffsetEdit, user, checks: list[dict], error: str) -> OffsetEdit:
    try:
        return reconcile(edit, user, error=error)
    except (KafkaUnavailable, ConnectorNotFound) as exc:
        with transaction.atomic():
            OffsetEdit.objects.filter(pk=edit.pk, state=State.APPLYING).update(
                error=error, lock_checks=checks, updated=timezone.now()
            )
            edit.refresh_from_db()
            details = {"error": error, "read_back_error": str(exc)}
            audit.record(edit, Action.IN_DOUBT, user, "", details)
        return edit
