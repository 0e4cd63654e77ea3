"""A move (KIP-980): the connector created on another cluster STOPPED, its offsets written there
with a KIP-875 PATCH and verified, and resumed there when an approver asks.

The connector on its own cluster is left STOPPED: deleting it there is the operator's call,
once it runs on the target. Anything that fails after the create is rolled back (the offsets
written are put back as the target held them, the connector is deleted there), so a move is
done or not done, never half done. What a move reads on both sides is `reads`; its pure rules
(secrets, refusals, the PATCH body, the comparison) are `rules`.
"""

import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from offsets.domain import edits as edit_rules
from offsets.domain.edits import CheckResult
from offsets.domain.masking import mask_secrets, mask_text
from offsets.edits import drafts
from offsets.edits.audit import fail, finish, release
from offsets.edits.connector_control import resume_for_edit
from offsets.edits.errors import (
    ConnectorNotFound,
    EditError,
    EditInputError,
    EditStateConflict,
)
from offsets.edits.kinds.base import Attempt, EditKind
from offsets.edits.kinds.move import reads, rules
from offsets.edits.live import group_inactive_check
from offsets.edits.roles import require_approver
from offsets.kafka.connect_rest import (
    ConnectAuthFailed,
    ConnectBadRequest,
    ConnectorUnknown,
    ConnectRebalancing,
    ConnectRest,
    ConnectRestError,
)
from offsets.kafka.errors import KafkaUnavailable
from offsets.models import AuditEvent, Cluster, OffsetEdit, OffsetEditChange

logger = logging.getLogger(__name__)

State = OffsetEdit.State
Action = AuditEvent.Action
TARGET_READY = "target-ready"
# A connector created STOPPED reaches the leader's view within a rebalance; its offsets can
# only be written once the worker knows it is STOPPED with no tasks.
SETTLE_SECONDS = 30.0
POLL_SECONDS = 0.5


@dataclass(frozen=True)
class Move:
    """Move the connector to `target`, with the values masking hides supplied again."""

    target: Cluster
    secrets: Mapping[str, str] = field(default_factory=dict)


class MoveKind(EditKind):
    name = "move"
    strategies = (OffsetEdit.Strategy.MOVE,)
    inputs = (Move,)
    what = "move"

    def stage(
        self, *, cluster: Cluster, connector: str, user, change: Move, comment: str = ""
    ) -> OffsetEdit:
        """Stage moving `connector` from `cluster` to `change.target` as a draft with its diff
        there.

        Raises EditInputError (unfit target, secrets missing), EditStateConflict (the name
        exists on the target, the connector is deleted), ConnectorNotFound, and the REST
        adapter's errors when the target's worker cannot be asked.
        """
        target, secrets = change.target, dict(change.secrets)
        # A move needs rights on both clusters.
        for where in (cluster, target):
            drafts.require_editor(
                user, where, connector, "Staging a move needs the editor role on both clusters."
            )
        side = reads.read_source_side(cluster=cluster, connector=connector)
        reads.refuse_unfit_target(
            reads.target_facts(
                source=cluster, target=target, connector=connector, config=side.config
            )
        )
        try:
            config = rules.config_for_move(side.config, secrets)
        except rules.MoveRuleError as exc:
            raise EditInputError(str(exc), field="secrets") from None
        context = side.context
        draft = drafts.Draft(
            cluster=cluster,
            connector=connector,
            connector_type=context.type,
            strategy=OffsetEdit.Strategy.MOVE,
            # The names of the secrets supplied, never their values (those are in the config).
            parameters={"target": target.name, "secrets_supplied": sorted(secrets)},
            warnings=_warnings(cluster, target, context),
            rows=_rows(connector, side, target, config),
            primary_topic=target.offsets_topic if context.is_source else "",
            group_id="" if context.is_source else context.group_id,
            target_cluster=target,
            connector_config=config,
            audit_extra={"target": target.name, "config": mask_secrets(config)},
        )
        return drafts.save(draft, user=user, comment=comment)

    def lock_checks(self, edit: OffsetEdit) -> list[CheckResult]:
        """Source stopped (and its group idle), unchanged since staging, target fit."""
        side = reads.read_source_side(cluster=edit.cluster, connector=edit.connector)
        checks = [edit_rules.check_stopped(side.context)]
        if not side.context.is_source:
            checks.append(group_inactive_check(edit, side.context.group_id))
        checks.append(edit_rules.check_nothing_moved(reads.unchanged_observations(edit, side)))
        facts = reads.target_facts(
            source=edit.cluster,
            target=edit.target_cluster,
            connector=edit.connector,
            config=edit.connector_config or {},
        )
        problems = rules.target_problems(facts)
        checks.append(
            CheckResult(
                TARGET_READY,
                not problems,
                " ".join(problems)
                or f"{facts.target_cluster} has no {edit.connector}, has its plugin and creates "
                "connectors STOPPED (KIP-980).",
            )
        )
        return checks

    def unreadable(self, attempt: Attempt, exc: Exception) -> str | None:
        if isinstance(exc, KafkaUnavailable | ConnectorNotFound | EditError):
            return f"The lock check could not read the clusters: {exc}"
        if isinstance(exc, ConnectRestError):
            return f"The lock check could not ask the target's worker: {exc.message}"
        # Nothing has been written yet: give the claim back rather than strand the edit.
        logger.error("Lock check of move %s failed", attempt.edit.pk, exc_info=exc)
        return f"The lock check failed unexpectedly: {exc}"

    def write(self, attempt: Attempt) -> dict | None:
        """Create the connector on the target STOPPED, wait until it is, PATCH its offsets."""
        edit, user, checks = attempt.edit, attempt.user, attempt.checks
        rest = attempt.rest = ConnectRest.for_cluster(edit.target_cluster)
        try:
            created = rest.create(edit.connector, edit.connector_config, initial_state="STOPPED")
        except (ConnectBadRequest, ConnectRebalancing, ConnectAuthFailed) as exc:
            # A clear refusal (invalid config, the name taken meanwhile): nothing was created.
            release(edit, user, checks, _create_refused(edit.target_cluster.name, edit, exc))
            return None
        except ConnectRestError as exc:
            _create_in_doubt(attempt, exc)
            return None
        entries = patch_entries(edit)
        patched = False
        try:
            _wait_until_stopped(rest, edit.connector)
            patched = True  # from here the PATCH may have landed, even when it raises
            answer = _patch(rest, edit.connector, entries) if entries else None
        except Exception as exc:
            _roll_back(attempt, _failure(edit, exc), patched)
            return None
        return {"created": _without_config(created), "patch_answer": _masked(answer)}

    def verify(self, attempt: Attempt, written: dict) -> OffsetEdit:
        """GET the target's offsets: exactly the move's, or the move is rolled back."""
        edit, rest = attempt.edit, attempt.rest
        entries = patch_entries(edit)
        try:
            problem = rules.compare_offsets(entries, rest.offsets(edit.connector))
        except Exception as exc:
            return _roll_back(attempt, _failure(edit, exc), patched=True)
        if problem is not None:
            return _roll_back(attempt, problem, patched=True)
        OffsetEdit.objects.filter(pk=edit.pk, state=State.APPLYING).update(
            applied_via=OffsetEdit.AppliedVia.WORKER
        )
        target = edit.target_cluster.name
        extra = {
            "target": target,
            **written,
            "verified": True,
            "verification": f"GET /connectors/{edit.connector}/offsets on "
            f"{target} holds exactly the {len(entries)} offset(s) written.",
        }
        return finish(
            edit, State.APPLIED, Action.APPLIED, attempt.user, checks=attempt.checks, extra=extra
        )

    def reconcile(
        self, edit: OffsetEdit, user, *, error: str = "", comment: str = ""
    ) -> OffsetEdit:
        """Settle a move stuck in "applying" from what the target holds (its apply died).

        A move is written to the target cluster: only its worker can tell how it ended.
        Applied when the target has the connector with exactly the move's offsets; failed when
        it has no connector of that name (nothing is left there); failed with what to check
        when it has one with other offsets (left for a person: it may be someone else's by
        now). Raises KafkaUnavailable when the target's worker cannot be asked.
        """
        rest = ConnectRest.for_cluster(edit.target_cluster)
        target = edit.target_cluster.name
        try:
            if not rest.exists(edit.connector):
                state, why = (
                    State.FAILED,
                    f"{error} {target} has no {edit.connector}: nothing is left",
                )
                details = {"reconciled": f"{target} has no connector {edit.connector}."}
            else:
                problem = rules.compare_offsets(patch_entries(edit), rest.offsets(edit.connector))
                state = State.APPLIED if problem is None else State.FAILED
                why = (
                    ""
                    if problem is None
                    else f"{error} {problem} Check {edit.connector} on {target}."
                )
                details = {"reconciled": problem or f"{target} holds the move's offsets."}
        except (ConnectRestError, rules.MoveRuleError) as exc:
            text = exc.message if isinstance(exc, ConnectRestError) else str(exc)
            raise KafkaUnavailable(f"The worker of {target} could not be read: {text}") from exc
        if state == State.APPLIED:
            OffsetEdit.objects.filter(pk=edit.pk, state=State.APPLYING).update(
                applied_via=OffsetEdit.AppliedVia.WORKER
            )
        return finish(
            edit, state, Action.RECONCILED, user, comment=comment, error=why.strip(), extra=details
        )

    def describe(self, edit: OffsetEdit) -> dict:
        """The config as shown (masked) and, once applied, its last resume on the target."""
        resumed = None
        if edit.state == State.APPLIED and edit.finished_at:
            resumed = (
                AuditEvent.objects.filter(
                    cluster_id=edit.target_cluster_id,
                    connector=edit.connector,
                    action=Action.RESUMED,
                    at__gte=edit.finished_at,
                )
                .order_by("-at")
                .first()
            )
        # The approver sees no secret value, so the page names the keys the editor re-typed:
        # the config they approve holds values only the editor has seen.
        supplied = edit.parameters.get("secrets_supplied") if edit.parameters else None
        retyped = sorted(key for key in supplied or [] if isinstance(key, str))
        return {
            "move_config": [
                (key, value, key in retyped)
                for key, value in sorted(mask_secrets(edit.connector_config or {}).items())
            ],
            "move_retyped": retyped,
            "target_resumed": resumed,
        }


KIND = MoveKind()


def _rows(connector: str, side, target: Cluster, config: dict) -> list[OffsetEditChange]:
    """One row per partition: before = what the target holds now, after = the source's offset."""
    if side.context.is_source:
        there = reads.target_source_offsets(target=target, connector=connector, config=config)
        rows = []
        for key, record in sorted(side.records.items()):
            before = there.get(record.partition_identity)
            rows.append(
                drafts.source_row(
                    partition=record.partition,
                    key=key,
                    before=None if before is None else before.offset,
                    before_bytes=None if before is None else before.value_bytes,
                    after=record.offset,
                    after_bytes=record.value_bytes,
                    is_new=before is None,
                )
            )
        return rows
    _, committed = reads.target_group_offsets(target=target, connector=connector, config=config)
    return [
        drafts.sink_row(
            topic=topic,
            partition=partition,
            before=committed.get((topic, partition)),
            after=offset,
            is_new=(topic, partition) not in committed,
        )
        for (topic, partition), offset in sorted(side.committed.items())
    ]


def _warnings(cluster: Cluster, target: Cluster, context) -> list[str]:
    return rules.move_warnings(
        source=cluster.name,
        target=target.name,
        is_source=context.is_source,
        target_state=context.target_state,
        group_id=context.group_id,
        same_kafka=_same_kafka(cluster, target),
    )


def _same_kafka(cluster: Cluster, target: Cluster) -> bool:
    """Whether both clusters name the same bootstrap servers (in any order)."""

    def servers(value: str) -> set[str]:
        return {part.strip() for part in value.split(",") if part.strip()}

    return servers(cluster.bootstrap_servers) == servers(target.bootstrap_servers)


def patch_entries(edit: OffsetEdit, *, restore: bool = False) -> list[dict]:
    """The KIP-875 PATCH body's offsets: the move's (after), or the target's own (before)."""
    entries = []
    for change in edit.changes.all():
        value = change.before if restore else change.after
        if edit.is_source:
            entries.append(rules.source_entry(change.partition, value))
        else:
            offset = None if value is None else int(value["kafka_offset"])
            entries.append(rules.sink_entry(change.topic, change.kafka_partition, offset))
    return entries


def _create_refused(target: str, edit: OffsetEdit, exc: ConnectRestError) -> str:
    # Connect answers 409 both while rebalancing and for a name that exists: say which.
    if exc.status == 409 and "already exists" in exc.message:
        return (
            f"{target} already has a connector named {edit.connector!r} (created since the lock "
            f"check): nothing was created. The worker said: {exc.message}"
        )
    return f"{target} refused to create the connector: {exc.message}"


def _create_in_doubt(attempt: Attempt, exc: ConnectRestError) -> None:
    """The create got no clear answer: the connector may exist on the target now."""
    edit, target = attempt.edit, attempt.edit.target_cluster.name
    message = f"Creating the connector on {target} failed: {exc.message.rstrip('. ')}"
    try:
        exists = attempt.rest.exists(edit.connector)
    except ConnectRestError as check_error:
        fail(
            edit,
            attempt.user,
            attempt.checks,
            f"{message}. Whether it exists there could not be read ({check_error.message}): "
            f"check {target} and delete {edit.connector} there if it does.",
            {"created": "unknown", "rolled_back": False},
        )
        return
    if not exists:
        release(
            edit,
            attempt.user,
            attempt.checks,
            f"{message}. It does not exist there: nothing was written.",
        )
        return
    # The lock check found no connector of that name a moment ago: this one is the move's.
    _roll_back(attempt, message, patched=False)


def _failure(edit: OffsetEdit, exc: Exception) -> str:
    """Why writing or reading back the offsets failed, as the rollback's message says it."""
    if isinstance(exc, ConnectRestError):
        return f"Writing the offsets failed: {exc.message}"
    if isinstance(exc, rules.MoveRuleError):
        return f"Writing the offsets failed: {exc}"
    # Whatever broke, the connector exists on the target now: never leave it half moved.
    logger.error("Move %s failed after the create", edit.pk, exc_info=exc)
    return f"The move failed unexpectedly: {exc}"


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
    raise rules.MoveRuleError(
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


def _roll_back(attempt: Attempt, message: str, patched: bool) -> OffsetEdit:
    """Undo the move on the target: its offsets back as they were, then delete the connector."""
    edit, rest = attempt.edit, attempt.rest
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
        attempt.user,
        attempt.checks,
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


# --- Resume on the target ---------------------------------------------------------------------


def can_resume_on_target(edit: OffsetEdit) -> bool:
    return edit.is_move and edit.state == State.APPLIED and edit.target_cluster_id is not None


def resume_on_target(*, edit: OffsetEdit, user, comment: str = "") -> OffsetEdit:
    """Resume an applied move's connector on its target (approvers), audited there."""
    require_approver(user, edit, "Resuming a moved connector needs the approver role.")
    if not can_resume_on_target(edit):
        raise EditStateConflict(f"Edit #{edit.pk} is not an applied move: nothing to resume.")
    resume_for_edit(
        cluster=edit.target_cluster,
        connector=edit.connector,
        user=user,
        comment=comment or f"Resumes the connector moved by edit #{edit.pk}.",
    )
    return edit
