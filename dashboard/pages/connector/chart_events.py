"""What the history charts mark: where a connector paused, stopped, failed, ran again, was
controlled from the dashboard, or had an edit applied. Pure: the view reads the rows, these
functions say what each one means.

The states come from the refreshes (`ConnectorStateChange`: a refresh saw the state change),
the controls and the edits from the dashboard's own records; each title says which.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from offsets.domain.pauses import PLANNED_PAUSE_STATES


@dataclass(frozen=True)
class Event:
    at: datetime
    # failed, paused (paused or stopped), running (running again), state (any other),
    # control (stop, resume, restart from the dashboard), edit (an applied edit)
    kind: str
    label: str
    href: str = ""


# A state change as stored: (at, target state, runtime state, failed tasks, first seen,
# whether `at` is a failure's status record time), the last left out for a refresh's time.
StateRow = tuple[datetime, str, str, int, bool] | tuple[datetime, str, str, int, bool, bool]
# A control from the dashboard's audit log: (at, action, who).
ControlRow = tuple[datetime, str, str]
# An applied edit: (finished at, its id, what it did).
EditRow = tuple[datetime, int, str]

CONTROL_WORDS = {
    "stopped": "stopped",
    "paused": "paused",
    "resumed": "resumed",
    "restarted": "restarted",
    "task-restarted": "a task restarted",
}


def _when(at: datetime) -> str:
    return f"{at:%Y-%m-%d %H:%M:%S} UTC"


def state_event(row: StateRow) -> Event | None:
    """What a refresh saw change, or None for a connector first seen running as it should.
    A failure is dated by the status record the worker wrote it in when that has a time; any
    other change by the refresh that saw it."""
    at, target, runtime, failed_tasks, first_seen, *from_status = row
    if runtime == "FAILED":
        kind, what = "failed", "connector FAILED"
    elif failed_tasks:
        kind, what = "failed", f"{failed_tasks} task{'s' if failed_tasks > 1 else ''} FAILED"
    elif target in PLANNED_PAUSE_STATES:
        kind, what = "paused", target.lower()
    elif runtime == "RUNNING":
        if first_seen:
            return None
        kind, what = "running", "running again"
    else:
        kind, what = "state", f"{target or '?'} / {runtime or '?'}"
    if kind == "failed" and from_status and from_status[0]:
        return Event(at, kind, f"{what} at {_when(at)} (the worker's status record)")
    seen = "first seen by the refresh" if first_seen else "seen by the refresh"
    if kind == "failed":
        # No time in the status record: the refresh's is the only one, and a late one.
        return Event(at, kind, f"{what} ({seen} of {_when(at)}; the status record has no time)")
    return Event(at, kind, f"{what} ({seen} of {_when(at)})")


def control_event(row: ControlRow) -> Event:
    at, action, actor = row
    return Event(
        at,
        "control",
        f"{CONTROL_WORDS.get(action, action)} by {actor} from the dashboard at {_when(at)}",
    )


def edit_event(row: EditRow, edit_url: Callable[[int], str]) -> Event:
    at, pk, what = row
    return Event(at, "edit", f"edit #{pk} applied at {_when(at)}: {what}", edit_url(pk))


def chart_events(
    states: Sequence[StateRow],
    controls: Sequence[ControlRow],
    edits: Sequence[EditRow],
    edit_url: Callable[[int], str],
) -> list[Event]:
    """Every event worth a mark, oldest first. The refresh that sees the state a dashboard
    control asked for adds its time to the control's mark instead of a mark of its own."""
    folded = _fold_seen_controls(states, controls)
    seen_states = set(folded.values())
    events = [state_event(row) for row in states if row not in seen_states]
    events = [event for event in events if event is not None]
    for row in controls:
        event = control_event(row)
        if row in folded:
            seen = f", seen by the refresh of {_when(folded[row][0])}"
            event = Event(event.at, event.kind, event.label + seen)
        events.append(event)
    events += [edit_event(row, edit_url) for row in edits]
    return sorted(events, key=lambda event: event.at)


# The state a refresh sees once a control from the dashboard took effect.
CONTROL_OUTCOMES = {
    "stopped": lambda target, runtime, failed: target == "STOPPED",
    "paused": lambda target, runtime, failed: target == "PAUSED",
    "resumed": lambda target, runtime, failed: (
        target == "STARTED" and runtime == "RUNNING" and not failed
    ),
}


def _fold_seen_controls(
    states: Sequence[StateRow], controls: Sequence[ControlRow]
) -> dict[ControlRow, StateRow]:
    """Each control whose next state change, with no other control between, is the state it
    asked for: {control: that state change}. Any other outcome (a task FAILED after a resume,
    say) keeps its own mark."""
    timeline = sorted(
        [(row[0], 1, row) for row in states] + [(row[0], 0, row) for row in controls],
        key=lambda item: (item[0], item[1]),
    )
    folded: dict[ControlRow, StateRow] = {}
    waiting: ControlRow | None = None
    for _, is_state, row in timeline:
        if not is_state:
            waiting = row if row[1] in CONTROL_OUTCOMES else None
            continue
        if waiting is not None and CONTROL_OUTCOMES[waiting[1]](row[1], row[2], row[3]):
            folded[waiting] = row
        waiting = None
    return folded
