"""Faults during a refresh (real Spark, real broker behind a proxy, real database).

The broker goes away in the middle of a refresh: the run fails with a one-line message, the
previous results stay exactly as they were, and every page and the API keep serving them
with a warning that says how old they are. The database is locked when the refresh saves:
the refresh waits and tries again instead of throwing the Spark work away.
"""

import threading

import pytest

from devkit.demo import DemoOptions, build_demo
from devkit.demo_writer import write_demo
from offsets.history import store as history_store
from offsets.models import (
    CommitBucket,
    ConnectorSnapshot,
    ReadPosition,
    RefreshRun,
    SinkPartitionLag,
    SourceOffset,
)
from offsets.refresh import compute, sinks
from offsets.refresh import run_records as runs
from offsets.refresh.run import run_refresh
from tests.support.broker_proxy import BrokerBehindProxy
from tests.support.db_faults import SqliteLock, short_busy_timeout
from tests.support.demo_data import DEMO_END_MS

pytestmark = pytest.mark.integration

SMALL_DEMO = DemoOptions(
    end_ms=DEMO_END_MS, hours=0.5, seed=5, source_partitions=2, data_records_per_hour=10
)
SOURCE = "orders-cdc-eos"  # a source connector of the demo
SINK = "s3-sink-orders"


@pytest.fixture
def proxied(tmp_path, settings):
    # A broker of its own: the tests cut every connection to it at the proxy.
    settings.OFFSETS_HISTORY_PATH = str(tmp_path / "history")
    broker = BrokerBehindProxy(tmp_path / "proxied-kafka")
    broker.start()
    write_demo({"bootstrap.servers": broker.bootstrap_servers}, build_demo(SMALL_DEMO))
    yield broker
    broker.stop()


def stored_results(cluster):
    """Every result row the pages draw from, as plain tuples."""
    return {
        "offsets": sorted(
            SourceOffset.objects.filter(cluster=cluster).values_list(
                "topic", "key_hash", "offset_text", "commits", "last_commit_at"
            )
        ),
        "connectors": sorted(
            ConnectorSnapshot.objects.filter(cluster=cluster).values_list(
                "name", "runtime_state", "partitions", "lag_records", "lag_status"
            )
        ),
        "lag": sorted(
            SinkPartitionLag.objects.filter(cluster=cluster).values_list(
                "connector", "topic", "partition", "committed", "log_end"
            )
        ),
        "buckets": sorted(
            CommitBucket.objects.filter(cluster=cluster).values_list(
                "connector", "bucket_start", "commits"
            )
        ),
        "positions": sorted(
            ReadPosition.objects.filter(cluster=cluster).values_list(
                "topic", "partition", "next_offset"
            )
        ),
    }


def assert_warns_with_the_snapshot_age(html: str) -> None:
    assert 'data-run="failed"' in html
    assert "The last refresh failed" in html or "Failed" in html
    assert 'data-field="snapshot-age"' in html


SAMPLING_SINK_LAG = "sampling the sinks' lag"


@pytest.mark.parametrize(
    "cut_at",
    [
        # Spark is about to read the offsets topics (every record: a full refresh).
        "computing offsets and history",
        # Spark is done; the lag of the sinks is read from the broker (the test holds the
        # sampling, which runs beside the planning and Spark's work, until then).
        SAMPLING_SINK_LAG,
    ],
)
def test_a_broker_lost_mid_refresh_fails_the_run_and_the_last_results_are_served_with_a_warning(
    proxied, cut_at, db, spark, settings, client, user, monkeypatch
):
    from offsets.models import Cluster

    settings.KAFKA_READ_TIMEOUT = 2
    cluster = Cluster.objects.create(name="flaky", bootstrap_servers=proxied.bootstrap_servers)
    good = run_refresh(cluster=cluster, spark=spark)
    assert good.status == RefreshRun.Status.SUCCEEDED, good.error
    before = stored_results(cluster)
    assert before["offsets"] and before["connectors"] and before["lag"]

    seen = []

    def cut_the_broker(text: str) -> None:
        seen.append(text)
        if cut_at in text:
            proxied.proxy.cut()

    compute_sources, sample_sinks = compute.compute_sources, sinks.sample_sinks
    spark_done = threading.Event()

    def compute_then_cut(*args, **kwargs):
        try:
            results = compute_sources(*args, **kwargs)
            cut_the_broker(SAMPLING_SINK_LAG)
            return results
        finally:
            spark_done.set()

    def sample_sinks_after_spark(*args, **kwargs):
        spark_done.wait(timeout=120)
        return sample_sinks(*args, **kwargs)

    monkeypatch.setattr(compute, "compute_sources", compute_then_cut)
    monkeypatch.setattr(sinks, "sample_sinks", sample_sinks_after_spark)
    run = run_refresh(cluster=cluster, spark=spark, full=True, progress=cut_the_broker)

    assert any(cut_at in text for text in seen)
    assert run.status == RefreshRun.Status.FAILED
    # One clear line naming the broker trouble, not a Spark stack trace.
    assert run.error and "\n" not in run.error and "Traceback" not in run.error
    assert any(
        words in run.error for words in ("did not answer", "stalled", "Could not", "failed")
    ), run.error
    assert run.phase.startswith("failed: ")
    assert stored_results(cluster) == before
    # The failed run's partial history (Parquet) is gone; the good run's stays.
    history = history_store.history_path(cluster)
    assert not (history / f"run={run.pk}").exists()
    assert (history / f"run={good.pk}").exists()

    client.force_login(user)
    for url in (
        "/",
        f"/clusters/{cluster.name}/connectors/",
        f"/clusters/{cluster.name}/connectors/{SOURCE}/",
        f"/clusters/{cluster.name}/connectors/{SINK}/",
    ):
        response = client.get(url)
        assert response.status_code == 200, url
        html = response.content.decode()
        assert_warns_with_the_snapshot_age(html)
        assert run.error[:60] in html, url
    connectors_page = client.get(f"/clusters/{cluster.name}/connectors/").content.decode()
    assert "Showing the results of the last successful refresh" in connectors_page
    assert SOURCE in connectors_page and SINK in connectors_page

    body = client.get(f"/api/v1/clusters/{cluster.name}/connectors/").json()
    assert body["last_refresh"]["status"] == "failed"
    assert body["last_successful_refresh"]["id"] == good.pk
    assert body["results_age_seconds"] >= 0
    assert body["warning"].startswith("The last refresh failed")
    assert "Showing the results of the last successful refresh" in body["warning"]
    assert run.error in body["warning"]
    assert {c["name"] for c in body["connectors"]} >= {SOURCE, SINK}
    (summary,) = [c for c in client.get("/api/v1/clusters/").json() if c["name"] == "flaky"]
    assert summary["warning"] == body["warning"]
    assert summary["results_age_seconds"] >= 0


@pytest.mark.django_db(transaction=True)
def test_a_database_locked_while_the_refresh_saves_is_waited_for_not_a_failed_run(
    fresh_kafka, spark, monkeypatch
):
    from offsets.models import Cluster

    # The broker stays up here: the session's scratch broker, not one behind a proxy.
    write_demo({"bootstrap.servers": fresh_kafka}, build_demo(SMALL_DEMO))
    monkeypatch.setattr(runs, "DB_RETRY_DELAYS", (0.3, 0.3, 0.6, 1.2, 2.4))
    cluster = Cluster.objects.create(name="busy", bootstrap_servers=fresh_kafka)
    lock = SqliteLock("IMMEDIATE")

    def lock_the_database_when_saving(text: str) -> None:
        if "saving results" in text:
            # Another writer takes the lock for longer than the busy timeout, then lets go.
            lock.acquire()
            lock.release_after(1.5)

    try:
        with short_busy_timeout(0.2):
            run = run_refresh(cluster=cluster, spark=spark, progress=lock_the_database_when_saving)
    finally:
        lock.release()
    assert run.status == RefreshRun.Status.SUCCEEDED, run.error
    assert SourceOffset.objects.filter(cluster=cluster).exists()
    assert ConnectorSnapshot.objects.filter(cluster=cluster).count() > 0
    run.refresh_from_db()
    assert run.status == RefreshRun.Status.SUCCEEDED and run.phase == "done"
