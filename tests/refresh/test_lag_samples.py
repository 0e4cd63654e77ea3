"""The lag samples a refresh reads (Burrow's window) and the ones it drops (retention), and the
connectors' state changes it drops with them."""

from datetime import timedelta

import pytest

from offsets.domain.history import LagPoint
from offsets.models import ConnectorStateChange, LagSample
from offsets.refresh import sinks, summaries
from tests.support import factories as make

# db_engine: time windows are compared and thinned by the engine.
pytestmark = [pytest.mark.django_db, pytest.mark.db_engine]


def sample(cluster, connector, partition, at, committed):
    return LagSample.objects.create(
        cluster=cluster,
        connector=connector,
        topic="t",
        partition=partition,
        sampled_at=at,
        committed=committed,
        log_end=1000,
        lag_records=1000 - committed if committed is not None else 1000,
    )


def test_the_window_is_each_partitions_samples_at_the_clusters_last_samplings(settings):
    settings.LAG_WINDOW_SAMPLES = 4  # the window is the last 3 samples plus the new one
    cluster, other = make.cluster("prod"), make.cluster("other")
    start = make.now() - timedelta(hours=1)
    for index in range(20):
        at = start + timedelta(minutes=index)
        sample(cluster, "a", 0, at, 100 + index)
        # No committed offset at the last-but-one sampling: the consumer then stood where it
        # starts, the log end less the lag (here the log start, 0).
        sample(cluster, "a", 1, at, None if index == 18 else 200 + index)
        if index < 10:  # a sink deleted since: its samples are older than the window
            sample(cluster, "gone", 0, at, 300 + index)
    sample(other, "a", 0, start + timedelta(hours=2), 999)  # another cluster's sampling

    window = sinks.recent_samples(cluster, ["a", "gone"])

    assert window == {
        ("a", "t", 0): [LagPoint(117, 883), LagPoint(118, 882), LagPoint(119, 881)],
        ("a", "t", 1): [LagPoint(217, 783), LagPoint(0, 1000), LagPoint(219, 781)],
    }
    assert sinks.recent_samples(cluster, []) == {}
    settings.LAG_WINDOW_SAMPLES = 1
    assert sinks.recent_samples(cluster, ["a"]) == {}


def test_samples_past_the_retention_are_dropped_but_the_window_stays(settings):
    settings.LAG_SAMPLE_RETENTION_DAYS = 7
    settings.LAG_WINDOW_SAMPLES = 2
    cluster, other = make.cluster("prod"), make.cluster("other")
    now = make.now()
    days = [40, 30, 20, 10, 8, 6, 1]
    for age in days:
        sample(cluster, "a", 0, now - timedelta(days=age), age)
        sample(other, "a", 0, now - timedelta(days=age), age)

    def ages(of):
        return sorted((s.committed for s in LagSample.objects.filter(cluster=of)), reverse=True)

    sinks.drop_expired_lag_samples(cluster, now_ms=int(now.timestamp() * 1000))
    assert ages(cluster) == [6, 1]  # older than 7 days: gone
    assert ages(other) == days

    # 60 days later (refreshes further apart than the retention), the window's two samplings
    # stay, 61 and 66 days old.
    later = now + timedelta(days=60)
    sinks.drop_expired_lag_samples(other, now_ms=int(later.timestamp() * 1000))
    assert ages(other) == [6, 1]


def test_a_retention_of_zero_keeps_every_sample(settings):
    settings.LAG_SAMPLE_RETENTION_DAYS = 0
    cluster = make.cluster("prod")
    now = make.now()
    for age in (400, 40, 4):
        sample(cluster, "a", 0, now - timedelta(days=age), age)
    sinks.drop_expired_lag_samples(cluster, now_ms=int(now.timestamp() * 1000))
    assert LagSample.objects.filter(cluster=cluster).count() == 3


def test_state_changes_older_than_the_retention_go_but_each_connectors_newest_stays(settings):
    settings.LAG_SAMPLE_RETENTION_DAYS = 7
    cluster, other = make.cluster("prod"), make.cluster("other")
    now = make.now()
    for of in (cluster, other):
        for connector, age in (("flapping", 30), ("flapping", 20), ("flapping", 1), ("held", 90)):
            ConnectorStateChange.objects.create(
                cluster=of, connector=connector, at=now - timedelta(days=age)
            )

    summaries.drop_expired_state_changes(cluster, now_ms=int(now.timestamp() * 1000))

    def kept(of):
        rows = ConnectorStateChange.objects.filter(cluster=of)
        return sorted((row.connector, (now - row.at).days) for row in rows)

    # "held" changed 90 days ago and not since: that change says since when it is held.
    assert kept(cluster) == [("flapping", 1), ("held", 90)]
    assert len(kept(other)) == 4
    settings.LAG_SAMPLE_RETENTION_DAYS = 0
    summaries.drop_expired_state_changes(other, now_ms=int(now.timestamp() * 1000))
    assert len(kept(other)) == 4
