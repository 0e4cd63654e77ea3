"""Settle edits left "applying" (a crash, or an outage at the commit) by reading them back."""

import logging
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from offsets.edits import move, removal_apply
from offsets.edits.errors import ConnectorNotFound, EditForbidden, EditStateConflict
from offsets.edits.outcome import finish, partial, settle_live
from offsets.edits.roles import can_approve
from offsets.kafka import offsets_writer
from offsets.kafka.errors import KafkaUnavailable
from offsets.models import AuditEvent, Cluster, OffsetEdit

logger = logging.getLogger(__name__)

State = OffsetEdit.State

# How long past its start an apply can still be alive. A live apply makes at most three
# write calls (a partial sink delete: read the group, delete it, commit the rest), each
# bounded by KAFKA_WRITE_TIMEOUT; the margin covers the lock check's and the verification's
# reads and a slow database. Reconciling a live sink apply would judge the group between its
# two steps and call the edit failed while it is about to succeed, so the page and the API
# refuse younger edits, and the refresh loop leaves them alone.
APPLY_MARGIN = timedelta(minutes=5)

# Why a reconciled edit failed, by what reading Kafka back found (unless the apply said why).
_INTERRUPTED = {
    "not-applied": "The apply was interrupted before its write committed.",
    "incomplete": (
        "The apply was interrupted between deleting the group and committing the other "
        "partitions back."
    ),
}


def stale_after() -> timedelta:
    """Return the age after which an edit still "applying" has lost its process."""
    return timedelta(seconds=3 * settings.KAFKA_WRITE_TIMEOUT) + APPLY_MARGIN


def is_stale(edit: OffsetEdit) -> bool:
    """Say whether an "applying" edit is old enough to be reconciled from outside."""
    return (
        edit.state == State.APPLYING
        and edit.apply_started_at is not None
        and timezone.now() - edit.apply_started_at >= stale_after()
    )


def reconcile_edit(*, edit: OffsetEdit, user, comment: str = "") -> OffsetEdit:
    """Settle one edit stuck in "applying" (an approver) by reading the topic or group back.

    Refused (EditStateConflict) unless the edit is applying and older than ``stale_after()``.
    If the cluster cannot be read, KafkaUnavailable propagates and the edit is unchanged.
    """
    if not can_approve(user):
        raise EditForbidden("Reconciling needs the approver role (approve_offsetedit).")
    if edit.state != State.APPLYING:
        raise EditStateConflict(f"Edit #{edit.pk} is {edit.state}, not applying.")
    if not is_stale(edit):
        raise EditStateConflict(
            f"Edit #{edit.pk} started applying less than {stale_after().total_seconds():.0f} s "
            "ago: its apply may still be running. Reconcile it once that much time has passed."
        )
    return reconcile(edit, user, comment=comment)


def reconcile_edits(
    *, cluster: Cluster | None = None, min_age: timedelta = timedelta(0), user=None
) -> list[tuple[OffsetEdit, str]]:
    """Reconcile every edit in "applying" (started at least ``min_age`` ago).

    Returns (edit, error) pairs; error is "" for a settled edit and the reason for one that
    stays in doubt because the cluster could not be read.
    """
    pending = OffsetEdit.objects.filter(
        state=State.APPLYING, apply_started_at__lte=timezone.now() - min_age
    ).select_related("cluster")
    if cluster is not None:
        pending = pending.filter(cluster=cluster)
    results = []
    for edit in pending:
        try:
            results.append((reconcile(edit, user), ""))
        except (KafkaUnavailable, ConnectorNotFound) as exc:
            results.append((edit, str(exc)))
    return results


def reconcile(edit: OffsetEdit, user, *, error: str = "", comment: str = "") -> OffsetEdit:
    """Read an "applying" edit back and settle it: applied, failed, or conflict.

    ``error`` is why the apply itself stopped, if it knows. Raises KafkaUnavailable (or
    ConnectorNotFound) when the cluster cannot be read; the edit then stays "applying".
    """
    if edit.is_move:
        # A move is written to the target cluster: only its worker can tell how it ended.
        return move.reconcile_claimed(edit, user, error=error, comment=comment)
    if edit.is_removal:
        return removal_apply.reconcile(edit, user, error=error, comment=comment)
    if edit.is_source:
        # Fencing first: a transaction an earlier process left open is aborted (or, if its
        # commit had begun, completed) before the read, so the read shows the final outcome.
        offsets_writer.fence(
            edit.cluster.kafka_settings(),
            offsets_writer.transactional_id(edit.cluster.name, edit.connector),
            timeout=settings.KAFKA_WRITE_TIMEOUT,
        )
    settled = settle_live(edit)
    details: dict = {"reconciled": settled.message}
    if settled.outcome == "applied":
        state, why = State.APPLIED, ""
    elif settled.outcome in _INTERRUPTED:
        state, why = State.FAILED, f"{error or _INTERRUPTED[settled.outcome]} {settled.message}"
        if settled.outcome == "incomplete":
            # Never "applied": the edit's own partitions are right, the rest of the group is not.
            details.update(partial(settled.restore))
    else:
        state, why = State.CONFLICT, settled.message
    return finish(
        edit, state, AuditEvent.Action.RECONCILED, user, comment=comment, error=why, extra=details
    )


def settle_stale(cluster: Cluster) -> list[tuple[str, bool]]:
    """Reconcile the cluster's edits left "applying" by a process that died (older than
    stale_after(): a live apply is never judged between its steps); return a line per edit
    and whether it was settled, each also logged. The refresh loop and the scheduler call it
    after each refresh, so a crash is settled even if nobody runs reconcile_edits."""
    lines = []
    for edit, error in reconcile_edits(cluster=cluster, min_age=stale_after()):
        if error:
            message = f"Edit #{edit.pk} ({edit.connector}) stays applying: {error}"
            logger.warning("%s", message)
        else:
            message = f"Reconciled edit #{edit.pk} ({edit.connector}): {edit.state}"
            logger.info("%s", message)
        lines.append((message, not error))
    return lines
