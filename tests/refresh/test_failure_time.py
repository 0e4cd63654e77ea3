"""A failure is dated by the status topic's record (its Kafka timestamp: when the REAL worker
wrote FAILED), not by the refresh that first saw it. Like the live demo's orders-sink: a file
sink whose file cannot be created (its directory is missing) fails as its task starts."""

import re
import uuid
from datetime import UTC, datetime

import pytest

from offsets.kafka import reading
from offsets.models import ConnectorSnapshot, ConnectorStateChange, RefreshRun
from offsets.refresh.run import run_refresh
from tests.support.connect_rest import wait_until
from tests.support.worker_files import file_sink, produce

pytestmark = pytest.mark.integration


def failed_record_time(kafka: dict, status_topic: str, connector: str) -> datetime:
    """The timestamp of the last status record of the connector's task 0, which says FAILED."""
    key = f"status-task-{connector}-0".encode()
    records = [r for r in reading.read_topic(kafka, status_topic) if r.key == key]
    assert records and b'"FAILED"' in records[-1].value, records[-1:]
    return datetime.fromtimestamp(records[-1].timestamp_ms / 1000, tz=UTC)


def test_a_failure_is_dated_by_the_status_record_the_worker_wrote(
    cluster, rest, kafka, spark, tmp_path, settings, client, editor
):
    settings.OFFSETS_HISTORY_PATH = str(tmp_path / "history")
    connector = f"fails-{uuid.uuid4().hex[:8]}"
    topic = f"{connector}-in"
    produce(kafka, topic, ["a", "b", "c"])
    rest.create(connector, file_sink(tmp_path / "missing-dir" / "out.txt", topic))
    try:
        wait_until(
            lambda: rest.status(connector),
            lambda s: bool(s and s["tasks"] and s["tasks"][0]["state"] == "FAILED"),
            timeout=60,
            what=f"{connector}'s task to fail",
        )
        wrote = failed_record_time(kafka, cluster.status_topic, connector)
        run = run_refresh(cluster=cluster, spark=spark)
        assert run.status == RefreshRun.Status.SUCCEEDED, run.error
    finally:
        rest.delete(connector)
    (change,) = ConnectorStateChange.objects.filter(cluster=cluster, connector=connector)
    assert (change.runtime_state, change.failed_tasks, change.first_seen) == ("RUNNING", 1, True)
    # The worker's time, before the refresh that first saw it even started.
    assert change.at_from_status and change.at == wrote < run.started_at < run.finished_at
    snapshot = ConnectorSnapshot.objects.get(cluster=cluster, name=connector)
    assert snapshot.failed_at == wrote

    client.force_login(editor)
    html = client.get(f"/clusters/{cluster.name}/connectors/{connector}/").content.decode()
    lag = html.split('data-chart="lag"')[1].split("</figure>")[0]
    titles = re.findall(r'data-event="failed"><title>([^<]+)</title>', lag)
    assert titles == [
        f"1 task FAILED at {wrote:%Y-%m-%d %H:%M:%S} UTC (the worker&#x27;s status record)"
    ]
    body = client.get(f"/api/v1/clusters/{cluster.name}/connectors/{connector}/").json()
    assert datetime.fromisoformat(body["failed_at"].replace("Z", "+00:00")) == wrote
