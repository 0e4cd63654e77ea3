"""/healthz and /readyz: answered without a login, JSON, and never a name."""

import logging
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.db import DatabaseError
from django.utils import timezone

from dashboard.logs import UnreadyProbes
from offsets.models import RefreshRun, SchedulerBeat
from offsets.queries.snapshots.refresh_state import refresh_state
from tests.support import factories

pytestmark = pytest.mark.django_db


def beat(seconds_ago: float = 0) -> SchedulerBeat:
    at = timezone.now() - timedelta(seconds=seconds_ago)
    return SchedulerBeat.objects.create(host="h", pid=1, started_at=at, beat_at=at)


def succeeded(cluster, seconds_ago: float) -> RefreshRun:
    at = timezone.now() - timedelta(seconds=seconds_ago)
    return RefreshRun.objects.create(
        cluster=cluster, started_at=at, finished_at=at, status=RefreshRun.Status.SUCCEEDED
    )


def test_healthz_answers_ok_without_a_login_or_the_database(client, monkeypatch):
    def no_database(*args, **kwargs):
        raise DatabaseError("down")

    monkeypatch.setattr("django.db.backends.base.base.BaseDatabaseWrapper.cursor", no_database)
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}
    assert "no-cache" in response["Cache-Control"]


def test_readyz_is_ready_with_a_recent_scheduler_round_and_clusters_refreshed_in_time(client):
    cluster = factories.cluster("payments-prod", refresh_every_seconds=60)
    succeeded(cluster, seconds_ago=30)
    beat(seconds_ago=5)
    response = client.get("/readyz")
    assert response.status_code == 200, response.json()
    assert response.json() == {
        "status": "ready",
        "checks": {
            "database": "ok",
            "migrations": "ok",
            "scheduler": "ok",
            "clusters": {"scheduled": 1, "not_refreshed_in_time": 0},
        },
    }


def test_readyz_is_unready_without_a_scheduler_or_with_a_silent_one(client, settings):
    settings.READY_SCHEDULER_SECONDS = 60
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["checks"]["scheduler"] == "no recent round"
    beat(seconds_ago=61)
    assert client.get("/readyz").json()["checks"]["scheduler"] == "no recent round"


def test_readyz_counts_clusters_not_refreshed_in_time_without_naming_them(client, settings):
    settings.READY_REFRESH_PERIODS = 3
    beat()
    late = factories.cluster("payments-prod", refresh_every_seconds=60)
    succeeded(late, seconds_ago=181)
    fine = factories.cluster("orders-prod", refresh_every_seconds=60)
    succeeded(fine, seconds_ago=10)
    factories.cluster("by-hand", refresh_every_seconds=0)  # not scheduled: not judged
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["checks"]["clusters"] == {"scheduled": 2, "not_refreshed_in_time": 1}
    body = response.content.decode()
    assert "payments" not in body and "orders" not in body and "by-hand" not in body


def test_readyz_allows_a_cluster_the_time_its_refreshes_take_as_the_pages_do(client, settings):
    """Every second, with refreshes of 10 s: a result every ~11 s is on time, not 10 s late."""
    settings.READY_REFRESH_PERIODS = 3
    beat()
    cluster = factories.cluster("live", refresh_every_seconds=1)
    run = succeeded(cluster, seconds_ago=20)
    RefreshRun.objects.filter(pk=run.pk).update(seconds=10)
    assert client.get("/readyz").status_code == 200
    assert refresh_state(cluster=cluster).staleness != "stale"
    # 40 s old against 3 gaps of 1 + 10 s: stale on the pages, and unready here.
    RefreshRun.objects.filter(pk=run.pk).update(finished_at=run.finished_at - timedelta(seconds=20))
    assert client.get("/readyz").json()["checks"]["clusters"]["not_refreshed_in_time"] == 1
    assert refresh_state(cluster=cluster).staleness == "stale"


def test_a_cluster_added_since_is_judged_from_its_creation(client):
    beat()
    factories.cluster("new", refresh_every_seconds=60)  # never refreshed, created just now
    assert client.get("/readyz").status_code == 200


def test_readyz_is_unready_when_the_database_does_not_answer(client, monkeypatch):
    def no_database(*args, **kwargs):
        raise DatabaseError("could not connect to server")

    monkeypatch.setattr("django.db.backends.base.base.BaseDatabaseWrapper.cursor", no_database)
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json() == {"status": "unready", "checks": {"database": "unreachable"}}
    assert "could not connect" not in response.content.decode()


@pytest.mark.django_db
def test_an_unready_answer_is_not_logged_as_a_server_error(client, caplog):
    with caplog.at_level(logging.WARNING, logger="django.request"):
        assert client.get("/readyz").status_code == 503  # no scheduler
    assert [r for r in caplog.records if r.name == "django.request"] == []


def test_other_server_errors_are_still_logged():
    unready = UnreadyProbes()

    def record(path: str, status: int) -> logging.LogRecord:
        line = logging.LogRecord("django.request", logging.ERROR, "", 0, "x", (), None)
        line.status_code, line.request = status, SimpleNamespace(path=path)
        return line

    assert not unready.filter(record("/readyz", 503))
    assert not unready.filter(record("/healthz", 503))
    assert unready.filter(record("/readyz", 500))
    assert unready.filter(record("/api/v1/clusters/", 503))
    assert unready.filter(logging.LogRecord("django.request", 40, "", 0, "x", (), None))
