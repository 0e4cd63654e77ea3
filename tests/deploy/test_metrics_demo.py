"""/metrics after two real refreshes of the seeded demo (Spark, embedded broker)."""

import pytest
from django.conf import settings as django_settings
from django.db.models import Sum

from offsets.models import (
    CommitBucket,
    ConnectorSnapshot,
    MalformedCount,
    RefreshRun,
    SinkPartitionLag,
)
from offsets.queries.metrics import COMMIT_RATE_BUCKETS, commit_rate_window
from tests.support.metrics_text import TOKEN, scrape, series, value

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


@pytest.fixture
def metrics(client, settings, refreshed_demo) -> dict:
    settings.METRICS_TOKEN = TOKEN
    return scrape(client)


def test_it_is_refused_without_the_token(client, settings, refreshed_demo):
    settings.METRICS_TOKEN = TOKEN
    response = client.get("/metrics")
    assert response.status_code == 401
    assert "demo" not in response.content.decode()
    settings.METRICS_TOKEN = ""
    assert client.get("/metrics").status_code == 403


def test_the_refresh_succeeded_and_says_what_it_read(metrics):
    last = RefreshRun.objects.filter(status=RefreshRun.Status.SUCCEEDED).latest("started_at")
    assert value(metrics, "refresh_outcome", cluster="demo", outcome="succeeded") == 1
    assert value(metrics, "refresh_outcome", cluster="demo", outcome="failed") == 0
    assert value(metrics, "refresh_running", cluster="demo") == 0
    assert value(metrics, "refresh_read_records", cluster="demo") == last.records_read
    assert value(metrics, "refresh_duration_seconds", cluster="demo") == pytest.approx(last.seconds)
    assert 0 <= value(metrics, "refresh_last_success_age_seconds", cluster="demo") < 3600


def test_every_demo_connector_has_its_state_and_tasks(metrics, seeded_demo):
    states = {
        dict(labels)["connector"]: dict(labels)["state"]
        for labels, hot in series(metrics, "connector_state", cluster="demo").items()
        if hot == 1
    }
    assert set(states) == set(seeded_demo.demo.connectors)
    assert states["jdbc-sink-audit"] == "FAILED"
    assert states["http-source-metrics"] == "PAUSED"
    assert states["file-source-audit"] == "STOPPED"
    assert states["legacy-inventory-source"] == "DELETED"
    audit = {"cluster": "demo", "connector": "jdbc-sink-audit"}
    assert value(metrics, "connector_tasks", **audit, state="FAILED") == 1
    assert value(metrics, "connector_tasks", **audit, state="RUNNING") == 0
    for snapshot in ConnectorSnapshot.objects.all():
        tasks = series(metrics, "connector_tasks", cluster="demo", connector=snapshot.name)
        assert sum(tasks.values()) == len(snapshot.task_states), snapshot.name


def test_each_sinks_lag_is_the_sum_of_its_partitions(metrics):
    sinks = ConnectorSnapshot.objects.filter(type="sink", offsets_managed_externally=False)
    assert sinks.count() >= 3
    for sink in sinks:
        labels = {"cluster": "demo", "connector": sink.name}
        rows = SinkPartitionLag.objects.filter(connector=sink.name)
        total = rows.aggregate(total=Sum("lag_records"))["total"]
        assert value(metrics, "sink_lag_records", **labels) == total == sink.lag_records
        assert value(metrics, "sink_lag_seconds", **labels) == sink.lag_ms / 1000
        assert value(metrics, "sink_lag_status", **labels, status=sink.lag_status) == 1
        assert sum(series(metrics, "sink_lag_status", **labels).values()) == 1
        for row in rows:
            one = {**labels, "topic": row.topic, "partition": str(row.partition)}
            assert value(metrics, "sink_partition_lag_records", **one) == row.lag_records
            assert value(metrics, "sink_partition_lag_status", **one, status=row.status) == 1
        by_status = series(metrics, "sink_partitions", **labels)
        assert sum(by_status.values()) == rows.count()
    # The failed sink's lag grows from its failure: Burrow calls it ERR.
    audit = {"cluster": "demo", "connector": "jdbc-sink-audit"}
    assert value(metrics, "sink_lag_status", **audit, status="ERR") == 1
    assert value(metrics, "sink_lag_records", **audit) > 0
    assert value(metrics, "sink_partitions_unexported") == 0


def test_sources_have_commit_age_rate_stalls_rewinds_and_drift(metrics):
    inventory = {"cluster": "demo", "connector": "jdbc-source-inventory"}
    assert value(metrics, "source_stalled_partitions", **inventory) >= 1
    assert value(metrics, "source_rewinds", **inventory) >= 1
    drifted = {"cluster": "demo", "connector": "http-source-metrics"}
    assert value(metrics, "source_key_drift_partitions", **drifted) >= 1
    last = RefreshRun.objects.filter(status=RefreshRun.Status.SUCCEEDED).latest("started_at")
    start, stop = commit_rate_window(
        last.finished_at, bucket_seconds=django_settings.COMMIT_BUCKET_SECONDS
    )
    seconds = COMMIT_RATE_BUCKETS * django_settings.COMMIT_BUCKET_SECONDS
    for source in ConnectorSnapshot.objects.filter(type="source"):
        labels = {"cluster": "demo", "connector": source.name}
        commits = CommitBucket.objects.filter(
            connector=source.name, bucket_start__gte=start, bucket_start__lt=stop
        ).aggregate(total=Sum("commits"))["total"]
        assert value(metrics, "source_commits_per_second", **labels) == pytest.approx(
            (commits or 0) / seconds
        ), source.name
        assert value(metrics, "source_partitions", **labels) == source.partitions
        if source.last_commit_at is not None:
            assert value(metrics, "source_last_commit_age_seconds", **labels) > 0
    # A running source commits every flush interval, and the demo ends as the tests start.
    app_logs = {"cluster": "demo", "connector": "file-source-app-logs"}
    assert value(metrics, "source_commits_per_second", **app_logs) > 0


def test_malformed_counts_and_edits_are_there(metrics):
    for row in MalformedCount.objects.values("topic", "reason").annotate(total=Sum("count")):
        labels = {"cluster": "demo", "topic": row["topic"], "reason": row["reason"]}
        assert value(metrics, "malformed_records", **labels) == row["total"]
    assert sum(series(metrics, "edits", cluster="demo").values()) == 0
    assert len(series(metrics, "edits", cluster="demo")) == 9
