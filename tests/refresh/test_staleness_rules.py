"""How stale a cluster's results are, against the cluster's own refresh period."""

import pytest

from offsets.domain.staleness import (
    FRESH,
    LATE,
    STALE,
    expected_gap_seconds,
    staleness,
)

GLOBAL = 1800  # SNAPSHOT_STALE_SECONDS' default
GAPS = 3  # READY_REFRESH_PERIODS' default


def judge(age, every, run_seconds=0.0):
    return staleness(
        age, every_seconds=every, run_seconds=run_seconds, stale_seconds=GLOBAL, stale_gaps=GAPS
    )


def test_a_cluster_refreshed_every_second_is_stale_with_results_half_an_hour_old():
    # The case that showed "Succeeded 29m 37s ago" in green.
    assert judge(29 * 60 + 37, every=1, run_seconds=1.5) == STALE


def test_the_expected_gap_is_the_period_plus_the_time_a_refresh_takes():
    assert expected_gap_seconds(every_seconds=1, run_seconds=4.0) == 5.0
    assert expected_gap_seconds(every_seconds=60, run_seconds=None) == 60.0
    assert expected_gap_seconds(every_seconds=60, run_seconds=-1.0) == 60.0


@pytest.mark.parametrize(
    ("age", "level"),
    [
        (0, FRESH),
        (80, FRESH),
        (160, FRESH),  # exactly two gaps: not yet late
        (161, LATE),
        (240, LATE),  # exactly three gaps: not yet stale
        (241, STALE),
        (86_400, STALE),
    ],
)
def test_a_scheduled_cluster_is_late_after_two_gaps_and_stale_after_the_ready_periods(age, level):
    assert judge(age, every=60, run_seconds=20.0) == level


def test_a_slow_refresh_on_a_fast_period_is_not_late_for_its_own_duration():
    assert judge(9, every=1, run_seconds=4.0) == FRESH
    assert judge(11, every=1, run_seconds=4.0) == LATE
    assert judge(16, every=1, run_seconds=4.0) == STALE


def test_a_daily_cluster_is_not_stale_after_the_global_cut_off():
    assert judge(GLOBAL * 10, every=86_400) == FRESH


@pytest.mark.parametrize(("age", "level"), [(0, FRESH), (GLOBAL, FRESH), (GLOBAL + 1, STALE)])
def test_a_cluster_refreshed_by_hand_is_judged_by_the_global_cut_off_and_never_late(age, level):
    assert judge(age, every=0, run_seconds=20.0) == level


def test_no_results_are_not_judged():
    assert judge(None, every=1) == FRESH
    assert judge(None, every=0) == FRESH


def test_with_ready_periods_at_two_or_fewer_a_late_cluster_is_stale_at_once():
    level = staleness(121, every_seconds=60, run_seconds=0, stale_seconds=GLOBAL, stale_gaps=2)
    assert level == STALE
