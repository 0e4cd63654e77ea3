"""A removal: delete a connector with every offset it has (REMOVE), or clean up the offsets a
connector that is gone left behind (CLEANUP).

Either is one edit, approved by a second person like any other: one change per (offsets
topic, source partition), with the exact key and value bytes read now, or one per committed
partition of a sink's group. The apply (after the claim) stops the connector, runs the lock
check, resets the offsets through the worker, tombstones what is still live, deletes the
connector and reads everything back (`steps` holds each step; `rules` the pure rules).

The order keeps a failure midway truthful and recoverable. The offsets go first and the
connector last: while it exists, stopped, a second removal (or a delete by hand) finishes
the job, and no connector of the same name can be created meanwhile and silently resume from
half-deleted offsets. Deleting the connector first would leave exactly such an orphan. The
reset needs the connector to exist anyway. The first step that fails ends the apply (later
steps are not taken); the edit is then judged by reading everything back, and its error
lists the steps taken and what is left.
"""

import logging
from dataclasses import dataclass

from django.utils import timezone

from offsets.domain import edits as edit_rules
from offsets.domain.connectors import Connector
from offsets.domain.edits import CheckResult, Observed
from offsets.edits import drafts
from offsets.edits.audit import fail, finish, release
from offsets.edits.connector_control import control_connector
from offsets.edits.errors import (
    ConnectorNotFound,
    EditForbidden,
    EditStateConflict,
    NothingToChange,
)
from offsets.edits.kinds.base import Attempt, EditKind
from offsets.edits.kinds.removal import rules
from offsets.edits.kinds.removal import steps as removal_steps
from offsets.edits.kinds.removal.steps import KAFKA_ERRORS, RemovalPlan
from offsets.edits.live import (
    LiveReader,
    as_bytes,
    fence,
    group_inactive_check,
    read_connector,
    sink_offset,
)
from offsets.kafka.connect_rest import ConnectRest, ConnectRestError
from offsets.kafka.errors import KafkaUnavailable
from offsets.models import AuditEvent, Cluster, OffsetEdit, OffsetEditChange, SourceOffset

logger = logging.getLogger(__name__)

State = OffsetEdit.State
Action = AuditEvent.Action
Strategy = OffsetEdit.Strategy
Via = OffsetEdit.AppliedVia
CONNECTOR_ABSENT = "connector-absent"


@dataclass(frozen=True)
class Removal:
    """Delete an existing connector with every offset it has."""

    strategy = Strategy.REMOVE


@dataclass(frozen=True)
class Cleanup:
    """Delete the offsets a connector that is gone left behind."""

    strategy = Strategy.CLEANUP


class RemovalKind(EditKind):
    name = "removal"
    strategies = (Strategy.REMOVE, Strategy.CLEANUP)
    inputs = (Removal, Cleanup)

    def stage(
        self,
        *,
        cluster: Cluster,
        connector: str,
        user,
        change: Removal | Cleanup,
        comment: str = "",
    ) -> OffsetEdit:
        """Stage deleting a connector with its offsets, or cleaning up what it left."""
        drafts.require_editor(user, cluster, connector)
        strategy = change.strategy
        reader = LiveReader(cluster)
        context = _context(cluster, connector, reader)
        on_worker, worker_note = removal_steps.worker_has(cluster, connector)
        check_strategy(strategy, context, on_worker)
        warnings = [worker_note] if worker_note else []
        plan = removal_steps.read_plan(cluster, context, reader)
        if strategy == Strategy.CLEANUP and not plan.change_count:
            raise NothingToChange(
                f"Nothing to clean up: {connector!r} has no live offsets in "
                f"{', '.join(plan.topics) or 'any offsets topic'} and no committed offsets in its "
                "group.",
                field="connector",
            )
        warnings += _warnings(context, plan, strategy)
        parameters = {"topics": plan.topics, "tombstones": plan.tombstones()}
        if not context.is_source:
            parameters.update(group=context.group_id, group_partitions=len(plan.committed))
        draft = drafts.Draft(
            cluster=cluster,
            connector=context.name,
            connector_type=context.type,
            strategy=strategy,
            parameters=parameters,
            warnings=warnings,
            rows=_rows(plan),
            primary_topic=context.primary_topic,
            mirror_topic=context.worker_topic if context.own_topic else "",
            group_id=context.group_id,
            audit_topics=True,
        )
        return drafts.save(draft, user=user, comment=comment)

    def restage_change(self, edit: OffsetEdit) -> Removal | Cleanup:
        """The same strategy: the plan is read again from what the connector holds now."""
        return Cleanup() if edit.strategy == Strategy.CLEANUP else Removal()

    def prepare(self, attempt: Attempt) -> bool:
        """REMOVE: the worker has the connector and stops it. CLEANUP: the worker lacks it."""
        if attempt.edit.strategy == Strategy.REMOVE:
            return _stop(attempt)
        return _confirm_gone(attempt)

    def lock_checks(self, edit: OffsetEdit) -> list[CheckResult]:
        """Absent (clean-up), group empty (sinks), nothing moved (every key, every offset)."""
        reader = LiveReader(edit.cluster)
        checks = []
        if edit.strategy == Strategy.CLEANUP:
            checks.append(_absent_check(edit, reader))
        changes = list(edit.changes.all())
        if edit.is_source:
            staged = {(c.topic, bytes(c.key_bytes)): as_bytes(c.before_bytes) for c in changes}
            observed = rules.moved(staged, removal_steps.live_values(edit, reader))
        else:
            checks.append(group_inactive_check(edit, edit.group_id))
            staged = {(c.topic, c.kafka_partition): sink_offset(c.before) for c in changes}
            now = reader.committed(edit.group_id)
            observed = [
                Observed(
                    f"{topic}-{partition}",
                    staged.get((topic, partition)),
                    now.get((topic, partition)),
                )
                for topic, partition in sorted(set(staged) | set(now))
            ]
        checks.append(edit_rules.check_nothing_moved(observed))
        return checks

    def unreadable(self, attempt: Attempt, exc: Exception) -> str | None:
        if isinstance(exc, KAFKA_ERRORS):
            return f"The lock check could not read the cluster: {exc}.{_steps_taken(attempt)}"
        return None  # `unexpected` settles it, naming the steps taken

    def settle_options(self, attempt: Attempt) -> dict:
        after = _steps_taken(attempt)
        return {
            "refused_end": f".{after}",
            "conflict_end": after,
            "extra": {"steps": attempt.steps.done},
        }

    def write(self, attempt: Attempt) -> dict:
        """REMOVE: reset, tombstones, delete the connector. CLEANUP: tombstones."""
        edit, steps = attempt.edit, attempt.steps
        if edit.strategy != Strategy.REMOVE:
            removal_steps.write_leftovers(edit, steps)
            return {"applied_via": Via.TOPIC}
        via = removal_steps.reset(edit, attempt.rest, attempt.worker, steps)
        if not steps.error:
            removal_steps.write_leftovers(edit, steps)
        if not steps.error:
            removal_steps.delete(edit, attempt.rest, steps)
        return {"applied_via": via}

    def verify(self, attempt: Attempt, written: dict) -> OffsetEdit:
        """Read back: no live key, no committed offset, no connector; applied or failed."""
        edit, user, checks, steps = attempt.edit, attempt.user, attempt.checks, attempt.steps
        via = written["applied_via"]
        OffsetEdit.objects.filter(pk=edit.pk, state=State.APPLYING).update(
            applied_via=via, updated=timezone.now()
        )
        extra = {"steps": steps.done, "applied_via": via}
        try:
            left = removal_steps.left(edit, attempt.rest)
        except (*KAFKA_ERRORS, ConnectRestError) as exc:
            seen = getattr(exc, "message", str(exc))
            if steps.error:
                error = f"{steps.error} Steps taken: {steps.text()} Reading back failed: {seen}"
                return fail(edit, user, checks, error, {**extra, "verified": False})
            extra.update(verified=False, verify_error=seen)
            return finish(edit, State.APPLIED, Action.APPLIED, user, checks=checks, extra=extra)
        if not left:
            extra.update(verified=True, verification="Nothing of the connector is left.")
            return finish(edit, State.APPLIED, Action.APPLIED, user, checks=checks, extra=extra)
        cause = steps.error or "Every step reported success"
        error = f"{cause}, but reading back found: {'; '.join(left)}. Steps taken: {steps.text()}"
        return fail(edit, user, checks, error, {**extra, "verified": False, "left": left})

    def unexpected(self, attempt: Attempt, exc: Exception) -> OffsetEdit:
        """A bug must not strand the edit "applying": say what was done before it."""
        edit, steps = attempt.edit, attempt.steps
        logger.error("Removal edit %s failed unexpectedly", edit.pk, exc_info=exc)
        message = f"The apply failed unexpectedly: {exc}. Steps taken: {steps.text()}"
        if not steps.done:
            release(edit, attempt.user, [], f"{message} Nothing was done.")
            return edit
        return fail(edit, attempt.user, edit.lock_checks, message, {"steps": steps.done})

    def reconcile(
        self, edit: OffsetEdit, user, *, error: str = "", comment: str = ""
    ) -> OffsetEdit:
        """Settle a removal left "applying" (its process died) by reading back what is left.

        Nothing of the connector left: applied. Anything left: failed, naming it; staging a new
        removal or clean-up finishes the job. Raises KafkaUnavailable when Kafka or the worker
        cannot be read (the edit stays "applying").
        """
        if edit.is_source:
            fence(edit)
        try:
            rest = ConnectRest.for_cluster(edit.cluster) if edit.cluster.connect_url else None
            left = removal_steps.left(edit, rest)
        except ConnectRestError as exc:
            raise KafkaUnavailable(f"The Connect worker could not be read: {exc.message}") from exc
        details = {"reconciled": "; ".join(left) or "Nothing of the connector is left."}
        if not left:
            return finish(
                edit, State.APPLIED, Action.RECONCILED, user, comment=comment, extra=details
            )
        why = f"{error or 'The apply was interrupted.'} Reading back found: {'; '.join(left)}."
        return finish(
            edit, State.FAILED, Action.RECONCILED, user, comment=comment, error=why, extra=details
        )

    def describe(self, edit: OffsetEdit) -> dict:
        """The steps the removal or clean-up takes."""
        return {
            "plan": rules.plan_lines(
                strategy=edit.strategy,
                connector=edit.connector,
                tombstones=edit.parameters.get("tombstones", {}),
                group_id=edit.group_id,
                group_partitions=edit.parameters.get("group_partitions", 0),
            )
        }


KIND = RemovalKind()


# --- Staging ------------------------------------------------------------------------------------


def _context(cluster: Cluster, connector: str, reader: LiveReader) -> Connector:
    """The connector as the config topic knows it, or the offsets of one it forgot.

    The config topic may have been compacted down to nothing for a deleted connector whose
    offsets remain in an offsets topic the refresh recorded, or whose sink group remains.
    """
    try:
        return read_connector(cluster=cluster, connector=connector, reader=reader)
    except ConnectorNotFound:
        known = SourceOffset.objects.filter(cluster=cluster, connector=connector).exists()
        group = f"connect-{connector}"
        common = {
            "name": connector,
            "deleted": True,
            "target_state": None,
            "connector_state": None,
            "task_states": {},
            "mirrormaker2": False,
        }
        if known:
            worker = cluster.offsets_topic
            return Connector(type="source", primary_topic=worker, worker_topic=worker, **common)
        if reader.committed(group):
            return Connector(type="sink", group_id=group, **common)
        raise


def check_strategy(strategy: str, context: Connector, on_worker: bool | None) -> None:
    """Refuse a removal of a connector that is gone, or a clean-up of one that exists.

    The worker's answer and the config topic must agree that a connector is gone before its
    offsets are cleaned up: either one saying it exists is enough to refuse.
    """
    if strategy == Strategy.REMOVE:
        if on_worker is False or (on_worker is None and context.deleted):
            where = " on the worker" if on_worker is False else ""
            raise EditStateConflict(
                f"{context.name!r} does not exist{where} any more: stage a clean-up of the "
                "offsets it left instead."
            )
        return
    if on_worker or not context.deleted:
        where = "on the worker" if on_worker else "in the config topic"
        raise EditStateConflict(
            f"{context.name!r} still exists ({where}): use “Delete connector with its "
            "offsets”, which stops and deletes it first."
        )


def _warnings(context: Connector, plan: RemovalPlan, strategy: str) -> list[str]:
    warnings = []
    if strategy == Strategy.REMOVE and not context.deleted and context.target_state != "STOPPED":
        warnings.append(
            f"The connector is {context.target_state}: the apply stops it first. Its offsets "
            "may move until then, which makes the apply a conflict; stop it before staging "
            "so that the offsets shown are its last."
        )
    if context.own_topic:
        warnings.append(
            f"The connector has its own offsets topic {context.primary_topic}: its keys are "
            f"deleted there and in the worker's topic {context.worker_topic}."
        )
    if context.mirrormaker2:
        warnings.append("MirrorMaker 2: offset syncs and checkpoints it wrote are not deleted.")
    if not plan.change_count:
        warnings.append("The connector has no offsets: only the connector is deleted.")
    return warnings


def _rows(plan: RemovalPlan) -> list[OffsetEditChange]:
    rows = [
        drafts.source_row(
            partition=record.partition,
            key=key,
            topic=topic,
            before=record.offset,
            before_bytes=record.value_bytes,
            is_delete=True,
        )
        for (topic, key), record in plan.source.items()
    ]
    rows += [
        drafts.sink_row(topic=topic, partition=partition, before=offset, after=None, is_delete=True)
        for (topic, partition), offset in sorted(plan.committed.items())
    ]
    return rows


# --- Before the lock check ----------------------------------------------------------------------


def _stop(attempt: Attempt) -> bool:
    """Find the worker that deletes the connector and stop the connector through it."""
    edit, user = attempt.edit, attempt.user
    worker = _worker(edit)
    if isinstance(worker, str):
        release(edit, user, [], worker)
        return False
    attempt.rest, attempt.worker = worker
    try:
        outcome = control_connector(
            cluster=edit.cluster,
            connector=edit.connector,
            action="stop",
            user=user,
            comment=f"Stopped to apply edit #{edit.pk}: delete it with its offsets.",
        )
    except (ConnectRestError, EditForbidden) as exc:
        release(edit, user, [], f"Stopping the connector failed: {exc.message} Nothing was done.")
        return False
    if not outcome.ok:
        release(edit, user, [], f"{outcome.message} Nothing was deleted.")
        return False
    attempt.steps.add("stop", outcome.message, answer=outcome.answer)
    return True


def _worker(edit: OffsetEdit):
    """The worker that deletes the connector and what it runs, or why there is none."""
    name = edit.connector
    if not edit.cluster.connect_url:
        return (
            f"Deleting a connector needs its Connect worker, and {edit.cluster.name} has no "
            "worker URL (add_cluster --update --connect-url URL). Nothing was done."
        )
    try:
        rest = ConnectRest.for_cluster(edit.cluster)
        info = rest.worker_info()
        exists = removal_steps.connector_exists(rest, name)
    except ConnectRestError as exc:
        return (
            f"Deleting a connector needs its Connect worker, which did not answer as one: "
            f"{exc.message} Nothing was done."
        )
    if not exists:
        return (
            f"The worker has no connector {name!r} (deleted since staging?). Nothing was done: "
            "stage a clean-up of the offsets it left instead."
        )
    return rest, info


def _confirm_gone(attempt: Attempt) -> bool:
    """A clean-up: the worker, if the cluster has one, must not have the connector."""
    edit, user = attempt.edit, attempt.user
    if not edit.cluster.connect_url:
        return True
    try:
        attempt.rest = ConnectRest.for_cluster(edit.cluster)
        exists = removal_steps.connector_exists(attempt.rest, edit.connector)
    except ConnectRestError as exc:
        release(
            edit,
            user,
            [],
            f"The Connect worker could not confirm that {edit.connector!r} is gone: "
            f"{exc.message} Nothing was done.",
        )
        return False
    if exists:
        release(
            edit,
            user,
            [],
            f"{edit.connector!r} exists on the worker: cleaning up would delete a live "
            "connector's offsets. Stage “Delete connector with its offsets” instead. "
            "Nothing was done.",
        )
        return False
    attempt.steps.add("absent", f"The worker has no connector {edit.connector!r}.")
    return True


def _absent_check(edit: OffsetEdit, reader: LiveReader) -> CheckResult:
    config = reader.configs().connectors.get(edit.connector)
    if config is None or config.deleted:
        return CheckResult(CONNECTOR_ABSENT, True, "The config topic holds no such connector.")
    return CheckResult(
        CONNECTOR_ABSENT,
        False,
        f"{edit.cluster.configs_topic} holds a configuration of {edit.connector!r}: it exists. "
        "Stage “Delete connector with its offsets” instead.",
    )


def _steps_taken(attempt: Attempt) -> str:
    return f" Steps taken: {attempt.steps.text()}" if attempt.steps.done else ""
