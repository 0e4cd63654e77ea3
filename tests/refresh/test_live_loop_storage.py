"""A loop of one refresh a second keeps bounded storage: spaced lag samples, a cap on runs."""

from datetime import datetime, timedelta

import pytest

from offsets.domain.history import LagPoint
from offsets.models import LagSample, RefreshRun
from offsets.refresh import run_records as runs
from offsets.refresh import sinks
from offsets.refresh.results import ms_to_datetime
from tests.support import factories as make

# db_engine: the runs kept and the samples thinned are chosen by queries over time windows.
pytestmark = pytest.mark.db_engine

T0 = datetime(2026, 11, 25, 12, 0, 0).astimezone()


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def test_the_first_sample_is_always_due():
    assert sinks.sample_due(None, T0, every_seconds=60)


def test_a_sample_is_due_once_the_last_is_old_enough():
    assert not sinks.sample_due(T0, at(59.9), every_seconds=60)
    assert sinks.sample_due(T0, at(60), every_seconds=60)
    assert sinks.sample_due(T0, at(3600), every_seconds=60)


def test_zero_seconds_keeps_every_refreshs_samples():
    assert sinks.sample_due(T0, T0, every_seconds=0)


def sample(cluster, ms: int, committed: int) -> LagSample:
    return LagSample(
        cluster=cluster,
        connector="sink",
        topic="t",
        partition=0,
        sampled_at=ms_to_datetime(ms),
        committed=committed,
        log_end=committed + 5,
        lag_records=5,
    )


@pytest.mark.django_db
def test_an_hour_of_one_round_a_second_keeps_bounded_runs_and_samples(settings):
    settings.LAG_SAMPLE_SECONDS = 60
    settings.LAG_WINDOW_SAMPLES = 10
    settings.REFRESH_RUNS_KEPT = 100
    cluster = make.cluster("live")
    start_ms = int(make.now().timestamp() * 1000) - 3600 * 1000
    stored = 0
    for second in range(3600):
        now_ms = start_ms + second * 1000
        stored += sinks.save_samples(cluster, [sample(cluster, now_ms, second)], now_ms=now_ms)
        run = RefreshRun.objects.create(
            cluster=cluster,
            status=RefreshRun.Status.SUCCEEDED,
            started_at=ms_to_datetime(now_ms),
            finished_at=ms_to_datetime(now_ms + 500),
        )
        runs.drop_expired_runs(cluster, now=run.finished_at)

    assert stored == LagSample.objects.filter(cluster=cluster).count() == 60
    assert RefreshRun.objects.filter(cluster=cluster).count() == 100
    # The newest runs stay, the last one among them.
    assert RefreshRun.objects.filter(cluster=cluster).latest("pk") == run
    # Burrow's window spans the last ten minutes of spaced samples, not the last ten seconds.
    window = sinks.recent_samples(cluster, ["sink"])[("sink", "t", 0)]
    assert window == [LagPoint(second, 5) for second in range(3000, 3600, 60)][-9:]


@pytest.mark.django_db
def test_the_run_cap_keeps_the_last_success_and_running_runs(settings):
    settings.REFRESH_RUNS_KEPT = 3
    cluster, other = make.cluster("live"), make.cluster("other")
    success = make.run(cluster, ago=100)
    running = make.run(cluster, RefreshRun.Status.RUNNING, ago=90)
    failures = [make.run(cluster, RefreshRun.Status.FAILED, ago=80 - i) for i in range(5)]
    theirs = [make.run(other, ago=200) for _ in range(5)]

    assert runs.drop_expired_runs(cluster, now=make.now()) == 2
    kept = set(RefreshRun.objects.filter(cluster=cluster).values_list("pk", flat=True))
    assert kept == {success.pk, running.pk, *(run.pk for run in failures[-3:])}
    assert RefreshRun.objects.filter(cluster=other).count() == len(theirs)


@pytest.mark.django_db
def test_a_cap_of_zero_keeps_every_run(settings):
    settings.REFRESH_RUNS_KEPT = 0
    settings.REFRESH_RUN_RETENTION_DAYS = 0
    cluster = make.cluster("live")
    for _ in range(5):
        make.run(cluster, RefreshRun.Status.FAILED)
    assert runs.drop_expired_runs(cluster, now=make.now()) == 0
    assert RefreshRun.objects.count() == 5
