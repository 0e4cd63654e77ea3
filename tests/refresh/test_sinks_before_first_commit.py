"""Sinks whose group has no commit yet, on the REAL worker: three of them, three answers;
then a sink's first commits and the next, dated by the refreshes that saw them.

A sink created PAUSED and one failing on its first record lag by every record of their
topic (their consumers start at `auto.offset.reset`, earliest), rated STOP since their tasks
are not running; a sink whose `preCommit` returns {} keeps its offsets outside Connect and
shows no lag. Connectors and topics carry this module run's suffix: the broker and the
worker are the session's.
"""

import time
import uuid
from dataclasses import dataclass

import pytest
from django.utils.html import escape

from offsets.formats.status_records import trace_summary
from offsets.kafka import groups, producers, reading
from offsets.models import (
    ConnectorSnapshot,
    ConnectorStateChange,
    RefreshRun,
    SinkPartitionLag,
)
from offsets.queries import snapshots
from offsets.refresh.run import run_refresh
from tests.support.connect_rest import wait_until
from tests.support.worker_files import file_sink, produce

pytestmark = pytest.mark.integration

RUN = uuid.uuid4().hex[:8]
EXTERNAL_SINK = "dev.offsetsdashboard.connectors.ExternalOffsetsSinkConnector"
RECORDS = 5


def name(what: str) -> str:
    return f"nocommit-{RUN}-{what}"


@dataclass(frozen=True)
class Sinks:
    paused: str
    failing: str
    external: str
    # Each sink's topic: its records' timestamps, oldest first.
    stamps: dict[str, list[int]]


def produce_spread(kafka: dict, topic: str) -> list[int]:
    """Write RECORDS lines that are not JSON, the first a moment before the others (so the
    lag in time is not 0); return their timestamps."""
    produce(kafka, topic, ["first line"])
    time.sleep(0.3)
    producer = producers.java_producer(kafka)
    for i in range(1, RECORDS):
        producer.produce(topic, value=f"line {i}".encode())
    assert producer.flush(10) == 0
    fast = {**kafka, "fetch.wait.max.ms": 10}
    records = list(reading.read_topic(fast, topic, timeout=5, batch_size=1))
    assert len(records) == RECORDS
    return [record.timestamp_ms for record in records]


@pytest.fixture(scope="module")
def sinks(rest, kafka, tmp_path_factory) -> Sinks:
    files = tmp_path_factory.mktemp("no-commit")
    paused, failing, external = name("paused"), name("failing"), name("external")
    stamps = {
        connector: produce_spread(kafka, f"{connector}-in")
        for connector in (paused, failing, external)
    }
    rest.create(paused, file_sink(files / "paused.txt", f"{paused}-in"), initial_state="PAUSED")
    rest.create(
        failing,
        {
            **file_sink(files / "failing.txt", f"{failing}-in"),
            # The records are not JSON: the converter fails the task on the first one.
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter.schemas.enable": "false",
        },
    )
    output = files / "external.txt"
    rest.create(
        external,
        {
            "connector.class": EXTERNAL_SINK,
            "tasks.max": "1",
            "topics": f"{external}-in",
            "file": str(output),
            "offsets.file": str(files / "external.offsets"),
            "key.converter": "org.apache.kafka.connect.storage.StringConverter",
            "value.converter": "org.apache.kafka.connect.storage.StringConverter",
        },
    )
    try:
        # Created PAUSED, it has no tasks yet (KIP-980): no consumer has read anything.
        wait_until(
            lambda: rest.status(paused),
            lambda s: bool(s and s["connector"]["state"] == "PAUSED"),
            timeout=60,
            what=f"{paused} PAUSED",
        )
        wait_until(
            lambda: rest.status(failing),
            lambda s: bool(s and s["tasks"] and s["tasks"][0]["state"] == "FAILED"),
            timeout=60,
            what=f"{failing}'s task FAILED",
        )
        wait_until(
            lambda: output.read_text() if output.exists() else "",
            lambda text: text.count("\n") == RECORDS,
            timeout=60,
            what="the external-offsets sink's output",
        )
        yield Sinks(paused, failing, external, stamps)
    finally:
        for connector in (paused, failing, external):
            rest.delete(connector)


@pytest.fixture
def refreshed(cluster, sinks, spark, history_dir):
    run = run_refresh(cluster=cluster, spark=spark)
    assert run.status == RefreshRun.Status.SUCCEEDED, run.error
    return cluster


def lag_of(cluster, connector: str) -> SinkPartitionLag:
    (row,) = SinkPartitionLag.objects.filter(cluster=cluster, connector=connector)
    return row


def test_a_sink_created_paused_lags_by_every_record_and_is_not_ok(
    refreshed, sinks, kafka, logged_in_client
):
    assert groups.committed_offsets(kafka, f"connect-{sinks.paused}") == {}
    stamps = sinks.stamps[sinks.paused]
    lag = lag_of(refreshed, sinks.paused)
    assert (lag.committed, lag.log_start, lag.log_end, lag.lag_records) == (
        None,
        0,
        RECORDS,
        RECORDS,
    )
    # From the first waiting record to the newest.
    assert lag.lag_ms == stamps[-1] - stamps[0] > 0
    assert lag.status == "STOP"
    snapshot = ConnectorSnapshot.objects.get(cluster=refreshed, name=sinks.paused)
    assert not snapshot.offsets_managed_externally
    assert (snapshot.lag_records, snapshot.lag_ms, snapshot.lag_status) == (
        RECORDS,
        lag.lag_ms,
        "ERR",
    )
    assert snapshot.uncommitted_partitions == 1
    assert snapshot.last_commit_at is None
    # The list, the page and the API say so, and why.
    # Created paused by its owner: listed as PAUSED, not under STOP.
    stop = logged_in_client.get(f"/clusters/{refreshed.name}/connectors/?status=STOP")
    assert f'data-connector="{sinks.paused}"' not in stop.content.decode()
    page = logged_in_client.get(f"/clusters/{refreshed.name}/connectors/?status=PAUSED")
    row = page.content.decode().split(f'data-connector="{sinks.paused}"')[1].split("</tr>")[0]
    assert f'data-field="lag-records">{RECORDS}<' in row
    assert 'data-field="last-commit"><span class="muted">no commit yet</span>' in row
    assert 'data-reason="no commit yet"' in row
    assert "offsets managed outside Connect" not in row
    body = logged_in_client.get(
        f"/api/v1/clusters/{refreshed.name}/connectors/{sinks.paused}/lag/"
    ).json()
    assert body["lag_records"] == RECORDS and body["lag_status"] == "PAUSED"
    assert body["status_reasons"] == [snapshots.NO_COMMIT_YET]
    assert [(p["committed"], p["lag_records"], p["status"]) for p in body["partitions"]] == [
        (None, RECORDS, "STOP")
    ]


def test_a_sink_failing_on_its_first_record_lags_and_shows_its_task_error(
    refreshed, sinks, kafka, logged_in_client
):
    assert groups.committed_offsets(kafka, f"connect-{sinks.failing}") == {}
    stamps = sinks.stamps[sinks.failing]
    lag = lag_of(refreshed, sinks.failing)
    assert (lag.committed, lag.lag_records, lag.lag_ms, lag.status) == (
        None,
        RECORDS,
        stamps[-1] - stamps[0],
        "STOP",
    )
    snapshot = ConnectorSnapshot.objects.get(cluster=refreshed, name=sinks.failing)
    # Connect keeps the connector RUNNING; its task failed.
    assert (snapshot.runtime_state, snapshot.failed_tasks) == ("RUNNING", 1)
    assert (snapshot.lag_records, snapshot.lag_status) == (RECORDS, "ERR")
    (task,) = snapshot.tasks()
    assert task.state == "FAILED" and task.worker_id
    assert task.error.startswith("org.apache.kafka.connect.errors.")
    assert "DataException" in task.trace and "\tat " in task.trace
    # The state filter and the overview count it as FAILED.
    listed = logged_in_client.get(f"/api/v1/clusters/{refreshed.name}/connectors/?state=FAILED")
    assert sinks.failing in [c["name"] for c in listed.json()["connectors"]]
    clusters = {c["name"]: c for c in logged_in_client.get("/api/v1/clusters/").json()}
    assert clusters[refreshed.name]["counts_by_state"].get("FAILED", 0) >= 1
    assert clusters[refreshed.name]["failed_tasks"] >= 1
    detail = logged_in_client.get(
        f"/api/v1/clusters/{refreshed.name}/connectors/{sinks.failing}/"
    ).json()
    assert detail["tasks"][0]["worker_id"] == task.worker_id
    assert detail["tasks"][0]["error"] == task.error
    html = logged_in_client.get(f"/clusters/{refreshed.name}/connectors/{sinks.failing}/")
    tasks = html.content.decode().split('id="tasks"')[1].split("</table>")[0]
    assert f"<code>{task.worker_id}</code>" in tasks and "<details" in tasks


def test_the_live_state_shows_the_failing_sinks_task_worker_and_error(
    cluster, sinks, rest, logged_in_client
):
    # Read live from the status topic on each request: no refresh needed.
    (worker_task,) = rest.status(sinks.failing)["tasks"]
    first_line = trace_summary(worker_task["trace"])
    assert first_line.startswith("org.apache.kafka.connect.errors.")
    states = logged_in_client.get(f"/api/v1/clusters/{cluster.name}/state/").json()
    (live,) = [c for c in states if c["name"] == sinks.failing]
    (task,) = live["tasks"]
    assert (task["state"], task["worker_id"]) == ("FAILED", worker_task["worker_id"])
    assert task["error"] == first_line
    assert "DataException" in task["trace"] and "\tat " in task["trace"]
    page = logged_in_client.get(f"/clusters/{cluster.name}/live/").content.decode()
    row = page.split(f'data-connector="{sinks.failing}"')[1].split('data-field="tasks"')[1]
    cells = row.split('data-task="0"')[1].split("</tr>")[0]
    assert f"<code>{worker_task['worker_id']}</code>" in cells
    assert f"<summary>{escape(first_line)}</summary>" in cells


def test_a_sink_whose_precommit_returns_nothing_keeps_its_offsets_outside_connect(
    refreshed, sinks, kafka
):
    # It consumed every record, yet its group holds no commit.
    assert groups.committed_offsets(kafka, f"connect-{sinks.external}") == {}
    snapshot = ConnectorSnapshot.objects.get(cluster=refreshed, name=sinks.external)
    assert snapshot.offsets_managed_externally
    assert (snapshot.lag_records, snapshot.lag_ms, snapshot.lag_status) == (None, None, "")
    assert snapshot.uncommitted_partitions == 0
    assert snapshots.status_reasons(snapshot) == []
    assert lag_of(refreshed, sinks.external).status == "OK"


def test_a_committing_sinks_last_commit_follows_its_offsets_moving(
    cluster, rest, kafka, spark, history_dir, tmp_path, logged_in_client
):
    """Kafka keeps no commit times: the refresh that first sees the group's new offsets dates
    the commit, and the list, the page and the API say it is that view."""
    connector = name("committing")
    topic = f"{connector}-in"
    produce(kafka, topic, ["a", "b", "c"])
    rest.create(connector, file_sink(tmp_path / "committing.txt", topic))
    group = f"connect-{connector}"

    def refresh_after_commit(count: int) -> SinkPartitionLag:
        wait_until(
            lambda: groups.committed_offsets(kafka, group),
            lambda offsets: offsets.get((topic, 0)) == count,
            timeout=60,
            what=f"{group} committed {count}",
        )
        run = run_refresh(cluster=cluster, spark=spark)
        assert run.status == RefreshRun.Status.SUCCEEDED, run.error
        return lag_of(cluster, connector)

    try:
        first = refresh_after_commit(3)
        assert first.committed == 3 and first.committed_moved_at == first.sampled_at
        # The first read saw no move: the offsets are as it found them, since at least then.
        assert not first.committed_move_seen
        snapshot = ConnectorSnapshot.objects.get(cluster=cluster, name=connector)
        assert snapshot.last_commit_at == first.committed_moved_at
        assert snapshot.last_commit_basis == "first read"
        page = logged_in_client.get(f"/clusters/{cluster.name}/connectors/{connector}/")
        strip = page.content.decode().split('data-field="last-commit">')[1].split("</dd>")[0]
        assert f"unchanged since at least {first.committed_moved_at:%H:%M:%S} UTC" in strip
        assert "moved" not in strip
        producer = producers.java_producer(kafka)
        for value in ("d", "e"):
            producer.produce(topic, value=value.encode())
        assert producer.flush(10) == 0
        second = refresh_after_commit(5)
    finally:
        rest.delete(connector)
    assert second.committed_moved_at == second.sampled_at > first.committed_moved_at
    assert second.committed_move_seen
    snapshot = ConnectorSnapshot.objects.get(cluster=cluster, name=connector)
    assert snapshot.last_commit_at == second.committed_moved_at
    # Running at both refreshes: one state kept, when first seen (the charts' marks).
    states = ConnectorStateChange.objects.filter(cluster=cluster, connector=connector)
    assert [(s.runtime_state, s.first_seen) for s in states] == [("RUNNING", True)]
    page = logged_in_client.get(f"/clusters/{cluster.name}/connectors/{connector}/")
    strip = page.content.decode().split('data-field="last-commit">')[1].split("</dd>")[0]
    assert "offset moved, seen " in strip and " ago" in strip
    assert f"{second.committed_moved_at:%H:%M:%S} UTC" in strip
    listed = logged_in_client.get(f"/clusters/{cluster.name}/connectors/?type=sink")
    row = listed.content.decode().split(f'data-connector="{connector}"')[1].split("</tr>")[0]
    assert 'class="sink-moved"' in row.split('data-field="last-commit">')[1]
    body = logged_in_client.get(f"/api/v1/clusters/{cluster.name}/connectors/{connector}/").json()
    assert body["last_commit_basis"] == "offset moved"
    assert body["last_commit_at"].startswith(f"{second.committed_moved_at:%Y-%m-%dT%H:%M:%S}")
