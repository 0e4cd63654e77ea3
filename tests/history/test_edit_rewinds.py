"""Which offset edit wrote a rewind (pure): its write window and the value it wrote; for a
sink, which edit moved a committed offset back between two lag samples."""

from datetime import UTC, datetime, timedelta

from offsets.domain.edit_rewinds import (
    CLOCK_SLACK,
    EditWrite,
    edit_for_rewind,
    edit_for_sink_drop,
    sink_drops_edited,
)
from offsets.domain.history import LagPoint, LagStatus, partition_lag_status

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


SINK = EditWrite(edit=4, started_at=at(0), finished_at=at(10), progress={"0:orders": 30.0})


def test_a_sinks_offset_an_edit_moved_back_between_two_samples_is_the_edits():
    # Sampled before the edit at 100, after it at 30 (or read on from 30 since).
    assert edit_for_sink_drop("0:orders", (at(-60), 100), (at(60), 30), [SINK]) == 4
    assert edit_for_sink_drop("0:orders", (at(-60), 100), (at(60), 45), [SINK]) == 4
    # The edit's window inside the current sampling's: the newest point has its time too.
    assert edit_for_sink_drop("0:orders", (at(5), 100), (at(6), 30), [SINK]) == 4


def test_a_sinks_drop_no_edit_explains_stays_a_rewind():
    # Below where the edit put it, another partition, or an edit outside the two samples.
    assert edit_for_sink_drop("0:orders", (at(-60), 100), (at(60), 20), [SINK]) is None
    assert edit_for_sink_drop("1:orders", (at(-60), 100), (at(60), 30), [SINK]) is None
    assert edit_for_sink_drop("0:orders", (at(20), 100), (at(80), 30), [SINK]) is None
    assert edit_for_sink_drop("0:orders", (at(-80), 100), (at(-20), 30), [SINK]) is None


def test_a_sink_partition_an_edit_moved_back_is_not_rated_rewind():
    window = [LagPoint(100, 9, at(-120)), LagPoint(100, 5, at(-60)), LagPoint(30, 70, at(60))]
    assert partition_lag_status(window, consuming=True) == LagStatus.REWIND
    edited = sink_drops_edited("0:orders", [SINK])
    assert partition_lag_status(window, consuming=True, edited=edited) == LagStatus.OK
    assert sink_drops_edited("1:orders", [SINK])(window[1], window[2]) is False
