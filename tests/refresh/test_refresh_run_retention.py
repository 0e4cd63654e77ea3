"""Old refresh runs are deleted by the next refresh (REFRESH_RUN_RETENTION_DAYS)."""

import pytest

from offsets.models import RefreshRun
from offsets.refresh import run_records as runs
from tests.support import factories as make

# db_engine: deletes in bulk, with their cascades, are the engine's.
pytestmark = [pytest.mark.django_db, pytest.mark.db_engine]

DAY = 24 * 3600


def test_runs_that_ended_before_the_retention_are_deleted_but_the_last_success_stays(settings):
    settings.REFRESH_RUN_RETENTION_DAYS = 30
    cluster, other = make.cluster("prod"), make.cluster("other")
    old_success = make.run(cluster, ago=34 * DAY)  # the newest success, however old
    make.run(cluster, ago=35 * DAY)  # an older success: deleted
    old_failures = [make.run(cluster, RefreshRun.Status.FAILED, ago=31 * DAY) for _ in range(3)]
    stuck = make.run(cluster, RefreshRun.Status.RUNNING, ago=60 * DAY)  # ends it when claimed
    recent_failure = make.run(cluster, RefreshRun.Status.FAILED, ago=29 * DAY)
    others = make.run(other, ago=90 * DAY)

    assert runs.drop_expired_runs(cluster, now=make.now()) == 4
    kept = set(RefreshRun.objects.values_list("pk", flat=True))
    assert kept == {old_success.pk, stuck.pk, recent_failure.pk, others.pk}
    assert not kept & {run.pk for run in old_failures}

    # Once a newer run succeeds, the old success goes too.
    make.run(cluster, ago=60)
    assert runs.drop_expired_runs(cluster, now=make.now()) == 1
    assert not RefreshRun.objects.filter(pk=old_success.pk).exists()


def test_zero_keeps_every_run(settings):
    settings.REFRESH_RUN_RETENTION_DAYS = 0
    cluster = make.cluster("prod")
    make.run(cluster, RefreshRun.Status.FAILED, ago=400 * DAY)
    assert runs.drop_expired_runs(cluster, now=make.now()) == 0
    assert RefreshRun.objects.count() == 1
