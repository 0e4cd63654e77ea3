"""Write and read the append-only audit log of offset edits."""

from offsets.models import AuditEvent, Cluster, OffsetEdit, OffsetEditChange


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
