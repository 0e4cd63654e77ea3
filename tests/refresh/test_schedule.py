"""The scheduler's rules: which clusters are due, in which order, and which are late."""

from datetime import UTC, datetime, timedelta

from offsets.domain.schedule import ClusterTurn, due_clusters, overdue

NOW = datetime(2026, 11, 27, 12, 0, 0, tzinfo=UTC)


def ago(seconds: float) -> datetime:
    return NOW - timedelta(seconds=seconds)


def turn(pk, every=60, last=None, running=False) -> ClusterTurn:
    return ClusterTurn(cluster_id=pk, every_seconds=every, last_started=last, running=running)


def test_a_cluster_is_due_once_its_period_has_passed_since_its_last_start():
    turns = [turn(1, last=ago(59)), turn(2, last=ago(60)), turn(3, last=ago(600))]
    assert due_clusters(turns, now=NOW, busy=set()) == [3, 2]


def test_never_refreshed_clusters_come_first_then_the_longest_overdue():
    turns = [turn(1, last=ago(61)), turn(2), turn(3, every=10, last=ago(3600)), turn(4)]
    assert due_clusters(turns, now=NOW, busy=set()) == [2, 4, 3, 1]


def test_a_period_of_zero_is_never_scheduled():
    assert (
        due_clusters([turn(1, every=0), turn(2, every=0, last=ago(10**6))], now=NOW, busy=set())
        == []
    )


def test_a_running_or_busy_cluster_is_not_started_again():
    turns = [turn(1, running=True), turn(2, last=ago(600), running=True), turn(3), turn(4)]
    assert due_clusters(turns, now=NOW, busy={3}) == [4]


def test_a_refresh_by_anyone_counts_as_the_last_round():
    # A button press 10 s ago: the scheduler waits out the period from it.
    assert due_clusters([turn(1, every=60, last=ago(10))], now=NOW, busy=set()) == []


def test_a_failing_cluster_is_tried_once_a_period_not_in_a_loop():
    # Its last run failed at once; the next try is due a period after that run's start.
    failed_at = ago(1)
    assert due_clusters([turn(1, every=30, last=failed_at)], now=NOW, busy=set()) == []
    later = NOW + timedelta(seconds=29)
    assert due_clusters([turn(1, every=30, last=failed_at)], now=later, busy=set()) == [1]


def test_a_cluster_is_overdue_past_the_given_number_of_periods():
    assert not overdue(turn(1, every=60, last=ago(180)), now=NOW, periods=3)
    assert overdue(turn(1, every=60, last=ago(181)), now=NOW, periods=3)
    assert not overdue(turn(1, every=0, last=ago(10**6)), now=NOW, periods=3)
