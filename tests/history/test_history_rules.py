from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offsets.domain.history import (
    PROGRESS_FIELDS,
    LagPoint,
    LagStatus,
    committed_move_seen,
    committed_moved_at,
    connector_lag_status,
    last_move_seen,
    last_moved_at,
    offset_progress,
    partition_lag_status,
    progress_fields,
    progress_of,
)


@pytest.mark.parametrize(
    ("offset", "expected"),
    [
        ({"position": 42}, 42.0),
        ({"timestamp_nanos": 5, "incrementing": 12, "timestamp": 1_700_000_000_000}, 12.0),
        ({"offset": 7}, 7.0),
        ({"kafka_offset": 9}, 9.0),
        ({"lsn_proc": 1, "lsn": 100, "txId": 3}, 100.0),
        ({"last_poll_epoch_s": 1.5e9, "cursor": "a1"}, 1.5e9),
        ({"timestamp_nanos": 5, "cursor": "a1"}, None),
        ({"flag": True, "cursor": "x"}, None),
        ({}, None),
        (None, None),
    ],
)
def test_it_picks_the_field_that_measures_progress(offset, expected):
    assert offset_progress(offset) == expected
    if offset is not None:
        assert progress_of(offset, progress_fields(tuple(offset))) == expected


@settings(database=None, deadline=None, max_examples=300)
@given(
    st.dictionaries(
        st.sampled_from([*PROGRESS_FIELDS, "cursor", "txId", "timestamp_nanos", "Nanos", "a"]),
        st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=3)),
    )
)
def test_the_field_list_worked_out_once_per_name_set_gives_the_same_progress(offset):
    expected = offset_progress(offset)
    found = progress_of(offset, progress_fields(tuple(offset)))
    assert found == expected or (found != found and expected != expected)  # NaN


def window(*points):
    return [LagPoint(committed, lag) for committed, lag in points]


def test_no_lag_now_is_ok_even_when_stopped():
    assert partition_lag_status(window((5, 3), (8, 0)), consuming=False) == LagStatus.OK


def test_lag_while_the_connector_does_not_consume_is_stop():
    assert partition_lag_status(window((5, 3)), consuming=False) == LagStatus.STOP


def test_lag_that_was_zero_in_the_window_is_ok():
    assert partition_lag_status(window((5, 0), (5, 4)), consuming=True) == LagStatus.OK


def test_an_offset_going_backwards_is_rewind():
    assert partition_lag_status(window((9, 1), (4, 6), (5, 5)), consuming=True) == LagStatus.REWIND


def test_an_offset_that_never_moves_with_lag_is_stall():
    assert partition_lag_status(window((5, 1), (5, 3), (5, 3)), consuming=True) == LagStatus.STALL


def test_a_moving_offset_with_ever_growing_lag_is_warn():
    assert partition_lag_status(window((5, 1), (6, 3), (8, 4)), consuming=True) == LagStatus.WARN


def test_a_moving_offset_with_lag_that_also_shrinks_is_ok():
    assert partition_lag_status(window((5, 4), (6, 3), (8, 4)), consuming=True) == LagStatus.OK


def test_one_sample_with_lag_is_ok_until_there_is_history():
    assert partition_lag_status(window((5, 4)), consuming=True) == LagStatus.OK


@pytest.mark.parametrize(
    ("statuses", "expected"),
    [
        ([LagStatus.OK, LagStatus.OK], "OK"),
        ([LagStatus.OK, LagStatus.WARN], "WARN"),
        ([LagStatus.WARN, LagStatus.STALL], "ERR"),
        ([LagStatus.STOP], "ERR"),
        ([LagStatus.REWIND, LagStatus.OK], "ERR"),
        ([], "OK"),
    ],
)
def test_the_connector_status_is_the_worst_partition(statuses, expected):
    assert connector_lag_status(statuses) == expected


AT = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("previous", "committed", "expected"),
    [
        # Never committed: no move to date.
        (None, None, None),
        ((5, AT), None, None),
        # First seen by a refresh: dated by that refresh.
        (None, 7, AT + timedelta(minutes=1)),
        # Unchanged since the last refresh: the move it dated stays.
        ((7, AT), 7, AT),
        # Moved on, or back (an edit), since: this refresh dates it.
        ((5, AT), 7, AT + timedelta(minutes=1)),
        ((9, AT), 7, AT + timedelta(minutes=1)),
        # A row stored before moves were dated: from now on.
        ((7, None), 7, AT + timedelta(minutes=1)),
    ],
)
def test_a_sink_partitions_commit_is_dated_by_the_refresh_that_first_saw_it(
    previous, committed, expected
):
    assert committed_moved_at(previous, committed, AT + timedelta(minutes=1)) == expected


@pytest.mark.parametrize(
    ("previous", "committed", "seen"),
    [
        # The first read of a partition saw no move, whatever its offset.
        (None, 7, False),
        # A move between two refreshes was seen, from no commit too.
        ((5, AT, False), 7, True),
        ((None, None, False), 7, True),
        # A row stored before moves were dated.
        ((7, None, False), 7, False),
        ((9, AT, False), 7, True),
        # Unchanged: what the refresh before knew stays.
        ((7, AT, False), 7, False),
        ((7, AT, True), 7, True),
        # Never committed: nothing moved.
        ((5, AT, True), None, False),
    ],
)
def test_a_sink_partitions_move_is_seen_only_between_two_reads(previous, committed, seen):
    assert committed_move_seen(previous, committed) is seen


def test_a_sinks_last_move_is_seen_when_a_latest_partition_moved():
    later = AT + timedelta(seconds=3)
    assert last_move_seen([(AT, True), (later, False)]) is False
    assert last_move_seen([(AT, False), (later, True), (later, False)]) is True
    assert last_move_seen([(None, False)]) is False


def test_a_sinks_last_commit_is_its_latest_partition_move():
    assert last_moved_at([None, AT, AT + timedelta(seconds=3), None]) == AT + timedelta(seconds=3)
    assert last_moved_at([None, None]) is None
    assert last_moved_at([]) is None
