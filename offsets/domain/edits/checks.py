"""Lock-check decisions: each returns a named result; the service runs them at apply time."""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from offsets.domain.connectors import Connector
from offsets.formats.jackson import JsonValue

CONNECTOR_STOPPED = "connector-stopped"
GROUP_INACTIVE = "group-inactive"
NOTHING_MOVED = "nothing-moved"
SINGLE_APPLY = "single-apply"

CHECK_LABELS = {
    CONNECTOR_STOPPED: "The connector is stopped",
    GROUP_INACTIVE: "The sink's consumer group has no active members",
    NOTHING_MOVED: "Nothing moved since staging",
    SINGLE_APPLY: "One apply at a time for this connector",
    # A stopped standalone worker's offsets file (edits/kinds/offline_file/).
    "worker-not-answering": "No worker answers at the REST URL",
    "file-as-staged": "The offsets file is as staged",
    "file-not-changing": "The offsets file is not being written",
}

# Task states that mean a task may be writing offsets right now. UNASSIGNED is what a task of
# a stopped connector is left with; RESTARTING is about to run again.
_ACTIVE_TASK_STATES = ("RUNNING", "RESTARTING")
# Consumer group states with no members that could commit (ConsumerGroupState).
_INACTIVE_GROUP_STATES = ("EMPTY", "DEAD")


@dataclass(frozen=True)
class CheckResult:
    name: str
    passed: bool
    message: str

    @property
    def label(self) -> str:
        return CHECK_LABELS.get(self.name, self.name)

    def as_dict(self) -> dict[str, JsonValue]:
        return {"name": self.name, "passed": self.passed, "message": self.message}


def check_connector_stopped(
    *,
    connector: str,
    deleted: bool,
    target_state: str | None,
    connector_state: str | None,
    task_states: Mapping[int, str],
) -> CheckResult:
    """Pass when the config topic says STOPPED (or deleted) and no task runs (as in KIP-875).

    PAUSED is not enough: a paused connector's tasks still exist with their offsets in memory
    and carry on from those when resumed, which is why KIP-875 asks for STOPPED (zero tasks).
    """
    running = sorted(task for task, state in task_states.items() if state in _ACTIVE_TASK_STATES)
    if running:
        tasks = ", ".join(f"{task} ({task_states[task]})" for task in running)
        return CheckResult(
            CONNECTOR_STOPPED,
            False,
            f"Task(s) {tasks} of {connector} are still running according to the status topic.",
        )
    if deleted:
        return CheckResult(
            CONNECTOR_STOPPED, True, f"{connector} is deleted and no task of it is running."
        )
    if target_state != "STOPPED":
        return CheckResult(
            CONNECTOR_STOPPED,
            False,
            f"The target state of {connector} is {target_state or 'unknown'}; stop it first "
            f"(PUT /connectors/{connector}/stop). PAUSED is not enough.",
        )
    if connector_state in _ACTIVE_TASK_STATES:
        return CheckResult(
            CONNECTOR_STOPPED,
            False,
            f"{connector} is asked to stop but its status is still {connector_state}; "
            "wait for the workers to stop it.",
        )
    return CheckResult(
        CONNECTOR_STOPPED, True, f"{connector} is STOPPED and none of its tasks is running."
    )


def check_stopped(connector: Connector) -> CheckResult:
    """`connector-stopped` for a connector as its config and status topics say now."""
    return check_connector_stopped(
        connector=connector.name,
        deleted=connector.deleted,
        target_state=connector.target_state,
        connector_state=connector.connector_state,
        task_states=connector.task_states,
    )


def check_group_inactive(*, group_id: str, state: str, member_count: int) -> CheckResult:
    """Pass when the sink's consumer group is Empty or Dead with no members."""
    normalized = state.upper()
    if normalized in _INACTIVE_GROUP_STATES and member_count == 0:
        return CheckResult(
            GROUP_INACTIVE, True, f"Group {group_id} is {normalized.lower()}: no active members."
        )
    members = f" with {member_count} member(s)" if member_count else ""
    return CheckResult(
        GROUP_INACTIVE,
        False,
        f"Group {group_id} is {normalized.lower()}{members}: a consumer is still in it, and the "
        "broker only lets members commit to a non-empty group.",
    )


@dataclass(frozen=True)
class Observed:
    """A touched partition's value captured at staging and its value now."""

    label: str
    expected: object
    current: object


def check_nothing_moved(observed: Iterable[Observed]) -> CheckResult:
    """Pass when every touched partition still holds the value captured at staging."""
    moved = [item for item in observed if item.expected != item.current]
    if not moved:
        return CheckResult(
            NOTHING_MOVED, True, "Every touched partition still holds its before value."
        )
    shown = "; ".join(
        f"{item.label}: {show_offset(item.expected)} at staging, {show_offset(item.current)} now"
        for item in moved[:5]
    )
    more = f" (and {len(moved) - 5} more)" if len(moved) > 5 else ""
    return CheckResult(
        NOTHING_MOVED,
        False,
        f"{len(moved)} partition(s) moved since the edit was staged: {shown}{more}. "
        "Re-stage it with the same inputs: its diff is read again.",
    )


def check_single_apply(*, claimed: bool, detail: str = "") -> CheckResult:
    if claimed:
        return CheckResult(SINGLE_APPLY, True, "This apply holds the connector's claim.")
    return CheckResult(
        SINGLE_APPLY, False, detail or "Another apply got there first; nothing was done."
    )


def show_offset(value: object) -> str:
    """Return an offset as a message shows it: bytes as text, None as "no offset"."""
    if value is None:
        return "no offset"
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).decode("utf-8", "backslashreplace")
    return str(value)
