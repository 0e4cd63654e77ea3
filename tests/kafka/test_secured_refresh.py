"""Least privilege, proven on the secured runtime: a principal holding exactly SECURITY.md's
viewing set refreshes a Connect cluster (Spark in local mode) over SASL_SSL and over mutual
TLS, and the pages and the API show the offsets, the live state, the lag, the exports,
/metrics and the record a sink reads next; without one of its ACLs the refresh fails
with a message naming the missing permission, and stores nothing."""

import uuid

import pytest
from django.urls import reverse

from devkit.secured import create_acls, delete_acls
from offsets.kafka.records import records_at
from offsets.models import (
    Cluster,
    ConnectorSnapshot,
    RefreshRun,
    SinkPartitionLag,
    SourceOffset,
)
from offsets.refresh.run import run_refresh
from tests.support import secured_runtime
from tests.support.connect_rest import ConnectRest
from tests.support.metrics_text import TOKEN, scrape, value
from tests.support.worker_files import file_sink, file_source, write_lines

pytestmark = pytest.mark.integration

RUN = uuid.uuid4().hex[:8]
SOURCE = f"sec-{RUN}-source"
SINK = f"sec-{RUN}-sink"
DATA_TOPIC = f"sec-{RUN}-data"
SINK_GROUP = f"connect-{SINK}"


@pytest.fixture(scope="module")
def secured_rest(secured_kafka) -> ConnectRest:
    return secured_kafka.rest()


@pytest.fixture(scope="module")
def connectors(secured_kafka, secured_rest, tmp_path_factory) -> dict:
    """A file source writing DATA_TOPIC and a file sink reading it, both with offsets
    committed; the dashboard's two principals hold exactly the viewing set."""
    folder = tmp_path_factory.mktemp("secured-files")
    write_lines(folder / "in.txt", ["one", "two"])
    secured_rest.create(SOURCE, file_source(folder / "in.txt", DATA_TOPIC))
    secured_rest.wait_for_offsets(SOURCE, lambda o: o and o[0]["offset"]["position"] == 8)
    secured_rest.create(SINK, file_sink(folder / "out.txt", DATA_TOPIC))
    secured_rest.wait_for_offsets(SINK, lambda o: o and o[0]["offset"]["kafka_offset"] == 2)
    acls = {}
    for principal in (
        f"User:{secured_runtime.DASHBOARD_USER}",
        secured_kafka.dashboard_cert.principal,
    ):
        acls[principal] = secured_runtime.viewing_acls(
            principal,
            connect_topics=secured_runtime.WORKER_TOPICS.values(),
            data_topics=[DATA_TOPIC],
            sink_groups=[SINK_GROUP],
        )
        create_acls(secured_kafka.setup, list(acls[principal].values()))
    return acls


def documented_sasl(secured_kafka) -> dict:
    """SECURITY.md's SASL_SSL settings for the dashboard's SCRAM user."""
    settings = secured_kafka.sasl()
    del settings["bootstrap.servers"]
    return settings


def documented_mutual_tls(secured_kafka) -> dict:
    settings = secured_kafka.mutual_tls()
    del settings["bootstrap.servers"]
    return settings


def assert_offsets_shown(cluster: Cluster, admin_client) -> None:
    source = admin_client.get(reverse("api-connector-offsets", args=[cluster.name, SOURCE])).json()
    assert [entry["offset"] for entry in source["offsets"]] == [{"position": 8}]
    sink = admin_client.get(reverse("api-connector-offsets", args=[cluster.name, SINK])).json()
    assert [entry["offset"] for entry in sink["offsets"]] == [{"kafka_offset": 2}]
    page = admin_client.get(reverse("connector", args=[cluster.name, SOURCE]))
    assert page.status_code == 200
    assert SOURCE in page.content.decode()


def assert_viewing_answers(cluster: Cluster, admin_client) -> None:
    """What else the viewing set must serve, read from Kafka now or stored by the refresh:
    the live state, a sink's lag, the exports (live and from the beginning), /metrics."""
    states = admin_client.get(reverse("api-connector-states", args=[cluster.name]))
    assert states.status_code == 200, states.content
    by_name = {row["name"]: row for row in states.json()}
    assert by_name[SOURCE]["target_state"] == "STARTED" and SINK in by_name
    lag = admin_client.get(reverse("api-connector-lag", args=[cluster.name, SINK])).json()
    assert [(row["topic"], row["committed"]) for row in lag["partitions"]] == [(DATA_TOPIC, 2)]
    # The worker's sources write in transactions: log end - 1 is a commit marker, counted in
    # records as kafka-consumer-groups counts it (docs/kafka-runtime.md), never in time.
    (row,) = lag["partitions"]
    assert lag["lag_records"] == row["log_end"] - 2 and lag["lag_status"] == "OK"
    export = reverse("edits-export", args=[cluster.name])
    for query in (f"?connectors={SOURCE},{SINK}", "?from_beginning=on"):
        response = admin_client.get(export + query)
        assert response.status_code == 200, (query, response.content[:500])
        assert SOURCE in response.content.decode() and SINK in response.content.decode()
    parsed = scrape(admin_client)
    assert (
        value(parsed, "sink_lag_records", cluster=cluster.name, connector=SINK)
        == lag["lag_records"]
    )
    assert value(parsed, "source_partitions", cluster=cluster.name, connector=SOURCE) == 1
    # The record a stuck sink reads next (shown to record viewers) is read with the same set.
    record = records_at(cluster.kafka_settings(), {(DATA_TOPIC, 0): 0}, timeout=10)
    assert record[(DATA_TOPIC, 0)].offset == 0


def test_the_viewing_set_refreshes_over_sasl_ssl(
    connectors, secured_kafka, spark, history_dir, admin_client, monkeypatch, settings
):
    cluster = secured_runtime.register(
        "sasl",
        secured_kafka.info.sasl_bootstrap,
        documented_sasl(secured_kafka),
        secured_kafka,
        monkeypatch,
    )

    run = run_refresh(cluster=cluster, spark=spark)

    assert run.status == RefreshRun.Status.SUCCEEDED, run.error
    assert_offsets_shown(cluster, admin_client)
    settings.METRICS_TOKEN = TOKEN
    assert_viewing_answers(cluster, admin_client)


def test_the_viewing_set_refreshes_over_mutual_tls(
    connectors, secured_kafka, spark, history_dir, admin_client, monkeypatch
):
    cluster = secured_runtime.register(
        "mtls",
        secured_kafka.info.ssl_bootstrap,
        documented_mutual_tls(secured_kafka),
        secured_kafka,
        monkeypatch,
    )

    run = run_refresh(cluster=cluster, spark=spark)

    assert run.status == RefreshRun.Status.SUCCEEDED, run.error
    assert_offsets_shown(cluster, admin_client)


VIEWING_SET = list(
    secured_runtime.viewing_acls(
        "User:-",
        connect_topics=secured_runtime.WORKER_TOPICS.values(),
        data_topics=[DATA_TOPIC],
        sink_groups=[SINK_GROUP],
    )
)


# Ids without the run's suffix: every test process must collect the same ones.
@pytest.mark.parametrize("missing", VIEWING_SET, ids=[m.replace(RUN, "RUN") for m in VIEWING_SET])
def test_without_one_acl_of_the_viewing_set_a_refresh_names_it_and_stores_nothing(
    db, connectors, secured_kafka, spark, history_dir, monkeypatch, missing
):
    binding = connectors[f"User:{secured_runtime.DASHBOARD_USER}"][missing]
    cluster = secured_runtime.register(
        f"without-{VIEWING_SET.index(missing)}",
        secured_kafka.info.sasl_bootstrap,
        documented_sasl(secured_kafka),
        secured_kafka,
        monkeypatch,
    )
    delete_acls(secured_kafka.setup, [binding])
    try:
        secured_runtime.wait_for_acl(secured_kafka.setup, binding, present=False)

        run = run_refresh(cluster=cluster, spark=spark)
    finally:
        create_acls(secured_kafka.setup, [binding])
        secured_runtime.wait_for_acl(secured_kafka.setup, binding, present=True)

    operation, resource = missing.split(" ", 1)
    assert run.status == RefreshRun.Status.FAILED
    assert run.error.startswith("The dashboard's principal may not "), run.error
    assert f" {resource} (" in run.error and "_AUTHORIZATION_FAILED): grant it " in run.error
    assert f"grant it {operation} " in run.error
    assert not ConnectorSnapshot.objects.filter(cluster=cluster).exists()
    assert not SourceOffset.objects.filter(cluster=cluster).exists()
    assert not SinkPartitionLag.objects.filter(cluster=cluster).exists()
