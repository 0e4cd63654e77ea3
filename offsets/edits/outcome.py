"""Read an edit's partitions back, judge whether its write landed, and record how it ended."""

import logging
from collections.abc import Iterable, Mapping

from django.db import transaction
from django.utils import timezone

from offsets.domain import edits as edit_rules
from offsets.edits import audit
from offsets.edits.live import LiveReader, read_connector, source_view
from offsets.formats.offset_records import SourceOffsetRecord
from offsets.formats.worker_offsets import canonical
from offsets.models import AuditEvent, OffsetEdit, OffsetEditChange

logger = logging.getLogger(__name__)

State = OffsetEdit.State
Action = AuditEvent.Action

# One touched partition: (label, before, after, current value read now).
Values = list[tuple[str, object, object, object]]


def as_bytes(value) -> bytes | None:
    """Return a stored binary field as bytes (the database may hand back a memoryview)."""
    return None if value is None else bytes(value)


def sink_offset(value: dict | None) -> int | None:
    """Return the offset of a stored sink value ({"kafka_offset": n}), or None."""
    return None if value is None else int(value["kafka_offset"])


def source_values(
    changes: Iterable[OffsetEditChange], view: Mapping[bytes, SourceOffsetRecord]
) -> Values:
    return [
        (
            change.key_text,
            as_bytes(change.before_bytes),
            as_bytes(change.after_bytes),
            view[key].value_bytes if (key := bytes(change.key_bytes)) in view else None,
        )
        for change in changes
    ]


def parsed_source_values(
    changes: Iterable[OffsetEditChange], view: Mapping[bytes, SourceOffsetRecord]
) -> Values:
    """Like `source_values`, comparing parsed offsets: the worker orders a value's fields its
    own way (a HashMap), so its bytes may differ from the staged ones while meaning the same."""

    def text(offset: dict | None) -> str | None:
        return None if offset is None else canonical(offset)

    return [
        (
            change.key_text,
            text(change.before),
            text(change.after),
            text(view[key].offset) if (key := bytes(change.key_bytes)) in view else None,
        )
        for change in changes
    ]


def sink_values(
    changes: Iterable[OffsetEditChange], committed: Mapping[tuple[str, int], int]
) -> Values:
    return [
        (
            f"{change.topic}-{change.kafka_partition}",
            sink_offset(change.before),
            sink_offset(change.after),
            committed.get((change.topic, change.kafka_partition)),
        )
        for change in changes
    ]


def settle_live(edit: OffsetEdit) -> edit_rules.Settled:
    """Read the edit's offsets now and decide whether its write landed.

    A partial sink delete that reached its two steps (``sink_keep`` stored) is judged on the
    whole group: its own partitions alone cannot tell whether the others came back.
    """
    reader = LiveReader(edit.cluster)
    changes = list(edit.changes.all())
    if edit.is_source:
        context = read_connector(cluster=edit.cluster, connector=edit.connector, reader=reader)
        view = source_view(context=context, reader=reader)
        if edit.applied_via == OffsetEdit.AppliedVia.WORKER:
            return edit_rules.settle(parsed_source_values(changes, view))
        return edit_rules.settle(source_values(changes, view))
    group = reader.committed(edit.group_id)
    if edit.sink_keep is None:
        return edit_rules.settle(sink_values(changes, group))
    return settle_sink_group(edit, edit_rules.keep_from_json(edit.sink_keep), group)


def settle_sink_group(
    edit: OffsetEdit, keep: dict[tuple[str, int], int], group: dict[tuple[str, int], int]
) -> edit_rules.Settled:
    """Judge a partial sink delete on the whole group against what it must hold (``keep``)."""
    changes = list(edit.changes.all())
    return edit_rules.settle_sink_group(
        sink_values(changes, group),
        deleted=[(c.topic, c.kafka_partition) for c in changes if c.is_delete],
        keep=keep,
        group=group,
    )


def partial(restore: Mapping[tuple[str, int], int]) -> dict:
    """Return the audit details of a group left partly committed, with what to restore."""
    return {"committed": "partial", "restore": edit_rules.restore_details(restore)}


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
            "changes": [audit.change_details(change) for change in edit.changes.all()],
            **(extra or {}),
        }
        if error:
            details["error"] = error
        audit.record(edit, action, user, comment, details)
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
        audit.record(edit, Action.APPLY_REFUSED, user, "", details)


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
