"""What the history charts mark, and the state history the refreshes keep for them."""

from datetime import UTC, datetime, timedelta

from dashboard.pages.connector.chart_events import Event, chart_events, control_event, state_event
from offsets.domain.state_history import State, change_time, state_changes

AT = datetime(2026, 11, 27, 12, 0, 5, tzinfo=UTC)


def edit_url(pk: int) -> str:
    return f"/edits/{pk}/"


def test_a_pause_a_stop_and_a_failure_are_marked_with_what_and_when():
    assert state_event((AT, "PAUSED", "PAUSED", 0, False)) == Event(
        AT, "paused", "paused (seen by the refresh of 2026-11-27 12:00:05 UTC)"
    )
    assert state_event((AT, "STOPPED", "STOPPED", 0, False)).label.startswith("stopped (")
    assert state_event((AT, "STARTED", "FAILED", 0, False)).kind == "failed"
    failed = state_event((AT, "STARTED", "RUNNING", 2, False))
    assert (failed.kind, failed.label.split(" (")[0]) == ("failed", "2 tasks FAILED")
    assert state_event((AT, "STARTED", "RUNNING", 1, False)).label.startswith("1 task FAILED (")


def test_a_failure_wins_over_a_pause():
    assert state_event((AT, "PAUSED", "RUNNING", 1, False)).kind == "failed"


def test_running_again_is_marked_but_a_connector_first_seen_running_is_not():
    assert state_event((AT, "STARTED", "RUNNING", 0, False)).label.startswith("running again")
    assert state_event((AT, "STARTED", "RUNNING", 0, True)) is None


def test_a_connector_first_seen_paused_says_it_was_first_seen_so():
    event = state_event((AT, "PAUSED", "PAUSED", 0, True))
    assert event.label == "paused (first seen by the refresh of 2026-11-27 12:00:05 UTC)"


def test_any_other_state_is_marked_as_it_reads():
    event = state_event((AT, "STARTED", "UNASSIGNED", 0, False))
    assert (event.kind, event.label.split(" (")[0]) == ("state", "STARTED / UNASSIGNED")


def test_a_control_names_who_and_an_edit_links_to_its_page_oldest_first():
    events = chart_events(
        [(AT + timedelta(seconds=30), "PAUSED", "PAUSED", 0, False)],
        [(AT, "restarted", "alice")],
        [(AT + timedelta(minutes=2), 7, "Shift by N")],
        edit_url,
    )
    assert [event.kind for event in events] == ["control", "paused", "edit"]
    assert events[0] == control_event((AT, "restarted", "alice"))
    assert events[0].label == "restarted by alice from the dashboard at 2026-11-27 12:00:05 UTC"
    assert events[2].label == "edit #7 applied at 2026-11-27 12:02:05 UTC: Shift by N"
    assert events[2].href == "/edits/7/"
    assert not events[0].href and not events[1].href


def test_the_refresh_that_sees_a_controls_state_adds_its_time_to_the_controls_mark():
    later = AT + timedelta(seconds=30)
    [stop] = chart_events(
        [(later, "STOPPED", "STOPPED", 0, False)], [(AT, "stopped", "alice")], [], edit_url
    )
    assert (stop.kind, stop.at) == ("control", AT)
    assert stop.label == (
        "stopped by alice from the dashboard at 2026-11-27 12:00:05 UTC, "
        "seen by the refresh of 2026-11-27 12:00:35 UTC"
    )
    [resume] = chart_events(
        [(later, "STARTED", "RUNNING", 0, False)], [(AT, "resumed", "bob")], [], edit_url
    )
    assert resume.label.endswith(", seen by the refresh of 2026-11-27 12:00:35 UTC")


def test_a_state_other_than_the_one_asked_for_keeps_its_own_mark():
    later = AT + timedelta(seconds=30)
    # Resumed, and the refresh saw a task fail: that is news of its own.
    events = chart_events(
        [(later, "STARTED", "RUNNING", 1, False)], [(AT, "resumed", "bob")], [], edit_url
    )
    assert [event.kind for event in events] == ["control", "failed"]
    assert "seen by" not in events[0].label
    # A second control before any refresh saw the first: only the last may be folded.
    events = chart_events(
        [(later, "STOPPED", "STOPPED", 0, False)],
        [(AT, "stopped", "alice"), (AT + timedelta(seconds=10), "resumed", "bob")],
        [],
        edit_url,
    )
    assert [event.kind for event in events] == ["control", "control", "paused"]
    # Only the next state change is the control's: a later stop is a mark of its own.
    events = chart_events(
        [
            (later, "STOPPED", "STOPPED", 0, False),
            (later + timedelta(minutes=5), "STARTED", "RUNNING", 0, False),
            (later + timedelta(minutes=9), "STOPPED", "STOPPED", 0, False),
        ],
        [(AT, "stopped", "alice")],
        [],
        edit_url,
    )
    assert [event.kind for event in events] == ["control", "running", "paused"]


def test_a_refresh_keeps_a_state_only_when_it_changed_or_is_new():
    previous = {
        "same": State("STARTED", "RUNNING", 0),
        "paused": State("STARTED", "RUNNING", 0),
        "worse": State("STARTED", "RUNNING", 1),
        "gone": State("STARTED", "RUNNING", 0),
    }
    current = {
        "same": State("STARTED", "RUNNING", 0),
        "paused": State("PAUSED", "PAUSED", 0),
        # One more failed task is no new event: it was failing already.
        "worse": State("STARTED", "RUNNING", 2),
        "new": State("STARTED", "RUNNING", 0),
    }
    assert state_changes(previous, current) == [
        ("new", State("STARTED", "RUNNING", 0), True),
        ("paused", State("PAUSED", "PAUSED", 0), False),
    ]


def test_a_failure_with_its_status_records_time_is_dated_by_it():
    event = state_event((AT, "STARTED", "RUNNING", 1, True, True))
    assert event == Event(
        AT, "failed", "1 task FAILED at 2026-11-27 12:00:05 UTC (the worker's status record)"
    )
    fallback = state_event((AT, "STARTED", "FAILED", 0, True, False)).label
    assert fallback == (
        "connector FAILED (first seen by the refresh of 2026-11-27 12:00:05 UTC; "
        "the status record has no time)"
    )


def test_only_a_failure_takes_its_status_records_time_never_after_the_refresh():
    seen, wrote = AT, AT - timedelta(minutes=2)
    assert change_time(State("STARTED", "RUNNING", 1), wrote, seen) == (wrote, True)
    assert change_time(State("STARTED", "FAILED", 0), wrote, seen) == (wrote, True)
    assert change_time(State("STARTED", "RUNNING", 1), None, seen) == (seen, False)
    assert change_time(State("PAUSED", "PAUSED", 0), wrote, seen) == (seen, False)
    # The worker's clock ahead of the dashboard's: no later than the refresh that saw it.
    later = AT + timedelta(seconds=3)
    assert change_time(State("STARTED", "FAILED", 0), later, seen) == (seen, True)
