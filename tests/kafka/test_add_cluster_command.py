from io import StringIO

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command

from offsets.models import Cluster

pytestmark = pytest.mark.django_db


def add(*args):
    out = StringIO()
    call_command("add_cluster", *args, stdout=out)
    return out.getvalue()


def test_it_adds_a_cluster_with_connects_default_topic_names():
    assert "Added cluster prod" in add("prod", "--bootstrap-servers", "kafka-1:9092,kafka-2:9092")
    cluster = Cluster.objects.get(name="prod")
    assert cluster.bootstrap_servers == "kafka-1:9092,kafka-2:9092"
    assert (cluster.offsets_topic, cluster.configs_topic, cluster.status_topic) == (
        "connect-offsets",
        "connect-configs",
        "connect-status",
    )
    assert cluster.client_config == {}


def test_it_stores_topics_connect_url_and_client_settings():
    add(
        "mm2",
        "--bootstrap-servers",
        "k:9093",
        "--offsets-topic",
        "mm2-offsets.us.internal",
        "--configs-topic",
        "mm2-configs.us.internal",
        "--status-topic",
        "mm2-status.us.internal",
        "--connect-url",
        "http://connect:8083",
        "--client-config",
        "security.protocol=SASL_SSL",
        "--client-config",
        "sasl.password=a=b",
    )
    cluster = Cluster.objects.get(name="mm2")
    assert cluster.offsets_topic == "mm2-offsets.us.internal"
    assert cluster.connect_url == "http://connect:8083"
    assert cluster.client_config == {"security.protocol": "SASL_SSL", "sasl.password": "a=b"}
    assert cluster.kafka_settings()["bootstrap.servers"] == "k:9093"
    assert cluster.masked_client_config()["sasl.password"] == "********"


@pytest.mark.parametrize(
    "args,message",
    [
        (["bad name", "--bootstrap-servers", "k:9092"], "name:"),
        (["ok", "--bootstrap-servers", "no-port"], "bootstrap_servers:"),
        (
            ["ok", "--bootstrap-servers", "k:9092", "--offsets-topic", "bad topic!"],
            "offsets_topic:",
        ),
        (["ok", "--bootstrap-servers", "k:9092", "--connect-url", "not a url"], "connect_url:"),
        (["ok", "--bootstrap-servers", "k:9092", "--client-config", "novalue"], "key=value"),
        (
            ["ok", "--bootstrap-servers", "k:9092", "--client-config", "group.id=x"],
            "set by the dashboard",
        ),
    ],
)
def test_it_rejects_bad_input_with_a_clear_error(args, message):
    with pytest.raises(CommandError, match=message):
        add(*args)
    assert not Cluster.objects.exists()


def test_it_refuses_to_overwrite_without_update_and_updates_with_it():
    add("prod", "--bootstrap-servers", "k:9092")
    with pytest.raises(CommandError, match="exists already"):
        add("prod", "--bootstrap-servers", "other:9092")
    assert Cluster.objects.get(name="prod").bootstrap_servers == "k:9092"
    assert "Updated cluster prod" in add("prod", "--bootstrap-servers", "other:9092", "--update")
    assert Cluster.objects.get(name="prod").bootstrap_servers == "other:9092"


def test_it_stores_the_offset_flush_interval_stalls_are_judged_on():
    add("slow", "--bootstrap-servers", "k:9092")
    assert Cluster.objects.get(name="slow").offset_flush_interval_ms == 60_000
    add("slow", "--bootstrap-servers", "k:9092", "--update", "--offset-flush-interval-ms", "5000")
    assert Cluster.objects.get(name="slow").offset_flush_interval_ms == 5_000
    with pytest.raises(CommandError, match="must be positive"):
        add("slow", "--bootstrap-servers", "k:9092", "--update", "--offset-flush-interval-ms", "0")


def test_it_stores_the_scheduler_period_and_keeps_it_on_an_update_without_it():
    add("paced", "--bootstrap-servers", "k:9092")
    assert Cluster.objects.get(name="paced").refresh_every_seconds == 60
    add("paced", "--bootstrap-servers", "k:9092", "--update", "--refresh-every", "15")
    assert Cluster.objects.get(name="paced").refresh_every_seconds == 15
    add("paced", "--bootstrap-servers", "k:9093", "--update")
    assert Cluster.objects.get(name="paced").refresh_every_seconds == 15
    add("paced", "--bootstrap-servers", "k:9092", "--update", "--refresh-every", "0")
    assert Cluster.objects.get(name="paced").refresh_every_seconds == 0
    with pytest.raises(CommandError, match="0 \\(only by hand\\) or more seconds"):
        add("paced", "--bootstrap-servers", "k:9092", "--update", "--refresh-every", "-5")


def test_it_adds_a_standalone_worker_with_its_offsets_file():
    said = add("edge", "--standalone-offsets-file", "/var/lib/connect/connect.offsets")
    assert (
        said.strip()
        == "Added standalone worker edge (offsets file /var/lib/connect/connect.offsets)"
    )
    cluster = Cluster.objects.get(name="edge")
    assert (cluster.kind, cluster.offsets_file, cluster.bootstrap_servers) == (
        Cluster.Kind.STANDALONE,
        "/var/lib/connect/connect.offsets",
        "",
    )


def test_a_standalone_worker_may_name_its_kafka_cluster_and_rest_url():
    add(
        "edge",
        "--standalone-offsets-file",
        "/data/connect.offsets",
        "--standalone-bootstrap-servers",
        "k:9092",
        "--connect-url",
        "http://edge:8083",
    )
    cluster = Cluster.objects.get(name="edge")
    assert (cluster.bootstrap_servers, cluster.connect_url) == ("k:9092", "http://edge:8083")
    assert cluster.has_kafka and cluster.is_standalone


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--standalone-offsets-file", "relative/connect.offsets"],
            "offsets_file: An absolute path",
        ),
        (
            ["--bootstrap-servers", "k:9092", "--standalone-bootstrap-servers", "k:9092"],
            "goes with",
        ),
        (["--standalone-offsets-file", "/f", "--bootstrap-servers", "k:9092"], "not allowed with"),
    ],
)
def test_it_refuses_a_standalone_worker_given_wrongly(args, message):
    with pytest.raises(CommandError, match=message):
        add("edge", *args)


def test_a_distributed_cluster_still_needs_its_bootstrap_servers():
    cluster = Cluster(name="prod", bootstrap_servers="")
    with pytest.raises(ValidationError, match="bootstrap_servers"):
        cluster.full_clean()
    cluster = Cluster(name="prod", bootstrap_servers="k:9092", offsets_file="/f")
    with pytest.raises(ValidationError, match="Only a standalone worker"):
        cluster.full_clean()
    with pytest.raises(ValidationError, match="needs its offsets file"):
        Cluster(name="edge", kind=Cluster.Kind.STANDALONE).full_clean()


def test_updating_a_standalone_worker_into_a_cluster_drops_its_file():
    add("edge", "--standalone-offsets-file", "/data/connect.offsets")
    add("edge", "--bootstrap-servers", "k:9092", "--update")
    cluster = Cluster.objects.get(name="edge")
    assert (cluster.kind, cluster.offsets_file) == (Cluster.Kind.DISTRIBUTED, "")
