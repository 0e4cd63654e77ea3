"""Which offset edit wrote a rewind (pure): its write window and the value it wrote."""

from datetime import UTC, datetime, timedelta

from offsets.domain.edit_rewinds import CLOCK_SLACK, EditWrite, edit_for_rewind

T = datetime(2026, 11, 27, 10, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T + timedelta(seconds=seconds)


EDIT = EditWrite(edit=2, started_at=at(0), finished_at=at(10), progress={"k1": 5.0, "k2": 0.0})


def test_a_rewind_inside_the_window_to_the_value_written_is_the_edits():
    assert edit_for_rewind("k1", at(3), 5.0, [EDIT]) == 2
    assert edit_for_rewind("k2", at(10), 0.0, [EDIT]) == 2


def test_a_rewind_written_before_the_finish_is_recorded_is_the_edits():
    # Through the worker, the record is written before the apply's finish time.
    assert edit_for_rewind("k1", at(9.9), 5.0, [EDIT]) == 2


def test_an_edit_still_being_applied_has_an_open_window():
    applying = EditWrite(edit=3, started_at=at(0), finished_at=None, progress={"k1": 5.0})
    assert edit_for_rewind("k1", at(600), 5.0, [applying]) == 3
    assert edit_for_rewind("k1", at(-5), 5.0, [applying]) is None


def test_a_rewind_outside_the_window_stays_a_rewind():
    assert edit_for_rewind("k1", at(-5), 5.0, [EDIT]) is None
    assert edit_for_rewind("k1", at(20), 5.0, [EDIT]) is None


def test_the_clocks_slack_takes_a_record_a_moment_outside():
    # The record's time is in whole ms of the worker's clock.
    assert edit_for_rewind("k1", at(0) - CLOCK_SLACK / 2, 5.0, [EDIT]) == 2
    assert edit_for_rewind("k1", at(10) + CLOCK_SLACK / 2, 5.0, [EDIT]) == 2
    assert edit_for_rewind("k1", at(10) + CLOCK_SLACK * 2, 5.0, [EDIT]) is None


def test_a_rewind_to_another_value_or_partition_stays_a_rewind():
    assert edit_for_rewind("k1", at(3), 4.0, [EDIT]) is None
    assert edit_for_rewind("k3", at(3), 5.0, [EDIT]) is None
    assert edit_for_rewind("k1", at(3), 5.0, []) is None


def test_the_latest_of_two_matching_edits_is_named():
    again = EditWrite(edit=7, started_at=at(2), finished_at=at(4), progress={"k1": 5.0})
    assert edit_for_rewind("k1", at(3), 5.0, [again, EDIT]) == 7
