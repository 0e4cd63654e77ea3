"""After seeding, the raw topics look exactly as the Java Connect runtime leaves them."""

import io
import json
import threading
import time

import pytest
from confluent_kafka.admin import ConfigResource
from django.core.management import CommandError, call_command
from django.utils import timezone

from devkit.demo import DemoOptions, build_demo
from devkit.demo_writer import keep_writing
from offsets.connect_state import read_connect_state
from offsets.formats import jackson
from offsets.formats.murmur2 import java_partition
from offsets.formats.offset_records import SourceOffsetRecord, latest_offsets, parse_offset_record
from offsets.kafka import admin, groups, reading
from offsets.kafka.errors import KafkaUnavailable
from tests.support.demo_data import EOS_TOPIC

pytestmark = pytest.mark.integration


def topic_config(settings: dict, topic: str) -> dict[str, str]:
    resource = ConfigResource("topic", topic)
    entries = admin.admin_client(settings).describe_configs([resource])[resource].result(30)
    return {name: entry.value for name, entry in entries.items()}


def read_all(seeded, topic):
    return list(reading.read_topic(seeded.settings, topic, timeout=10))


def test_it_creates_the_internal_topics_with_connects_partition_counts_and_compaction(seeded_demo):
    counts = admin.topic_partition_counts(seeded_demo.settings)
    assert counts["connect-offsets"] == 25
    assert counts["connect-status"] == 5
    assert counts["connect-configs"] == 1
    assert counts[EOS_TOPIC] == 25
    for topic in ("connect-offsets", "connect-configs", "connect-status", EOS_TOPIC):
        assert topic_config(seeded_demo.settings, topic)["cleanup.policy"] == "compact"


@pytest.mark.parametrize(
    "topic,partitions", [("connect-offsets", 25), (EOS_TOPIC, 25), ("connect-status", 5)]
)
def test_every_record_sits_on_the_java_producers_partition(seeded_demo, topic, partitions):
    records = read_all(seeded_demo, topic)
    assert len(records) == seeded_demo.summary.records_by_topic[topic]
    misplaced = [r for r in records if r.partition != java_partition(r.key, partitions)]
    assert misplaced == []
    # The keys spread over the partitions (a constant partitioner would also pass the check above).
    distinct_keys = len({r.key for r in records})
    assert len({r.partition for r in records}) >= min(partitions, distinct_keys, 3)


def test_offsets_keys_and_values_are_compact_jackson_bytes(seeded_demo):
    records = read_all(seeded_demo, "connect-offsets") + read_all(seeded_demo, EOS_TOPIC)
    for record in records:
        parsed = parse_offset_record(record.key, record.value)
        assert isinstance(parsed, SourceOffsetRecord), parsed
        assert jackson.dumps_key(parsed.connector, parsed.partition) == record.key
        if record.value is not None:
            assert jackson.dumps(parsed.offset) == record.value
    # Jackson writes doubles as Java does and escapes the quotes inside the partition map.
    raw = b"".join(r.key + (r.value or b"") for r in records)
    assert b'"score":1.0E7' in raw or b'"score":1.5E7' in raw
    assert b'job=\\"api\\"' in raw
    assert "Zürich".encode() in raw


def test_the_offsets_history_spans_the_simulated_hours_with_record_timestamps(seeded_demo):
    options = seeded_demo.demo.options
    stamps = [r.timestamp_ms for r in read_all(seeded_demo, "connect-offsets")]
    assert min(stamps) >= options.start_ms
    assert max(stamps) <= options.end_ms + 5_000
    assert max(stamps) - min(stamps) > 0.9 * options.hours * 3_600_000


def test_the_config_and_status_topics_hold_the_expected_connectors_and_states(demo_cluster):
    state = read_connect_state(cluster=demo_cluster)
    by_name = {c.name: c for c in state.connectors}
    assert set(by_name) == {
        "file-source-app-logs",
        "file-source-audit",
        "jdbc-source-inventory",
        "http-source-metrics",
        "mm2-us-east-source",
        "orders-cdc-eos",
        "legacy-inventory-source",
        "s3-sink-orders",
        "es-sink-clicks",
        "bq-sink-events",
        "jdbc-sink-audit",
    }
    assert state.malformed_config_records == 0 and state.malformed_status_records == 0
    assert by_name["jdbc-source-inventory"].runtime_state == "RUNNING"
    assert by_name["jdbc-source-inventory"].task_states == {0: "RUNNING", 1: "RUNNING"}
    assert by_name["http-source-metrics"].target_state == "PAUSED"
    assert by_name["http-source-metrics"].runtime_state == "PAUSED"
    assert by_name["file-source-audit"].target_state == "STOPPED"
    assert by_name["file-source-audit"].runtime_state == "STOPPED"
    assert by_name["file-source-audit"].task_count == 0
    assert by_name["file-source-audit"].task_states == {}
    assert by_name["jdbc-sink-audit"].runtime_state == "FAILED"
    assert "SQLException" in by_name["jdbc-sink-audit"].trace
    assert by_name["legacy-inventory-source"].deleted
    assert (
        by_name["mm2-us-east-source"].type == "source"
        and by_name["mm2-us-east-source"].mirrormaker2
    )
    assert by_name["orders-cdc-eos"].own_offsets_topic == EOS_TOPIC
    assert by_name["es-sink-clicks"].type == "sink"
    assert by_name["es-sink-clicks"].sink_group == "search-indexer-clicks"
    assert by_name["s3-sink-orders"].sink_group == "connect-s3-sink-orders"


def test_latest_offsets_keep_deleted_connectors_and_drop_tombstoned_partitions(seeded_demo):
    latest = latest_offsets((r.key, r.value) for r in read_all(seeded_demo, "connect-offsets"))
    connectors = {record.connector for record in latest.offsets.values()}
    assert "legacy-inventory-source" in connectors
    audit = [
        r.partition["filename"]
        for r in latest.offsets.values()
        if r.connector == "file-source-audit"
    ]
    assert audit == ["/var/log/app/audit.log"]
    mm2 = [r for r in latest.offsets.values() if r.connector == "mm2-us-east-source"]
    assert len(mm2) == 9
    assert all(
        r.key_bytes.startswith(b'["mm2-us-east-source",{"cluster":"us-east","partition":')
        for r in mm2
    )
    assert not latest.malformed


def test_the_http_source_shows_key_drift_between_two_byte_forms(seeded_demo):
    latest = latest_offsets((r.key, r.value) for r in read_all(seeded_demo, "connect-offsets"))
    drifted = [
        forms
        for (connector, _), forms in latest.drift.items()
        if connector == "http-source-metrics"
    ]
    assert len(drifted) == 1
    first, second = drifted[0]
    assert first.partition == second.partition and first.key_bytes != second.key_bytes


def test_the_exactly_once_source_writes_its_own_topic_and_mirrors_to_the_worker_topic(seeded_demo):
    own = latest_offsets((r.key, r.value) for r in read_all(seeded_demo, EOS_TOPIC))
    worker = latest_offsets((r.key, r.value) for r in read_all(seeded_demo, "connect-offsets"))
    assert [r.connector for r in own.offsets.values()] == ["orders-cdc-eos"]
    (key,) = own.offsets
    assert worker.offsets[key].value_bytes == own.offsets[key].value_bytes
    assert seeded_demo.summary.transactions == seeded_demo.summary.records_by_topic[EOS_TOPIC]


def test_the_jdbc_history_has_a_rewind_and_a_stalled_table(seeded_demo):
    history: dict[str, list] = {}
    for record in read_all(seeded_demo, "connect-offsets"):
        parsed = parse_offset_record(record.key, record.value)
        if parsed.connector == "jdbc-source-inventory":
            history.setdefault(parsed.partition["table"], []).append(
                (record.timestamp_ms, parsed.offset["incrementing"])
            )
    for commits in history.values():
        commits.sort()
    orders = [offset for _, offset in history["inventory.public.orders"]]
    rewinds = [i for i in range(1, len(orders)) if orders[i] < orders[i - 1]]
    assert len(rewinds) == 1
    last_commit = {table: commits[-1][0] for table, commits in history.items()}
    options = seeded_demo.demo.options
    assert (
        options.end_ms - last_commit["inventory.public.shipments"] > options.hours * 3_600_000 / 2
    )
    assert options.end_ms - last_commit["inventory.public.orders"] <= options.flush_interval_ms


def test_sinks_have_lagging_group_offsets_and_the_external_sink_has_none(seeded_demo):
    s3 = groups.committed_offsets(seeded_demo.settings, "connect-s3-sink-orders")
    assert set(s3) == {("orders", p) for p in range(6)} | {("payments", p) for p in range(3)}
    data = {t.name: t for t in seeded_demo.demo.data_topics}
    lags = {tp: len(data[tp[0]].timestamps[tp[1]]) - offset for tp, offset in s3.items()}
    assert all(lag >= 0 for lag in lags.values()) and sum(lags.values()) > 0
    clicks = groups.committed_offsets(seeded_demo.settings, "search-indexer-clicks")
    assert len(clicks) == 4
    assert groups.committed_offsets(seeded_demo.settings, "connect-bq-sink-events") == {}
    # The data records are really there: read one data topic back.
    records = read_all(seeded_demo, "clicks")
    assert len(records) == sum(len(p) for p in data["clicks"].timestamps)


def test_the_same_seed_gives_the_same_records_and_another_seed_does_not():
    def fingerprint(seed):
        demo = build_demo(DemoOptions(end_ms=1_790_000_000_000, hours=1, seed=seed))
        return [(r.topic, r.key, r.value, r.timestamp_ms) for r in demo.records()]

    assert fingerprint(3) == fingerprint(3)
    assert fingerprint(3) != fingerprint(4)


def test_seed_demo_command_seeds_an_empty_cluster_and_refuses_to_seed_it_twice(db, fresh_kafka):
    from offsets.models import Cluster, LagSample

    cluster = Cluster.objects.create(name="fresh", bootstrap_servers=fresh_kafka)
    # A sample of an earlier demo's broker (make demo starts a new one every time).
    LagSample.objects.create(
        cluster=cluster,
        connector="s3-sink-orders",
        topic="orders",
        partition=0,
        sampled_at=timezone.now(),
        committed=10,
        log_end=20,
        lag_records=10,
    )
    out = io.StringIO()
    call_command(
        "seed_demo", "--cluster", "fresh", "--hours", "1", "--source-partitions", "3", stdout=out
    )
    counts = admin.topic_partition_counts({"bootstrap.servers": fresh_kafka})
    assert counts["connect-offsets"] == 25
    assert "dropped 1 lag samples of an earlier demo" in out.getvalue()
    assert not LagSample.objects.exists()
    with pytest.raises(CommandError, match="exist already"):
        call_command("seed_demo", "--cluster", "fresh", "--hours", "1")


def test_seed_demo_bulk_flags_size_the_offsets_topic(db, fresh_kafka):
    from offsets.models import Cluster

    Cluster.objects.create(name="bulk", bootstrap_servers=fresh_kafka)
    call_command(
        "seed_demo",
        "--cluster",
        "bulk",
        "--hours",
        "1",
        "--bulk-connectors",
        "5",
        "--bulk-partitions",
        "100",
    )
    latest = latest_offsets(
        (r.key, r.value)
        for r in reading.read_topic({"bootstrap.servers": fresh_kafka}, "connect-offsets")
    )
    bulk = [r for r in latest.offsets.values() if r.connector.startswith("bulk-source-")]
    assert len(bulk) == 100
    assert len({r.connector for r in bulk}) == 5


def test_seed_demo_rejects_an_unknown_cluster(db):
    with pytest.raises(CommandError, match="Unknown cluster 'nope'"):
        call_command("seed_demo", "--cluster", "nope")


def test_reading_from_a_broker_that_is_down_raises_kafka_unavailable():
    with pytest.raises(KafkaUnavailable, match="did not answer"):
        admin.topic_partition_counts({"bootstrap.servers": "127.0.0.1:1"}, timeout=1)


def test_status_values_use_the_runtime_field_order(seeded_demo):
    record = next(
        r
        for r in read_all(seeded_demo, "connect-status")
        if r.value and r.key.startswith(b"status-connector-")
    )
    assert list(json.loads(record.value)) == ["state", "trace", "worker_id", "generation"]


def test_keep_writing_goes_on_committing_the_running_connectors(fresh_kafka):
    settings = {"bootstrap.servers": fresh_kafka}
    # A window that ended two flushes ago, with a flush every second.
    options = DemoOptions(
        end_ms=int(time.time() * 1000) - 2_000, hours=0.05, flush_interval_ms=1_000, seed=5
    )
    # Only the topics are needed: what was seeded is replayed, not read back.
    admin.create_topics(
        settings,
        [
            admin.TopicSpec(name, partitions, config)
            for name, (partitions, config) in build_demo(options).topics.items()
        ],
    )
    stop = threading.Event()
    flushes = []

    def progress(text):
        # A new broker's group coordinator may not answer the first flush's commits.
        flushes.append(text)
        if sum("failed" not in text for text in flushes) == 2:
            stop.set()

    deadline = threading.Timer(60, stop.set)
    deadline.start()
    try:
        written = keep_writing(settings, options, stop=stop, progress=progress)
    finally:
        deadline.cancel()

    def later(topic):
        records = reading.read_topic(settings, topic, timeout=10)
        return [record for record in records if record.timestamp_ms > options.end_ms]

    worker, own = later("connect-offsets"), later(EOS_TOPIC)
    assert written == len(worker) + len(own) > 0
    connectors = {jackson.loads(record.key)[0] for record in worker}
    assert "file-source-app-logs" in connectors
    assert not connectors & {"file-source-audit", "http-source-metrics", "legacy-inventory-source"}
    # The exactly-once source goes on committing in transactions on its own topic too.
    assert own and {jackson.loads(record.key)[0] for record in own} == {"orders-cdc-eos"}
    # The sinks' topics grow and the healthy groups commit.
    assert list(reading.read_topic(settings, "orders", timeout=10))
    assert groups.committed_offsets(settings, "connect-s3-sink-orders")
    assert not groups.committed_offsets(settings, "connect-jdbc-sink-audit")


def test_keep_writing_needs_the_end_time_the_cluster_was_seeded_with(db):
    from offsets.models import Cluster

    Cluster.objects.create(name="kw", bootstrap_servers="127.0.0.1:1")
    with pytest.raises(CommandError, match="--end-time"):
        call_command("seed_demo", "--cluster", "kw", "--keep-writing", stdout=io.StringIO())
