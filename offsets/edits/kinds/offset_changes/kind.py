"""Offset changes: a diff of one connector's offsets, written through its worker or straight
to Kafka (the strategies set, add, delete, restore, the sink ones, and import).

Staging computes the diff against the offsets read live (`preview_edit`); the lock check
compares them again; the write goes the way `writes.choose_route` chooses; the verification
and the reconciliation read the offsets back and judge them with `edit_rules`
(`live.settle_live`).
"""

import logging

from django.db import transaction
from django.utils import timezone

from offsets import faults
from offsets.domain import edits as edit_rules
from offsets.domain.edits import CheckResult, Observed
from offsets.edits import audit, drafts
from offsets.edits.audit import fail, finish, release
from offsets.edits.errors import (
    ConnectorNotFound,
    EditStateConflict,
    SinkWriteIncomplete,
)
from offsets.edits.kinds.base import Attempt, EditKind
from offsets.edits.kinds.offset_changes import writes
from offsets.edits.kinds.offset_changes.diff import draft, preview_edit, staged_request
from offsets.edits.kinds.offset_changes.request import (
    SINK_STRATEGIES,
    SOURCE_STRATEGIES,
    CommitBack,
    OffsetChange,
    StageRequest,
)
from offsets.edits.kinds.offset_changes.writes import write_sink, write_source
from offsets.edits.live import (
    LiveReader,
    fence,
    group_inactive_check,
    read_connector,
    settle_live,
    settle_sink_group,
    sink_values,
    source_values,
    source_view,
)
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


class OffsetChangesKind(EditKind):
    name = "offsets"
    strategies = (*SOURCE_STRATEGIES, *SINK_STRATEGIES, OffsetEdit.Strategy.IMPORT)
    inputs = (OffsetChange, CommitBack)

    # --- Stage ----------------------------------------------------------------------------------

    def stage(
        self,
        *,
        cluster: Cluster,
        connector: str,
        user,
        change: OffsetChange | CommitBack,
        comment: str = "",
    ) -> OffsetEdit:
        """Stage an edit as a draft with its diff and the before values read now."""
        drafts.require_editor(user, cluster, connector)
        if isinstance(change, CommitBack):
            comment = comment or _commit_back_comment(change.lost_by)
            change = OffsetChange(commit_back_request(change.lost_by))
        preview = preview_edit(cluster=cluster, connector=connector, request=change.request)
        return drafts.save(draft(preview, cluster), user=user, comment=comment)

    def restage_change(self, edit: OffsetEdit) -> OffsetChange:
        """The request rebuilt from the stored inputs (an import's from its rows' targets)."""
        return OffsetChange(staged_request(edit, edit.strategy))

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
        """Write through the worker or straight to Kafka, as `writes.choose_route` chooses now."""
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
        """How an open edit would be written if applied now, or a conflicted one once re-staged
        with the same inputs (the worker is asked its version)."""
        if edit.is_open or edit.state == State.CONFLICT:
            return writes.choose_route(edit)
        return None


KIND = OffsetChangesKind()


def _route(chosen: writes.Route) -> dict:
    return {"applied_via": chosen.via, "route": chosen.reason}


def partial(restore: dict[tuple[str, int], int]) -> dict:
    """Return the audit details of a group left partly committed, with what to restore."""
    return {"committed": "partial", "restore": edit_rules.restore_details(restore)}


def can_commit_back(edit: OffsetEdit) -> bool:
    """Whether `CommitBack` applies: a failed sink edit that stored what its group must hold."""
    return edit.state == OffsetEdit.State.FAILED and not edit.is_source and bool(edit.sink_keep)


def commit_back_request(lost_by: OffsetEdit) -> StageRequest:
    """The import of what a failed partial sink delete lost.

    Such an edit deleted the whole group, then failed (or was killed) before committing the
    other partitions back; `sink_keep` holds what the group must hold, stored before the
    delete. Imported, its diff against the group as it is now shows only what is missing or
    different (NothingToChange if nothing is), and it goes through approval and the lock
    check like any other edit.
    """
    if not can_commit_back(lost_by):
        raise EditStateConflict(
            f"Edit #{lost_by.pk} is not a failed sink edit with offsets to commit back."
        )
    entries = tuple(
        PartitionOffset(
            partition={"kafka_topic": topic, "kafka_partition": partition},
            offset={"kafka_offset": offset},
        )
        for topic, partition, offset in lost_by.sink_keep
    )
    return StageRequest(strategy="import", entries=entries)


def _commit_back_comment(lost_by: OffsetEdit) -> str:
    return (
        f"Commits back what edit #{lost_by.pk} lost: the group's offsets it stored before "
        "deleting the group."
    )
