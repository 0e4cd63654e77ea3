"""The rules of the live pages and of the connector page's controls: pure, no database."""

from datetime import UTC, datetime, timedelta

import pytest

from dashboard.pages.clusters import live
from dashboard.pages.connector import actions

START = datetime(2026, 11, 27, 9, 0, 0, tzinfo=UTC)


def after(seconds: float) -> datetime:
    return START + timedelta(seconds=seconds)


@pytest.mark.parametrize("seconds", [0, 0.6, 1.5, 2.99])
def test_a_refresh_of_a_live_loops_round_gets_no_banner(seconds):
    assert not live.shows_running_banner(START, after(seconds), has_results=True)


@pytest.mark.parametrize("seconds", [3, 4, 90, 3600])
def test_a_refresh_running_a_few_seconds_gets_its_banner(seconds):
    assert live.shows_running_banner(START, after(seconds), has_results=True)


def test_the_first_refresh_is_announced_at_once_as_the_page_has_nothing_else_to_say():
    assert live.shows_running_banner(START, after(0.1), has_results=False)
    assert live.shows_running_banner(None, after(0.1), has_results=False)


def test_a_connectors_id_is_stable_valid_and_its_own_whatever_its_name():
    names = ["orders-sink", "Orders-Sink", "<b>bold</b>", "a b\n\x00", "\ud800lone", ""]
    ids = [live.dom_id(name) for name in names]
    assert ids == [live.dom_id(name) for name in names]
    assert len(set(ids)) == len(names)
    assert all(
        identifier.startswith("c-") and identifier[2:].isalnum() and identifier.isascii()
        for identifier in ids
    )


@pytest.mark.parametrize(
    ("target", "runtime", "expected"),
    [
        ("STARTED", "RUNNING", ("stop", "pause", "restart")),  # no Resume on a running one
        ("STARTED", "FAILED", ("stop", "pause", "restart")),
        ("PAUSED", "PAUSED", ("stop", "resume")),  # paused: nothing to restart
        ("PAUSED", "RUNNING", ("stop", "resume")),  # the pause not reached yet
        ("STOPPED", "STOPPED", ("resume",)),  # no Stop on a stopped connector
        ("STOPPED", None, ("resume",)),
        (None, "STOPPED", ("resume",)),  # a stop's outcome: only the state is known
        (None, "RUNNING", ("stop", "pause", "restart")),  # a resume's or restart's outcome
        (None, "PAUSED", ("stop", "resume")),  # a pause's outcome
        ("STARTED", "UNASSIGNED", ("stop", "pause", "resume", "restart")),  # unknown: all
        (None, None, ("stop", "pause", "resume", "restart")),  # a control that failed: all
    ],
)
def test_a_connector_is_offered_only_the_controls_its_state_makes_sensible(
    target, runtime, expected
):
    assert actions.offered(target_state=target, runtime_state=runtime, deleted=False) == expected


def test_a_deleted_connector_is_offered_no_control():
    assert actions.offered(target_state="STARTED", runtime_state="RUNNING", deleted=True) == ()
