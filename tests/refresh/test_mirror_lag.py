"""MirrorMaker 2's lag on the REAL runtime: a MirrorSourceConnector on the session's worker
copies from the scratch broker (upstream) into the session's broker.

Paused, with records produced upstream, its lag is exactly what was produced, rated STOP
(ERR); resumed, it copies them and is back to OK. One created PAUSED over records already
upstream has copied none: it lags by all of them, "not copied yet". The page, the list, the API and /metrics
say so; the alert rules leave a paused mirror alone. Names carry this module run's suffix: the brokers and the worker are
the session's.
"""

import time
import uuid

import pytest

from offsets import connect_state
from offsets.alerts import evaluation as alerts
from offsets.kafka import admin, producers
from offsets.models import (
    AlertDelivery,
    AlertRule,
    Cluster,
    ConnectorSnapshot,
    MirrorUpstream,
    RefreshRun,
    SinkPartitionLag,
)
from offsets.refresh.run import run_refresh
from tests.support.connect_rest import wait_until
from tests.support.metrics_text import TOKEN, scrape, value

pytestmark = pytest.mark.integration

RUN = uuid.uuid4().hex[:8]
ALIAS = f"up{RUN}"
TOPIC = f"mirrored-{RUN}"
CONNECTOR = f"mirror-{RUN}"
MIRROR_SOURCE = "org.apache.kafka.connect.mirror.MirrorSourceConnector"
# Records produced before the mirror starts, per partition: it copies them all.
COPIED = {0: 3, 1: 2}


def mirror_config(upstream: str, downstream: str) -> dict[str, str]:
    return {
        "connector.class": MIRROR_SOURCE,
        "tasks.max": "1",
        "source.cluster.alias": ALIAS,
        "target.cluster.alias": "here",
        "source.cluster.bootstrap.servers": upstream,
        "target.cluster.bootstrap.servers": downstream,
        "topics": TOPIC,
        "replication.factor": "1",
        "offset-syncs.topic.replication.factor": "1",
        "refresh.topics.interval.seconds": "1",
        "sync.topic.configs.enabled": "false",
        "sync.topic.acls.enabled": "false",
        "emit.heartbeats.enabled": "false",
        "emit.checkpoints.enabled": "false",
    }


def produce(upstream: str, partition: int, stamps: list[int]) -> None:
    producer = producers.java_producer({"bootstrap.servers": upstream})
    for stamp in stamps:
        producer.produce(
            TOPIC,
            value=f"{partition}@{stamp}".encode(),
            partition=partition,
            timestamp=stamp,
            on_delivery=producers.raise_on_delivery_error,
        )
    assert producer.flush(10) == 0


def stored_offsets(rest) -> dict[int, int]:
    """The mirror's stored offsets per upstream partition, as the worker reports them."""
    return {
        entry["partition"]["partition"]: entry["offset"]["offset"]
        for entry in rest.offsets(CONNECTOR)["offsets"]
        if entry["partition"].get("topic") == TOPIC
    }


def refresh(cluster, spark) -> None:
    run = run_refresh(cluster=cluster, spark=spark)
    assert run.status == RefreshRun.Status.SUCCEEDED, run.error


def lags(cluster) -> dict[int, tuple]:
    return {
        row.partition: (row.committed, row.log_end, row.lag_records, row.lag_ms, row.status)
        for row in SinkPartitionLag.objects.filter(cluster=cluster, connector=CONNECTOR)
    }


def wait_for_state(rest, state: str) -> None:
    wait_until(
        lambda: rest.status(CONNECTOR),
        lambda s: bool(
            s and s["connector"]["state"] == state and {t["state"] for t in s["tasks"]} == {state}
        ),
        timeout=60,
        what=f"{CONNECTOR} {state}",
    )


def test_a_paused_mirror_lags_by_what_was_produced_upstream_and_resumed_is_ok(
    cluster, rest, kafka, fresh_kafka, spark, history_dir, logged_in_client, settings
):
    settings.METRICS_TOKEN, settings.METRICS_ALLOWED_ADDRESSES = TOKEN, []
    settings.LAG_SAMPLE_SECONDS = 0  # every refresh keeps its lag samples
    upstream_kafka = {"bootstrap.servers": fresh_kafka}
    admin.create_topics(upstream_kafka, [admin.TopicSpec(TOPIC, 2, {})])
    base = int(time.time() * 1000) - 60_000
    for partition, count in COPIED.items():
        produce(fresh_kafka, partition, [base + i for i in range(count)])
    rest.create(CONNECTOR, mirror_config(fresh_kafka, kafka["bootstrap.servers"]))
    try:
        # The stored offset is the last record copied: one less than the count.
        wait_until(
            lambda: stored_offsets(rest),
            lambda offsets: offsets == {p: n - 1 for p, n in COPIED.items()},
            timeout=90,
            what="the mirror's offsets of every copied record",
        )
        upstream = Cluster.objects.create(name=f"upstream-{RUN}", bootstrap_servers=fresh_kafka)

        # Without an upstream chosen for the alias: no lag, and the page says how to add one.
        refresh(cluster, spark)
        snapshot = ConnectorSnapshot.objects.get(cluster=cluster, name=CONNECTOR)
        assert (snapshot.source_alias, snapshot.upstream_cluster) == (ALIAS, "")
        assert (snapshot.lag_records, snapshot.lag_status) == (None, "")
        assert lags(cluster) == {}
        page = logged_in_client.get(f"/clusters/{cluster.name}/connectors/{CONNECTOR}/")
        hint = page.content.decode().split('id="upstream-hint"')[1].split("</p>")[0]
        assert f"<strong>{upstream.name}</strong>" in hint
        assert f"upstream={upstream.pk}" in hint and f"source_alias={ALIAS}" in hint

        MirrorUpstream.objects.create(cluster=cluster, source_alias=ALIAS, upstream=upstream)
        refresh(cluster, spark)
        assert lags(cluster) == {p: (n, n, 0, 0, "OK") for p, n in COPIED.items()}, (
            "caught up: the next offset to copy is the log end"
        )

        # Paused, then records produced upstream: 4 on partition 0 a second apart, 1 on 1.
        rest.pause(CONNECTOR)
        wait_for_state(rest, "PAUSED")
        new = {0: [base + 10_000 + 1000 * i for i in range(4)], 1: [base + 20_000]}
        for partition, stamps in new.items():
            produce(fresh_kafka, partition, stamps)
        refresh(cluster, spark)
        assert lags(cluster) == {
            0: (3, 7, 4, 3000, "STOP"),
            1: (2, 3, 1, 0, "STOP"),
        }
        snapshot = ConnectorSnapshot.objects.get(cluster=cluster, name=CONNECTOR)
        assert (snapshot.lag_records, snapshot.lag_ms, snapshot.lag_status) == (5, 3000, "ERR")
        assert snapshot.upstream_cluster == upstream.name

        # The list's lag columns, the page, the API, /metrics and the alert rules.
        listed = logged_in_client.get(f"/clusters/{cluster.name}/connectors/")
        row = listed.content.decode().split(f'data-connector="{CONNECTOR}"')[1].split("</tr>")[0]
        assert 'data-field="lag-records">5<' in row
        page = logged_in_client.get(f"/clusters/{cluster.name}/connectors/{CONNECTOR}/")
        table = page.content.decode().split('id="upstream-table"')[1].split("</table>")[0]
        assert f"<code>{TOPIC}</code>-0" in table and "STOP" in table
        body = logged_in_client.get(
            f"/api/v1/clusters/{cluster.name}/connectors/{CONNECTOR}/lag/"
        ).json()
        # Paused by its owner: PAUSED, never an error (its stored, measured status is ERR).
        assert (body["lag_records"], body["lag_status"], body["upstream_cluster"]) == (
            5,
            "PAUSED",
            upstream.name,
        )
        assert [
            (p["partition"], p["committed"], p["lag_records"], p["upstream"])
            for p in body["partitions"]
        ] == [(0, 3, 4, upstream.name), (1, 2, 1, upstream.name)]
        history = logged_in_client.get(
            f"/api/v1/clusters/{cluster.name}/connectors/{CONNECTOR}/history/"
        ).json()
        assert [point["lag_records"] for point in history["lag_samples"]][-1] == 5
        parsed = scrape(logged_in_client)
        labels = {"cluster": cluster.name, "connector": CONNECTOR}
        assert value(parsed, "mirror_lag_records", **labels) == 5
        assert value(parsed, "mirror_lag_seconds", **labels) == 3.0
        assert value(parsed, "mirror_lag_status", **labels, status="PAUSED") == 1
        assert value(parsed, "mirror_lag_status", **labels, status="ERR") == 0
        assert (
            value(parsed, "mirror_partition_lag_records", **labels, topic=TOPIC, partition="0") == 4
        )
        assert value(parsed, "sink_lag_records", **labels) is None
        AlertRule.objects.create(
            name=f"mirrors-{RUN}", cluster=cluster, target="http://127.0.0.1:9/", quiet_minutes=0
        )
        alerts.evaluate_after_refresh(cluster=cluster)
        # Its owner paused it: its lag stops by design and pages nobody, as the pages show it
        # "paused" (a running mirror's lag alert names its upstream: test_alerts_evaluation).
        assert not AlertDelivery.objects.filter(
            rule__name=f"mirrors-{RUN}", subject=f"{cluster.name}/{CONNECTOR}/lag"
        ).exists()

        # Resumed: it copies what waits and is back to OK.
        rest.resume(CONNECTOR)
        wait_until(
            lambda: stored_offsets(rest),
            lambda offsets: offsets == {0: 6, 1: 2},
            timeout=90,
            what="the mirror's offsets after resuming",
        )
        refresh(cluster, spark)
        assert lags(cluster) == {0: (7, 7, 0, 0, "OK"), 1: (3, 3, 0, 0, "OK")}
        snapshot = ConnectorSnapshot.objects.get(cluster=cluster, name=CONNECTOR)
        assert (snapshot.lag_records, snapshot.lag_status) == (0, "OK")
    finally:
        rest.delete(CONNECTOR)


PAUSED_ALIAS = f"pu{RUN}"
PAUSED_TOPIC = f"waiting-{RUN}"
PAUSED_CONNECTOR = f"mirror-paused-{RUN}"
# Records upstream before the mirror is created PAUSED, per partition: none is ever copied.
WAITING = {0: 3, 1: 2}


def test_a_mirror_created_paused_lags_by_every_record_upstream_not_copied_yet(
    cluster, rest, kafka, fresh_kafka, spark, history_dir, logged_in_client
):
    admin.create_topics({"bootstrap.servers": fresh_kafka}, [admin.TopicSpec(PAUSED_TOPIC, 2, {})])
    base = int(time.time() * 1000) - 60_000
    stamps = {p: [base + 1000 * i for i in range(n)] for p, n in WAITING.items()}
    for partition, partition_stamps in stamps.items():
        producer = producers.java_producer({"bootstrap.servers": fresh_kafka})
        for stamp in partition_stamps:
            producer.produce(PAUSED_TOPIC, value=b"x", partition=partition, timestamp=stamp)
        assert producer.flush(10) == 0
    config = {
        **mirror_config(fresh_kafka, kafka["bootstrap.servers"]),
        "source.cluster.alias": PAUSED_ALIAS,
        "topics": PAUSED_TOPIC,
    }
    rest.create(PAUSED_CONNECTOR, config, initial_state="PAUSED")
    try:
        wait_until(
            lambda: rest.status(PAUSED_CONNECTOR),
            lambda s: bool(s and s["connector"]["state"] == "PAUSED"),
            timeout=60,
            what=f"{PAUSED_CONNECTOR} PAUSED",
        )
        # Created PAUSED, it has no task configs (KIP-980: the herder asks the connector for
        # them only once it is started), so no task.assigned.partitions to read: the refresh
        # applies its topic filter to the upstream's topics.
        assert rest.call("GET", f"/connectors/{PAUSED_CONNECTOR}/tasks") == []
        (live,) = [
            c
            for c in connect_state.read_connect_state(cluster=cluster).connectors
            if c.name == PAUSED_CONNECTOR
        ]
        assert live.mirror_partitions is None
        assert rest.offsets(PAUSED_CONNECTOR)["offsets"] == []
        upstream = Cluster.objects.create(
            name=f"upstream-paused-{RUN}", bootstrap_servers=fresh_kafka
        )
        MirrorUpstream.objects.create(cluster=cluster, source_alias=PAUSED_ALIAS, upstream=upstream)
        refresh(cluster, spark)

        rows = {
            row.partition: (row.committed, row.log_start, row.log_end, row.lag_records, row.lag_ms)
            for row in SinkPartitionLag.objects.filter(cluster=cluster, connector=PAUSED_CONNECTOR)
        }
        # From the first waiting record (earliest: the log start) to the newest.
        assert rows == {
            p: (None, 0, n, n, stamps[p][-1] - stamps[p][0]) for p, n in WAITING.items()
        }
        statuses = SinkPartitionLag.objects.filter(cluster=cluster, connector=PAUSED_CONNECTOR)
        assert {row.status for row in statuses} == {"STOP"}
        snapshot = ConnectorSnapshot.objects.get(cluster=cluster, name=PAUSED_CONNECTOR)
        total = sum(WAITING.values())
        assert (snapshot.lag_records, snapshot.lag_ms, snapshot.lag_status) == (total, 2000, "ERR")
        assert snapshot.uncommitted_partitions == len(WAITING)

        # The list, the page and the API agree, and say why.
        # Created paused by its owner: listed as PAUSED, not under STOP or ERR.
        for status in ("STOP", "ERR"):
            listed = logged_in_client.get(f"/clusters/{cluster.name}/connectors/?status={status}")
            assert f'data-connector="{PAUSED_CONNECTOR}"' not in listed.content.decode()
        listed = logged_in_client.get(f"/clusters/{cluster.name}/connectors/?status=PAUSED")
        row = listed.content.decode().split(f'data-connector="{PAUSED_CONNECTOR}"')[1]
        row = row.split("</tr>")[0]
        assert f'data-field="lag-records">{total}<' in row
        assert 'data-reason="not copied yet"' in row
        page = logged_in_client.get(f"/clusters/{cluster.name}/connectors/{PAUSED_CONNECTOR}/")
        html = page.content.decode()
        assert 'id="not-copied-yet"' in html
        table = html.split('id="upstream-table"')[1].split("</table>")[0]
        assert table.count("not copied yet") == len(WAITING) and "STOP" in table
        body = logged_in_client.get(
            f"/api/v1/clusters/{cluster.name}/connectors/{PAUSED_CONNECTOR}/lag/"
        ).json()
        assert (body["lag_records"], body["lag_status"]) == (total, "PAUSED")
        assert body["status_reasons"] == ["not copied yet"]
        assert body["uncommitted_partitions"] == len(WAITING)
        assert [(p["partition"], p["committed"], p["lag_records"]) for p in body["partitions"]] == [
            (p, None, n) for p, n in WAITING.items()
        ]
        detail = logged_in_client.get(
            f"/api/v1/clusters/{cluster.name}/connectors/{PAUSED_CONNECTOR}/"
        ).json()
        assert (detail["lag_records"], detail["status_reasons"]) == (total, body["status_reasons"])
    finally:
        rest.delete(PAUSED_CONNECTOR)
