"""Apply a staged move (KIP-980): create the connector on the target STOPPED, write its offsets
(KIP-875 PATCH), verify them, and resume it there when an approver asks.

The connector on its own cluster is left STOPPED: deleting it there is the operator's call,
once it runs on the target. Anything that fails after the create is rolled back (the offsets
written are put back as the target held them, the connector is deleted there), so a move is
done or not done, never half done.
"""

import json
import logging
import time

from offsets.edits import move_checks
from offsets.edits.connector_control import control_connector
from offsets.edits.errors import (
    ConnectorNotFound,
    EditError,
    EditForbidden,
    EditStateConflict,
)
from offsets.edits.outcome import fail, finish, release, settle_checks
from offsets.edits.roles import can_approve
from offsets.formats import moves
from offsets.formats.masking import mask_text
from offsets.kafka.connect_rest import (
    ConnectAuthFailed,
    ConnectBadRequest,
    ConnectorUnknown,
    ConnectRebalancing,
    ConnectRest,
    ConnectRestError,
)
from offsets.kafka.errors import KafkaUnavailable
from offsets.models import AuditEvent, OffsetEdit

logger = logging.getLogger(__name__)

State = OffsetEdit.State
Action = AuditEvent.Action
# A connector created STOPPED reaches the leader's view within a rebalance; its offsets can
# only be written once the worker knows it is STOPPED with no tasks.
SETTLE_SECONDS = 30.0
POLL_SECONDS = 0.5


def patch_entries(edit: OffsetEdit, *, restore: bool = False) -> list[dict]:
    """The KIP-875 PATCH body's offsets: the move's (after), or the target's own (before)."""
    entries = []
    for change in edit.changes.all():
        value = change.before if restore else change.after
        if edit.is_source:
            entries.append(moves.source_entry(change.partition, value))
        else:
            offset = None if value is None else int(value["kafka_offset"])
            entries.append(moves.sink_entry(change.topic, change.kafka_partition, offset))
    return entries


# --- Apply --------------------------------------------------------------------------------------


def apply_claimed(edit: OffsetEdit, user) -> OffsetEdit:
    """Lock-check a claimed move, create the connector on the target STOPPED, write, verify."""
    checks = _check(edit, user)
    if checks is None:
        return edit
    rest = ConnectRest.for_cluster(edit.target_cluster)
    target = edit.target_cluster.name
    try:
        created = rest.create(edit.connector, edit.connector_config, initial_state="STOPPED")
    except (ConnectBadRequest, ConnectRebalancing, ConnectAuthFailed) as exc:
        # A clear refusal (invalid config, the name taken meanwhile): nothing was created.
        release(edit, user, checks, _create_refused(target, edit.connector, exc))
        return edit
    except ConnectRestError as exc:
        return _create_in_doubt(edit, user, checks, rest, exc)
    return _write_and_verify(edit, user, checks, rest, _without_config(created))


def _create_refused(target: str, connector: str, exc: ConnectRestError) -> str:
    # Connect answers 409 both while rebalancing and for a name that exists: say which.
    if exc.status == 409 and "already exists" in exc.message:
        return (
            f"{target} already has a connector named {connector!r} (created since the lock "
            f"check): nothing was created. The worker said: {exc.message}"
        )
    return f"{target} refused to create the connector: {exc.message}"


def _check(edit: OffsetEdit, user) -> list[dict] | None:
    """Run the move's lock check; None once a refusal or a conflict settled the edit."""
    try:
        results = move_checks.lock_checks(edit)
    except (KafkaUnavailable, ConnectorNotFound, EditError) as exc:
        release(edit, user, [], f"The lock check could not read the clusters: {exc}")
        return None
    except ConnectRestError as exc:
        release(edit, user, [], f"The lock check could not ask the target's worker: {exc.message}")
        return None
    except Exception as exc:
        # Nothing has been written yet: give the claim back rather than strand the edit.
        logger.exception("Lock check of move %s failed", edit.pk)
        release(edit, user, [], f"The lock check failed unexpectedly: {exc}")
        return None
    return settle_checks(edit, user, results, what="move")


def _create_in_doubt(edit, user, checks, rest: ConnectRest, exc: ConnectRestError) -> OffsetEdit:
    """The create got no clear answer: the connector may exist on the target now."""
    said = exc.message.rstrip(". ")
    message = f"Creating the connector on {edit.target_cluster.name} failed: {said}"
    try:
        exists = rest.exists(edit.connector)
    except ConnectRestError as check_error:
        return fail(
            edit,
            user,
            checks,
            f"{message}. Whether it exists there could not be read ({check_error.message}): "
            f"check {edit.target_cluster.name} and delete {edit.connector} there if it does.",
            {"created": "unknown", "rolled_back": False},
        )
    if not exists:
        release(edit, user, checks, f"{message}. It does not exist there: nothing was written.")
        return edit
    # The lock check found no connector of that name a moment ago: this one is the move's.
    return _roll_back(edit, user, checks, rest, message, patched=False)


def _write_and_verify(edit, user, checks, rest: ConnectRest, created: dict) -> OffsetEdit:
    entries = patch_entries(edit)
    patched = False
    try:
        _wait_until_stopped(rest, edit.connector)
        patched = True  # from here the PATCH may have landed, even when it raises
        answer = _patch(rest, edit.connector, entries) if entries else None
        problem = moves.compare_offsets(entries, rest.offsets(edit.connector))
    except (ConnectRestError, moves.MoveRuleError) as exc:
        text = exc.message if isinstance(exc, ConnectRestError) else str(exc)
        return _roll_back(edit, user, checks, rest, f"Writing the offsets failed: {text}", patched)
    except Exception as exc:
        # Whatever broke, the connector exists on the target now: never leave it half moved.
        logger.exception("Move %s failed after the create", edit.pk)
        return _roll_back(edit, user, checks, rest, f"The move failed unexpectedly: {exc}", patched)
    if problem is not None:
        return _roll_back(edit, user, checks, rest, problem, patched)
    OffsetEdit.objects.filter(pk=edit.pk, state=State.APPLYING).update(
        applied_via=OffsetEdit.AppliedVia.WORKER
    )
    extra = {
        "target": edit.target_cluster.name,
        "created": created,
        "patch_answer": _masked(answer),
        "verified": True,
        "verification": f"GET /connectors/{edit.connector}/offsets on "
        f"{edit.target_cluster.name} holds exactly the {len(entries)} offset(s) written.",
    }
    return finish(edit, State.APPLIED, Action.APPLIED, user, checks=checks, extra=extra)


def _wait_until_stopped(rest: ConnectRest, connector: str) -> None:
    """Wait until the target's worker reports the new connector STOPPED with no tasks."""
    deadline = time.monotonic() + SETTLE_SECONDS
    seen = "no status yet"
    while time.monotonic() < deadline:
        try:
            status = rest.status(connector)
        except (ConnectorUnknown, ConnectRebalancing):
            status = None
        if status is not None and status.is_stopped:
            return
        if status is not None:
            seen = f"{status.state} with {len(status.tasks)} task(s)"
        time.sleep(POLL_SECONDS)
    raise moves.MoveRuleError(
        f"The connector created on the target is not STOPPED after {SETTLE_SECONDS:.0f} s ({seen})."
    )


def _patch(rest: ConnectRest, connector: str, entries: list[dict]) -> dict:
    """PATCH the offsets, again while the workers are still rebalancing after the create."""
    deadline = time.monotonic() + SETTLE_SECONDS
    while True:
        try:
            return rest.alter_offsets(connector, entries)
        except ConnectRebalancing:
            if time.monotonic() >= deadline:
                raise
            time.sleep(POLL_SECONDS)


def _roll_back(edit, user, checks, rest: ConnectRest, message: str, patched: bool) -> OffsetEdit:
    """Undo the move on the target: its offsets back as they were, then delete the connector."""
    target = edit.target_cluster.name
    steps = []
    try:
        if patched and edit.changes.exists():
            _patch(rest, edit.connector, patch_entries(edit, restore=True))
            steps.append(f"the offsets on {target} were put back as they were")
        try:
            rest.delete(edit.connector)
            steps.append(f"the connector was deleted on {target}")
        except ConnectorUnknown:
            steps.append(f"the connector is not on {target} (any more)")
        rolled_back = True
    except ConnectRestError as exc:
        steps.append(
            f"ROLLING BACK FAILED ({exc.message}): delete {edit.connector} on {target} by "
            "hand, and check its offsets there"
        )
        rolled_back = False
    outcome = "; ".join(steps)
    said = message.rstrip(". ")
    return fail(
        edit,
        user,
        checks,
        f"{said}. Rolled back: {outcome}." if rolled_back else f"{said}. {outcome}.",
        {"target": target, "rolled_back": rolled_back, "rollback": outcome},
    )


def _without_config(answer) -> dict:
    """The create's answer minus the config it echoes (it holds the supplied secrets)."""
    if not isinstance(answer, dict):
        return {}
    return {key: value for key, value in answer.items() if key != "config"}


def _masked(answer) -> str:
    return "" if answer is None else mask_text(json.dumps(answer))


def reconcile_claimed(edit: OffsetEdit, user, *, error: str = "", comment: str = "") -> OffsetEdit:
    """Settle a move stuck in "applying" from what the target holds (its apply died).

    Applied when the target has the connector STOPPED with exactly the move's offsets; failed
    when it has no connector of that name (nothing is left there); failed with what to check
    when it has one with other offsets (left for a person: it may be someone else's by now).
    Raises KafkaUnavailable when the target's worker cannot be asked: the edit stays applying.
    """
    rest = ConnectRest.for_cluster(edit.target_cluster)
    target = edit.target_cluster.name
    try:
        if not rest.exists(edit.connector):
            state, why = State.FAILED, f"{error} {target} has no {edit.connector}: nothing is left"
            details = {"reconciled": f"{target} has no connector {edit.connector}."}
        else:
            problem = moves.compare_offsets(patch_entries(edit), rest.offsets(edit.connector))
            state = State.APPLIED if problem is None else State.FAILED
            why = (
                "" if problem is None else f"{error} {problem} Check {edit.connector} on {target}."
            )
            details = {"reconciled": problem or f"{target} holds the move's offsets."}
    except (ConnectRestError, moves.MoveRuleError) as exc:
        text = exc.message if isinstance(exc, ConnectRestError) else str(exc)
        raise KafkaUnavailable(f"The worker of {target} could not be read: {text}") from exc
    if state == State.APPLIED:
        OffsetEdit.objects.filter(pk=edit.pk, state=State.APPLYING).update(
            applied_via=OffsetEdit.AppliedVia.WORKER
        )
    return finish(
        edit, state, Action.RECONCILED, user, comment=comment, error=why.strip(), extra=details
    )


# --- Resume on the target -----------------------------------------------------------------------


def can_resume_on_target(edit: OffsetEdit) -> bool:
    return edit.is_move and edit.state == State.APPLIED and edit.target_cluster_id is not None


def resume_on_target(*, edit: OffsetEdit, user, comment: str = "") -> OffsetEdit:
    """Resume an applied move's connector on its target (approvers), audited there."""
    if not can_approve(user):
        raise EditForbidden("Resuming a moved connector needs the approver role.")
    if not can_resume_on_target(edit):
        raise EditStateConflict(f"Edit #{edit.pk} is not an applied move: nothing to resume.")
    outcome = control_connector(
        cluster=edit.target_cluster,
        connector=edit.connector,
        action="resume",
        user=user,
        comment=comment or f"Resumes the connector moved by edit #{edit.pk}.",
    )
    if not outcome.ok:
        raise EditStateConflict(outcome.message)
    return edit
