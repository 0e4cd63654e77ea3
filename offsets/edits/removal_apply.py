"""Apply a claimed removal or clean-up: stop, lock check, reset, tombstone, delete, verify.

The order keeps a failure midway truthful and recoverable. The offsets go first (the worker's
KIP-875 reset, then tombstones for whatever is still live, then the group delete) and the
connector last: while it exists, stopped, a second removal (or a delete by hand) finishes
the job, and no connector of the same name can be created meanwhile and silently resume from
half-deleted offsets. Deleting the connector first would leave exactly such an orphan. The
reset needs the connector to exist anyway. The first step that fails ends the apply (later
steps are not taken); the edit is then judged by reading everything back, and its error
lists the steps taken and what is left.
"""

import json
import logging
import time

from django.conf import settings
from django.utils import timezone

from offsets.edits.connector_control import control_connector
from offsets.edits.errors import EditForbidden
from offsets.edits.live import LiveReader
from offsets.edits.outcome import as_bytes, fail, finish, release, settle_checks, sink_offset
from offsets.formats import edit_rules, removal_rules
from offsets.formats.edit_rules import CheckResult, Observed
from offsets.formats.masking import mask_text
from offsets.formats.removal_rules import Steps
from offsets.kafka import groups, offsets_writer
from offsets.kafka.connect_rest import ConnectorUnknown, ConnectRest, ConnectRestError, WorkerInfo
from offsets.kafka.errors import KafkaUnavailable, TopicNotFound
from offsets.models import AuditEvent, OffsetEdit

logger = logging.getLogger(__name__)

State = OffsetEdit.State
Action = AuditEvent.Action
Via = OffsetEdit.AppliedVia
CONNECTOR_ABSENT = "connector-absent"
KAFKA_ERRORS = (KafkaUnavailable, TopicNotFound)
# How long the read-back waits for a deleted connector's configuration to go.
GONE_WAIT_SECONDS = 5.0
POLL_SECONDS = 0.5


def apply(edit: OffsetEdit, user) -> OffsetEdit:
    """Apply a claimed REMOVE or CLEANUP edit; return it in its final state."""
    steps = Steps()
    try:
        if edit.strategy == OffsetEdit.Strategy.REMOVE:
            return _remove(edit, user, steps)
        return _cleanup(edit, user, steps)
    except Exception as exc:
        # A bug must not strand the edit "applying": say what was done before it.
        logger.exception("Removal edit %s failed unexpectedly", edit.pk)
        message = f"The apply failed unexpectedly: {exc}. Steps taken: {steps.text()}"
        if not steps.done:
            release(edit, user, [], f"{message} Nothing was done.")
            return edit
        return fail(edit, user, edit.lock_checks, message, {"steps": steps.done})


def connector_exists(rest: ConnectRest, name: str, *, wait: float = 0.0) -> bool:
    """Whether the worker has the connector's configuration, waiting up to `wait` seconds for
    it to go.

    The configuration, not the status: a deleted connector's status may still answer for a
    moment, while its configuration is gone once the worker acknowledged the delete.
    """
    deadline = time.monotonic() + wait
    while True:
        try:
            rest.config(name)
        except ConnectorUnknown:
            return False
        if time.monotonic() >= deadline:
            return True
        time.sleep(POLL_SECONDS)


def read_latest(reader: LiveReader, topics: list[str]) -> dict[str, dict]:
    """Each offsets topic's live records (a topic that does not exist holds nothing)."""
    latest = {}
    for topic in topics:
        try:
            latest[topic] = reader.latest(topic).offsets
        except TopicNotFound:
            latest[topic] = {}
    return latest


def live_values(edit: OffsetEdit, reader: LiveReader) -> dict[removal_rules.TopicKey, bytes]:
    """Every live key of the edit's connector in the topics it was staged over, with its value."""
    latest = read_latest(reader, edit.parameters.get("topics", []))
    keys = removal_rules.connector_keys(latest, edit.connector)
    return {key: record.value_bytes for key, record in keys.items()}


def removal_checks(edit: OffsetEdit) -> list[CheckResult]:
    """The lock check of a removal: absent (clean-up), group empty (sinks), nothing moved."""
    reader = LiveReader(edit.cluster)
    checks = []
    if edit.strategy == OffsetEdit.Strategy.CLEANUP:
        checks.append(_absent_check(edit, reader))
    changes = list(edit.changes.all())
    if edit.is_source:
        staged = {(c.topic, bytes(c.key_bytes)): as_bytes(c.before_bytes) for c in changes}
        observed = removal_rules.moved(staged, live_values(edit, reader))
    else:
        group = groups.describe_group(
            reader.kafka, edit.group_id, timeout=settings.KAFKA_READ_TIMEOUT
        )
        checks.append(
            edit_rules.check_group_inactive(
                group_id=edit.group_id, state=group.state, member_count=group.member_count
            )
        )
        staged = {(c.topic, c.kafka_partition): sink_offset(c.before) for c in changes}
        now = reader.committed(edit.group_id)
        observed = [
            Observed(
                f"{topic}-{partition}", staged.get((topic, partition)), now.get((topic, partition))
            )
            for topic, partition in sorted(set(staged) | set(now))
        ]
    checks.append(edit_rules.check_nothing_moved(observed))
    checks.append(edit_rules.check_single_apply(claimed=True))
    return checks


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


def _remove(edit: OffsetEdit, user, steps: Steps) -> OffsetEdit:
    worker = _worker(edit)
    if isinstance(worker, str):
        release(edit, user, [], worker)
        return edit
    rest, info = worker
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
        return edit
    if not outcome.ok:
        release(edit, user, [], f"{outcome.message} Nothing was deleted.")
        return edit
    steps.add("stop", outcome.message, answer=outcome.answer)
    checks = _checks(edit, user, steps)
    if checks is None:
        return edit
    via = _reset(edit, rest, info, steps)
    if not steps.error:
        write_leftovers(edit, steps)
    if not steps.error:
        _delete(edit, rest, steps)
    return _verify(edit, user, checks, steps, rest, via)


def _cleanup(edit: OffsetEdit, user, steps: Steps) -> OffsetEdit:
    rest = None
    if edit.cluster.connect_url:
        try:
            rest = ConnectRest.for_cluster(edit.cluster)
            exists = connector_exists(rest, edit.connector)
        except ConnectRestError as exc:
            release(
                edit,
                user,
                [],
                f"The Connect worker could not confirm that {edit.connector!r} is gone: "
                f"{exc.message} Nothing was done.",
            )
            return edit
        if exists:
            release(
                edit,
                user,
                [],
                f"{edit.connector!r} exists on the worker: cleaning up would delete a live "
                "connector's offsets. Stage “Delete connector with its offsets” instead. "
                "Nothing was done.",
            )
            return edit
        steps.add("absent", f"The worker has no connector {edit.connector!r}.")
    checks = _checks(edit, user, steps)
    if checks is None:
        return edit
    write_leftovers(edit, steps)
    return _verify(edit, user, checks, steps, rest, Via.TOPIC)


def _worker(edit: OffsetEdit) -> tuple[ConnectRest, WorkerInfo] | str:
    """The worker that deletes the connector, or why there is none (nothing was done)."""
    name = edit.connector
    if not edit.cluster.connect_url:
        return (
            f"Deleting a connector needs its Connect worker, and {edit.cluster.name} has no "
            "worker URL (add_cluster --update --connect-url URL). Nothing was done."
        )
    try:
        rest = ConnectRest.for_cluster(edit.cluster)
        info = rest.worker_info()
        exists = connector_exists(rest, name)
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


def _checks(edit: OffsetEdit, user, steps: Steps) -> list[dict] | None:
    """Run the lock check; None once a refusal or a conflict settled the edit."""
    after = f" Steps taken: {steps.text()}" if steps.done else ""
    try:
        results = removal_checks(edit)
    except KAFKA_ERRORS as exc:
        release(edit, user, [], f"The lock check could not read the cluster: {exc}.{after}")
        return None
    return settle_checks(
        edit,
        user,
        results,
        refused_end=f".{after}",
        conflict_end=after,
        extra={"steps": steps.done},
    )


def _reset(edit: OffsetEdit, rest: ConnectRest, info: WorkerInfo, steps: Steps) -> str:
    """Reset the offsets through the worker when it can (KIP-875); return how they went."""
    if edit.mirror_topic:
        # Seen on Connect 4.x with exactly-once source support: resetting a connector that
        # has its own offsets topic writes the own topic, then fails adding the worker
        # topic to the transaction (IllegalStateException in setPrimaryThenSecondary), and
        # the request never answers. The tombstones below reach both topics.
        steps.add(
            "reset-skipped",
            f"The connector has its own offsets topic ({edit.primary_topic}): its offsets are "
            "deleted directly, since a worker's reset of such a connector can hang.",
        )
        return Via.TOPIC
    if not info.capabilities.offsets_write:
        steps.add(
            "reset-skipped",
            f"The worker (version {info.version}) cannot reset offsets (KIP-875 needs Connect "
            "3.6+): they are deleted directly.",
        )
        return Via.TOPIC
    try:
        answer = rest.reset_offsets(edit.connector)
    except ConnectRestError as exc:
        # Whatever the worker did or not, the tombstones below cover every key still live.
        steps.add(
            "reset-refused",
            f"The worker did not reset the offsets ({exc.message}): they are deleted directly.",
        )
        return Via.TOPIC
    steps.add(
        "reset",
        "The worker reset the connector's offsets.",
        answer=mask_text(json.dumps(answer)) if answer is not None else "",
    )
    return Via.WORKER


def write_leftovers(edit: OffsetEdit, steps: Steps) -> None:
    """Tombstone each staged key still live (one transaction per topic, the exact key bytes),
    or delete the sink's group if it still has offsets."""
    reader = LiveReader(edit.cluster)
    kafka, timeout = edit.cluster.kafka_settings(), settings.KAFKA_WRITE_TIMEOUT
    if not edit.is_source:
        if edit.group_id and reader.committed(edit.group_id):
            try:
                groups.delete_group(kafka, edit.group_id, timeout=timeout)
            except KafkaUnavailable as exc:
                steps.failed("group-delete", f"Deleting group {edit.group_id} failed: {exc}.")
                return
            steps.add("group-delete", f"Deleted group {edit.group_id}.")
        return
    live = live_values(edit, reader)
    by_topic: dict[str, list[offsets_writer.OffsetWrite]] = {}
    for change in edit.changes.all():
        key = bytes(change.key_bytes)
        if (change.topic, key) in live:
            by_topic.setdefault(change.topic, []).append(
                offsets_writer.OffsetWrite(change.topic, key, None)
            )
    for topic, writes in by_topic.items():
        if not _tombstones(edit, topic, writes, steps):
            return


def _tombstones(
    edit: OffsetEdit, topic: str, writes: list[offsets_writer.OffsetWrite], steps: Steps
) -> bool:
    try:
        result = offsets_writer.write_transaction(
            edit.cluster.kafka_settings(),
            writes,
            transactional_id=offsets_writer.transactional_id(edit.cluster.name, edit.connector),
            timeout=settings.KAFKA_WRITE_TIMEOUT,
        )
    except offsets_writer.WriteNotCommitted as exc:
        steps.failed("tombstones", f"No tombstone was written to {topic}: {exc}")
        return False
    except KAFKA_ERRORS as exc:
        steps.failed("tombstones", f"The tombstones to {topic} may not have been committed: {exc}")
        return False
    steps.add(
        "tombstones",
        f"Wrote {len(writes)} tombstone(s) to {topic}.",
        topic=topic,
        records=[{"partition": r.partition, "offset": r.offset} for r in result.records],
    )
    return True


def _delete(edit: OffsetEdit, rest: ConnectRest, steps: Steps) -> None:
    try:
        rest.delete(edit.connector)
    except ConnectRestError as exc:
        # A lost answer may hide a delete that landed: the read-back below tells.
        steps.failed("delete", f"Deleting the connector on the worker failed: {exc.message}")
        return
    steps.add("delete", f"Deleted the connector {edit.connector!r} on the worker.")


def _verify(
    edit: OffsetEdit, user, checks: list[dict], steps: Steps, rest: ConnectRest | None, via: str
) -> OffsetEdit:
    """Read back: no live key, no committed offset, no connector; finish applied or failed."""
    OffsetEdit.objects.filter(pk=edit.pk, state=State.APPLYING).update(
        applied_via=via, updated=timezone.now()
    )
    extra = {"steps": steps.done, "applied_via": via}
    try:
        left = _left(edit, rest)
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


def reconcile(edit: OffsetEdit, user, *, error: str = "", comment: str = "") -> OffsetEdit:
    """Settle a removal left "applying" (its process died) by reading back what is left.

    Nothing of the connector left: applied. Anything left: failed, naming it; staging a new
    removal or clean-up finishes the job. Raises KafkaUnavailable when Kafka or the worker
    cannot be read (the edit stays "applying").
    """
    if edit.is_source:
        # A tombstone transaction a dead process left open is resolved before the read.
        offsets_writer.fence(
            edit.cluster.kafka_settings(),
            offsets_writer.transactional_id(edit.cluster.name, edit.connector),
            timeout=settings.KAFKA_WRITE_TIMEOUT,
        )
    try:
        rest = ConnectRest.for_cluster(edit.cluster) if edit.cluster.connect_url else None
        left = _left(edit, rest)
    except ConnectRestError as exc:
        raise KafkaUnavailable(f"The Connect worker could not be read: {exc.message}") from exc
    details = {"reconciled": "; ".join(left) or "Nothing of the connector is left."}
    if not left:
        return finish(edit, State.APPLIED, Action.RECONCILED, user, comment=comment, extra=details)
    why = f"{error or 'The apply was interrupted.'} Reading back found: {'; '.join(left)}."
    return finish(
        edit, State.FAILED, Action.RECONCILED, user, comment=comment, error=why, extra=details
    )


def _left(edit: OffsetEdit, rest: ConnectRest | None) -> list[str]:
    reader = LiveReader(edit.cluster)
    keys = list(live_values(edit, reader)) if edit.is_source else []
    group = reader.committed(edit.group_id) if edit.group_id else {}
    exists = rest is not None and connector_exists(rest, edit.connector, wait=GONE_WAIT_SECONDS)
    return removal_rules.leftovers(keys, edit.group_id, group, exists)
