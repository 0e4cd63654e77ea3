"""Stop, resume and restart a connector through its cluster's Connect workers, audited."""

import json
import logging
import time
from dataclasses import dataclass

from offsets.domain.masking import mask_text
from offsets.domain.rights import Action as RightsAction
from offsets.edits import audit
from offsets.edits.errors import EditStateConflict
from offsets.formats.status_records import trace_summary
from offsets.kafka.connect_rest import ConnectorStatus, ConnectRest, ConnectRestError
from offsets.models import AuditEvent, Cluster
from offsets.rights import gate

logger = logging.getLogger(__name__)

Action = AuditEvent.Action
ACTIONS = ("stop", "resume", "restart")
DONE = {"stop": Action.STOPPED, "resume": Action.RESUMED, "restart": Action.RESTARTED}
# A stop lets every task commit and shut down; 30 s covers a task's default graceful
# shutdown (task.shutdown.graceful.timeout.ms is 5 s) with room for a rebalance.
WAIT_SECONDS = 30.0
POLL_SECONDS = 0.5


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

    @property
    def warning(self) -> bool:
        """Reached what was asked, yet something failed again: not a success to show in blue."""
        return self.ok and bool(self.failed_again)


def control_connector(
    *,
    cluster: Cluster,
    connector: str,
    action: str,
    user,
    comment: str = "",
    include_tasks: bool = False,
    only_failed: bool = False,
    wait_seconds: float | None = None,
) -> ControlOutcome:
    """Ask the workers to stop, resume or restart `connector`, wait for the result, audit it.

    A stop waits (up to `wait_seconds`) for STOPPED with no tasks, a resume for RUNNING; the
    outcome says when the worker accepted but did not get there. A worker error is audited
    and raised as the adapter's `ConnectRestError`.
    """
    if action not in ACTIONS:
        raise ValueError(f"action must be one of {ACTIONS}, not {action!r}")
    needs = f"To {action} a connector needs the editor or approver role."
    gate.admit(user, RightsAction.CONTROL, cluster, connector, message=needs)
    wait_seconds = WAIT_SECONDS if wait_seconds is None else wait_seconds
    try:
        rest = ConnectRest.for_cluster(cluster)
        answer = _send(rest, connector, action, include_tasks, only_failed)
        status = _settle(rest, connector, action, wait_seconds)
    except ConnectRestError as exc:
        details = {"action": action, "error": exc.message, "http_status": exc.status}
        audit.record_connector(cluster, connector, Action.CONTROL_FAILED, user, comment, details)
        raise
    outcome = _outcome(connector, action, status, answer, wait_seconds)
    audit.record_connector(
        cluster,
        connector,
        DONE[action] if outcome.ok else Action.CONTROL_FAILED,
        user,
        comment,
        {
            "action": action,
            "message": outcome.message,
            "state": outcome.state,
            "tasks": list(outcome.tasks),
            "answer": outcome.answer,
        },
    )
    return outcome


def _send(rest: ConnectRest, connector: str, action: str, include_tasks: bool, only_failed: bool):
    if action == "stop":
        return rest.stop(connector)
    if action == "resume":
        return rest.resume(connector)
    return rest.restart(connector, include_tasks=include_tasks, only_failed=only_failed)


def _settle(rest: ConnectRest, connector: str, action: str, wait_seconds: float):
    """Poll the status until the action shows (stop, resume), or return it at once (restart)."""
    deadline = time.monotonic() + wait_seconds
    while True:
        status = rest.status(connector)
        if action == "restart" or _reached(status, action) or time.monotonic() >= deadline:
            return status
        time.sleep(POLL_SECONDS)


def _reached(status: ConnectorStatus, action: str) -> bool:
    if action == "stop":
        return status.is_stopped
    return status.state == "RUNNING"


def _outcome(
    connector: str, action: str, status: ConnectorStatus, answer, wait_seconds: float
) -> ControlOutcome:
    tasks = ", ".join(status.tasks) or "no tasks"
    failed_again = ()
    if action == "restart" and status.failures:
        ok = True
        failed_again = tuple(
            (name, trace_summary(trace) or "no trace", trace) for name, trace in status.failures
        )
        first = failed_again[0]
        others = f" (and {len(failed_again) - 1} more)" if len(failed_again) > 1 else ""
        message = (
            f"The worker restarted the connector, but {first[0]} failed again{others}: "
            f"{first[1]} (now {status.state}: {tasks})"
        )
    elif action == "restart" or _reached(status, action):
        ok = True
        message = f"The worker {DONE[action]} the connector: now {status.state} ({tasks})."
    else:
        ok = False
        wanted = "STOPPED with no tasks" if action == "stop" else "RUNNING"
        message = (
            f"The worker accepted the {action} but after {wait_seconds:.0f} s the connector is "
            f"{status.state} ({tasks}), not {wanted}."
        )
    return ControlOutcome(
        connector=connector,
        action=action,
        ok=ok,
        message=message,
        state=status.state,
        tasks=status.tasks,
        # The worker's own words are data: masked before they reach the log or a page.
        answer=mask_text(json.dumps(answer)) if answer is not None else "",
        failed_again=failed_again,
    )


def resume_for_edit(*, cluster: Cluster, connector: str, user, comment: str) -> None:
    """Resume a connector an edit left STOPPED (after an apply, or on a move's target), audited
    there; EditStateConflict with the worker's words when it does not get back to RUNNING."""
    outcome = control_connector(
        cluster=cluster, connector=connector, action="resume", user=user, comment=comment
    )
    if not outcome.ok:
        raise EditStateConflict(outcome.message)
