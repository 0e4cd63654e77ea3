"""Settle edits left "applying" (a crash, or an outage at the commit) by reading them back."""

import logging
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from offsets.edits.errors import ConnectorNotFound, EditStateConflict
from offsets.edits.kinds import kind_for
from offsets.edits.roles import require_approver
from offsets.kafka.errors import KafkaUnavailable
from offsets.models import Cluster, OffsetEdit

logger = logging.getLogger(__name__)

State = OffsetEdit.State

# How long past its start an apply can still be alive. A live apply makes at most three
# write calls (a partial sink delete: read the group, delete it, commit the rest), each
# bounded by KAFKA_WRITE_TIMEOUT; the margin covers the lock check's and the verification's
# reads and a slow database. Reconciling a live sink apply would judge the group between its
# two steps and call the edit failed while it is about to succeed, so the page and the API
# refuse younger edits, and the refresh loop leaves them alone.
APPLY_MARGIN = timedelta(minutes=5)


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
    require_approver(user, edit, "Reconciling needs the approver role.")
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
    """Read an "applying" edit back and settle it (its kind decides how): applied, failed, or
    conflict.

    ``error`` is why the apply itself stopped, if it knows. Raises KafkaUnavailable (or
    ConnectorNotFound) when the cluster cannot be read; the edit then stays "applying".
    """
    return kind_for(edit).reconcile(edit, user, error=error, comment=comment)


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
