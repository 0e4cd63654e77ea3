"""Aborted transactional offsets never count (Apache Kafka hides them from read_committed readers)."""

import time

import pytest

from offsets.formats import jackson
from offsets.formats.murmur2 import java_partition
from offsets.kafka import admin, producers
from offsets.models import Cluster, SourceOffset
from offsets.refresh.run import run_refresh

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


def test_an_aborted_offset_write_is_not_counted(kafka_bootstrap, spark, settings, tmp_path):
    settings.OFFSETS_HISTORY_PATH = str(tmp_path / "history")
    topic = f"connect-offsets-aborted-{int(time.time())}"
    kafka = {"bootstrap.servers": kafka_bootstrap}
    admin.create_topics(kafka, [admin.TopicSpec(topic, 1, {"cleanup.policy": "compact"})])
    key = jackson.dumps_key("eos-source", {"db": "orders"})
    producer = producers.java_producer(kafka, transactional_id=f"test-{topic}")
    producer.init_transactions(30)
    for offset, commit in ((1, True), (999, False)):
        producer.begin_transaction()
        producer.produce(
            topic, key=key, value=jackson.dumps({"lsn": offset}), partition=java_partition(key, 1)
        )
        producer.flush()
        producer.commit_transaction(30) if commit else producer.abort_transaction(30)
    cluster = Cluster.objects.create(
        name="aborted",
        bootstrap_servers=kafka_bootstrap,
        offsets_topic=topic,
        configs_topic=topic,
        status_topic=topic,
    )
    run = run_refresh(cluster=cluster, spark=spark)
    assert run.status == "succeeded", run.error
    assert SourceOffset.objects.get(cluster=cluster, connector="eos-source").offset == {"lsn": 1}
