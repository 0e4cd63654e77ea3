import os

import pytest
from django.core.management import CommandError, call_command

from offsets.kafka import client
from offsets.kafka.embedded import EmbeddedKafka

pytestmark = pytest.mark.integration


def run(*args):
    from io import StringIO

    out = StringIO()
    call_command("embedded_kafka", *args, stdout=out)
    return out.getvalue()


def test_it_starts_a_broker_that_answers_metadata_and_prints_its_address(settings):
    try:
        output = run("start")
        address = output.strip().splitlines()[-1]
        assert address.startswith("127.0.0.1:")
        assert isinstance(
            client.topic_partition_counts({"bootstrap.servers": address}, timeout=5), dict
        )
        assert run("address").strip() == address
        assert address in run("status")
        assert "Already running" in run("start")
    finally:
        run("stop")


def test_stop_ends_only_its_own_broker(settings, tmp_path):
    other = EmbeddedKafka(tmp_path / "other")
    other_info = other.start()
    try:
        run("start")
        info = EmbeddedKafka(settings.RUN_DIR).status()
        assert "Stopped" in run("stop")
        assert EmbeddedKafka(settings.RUN_DIR).status() is None
        with pytest.raises(ProcessLookupError):
            os.kill(info.pid, 0)
        assert other.status() == other_info
        client.topic_partition_counts(
            {"bootstrap.servers": other_info.bootstrap_servers}, timeout=5
        )
    finally:
        other.stop()


def test_status_and_address_fail_clearly_when_nothing_runs(settings):
    assert "No embedded Kafka is running" in run("stop")
    with pytest.raises(CommandError, match="No embedded Kafka is running"):
        run("status")
    with pytest.raises(CommandError, match="No embedded Kafka is running"):
        run("address")


def test_a_stale_state_file_is_ignored(settings):
    settings.RUN_DIR.mkdir(parents=True)
    (settings.RUN_DIR / "embedded-kafka.json").write_text(
        '{"pid": 999999, "bootstrap_servers": "127.0.0.1:1", "binary": "x", "log_file": "x", "started_at": 0}'
    )
    assert EmbeddedKafka(settings.RUN_DIR).status() is None
    assert not (settings.RUN_DIR / "embedded-kafka.json").exists()


@pytest.mark.django_db
def test_add_cluster_embedded_registers_the_running_broker_with_its_client_settings(settings):
    from offsets.kafka import embedded
    from offsets.models import Cluster

    with pytest.raises(CommandError, match="No embedded Kafka is running"):
        call_command("add_cluster", "demo", "--embedded")
    assert not Cluster.objects.exists()
    try:
        address = run("start").strip().splitlines()[-1]
        call_command("add_cluster", "demo", "--embedded", "--client-config", "fetch.wait.max.ms=50")
        cluster = Cluster.objects.get(name="demo")
        assert cluster.bootstrap_servers == address
        # The command line's own settings win over the embedded broker's.
        assert cluster.client_config == {**embedded.CLIENT_CONFIG, "fetch.wait.max.ms": "50"}
        # A reader with those settings still reads (librdkafka accepts them).
        client.create_topics(cluster.kafka_settings(), [client.TopicSpec("t", 2, {})])
        assert list(client.read_topic(cluster.kafka_settings(), "t", timeout=5)) == []
    finally:
        run("stop")
