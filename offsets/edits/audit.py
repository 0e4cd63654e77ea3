"""The append-only audit log of offset edits, and the end of an apply: each final state (or
the claim given back) written with its audit entry in one transaction.

Every kind ends its apply through `finish`, `release` and `fail`, so a kind cannot leave an
edit applied, failed or approved again without the entry that says so.
"""

import logging

from django.db import transaction
from django.utils import timezone

from offsets.domain import edits as edit_rules
from offsets.models import AuditEvent, Cluster, OffsetEdit, OffsetEditChange

logger = logging.getLogger(__name__)

State = OffsetEdit.State
Action = AuditEvent.Action


def actor_fields(user) -> dict:
    """Who acted, as the log keeps it: the user, their name, and their provider subject when
    they logged in through single sign-on; a user of None (or unsaved) is "system"."""
    if user is None or not user.pk:
        return {"actor": None, "actor_name": "system", "actor_subject": ""}
    # A user without a provider identity raises RelatedObjectDoesNotExist, an AttributeError.
    identity = getattr(user, "provider_identity", None)
    subject = identity.subject if identity is not None else ""
    return {"actor": user, "actor_name": user.get_username(), "actor_subject": subject}


def record(edit: OffsetEdit, action: str, user, comment: str, details: dict) -> AuditEvent:
    """Append one event about ``edit``; a user of None (or unsaved) is recorded as "system"."""
    return AuditEvent.objects.create(
        cluster_id=edit.cluster_id,
        connector=edit.connector,
        edit=edit,
        action=action,
        **actor_fields(user),
        comment=comment,
        details=details,
    )


def record_state(edit: OffsetEdit, action: str, user, comment: str) -> OffsetEdit:
    """Reload the edit after a state change and append the event with its new state."""
    edit.refresh_from_db()
    record(edit, action, user, comment, {"state": edit.state})
    return edit


def change_details(change: OffsetEditChange) -> dict:
    """Return one touched partition as the audit log keeps it."""
    details = {
        "partition": change.partition,
        "before": change.before,
        "after": change.after,
        "is_new": change.is_new,
        "is_delete": change.is_delete,
    }
    if change.key_bytes is not None:
        details["key"] = change.key_text
    return details


def audit_log(*, cluster: Cluster, connector: str | None = None, limit: int = 50):
    """Return the newest audit events of a cluster (or one connector), newest first."""
    # A move's events are shown by its target's grants too (rights.grants.sees_edit).
    events = AuditEvent.objects.filter(cluster=cluster).select_related(
        "edit", "edit__cluster", "edit__target_cluster"
    )
    if connector is not None:
        events = events.filter(connector=connector)
    return events[:limit]


def record_connector(
    cluster: Cluster, connector: str, action: str, user, comment: str, details: dict
) -> AuditEvent:
    """Append one event about a connector itself (stop, resume, restart), with no edit."""
    return AuditEvent.objects.create(
        cluster=cluster,
        connector=connector,
        action=action,
        **actor_fields(user),
        comment=comment,
        details=details,
    )


# --- The end of an apply ---------------------------------------------------------------------


def finish(
    edit: OffsetEdit,
    state: str,
    action: str,
    user,
    *,
    checks: list[dict] | None = None,
    error: str = "",
    extra: dict | None = None,
    comment: str = "",
) -> OffsetEdit:
    """Leave "applying" for a final state and record it with every partition's values."""
    fields = {
        "state": state,
        "error": error,
        "finished_at": timezone.now(),
        "updated": timezone.now(),
    }
    if checks is not None:
        fields["lock_checks"] = checks
    # The final state and its audit entry are one write: if the database fails here the edit
    # stays "applying" (truthfully in doubt) for reconcile_edits, never settled unaudited.
    with transaction.atomic():
        moved = OffsetEdit.objects.filter(pk=edit.pk, state=OffsetEdit.State.APPLYING).update(
            **fields
        )
        edit.refresh_from_db()
        if moved != 1:
            # Another process (reconcile_edits) settled it first; its record stands.
            logger.info("Edit %s was settled elsewhere (now %s)", edit.pk, edit.state)
            return edit
        details = {
            "state": state,
            "checks": edit.lock_checks,
            "changes": [change_details(change) for change in edit.changes.all()],
            **(extra or {}),
        }
        if error:
            details["error"] = error
        record(edit, action, user, comment, details)
    return edit


def release(
    edit: OffsetEdit, user, checks: list[dict], message: str, extra: dict | None = None
) -> None:
    """Give the claim back: nothing was written, the edit can be applied again later."""
    with transaction.atomic():
        OffsetEdit.objects.filter(pk=edit.pk, state=State.APPLYING).update(
            state=State.APPROVED,
            lock_checks=checks,
            error=message,
            applied_via="",
            updated=timezone.now(),
        )
        edit.refresh_from_db()
        details = {"checks": checks, "error": message, **(extra or {})}
        record(edit, Action.APPLY_REFUSED, user, "", details)


def fail(edit: OffsetEdit, user, checks: list[dict], error: str, extra: dict) -> OffsetEdit:
    """Finish an apply as failed, audited "failed" with the lock check and the details."""
    return finish(edit, State.FAILED, Action.FAILED, user, checks=checks, error=error, extra=extra)


def settle_checks(
    edit: OffsetEdit,
    user,
    results,
    *,
    what: str = "apply",
    refused_end: str = "",
    conflict_end: str = "",
    extra: dict | None = None,
) -> list[dict] | None:
    """Act on a claimed edit's lock check: its results to go on, or None once it settled it.

    Moved offsets make the edit a conflict (stage it again); any other failed check gives
    the claim back naming the failures; all passed: the results are kept. The ends are
    appended to the messages as they are (they may quote connector names).
    """
    checks = [check.as_dict() for check in results]
    failed = [check for check in results if not check.passed]
    moved = [check for check in failed if check.name == edit_rules.NOTHING_MOVED]
    if moved:
        error = f"{moved[0].message}{conflict_end}"
        finish(edit, State.CONFLICT, Action.CONFLICT, user, checks=checks, error=error, extra=extra)
        return None
    if failed:
        refused = "; ".join(check.message for check in failed)
        release(edit, user, checks, f"The lock check refused the {what}: {refused}{refused_end}")
        return None
    OffsetEdit.objects.filter(pk=edit.pk).update(lock_checks=checks)
    return checks
