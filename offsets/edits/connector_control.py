"""Stop, pause, resume and restart a connector (or one task) through its cluster's Connect workers, audited."""

import json
import logging
import time
from dataclasses import dataclass, replace

from offsets.domain.masking import mask_text
from offsets.domain.restarts import Part, restart_verdict
from offsets.domain.rights import Action as RightsAction
from offsets.edits import audit
from offsets.edits.errors import EditStateConflict
from offsets.kafka.connect_rest import ConnectorStatus, ConnectRest, ConnectRestError
from offsets.models import AuditEvent, Cluster
from offsets.rights import gate

logger = logging.getLogger(__name__)

Action = AuditEvent.Action
ACTIONS = ("stop", "pause", "resume", "restart", "restart-task")
DONE = {
    "stop": Action.STOPPED,
    "pause": Action.PAUSED,
    "resume": Action.RESUMED,
    "restart": Action.RESTARTED,
    "restart-task": Action.TASK_RESTARTED,
}
# What the worker reports once the action took (a restart is followed instead).
REACHED = {"stop": "STOPPED with no tasks", "pause": "PAUSED", "resume": "RUNNING"}
RESTARTS = ("restart", "restart-task")
# A stop lets every task commit and shut down; 30 s covers a task's default graceful
# shutdown (task.shutdown.graceful.timeout.ms is 5 s) with room for a rebalance.
WAIT_SECONDS = 30.0
POLL_SECONDS = 0.5
# An edit's page asks the worker for the state now: a worker away must not hold the page.
STATE_NOW_SECONDS = 5.0


@dataclass(frozen=True)
class ControlOutcome:
    """What happened: whether the connector reached the asked state, and what the worker said."""

    connector: str
    action: str
    ok: bool
    message: str
    state: str | None
    tasks: tuple[str, ...]
    answer: str
    # After a restart: what is FAILED again ("task 0"), its trace's first line, its trace.
    failed_again: tuple[tuple[str, str, str], ...] = ()
    # A restart not yet followed to its end (a page polls `follow_restart` from `following`).
    settled: bool = True
    following: "Following | None" = None
    warned: bool = False

    @property
    def warning(self) -> bool:
        """Reached what was asked, yet something failed again: not a success to show in blue."""
        return self.ok and (self.warned or bool(self.failed_again))


@dataclass(frozen=True)
class Following:
    """A restart being followed: when it was sent, what it restarted, since when all runs."""

    started: float
    tasks_restarted: bool
    task: int | None = None
    running_since: float | None = None


def control_connector(
    *,
    cluster: Cluster,
    connector: str,
    action: str,
    user,
    comment: str = "",
    include_tasks: bool = False,
    only_failed: bool = False,
    task: int | None = None,
    follow: bool = True,
    edit=None,
    wait_seconds: float | None = None,
) -> ControlOutcome:
    """Ask the workers to stop, pause, resume or restart `connector` (or its `task`), audited.

    A stop waits (up to `wait_seconds`) for STOPPED with no tasks, a pause for PAUSED, a
    resume for RUNNING; a restart is followed until it runs steadily, fails again or the
    bound passes (`domain.restarts`), unless `follow` is False (a page polls instead). The
    audit entry belongs to `edit` when the edit's page asked. A worker error is audited and
    raised as the adapter's `ConnectRestError`.
    """
    if action not in ACTIONS:
        raise ValueError(f"action must be one of {ACTIONS}, not {action!r}")
    if action == "restart-task" and (task is None or task < 0):
        raise ValueError("restart-task needs a task number")
    needs = f"To {action.replace('-', ' ')} a connector needs the editor or approver role."
    gate.admit(user, RightsAction.CONTROL, cluster, connector, message=needs)
    wait_seconds = WAIT_SECONDS if wait_seconds is None else wait_seconds
    details = {"action": action, **({"task": task} if task is not None else {})}
    try:
        rest = ConnectRest.for_cluster(cluster)
        answer = _send(rest, connector, action, include_tasks, only_failed, task)
        if action in RESTARTS:
            following = Following(time.time(), include_tasks or task is not None, task)
            outcome = _follow(rest, connector, following, answer, follow)
        else:
            outcome = _outcome(connector, action, _settle(rest, connector, action, wait_seconds),
                               answer, wait_seconds)  # fmt: skip
    except ConnectRestError as exc:
        details.update(error=exc.message, http_status=exc.status)
        _audit(cluster, connector, Action.CONTROL_FAILED, user, comment, details, edit)
        raise
    details.update(
        message=outcome.message, state=outcome.state, tasks=list(outcome.tasks),
        answer=outcome.answer,
    )  # fmt: skip
    done = DONE[action] if outcome.ok else Action.CONTROL_FAILED
    _audit(cluster, connector, done, user, comment, details, edit)
    return outcome


def _audit(cluster, connector, action, user, comment, details, edit) -> None:
    if edit is None:
        audit.record_connector(cluster, connector, action, user, comment, details)
    else:
        audit.record(edit, action, user, comment, details)


def _send(rest, connector: str, action: str, include_tasks: bool, only_failed: bool, task):
    if action == "restart-task":
        return rest.restart_task(connector, task)
    if action == "restart":
        return rest.restart(connector, include_tasks=include_tasks, only_failed=only_failed)
    return getattr(rest, action)(connector)


def _settle(rest: ConnectRest, connector: str, action: str, wait_seconds: float):
    """Poll the status until the action shows (stop, pause, resume) or the wait ends."""
    deadline = time.monotonic() + wait_seconds
    while True:
        status = rest.status(connector)
        if _reached(status, action) or time.monotonic() >= deadline:
            return status
        time.sleep(POLL_SECONDS)


def _reached(status: ConnectorStatus, action: str) -> bool:
    if action == "stop":
        return status.is_stopped
    if action == "pause":
        return status.state == "PAUSED" and all(task == "PAUSED" for task in status.tasks)
    return status.state == "RUNNING"


def _outcome(
    connector: str, action: str, status: ConnectorStatus, answer, wait_seconds: float
) -> ControlOutcome:
    tasks = ", ".join(status.tasks) or "no tasks"
    ok = _reached(status, action)
    if ok:
        message = f"The worker {DONE[action]} the connector: now {status.state} ({tasks})."
    else:
        message = (
            f"The worker accepted the {action} but after {wait_seconds:.0f} s the connector is "
            f"{status.state} ({tasks}), not {REACHED[action]}."
        )
    return ControlOutcome(
        connector=connector,
        action=action,
        ok=ok,
        message=message,
        state=status.state,
        tasks=status.tasks,
        answer=_answer(answer),
    )


def _answer(answer) -> str:
    # The worker's own words are data: masked before they reach the log or a page.
    return mask_text(json.dumps(answer)) if answer is not None else ""


def follow_restart(
    *, cluster: Cluster, connector: str, user, following: Following
) -> ControlOutcome:
    """Read the status once more after a restart and judge it (a page's poll: not audited)."""
    gate.admit(user, RightsAction.VIEW, cluster, connector)
    rest = ConnectRest.for_cluster(cluster, timeout=10)
    return _follow(rest, connector, following, None, follow=False)


def _follow(rest, connector: str, following: Following, answer, follow: bool) -> ControlOutcome:
    """Judge the restart on the status now; with `follow`, read again until it is final."""
    while True:
        status = rest.status(connector)
        parts = tuple(
            Part(*part)
            for part in status.parts
            if following.task is None or part[0] == f"task {following.task}"
        )
        verdict = restart_verdict(
            parts,
            started=following.started,
            now=time.time(),
            running_since=following.running_since,
            tasks_restarted=following.tasks_restarted,
        )
        following = replace(following, running_since=verdict.running_since)
        if verdict.final or not follow:
            break
        time.sleep(POLL_SECONDS)
    return ControlOutcome(
        connector=connector,
        action="restart-task" if following.task is not None else "restart",
        ok=True,
        message=verdict.message,
        state=status.state,
        tasks=status.tasks,
        answer=_answer(answer),
        failed_again=verdict.failed,
        settled=verdict.final,
        following=None if verdict.final else following,
        warned=verdict.warning,
    )


@dataclass(frozen=True)
class StateNow:
    """The connector's state as its worker reports it now, for a page to say "now STOPPED"."""

    state: str | None
    tasks: tuple[str, ...] = ()
    # Why it could not be read ("" when it was).
    error: str = ""

    @property
    def stopped(self) -> bool:
        return self.state == "STOPPED" and not self.tasks

    @property
    def words(self) -> str:
        if self.state is None:
            return f"unknown ({self.error})"
        if self.state == "RUNNING" and not self.tasks:
            # Just resumed: the worker starts the connector first, then its tasks.
            return "RUNNING (its tasks not started yet)"
        return f"{self.state} ({', '.join(self.tasks) or 'no tasks'})"


def state_now(*, cluster: Cluster, connector: str, user) -> StateNow:
    """Ask the worker for the connector's state now; a worker error is said, not raised."""
    gate.admit(user, RightsAction.VIEW, cluster, connector)
    try:
        status = ConnectRest.for_cluster(cluster, timeout=STATE_NOW_SECONDS).status(connector)
    except ConnectRestError as exc:
        return StateNow(None, error=exc.message)
    return StateNow(status.state, status.tasks)


def resume_for_edit(*, cluster: Cluster, connector: str, user, comment: str, edit=None) -> None:
    """Resume a connector an edit left STOPPED (after an apply, or on a move's target), audited
    there (in `edit`'s history when given); EditStateConflict with the worker's words when it
    does not get back to RUNNING."""
    outcome = control_connector(
        cluster=cluster, connector=connector, action="resume", user=user, comment=comment,
        edit=edit,
    )  # fmt: skip
    if not outcome.ok:
        raise EditStateConflict(outcome.message)
