"""`manage.py embedded_kafka`: the command starts and stops brokers and workers of its own.

Starting and stopping them is what these tests test, so each test that needs them running
starts its own.
"""

import json
import os
import urllib.request

import pytest
from django.core.management import CommandError, call_command

from devkit import embedded, embedded_config
from devkit.embedded import EmbeddedKafka
from offsets.kafka import admin, reading

pytestmark = pytest.mark.integration


def run(*args):
    from io import StringIO

    out = StringIO()
    call_command("embedded_kafka", *args, stdout=out)
    return out.getvalue()


def worker_root(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.load(response)


@pytest.mark.django_db
def test_it_starts_a_broker_and_a_worker_that_add_cluster_registers(settings):
    # One start for both: what it prints and how `add_cluster --embedded` takes it up.
    from offsets.models import Cluster

    try:
        output = run("start")
        address = output.strip().splitlines()[-1]
        assert address.startswith("127.0.0.1:")
        assert isinstance(
            admin.topic_partition_counts({"bootstrap.servers": address}, timeout=5), dict
        )
        url = run("connect-url").strip()
        assert url.startswith("http://127.0.0.1:") and url in output
        # The worker is Apache Kafka Connect, on this broker's cluster.
        root = worker_root(url)
        assert root["version"].startswith("4.")
        topics = admin.topic_partition_counts({"bootstrap.servers": address}, timeout=5)
        assert set(embedded_config.WORKER_TOPICS.values()) <= set(topics)
        assert run("address").strip() == address
        assert address in run("status") and url in run("status")
        assert "Already running" in run("start")

        call_command("add_cluster", "live", "--embedded", "--client-config", "fetch.wait.max.ms=50")
        cluster = Cluster.objects.get(name="live")
        assert cluster.bootstrap_servers == address
        assert cluster.connect_url == url
        assert cluster.offsets_topic == embedded_config.WORKER_TOPICS["offsets_topic"]
        assert cluster.configs_topic == embedded_config.WORKER_TOPICS["configs_topic"]
        assert cluster.status_topic == embedded_config.WORKER_TOPICS["status_topic"]
        assert cluster.offset_flush_interval_ms == embedded_config.WORKER_FLUSH_INTERVAL_MS
        assert cluster.client_config == {"fetch.wait.max.ms": "50"}
        # Options on the command line win over the worker's own values.
        call_command("add_cluster", "seeded", "--embedded", "--offsets-topic", "connect-offsets")
        assert Cluster.objects.get(name="seeded").offsets_topic == "connect-offsets"
        admin.create_topics(cluster.kafka_settings(), [admin.TopicSpec("t", 2, {})])
        assert list(reading.read_topic(cluster.kafka_settings(), "t", timeout=5)) == []
    finally:
        run("stop")


@pytest.mark.django_db
def test_add_cluster_embedded_fails_clearly_when_nothing_runs(settings):
    from offsets.models import Cluster

    with pytest.raises(CommandError, match="No embedded Kafka is running"):
        call_command("add_cluster", "demo", "--embedded")
    assert not Cluster.objects.exists()


def test_stop_ends_only_its_own_processes(settings, kafka_runtime):
    # The other processes are the session's broker and worker, started from another folder.
    run("start")
    info = EmbeddedKafka(settings.RUN_DIR).status()
    assert "Stopped" in run("stop")
    assert EmbeddedKafka(settings.RUN_DIR).status() is None
    for pid in (info.pid, info.connect_pid):
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    admin.topic_partition_counts({"bootstrap.servers": kafka_runtime.bootstrap_servers}, timeout=5)
    assert worker_root(kafka_runtime.connect_url)["version"].startswith("4.")


def test_status_and_address_fail_clearly_when_nothing_runs(settings):
    assert "No embedded Kafka is running" in run("stop")
    for action in ("status", "address", "connect-url"):
        with pytest.raises(CommandError, match="No embedded Kafka is running"):
            run(action)


def test_a_stale_state_file_is_ignored(settings):
    settings.RUN_DIR.mkdir(parents=True)
    (settings.RUN_DIR / "embedded-kafka.json").write_text(
        '{"pid": 999999, "bootstrap_servers": "127.0.0.1:1", "log_file": "x", "started_at": 0}'
    )
    assert EmbeddedKafka(settings.RUN_DIR).status() is None
    assert not (settings.RUN_DIR / "embedded-kafka.json").exists()


def test_a_taken_port_fails_at_once_with_a_clear_message(settings):
    with embedded.socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(CommandError, match=f"Port {port} on 127.0.0.1 is taken"):
            run("start", "--port", str(port))
    assert EmbeddedKafka(settings.RUN_DIR).status() is None


def test_missing_jars_and_missing_java_fail_with_what_to_do(settings, tmp_path, monkeypatch):
    settings.KAFKA_RUNTIME_LIBS = tmp_path / "nothing"
    with pytest.raises(CommandError, match="make kafka-runtime"):
        run("start")
    monkeypatch.setenv("PATH", str(tmp_path))  # no java on it
    with pytest.raises(CommandError, match="Java was not found"):
        run("start")


def test_a_worker_that_cannot_start_fails_with_its_log_and_leaves_nothing_running(
    settings, tmp_path
):
    # A worker classpath without the Connect runtime: the JVM exits at once.
    libs = tmp_path / "libs"
    (libs / "worker").mkdir(parents=True)
    (libs / "broker").symlink_to(embedded.runtime_libs() / "broker")
    (libs / "worker" / "empty.jar").write_bytes(b"")
    settings.KAFKA_RUNTIME_LIBS = libs
    before = set(embedded._children)  # the session's broker and worker, when they run
    with pytest.raises(CommandError, match="Connect worker exited during start-up") as error:
        run("start")
    assert "connect.log" in str(error.value)
    assert EmbeddedKafka(settings.RUN_DIR).status() is None
    # The broker it started is gone too.
    assert set(embedded._children) == before
