"""Offset changes: a diff of one connector's offsets, written through its worker or straight
to Kafka (the strategies set, add, delete, restore, the sink ones, and import).

Staging computes the diff against the offsets read live (`preview_edit`); the lock check
compares them again; the write goes the way `route` chooses; the verification and the
reconciliation read the offsets back and judge them with `edit_rules` (`outcome.settle_live`).
"""

import logging
from collections.abc import Sequence

from django.db import transaction
from django.utils import timezone

from offsets import faults, sink_stores
from offsets.domain import edits as edit_rules
from offsets.domain.edits import CheckResult, Observed
from offsets.edits import audit, drafts
from offsets.edits.errors import (
    ConnectorNotFound,
    EditInputError,
    EditStateConflict,
    NothingToChange,
    SinkWriteIncomplete,
)
from offsets.edits.kinds.base import Attempt, EditKind, fence, group_inactive_check
from offsets.edits.kinds.offset_changes import writes
from offsets.edits.kinds.offset_changes.diff import (
    SINK_STRATEGIES,
    SOURCE_STRATEGIES,
    Preview,
    StageRequest,
    preview_source,
)
from offsets.edits.kinds.offset_changes.sink_diff import preview_sink
from offsets.edits.kinds.offset_changes.writes import write_sink, write_source
from offsets.edits.live import LiveReader, read_connector, source_view
from offsets.edits.outcome import (
    fail,
    finish,
    partial,
    release,
    settle_live,
    settle_sink_group,
    sink_values,
    source_values,
)
from offsets.formats.connectors import Connector
from offsets.formats.offsets_json import PartitionOffset
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
from offsets.models import AuditEvent, Cluster, OffsetEdit

logger = logging.getLogger(__name__)

State = OffsetEdit.State
Action = AuditEvent.Action
# How many per-partition notes a message quotes: a connector may have tens of thousands.
NOTES_QUOTED = 10
# Answers that mean the worker wrote nothing: refused (400, 404, 409 rebalance), other
# credentials needed, another server at that URL, or never asked.
WORKER_REFUSALS = (
    writes.NothingSent,
    ConnectBadRequest,
    ConnectorUnknown,
    ConnectRebalancing,
    ConnectAuthFailed,
    ConnectNotJson,
)
# Why a reconciled edit failed, by what reading Kafka back found (unless the apply said why).
INTERRUPTED = {
    "not-applied": "The apply was interrupted before its write committed.",
    "incomplete": (
        "The apply was interrupted between deleting the group and committing the other "
        "partitions back."
    ),
}


class OffsetChanges(EditKind):
    name = "offsets"
    strategies = (*SOURCE_STRATEGIES, *SINK_STRATEGIES, OffsetEdit.Strategy.IMPORT)

    # --- Stage ----------------------------------------------------------------------------------

    def stage(
        self, *, cluster: Cluster, connector: str, user, comment: str = "", request: StageRequest
    ) -> OffsetEdit:
        """Stage an edit as a draft with its diff and the before values read now."""
        drafts.require_editor(user, cluster, connector)
        preview = preview_edit(cluster=cluster, connector=connector, request=request)
        return drafts.save(draft(preview, cluster), user=user, comment=comment)

    def restage_inputs(self, edit: OffsetEdit) -> dict | None:
        """The request rebuilt from the stored inputs (an import's from its rows' targets)."""
        entries = None
        if edit.strategy == OffsetEdit.Strategy.IMPORT:
            entries = tuple(
                PartitionOffset(partition=change.partition, offset=change.after)
                for change in edit.changes.all()
            )
        return {"request": StageRequest.from_parameters(edit.strategy, edit.parameters, entries)}

    # --- Lock check, write, verify --------------------------------------------------------------

    def lock_checks(self, edit: OffsetEdit) -> list[CheckResult]:
        """Connector stopped, (sinks) group without members, nothing moved since staging."""
        reader = LiveReader(edit.cluster)
        context = read_connector(cluster=edit.cluster, connector=edit.connector, reader=reader)
        checks = [edit_rules.check_stopped(context)]
        changes = list(edit.changes.all())
        if edit.is_source:
            values = source_values(changes, source_view(context=context, reader=reader))
        else:
            checks.append(group_inactive_check(edit, edit.group_id))
            values = sink_values(changes, reader.committed(edit.group_id))
        observed = [Observed(label, before, current) for label, before, _, current in values]
        checks.append(edit_rules.check_nothing_moved(observed))
        return checks

    def write(self, attempt: Attempt) -> dict | None:
        """Write through the worker or straight to Kafka, the way `route` chooses now."""
        edit = attempt.edit
        chosen = writes.choose_route(edit)
        if chosen.refusal:
            message = f"The Connect worker: {chosen.refusal}"
            release(edit, attempt.user, attempt.checks, message, _route(chosen))
            return None
        # Recorded before writing: an apply that dies midway is reconciled on that basis.
        OffsetEdit.objects.filter(pk=edit.pk, state=State.APPLYING).update(applied_via=chosen.via)
        edit.applied_via = chosen.via
        if chosen.through_worker:
            return self._through_worker(attempt, chosen)
        return self._through_topic(attempt, chosen)

    def _through_worker(self, attempt: Attempt, chosen: writes.Route) -> dict | None:
        """PATCH (or DELETE) through the worker, then check its GET answer shows the edit."""
        edit, user, checks = attempt.edit, attempt.user, attempt.checks
        faults.pause_point("apply-before-commit")
        try:
            written = {**_route(chosen), **writes.write_through_worker(edit, chosen)}
        except WORKER_REFUSALS as exc:
            message = f"The Connect worker refused the offsets, nothing was written: {exc.message}"
            release(edit, user, checks, message, {**_route(chosen), "worker_status": exc.status})
            return None
        except ConnectRestError as exc:
            # A timeout, a 5xx or a garbled answer: the offsets may have been written.
            logger.warning("Apply of edit %s through the worker ended in doubt: %s", edit.pk, exc)
            message = exc.message.rstrip(".")
            return self._in_doubt(attempt, f"The Connect worker: {message}.")
        faults.pause_point("apply-after-commit")
        try:
            wrong = writes.worker_shows(edit, chosen)
        except ConnectRestError as exc:
            written["worker_verify_error"] = exc.message
        else:
            if wrong:
                error = "The worker accepted the offsets but GET /offsets shows " + "; ".join(wrong)
                fail(edit, user, checks, error, {**written, "verified": False})
                return None
            written["worker_verified"] = True
        return written

    def _through_topic(self, attempt: Attempt, chosen: writes.Route) -> dict | None:
        """Write the offsets topic (or the group) directly, in one transaction."""
        edit, user, checks = attempt.edit, attempt.user, attempt.checks

        def pause_then_before_commit() -> None:
            faults.pause_point("apply-before-commit")
            if attempt.before_commit is not None:
                attempt.before_commit()

        try:
            if edit.is_source:
                written = write_source(edit, pause_then_before_commit)
            else:
                pause_then_before_commit()
                written = write_sink(edit)
        except offsets_writer.WriteNotCommitted as exc:
            fail(edit, user, checks, str(exc), {"committed": False})
            return None
        except TopicNotFound as exc:
            fail(edit, user, checks, f"{exc} Nothing was written.", {"committed": False})
            return None
        except SinkWriteIncomplete as exc:
            return self._incomplete_sink(attempt, exc)
        except Exception as exc:
            # The outcome is unknown (a commit that timed out, a sink request that may have
            # reached the coordinator): read the offsets back to find out.
            logger.warning("Apply of edit %s ended in doubt: %s", edit.pk, exc)
            return self._in_doubt(attempt, str(exc))
        faults.pause_point("apply-after-commit")
        return {**_route(chosen), **written}

    def _incomplete_sink(self, attempt: Attempt, exc: SinkWriteIncomplete) -> dict | None:
        """Judge a partial sink delete whose second step failed, on the WHOLE group.

        The second step's answer was lost or refused, but its request may have landed (a lost
        response looks the same): the same rule as reconciliation decides. The edit's own
        partitions alone would call it applied while the others may have lost their offsets.
        """
        edit = attempt.edit
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
                return {"committed": len(exc.restore), "second_step_error": exc.cause}
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
        error = (
            f"The group was deleted but committing the other partitions again failed: "
            f"{exc.cause}. {seen}"
        )
        fail(edit, attempt.user, attempt.checks, error, partial(restore))
        return None

    def _in_doubt(self, attempt: Attempt, error: str) -> None:
        """Settle a write whose outcome is unknown by reading it back, or leave it in doubt."""
        edit = attempt.edit
        try:
            self.reconcile(edit, attempt.user, error=error)
        except (KafkaUnavailable, ConnectorNotFound) as exc:
            with transaction.atomic():
                OffsetEdit.objects.filter(pk=edit.pk, state=State.APPLYING).update(
                    error=error, lock_checks=attempt.checks, updated=timezone.now()
                )
                edit.refresh_from_db()
                details = {"error": error, "read_back_error": str(exc)}
                audit.record(edit, Action.IN_DOUBT, attempt.user, "", details)
        return None

    def verify(self, attempt: Attempt, written: dict) -> OffsetEdit:
        """Read the offsets back: applied if every touched partition holds its new value."""
        edit, user, checks = attempt.edit, attempt.user, attempt.checks
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
        error = f"The write was acknowledged but reading it back disagrees: {settled.message}"
        return fail(edit, user, checks, error, extra)

    # --- Reconcile, the page ------------------------------------------------------------------

    def reconcile(
        self, edit: OffsetEdit, user, *, error: str = "", comment: str = ""
    ) -> OffsetEdit:
        """Read the offsets back: all new -> applied, all old -> failed, else conflict."""
        if edit.is_source:
            fence(edit)
        settled = settle_live(edit)
        details: dict = {"reconciled": settled.message}
        if settled.outcome == "applied":
            state, why = State.APPLIED, ""
        elif settled.outcome in INTERRUPTED:
            state, why = State.FAILED, f"{error or INTERRUPTED[settled.outcome]} {settled.message}"
            if settled.outcome == "incomplete":
                # Never "applied": the edit's partitions are right, the rest of the group is not.
                details.update(partial(settled.restore))
        else:
            state, why = State.CONFLICT, settled.message
        return finish(
            edit, state, Action.RECONCILED, user, comment=comment, error=why, extra=details
        )

    def route_ahead(self, edit: OffsetEdit) -> writes.Route | None:
        """How an open edit would be written if applied now (the worker is asked its version)."""
        return writes.choose_route(edit) if edit.is_open else None


KIND = OffsetChanges()


def _route(chosen: writes.Route) -> dict:
    return {"applied_via": chosen.via, "route": chosen.reason}


# --- The diff, and what staging it again takes ----------------------------------------------------


def preview_edit(
    *,
    cluster: Cluster,
    connector: str,
    request: StageRequest,
    reader: LiveReader | None = None,
    context: Connector | None = None,
) -> Preview:
    """Compute an edit's diff against the live topics without saving anything."""
    reader = reader or LiveReader(cluster)
    context = context or read_connector(cluster=cluster, connector=connector, reader=reader)
    strategies = SOURCE_STRATEGIES if context.is_source else SINK_STRATEGIES
    if request.strategy not in (*strategies, "import"):
        raise EditInputError(
            f"{request.strategy!r} is not a strategy for a {context.type} connector; use one "
            f"of {', '.join(strategies)}.",
            field="strategy",
        )
    if context.is_source:
        preview = preview_source(context=context, request=request, reader=reader)
    else:
        preview = preview_sink(context=context, request=request, reader=reader)
    preview.warnings = [
        *_context_warnings(context),
        *_store_warnings(cluster, context),
        *preview.warnings,
    ]
    if not preview.change_count:
        reason = _quote_notes(preview.unchanged) or "every partition already has that offset"
        raise NothingToChange(f"Nothing to change: {reason}.", field=_main_field(request))
    return preview


def draft(preview: Preview, cluster: Cluster) -> drafts.Draft:
    """The draft a preview saves as: one row per touched partition."""
    context = preview.context
    rows = [
        drafts.source_row(
            partition=change.partition,
            key=change.key_bytes,
            before=change.before,
            before_bytes=change.before_bytes,
            after=change.after,
            after_bytes=change.after_bytes,
            is_new=change.is_new,
            is_delete=change.is_delete,
            warnings=change.warnings,
        )
        for change in preview.source_changes
    ]
    rows += drafts.sink_change_rows(preview.sink_changes)
    return drafts.Draft(
        cluster=cluster,
        connector=context.name,
        connector_type=context.type,
        strategy=preview.strategy,
        parameters=preview.parameters,
        warnings=preview.warnings,
        rows=rows,
        primary_topic=context.primary_topic,
        mirror_topic=context.worker_topic if context.own_topic else "",
        group_id=context.group_id,
    )


def can_stage_restore(edit: OffsetEdit) -> bool:
    """Whether `stage_restore` applies: a failed sink edit that stored what its group must hold."""
    return edit.state == OffsetEdit.State.FAILED and not edit.is_source and bool(edit.sink_keep)


def stage_restore(*, edit: OffsetEdit, user, comment: str = "") -> OffsetEdit:
    """Stage, as a new draft edit, committing back what a failed partial sink delete lost.

    Such an edit deleted the whole group, then failed (or was killed) before committing the
    other partitions back; `sink_keep` holds what the group must hold, stored before the
    delete. The new edit imports exactly that: its diff against the group as it is now shows
    only what is missing or different (NothingToChange if nothing is), and it goes through
    approval and the lock check like any other edit. Returns the new edit.
    """
    drafts.require_editor(user, edit.cluster, edit.connector)
    if not can_stage_restore(edit):
        raise EditStateConflict(
            f"Edit #{edit.pk} is not a failed sink edit with offsets to commit back."
        )
    entries = tuple(
        PartitionOffset(
            partition={"kafka_topic": topic, "kafka_partition": partition},
            offset={"kafka_offset": offset},
        )
        for topic, partition, offset in edit.sink_keep
    )
    return KIND.stage(
        cluster=edit.cluster,
        connector=edit.connector,
        user=user,
        request=StageRequest(strategy="import", entries=entries),
        comment=comment
        or f"Commits back what edit #{edit.pk} lost: the group's offsets it stored before "
        "deleting the group.",
    )


def _quote_notes(notes: Sequence[str]) -> str:
    """Join the first notes, counting the rest: one per partition can be tens of thousands."""
    quoted = "; ".join(notes[:NOTES_QUOTED])
    rest = len(notes) - NOTES_QUOTED
    return f"{quoted}; and {rest:,} more" if rest > 0 else quoted


def _main_field(request: StageRequest) -> str:
    return {
        "set": "offset",
        "add": "partition",
        "delete": "partition",
        "restore": "at",
        "import": "document",
    }.get(request.strategy, "partitions")


def _store_warnings(cluster: Cluster, context: Connector) -> list[str]:
    """A sink whose offsets an admin placed outside Connect's group does not resume from it."""
    row = None if context.is_source else sink_stores.store_of(cluster, context.name)
    if row is None or row.kind == row.Kind.CONNECT_GROUP:
        return []
    return [
        f"This sink's offsets are read from {sink_stores.setting_of(row).where()}, not from "
        f"its group {context.group_id}: changing the group does not move it. Set them in its "
        "store instead (store-offset)."
    ]


def _context_warnings(context: Connector) -> list[str]:
    warnings = []
    if context.deleted:
        warnings.append(
            "The connector is deleted: its offsets remain and are used again if a connector "
            "with this name is created."
        )
    elif context.target_state != "STOPPED":
        warnings.append(
            f"The connector's target state is {context.target_state}: stop it before applying "
            "(the lock check refuses otherwise; PAUSED is not enough)."
        )
    if context.own_topic:
        warnings.append(
            f"The connector uses its own offsets topic {context.primary_topic} (KIP-618): the "
            f"edit is written there and mirrored to the worker topic {context.worker_topic} in "
            "the same transaction."
        )
    if context.mirrormaker2:
        warnings.append(
            "MirrorMaker 2: these offsets only say where replication resumes on the source "
            "cluster; offset syncs and checkpoints already written are not changed."
        )
    return warnings
