"""Which applied edit caused a rewind (pure)."""

from datetime import UTC, datetime, timedelta

from dashboard.pages.connector.rewind_links import edit_for_rewind

T = datetime(2026, 11, 27, 10, 0, tzinfo=UTC)


def at(minutes: float) -> datetime:
    return T + timedelta(minutes=minutes)


def test_the_edit_applied_between_the_commit_before_and_the_rewind_caused_it():
    applied = [(at(-5), 1), (at(1), 2), (at(3), 3)]
    assert edit_for_rewind(at(0), at(2), applied) == 2


def test_the_last_of_several_edits_in_between_is_named():
    assert edit_for_rewind(at(0), at(10), [(at(1), 4), (at(6), 5)]) == 5


def test_no_edit_in_between_is_no_cause():
    assert edit_for_rewind(at(0), at(2), [(at(-1), 1), (at(3), 2)]) is None
    assert edit_for_rewind(at(0), at(2), []) is None


def test_a_first_commit_takes_any_edit_before_it():
    assert edit_for_rewind(None, at(2), [(at(-100), 7)]) == 7
