"""The Spark refresh on the embedded broker, checked against an independent plain read."""

import json
import threading
import time
from datetime import timedelta
from unittest import mock

import pyarrow.parquet as pq
import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from devkit.demo import DemoOptions, build_demo
from devkit.demo_writer import write_demo
from offsets import tuning
from offsets.formats import jackson
from offsets.formats.murmur2 import java_partition
from offsets.formats.offset_records import latest_offsets
from offsets.history import files as history_files
from offsets.history import store as history_store
from offsets.history.reading import partition_history
from offsets.kafka import admin, groups, producers, reading
from offsets.models import (
    Cluster,
    CommitBucket,
    ConnectorSnapshot,
    KeyDrift,
    LagSample,
    MalformedCount,
    ReadPosition,
    RefreshRun,
    RewindEvent,
    SinkPartitionLag,
    SourceOffset,
)
from offsets.models.refresh import key_hash
from offsets.refresh import background, sinks, store
from offsets.refresh import plan as planning
from offsets.refresh.results import ms_to_datetime
from offsets.refresh.run import run_refresh
from offsets.spark import merge
from tests.support.demo_data import EOS_TOPIC

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


@pytest.fixture
def refreshed(demo_cluster, spark, history_dir, seeded_demo):
    # A minute after the demo's last write, however long the session took to get here: the
    # seeded stalls are judged against the demo's clock, not the test machine's load.
    now_ms = seeded_demo.demo.options.end_ms + 60_000
    run = run_refresh(cluster=demo_cluster, spark=spark, now_ms=now_ms)
    assert run.status == RefreshRun.Status.SUCCEEDED, run.error
    return demo_cluster


def expected_effective(settings_dict):
    """The runtime's view, read plainly: last write per key bytes; the own topic wins."""
    worker = latest_offsets(
        (r.key, r.value) for r in reading.read_topic(settings_dict, "connect-offsets")
    )
    own = latest_offsets((r.key, r.value) for r in reading.read_topic(settings_dict, EOS_TOPIC))
    effective = {key: rec.value_bytes for key, rec in worker.offsets.items()}
    effective.update(
        {
            key: rec.value_bytes
            for key, rec in own.offsets.items()
            if rec.connector == "orders-cdc-eos"
        }
    )
    return effective


def stored_effective(cluster):
    return {
        bytes(row.key_bytes): row.offset_text.encode()
        for row in SourceOffset.objects.filter(
            cluster=cluster, effective=True, offset_text__isnull=False
        )
    }


def test_latest_offsets_equal_a_plain_read_of_the_topics(refreshed, seeded_demo):
    assert stored_effective(refreshed) == expected_effective(seeded_demo.settings)
    eos = SourceOffset.objects.get(cluster=refreshed, connector="orders-cdc-eos", effective=True)
    assert eos.topic == EOS_TOPIC
    # The tombstoned audit file is kept for its history, not as a live offset.
    rotated = SourceOffset.objects.get(
        cluster=refreshed, partition_text='{"filename":"/var/log/app/audit.log.1"}'
    )
    assert rotated.offset_text is None and not rotated.effective and rotated.commits > 0


def test_the_run_is_recorded_with_records_read_per_topic(refreshed, seeded_demo):
    run = RefreshRun.objects.get(cluster=refreshed)
    assert run.records_by_topic == {
        "connect-offsets": seeded_demo.summary.records_by_topic["connect-offsets"],
        EOS_TOPIC: seeded_demo.summary.records_by_topic[EOS_TOPIC],
    }
    assert run.malformed == 0 and run.finished_at and run.seconds > 0


def test_rewinds_stalls_and_key_drift_come_out_as_seeded(refreshed):
    rewinds = list(RewindEvent.objects.filter(cluster=refreshed))
    assert [(r.connector, r.partition["table"]) for r in rewinds] == [
        ("jdbc-source-inventory", "inventory.public.orders")
    ]
    assert rewinds[0].to_progress < rewinds[0].from_progress
    stalled = set(
        SourceOffset.objects.filter(cluster=refreshed, stalled=True).values_list(
            "connector", "partition_text"
        )
    )
    assert stalled == {
        ("jdbc-source-inventory", '{"protocol":"1","table":"inventory.public.shipments"}')
    }
    drift = KeyDrift.objects.get(cluster=refreshed)
    assert drift.connector == "http-source-metrics"
    assert len(drift.forms) == 2 and drift.forms[0]["key"] != drift.forms[1]["key"]
    jdbc = ConnectorSnapshot.objects.get(cluster=refreshed, name="jdbc-source-inventory")
    assert (jdbc.rewinds, jdbc.stalled_partitions, jdbc.partitions) == (1, 1, 6)
    assert (
        ConnectorSnapshot.objects.get(
            cluster=refreshed, name="http-source-metrics"
        ).drifted_partitions
        == 1
    )


def test_commit_buckets_add_up_to_every_commit(refreshed, seeded_demo):
    records = list(reading.read_topic(seeded_demo.settings, "connect-offsets")) + list(
        reading.read_topic(seeded_demo.settings, EOS_TOPIC)
    )
    commits = sum(1 for r in records if r.value is not None)
    assert (
        sum(CommitBucket.objects.filter(cluster=refreshed).values_list("commits", flat=True))
        == commits
    )


def assert_history_holds_every_commit_once(cluster):
    history_store.wait_for_merges()  # a merge going on shows its commits twice for a moment
    expected = {
        (topic, r.partition, r.offset)
        for topic in ("connect-offsets", EOS_TOPIC)
        for r in reading.read_topic(cluster.kafka_settings(), topic)
        if r.value is not None
    }
    written = [
        (row["topic"], row["kafka_partition"], row["kafka_offset"])
        for path in history_store.history_path(cluster).glob("run=*/connector=*/*.parquet")
        for row in pq.read_table(path).to_pylist()
    ]
    assert len(written) == len(set(written))
    assert set(written) == expected


def test_the_history_files_hold_every_commit_once(refreshed):
    """The read tasks write the history: every commit read, none twice, none from elsewhere."""
    assert_history_holds_every_commit_once(refreshed)


def test_the_history_of_one_partition_shows_its_commits_and_the_rewind(refreshed):
    orders = SourceOffset.objects.get(
        cluster=refreshed,
        connector="jdbc-source-inventory",
        partition_text__contains="public.orders",
    )
    points = partition_history(
        cluster=refreshed, connector=orders.connector, key_hash=orders.key_hash
    )
    assert len(points) == orders.commits
    assert [p.rewind for p in points].count(True) == 1
    assert points[-1].offset == json.loads(orders.offset_text)


def test_sink_lag_matches_the_seeded_groups_and_statuses(refreshed, seeded_demo):
    data = {t.name: t for t in seeded_demo.demo.data_topics}
    for group, offsets in seeded_demo.demo.group_offsets.items():
        for (topic, partition), committed in offsets.items():
            row = SinkPartitionLag.objects.get(
                cluster=refreshed, group=group, topic=topic, partition=partition
            )
            assert row.committed == committed
            assert row.log_end == len(data[topic].timestamps[partition])
            assert row.lag_records == row.log_end - committed
    clicks2 = SinkPartitionLag.objects.get(
        cluster=refreshed, connector="es-sink-clicks", topic="clicks", partition=2
    )
    assert 1.5 * 3_600_000 < clicks2.lag_ms < 2.5 * 3_600_000
    failed = SinkPartitionLag.objects.filter(cluster=refreshed, connector="jdbc-sink-audit")
    assert {row.status for row in failed} == {"STOP"}
    assert (
        ConnectorSnapshot.objects.get(cluster=refreshed, name="jdbc-sink-audit").lag_status == "ERR"
    )
    bq = ConnectorSnapshot.objects.get(cluster=refreshed, name="bq-sink-events")
    assert bq.offsets_managed_externally and bq.lag_records is None and bq.lag_status == ""
    s3 = ConnectorSnapshot.objects.get(cluster=refreshed, name="s3-sink-orders")
    assert s3.lag_records == sum(
        r.lag_records
        for r in SinkPartitionLag.objects.filter(cluster=refreshed, connector="s3-sink-orders")
    )


def test_two_sinks_reading_one_topic_each_get_the_lag_of_their_own_position(fresh_demo):
    """The lag in time is the newest record's age against the record at each connector's own
    committed offset, even where another connector reads the same partitions from elsewhere."""
    from dataclasses import replace

    from offsets import connect_state

    cluster = fresh_demo.cluster
    s3 = next(
        c
        for c in connect_state.read_connect_state(cluster=cluster).connectors
        if c.name == "s3-sink-orders"
    )
    # A second sink of the same topics whose group has read one record of orders[0] only.
    replay = replace(s3, name="orders-replay", group_id="connect-orders-replay")
    groups.alter_offsets(fresh_demo.settings, replay.sink_group, {("orders", 0): 1})
    results = sinks.sample_sinks(cluster, [s3, replay], now_ms=int(time.time() * 1000), recent={})
    timestamps = {t.name: t.timestamps for t in fresh_demo.demo.data_topics}
    committed = {
        "s3-sink-orders": fresh_demo.demo.group_offsets["connect-s3-sink-orders"],
        "orders-replay": {("orders", 0): 1},
    }
    lagging = {name: 0 for name in committed}
    for lag in results.lags:
        stamps = timestamps[lag.topic][lag.partition]
        position = committed[lag.connector].get((lag.topic, lag.partition), 0)
        assert lag.lag_records == len(stamps) - position
        if lag.lag_records:
            lagging[lag.connector] += 1
            assert lag.lag_ms == stamps[-1] - stamps[position], (lag.connector, lag.topic)
        else:
            assert lag.lag_ms == 0
    assert lagging["s3-sink-orders"] > 0 and lagging["orders-replay"] > 0


def test_a_lag_in_time_measured_between_the_same_offsets_is_not_read_again(fresh_demo, monkeypatch):
    """A lagging partition whose position and log end have not moved since the last refresh
    keeps its lag in time without fetching its two records; one whose position moved is
    read and measured again."""
    from offsets import connect_state

    cluster = fresh_demo.cluster
    connectors = connect_state.read_connect_state(cluster=cluster).connectors
    first = sinks.sample_sinks(cluster, connectors, now_ms=int(time.time() * 1000), recent={})
    SinkPartitionLag.objects.bulk_create(first.lags)
    timestamps = {t.name: t.timestamps for t in fresh_demo.demo.data_topics}
    # Move the s3 sink's position one record on in a partition where it lags by more than
    # two records (so that the record at the new position is not the newest); nothing else
    # moves.
    committed = fresh_demo.demo.group_offsets["connect-s3-sink-orders"]
    moved, before = next(
        (tp, offset)
        for tp, offset in sorted(committed.items())
        if len(timestamps[tp[0]][tp[1]]) - offset > 2
    )
    groups.alter_offsets(fresh_demo.settings, "connect-s3-sink-orders", {moved: before + 1})
    asked = []
    timestamps_at = reading.timestamps_at

    def recording(settings, wanted, **kwargs):
        asked.extend(wanted)
        return timestamps_at(settings, wanted, **kwargs)

    monkeypatch.setattr(reading, "timestamps_at", recording)
    second = sinks.sample_sinks(
        cluster,
        connectors,
        now_ms=int(time.time() * 1000),
        recent={},
        known=sinks.known_time_lags(cluster),
    )

    stamps = timestamps[moved[0]][moved[1]]
    assert sorted(asked) == [(moved, before + 1), (moved, len(stamps) - 1)]
    first_lags = {(lag.connector, lag.topic, lag.partition): lag.lag_ms for lag in first.lags}
    reused = 0
    for lag in second.lags:
        slot = (lag.connector, lag.topic, lag.partition)
        if slot == ("s3-sink-orders", *moved):
            assert lag.lag_ms == stamps[-1] - stamps[before + 1] != first_lags[slot]
        else:
            assert lag.lag_ms == first_lags[slot], slot
            reused += lag.lag_records > 0 and lag.lag_ms is not None
    assert reused > 0


def test_a_second_refresh_adds_lag_samples_and_unmoving_offsets_stall(refreshed, spark, settings):
    settings.LAG_SAMPLE_SECONDS = 0  # the two refreshes are a moment apart
    # Samples of 12 samplings 40..29 days ago (of a topic the sink no longer reads): past the
    # retention (7 days), but the newest 8 are in the window (the last 10 samplings) with the
    # two refreshes', so they stay.
    old = timezone.now() - timedelta(days=40)
    LagSample.objects.bulk_create(
        LagSample(
            cluster=refreshed,
            connector="es-sink-clicks",
            topic="clicks-retired",
            partition=0,
            sampled_at=old + timedelta(days=day),
            committed=day,
            log_end=100,
            lag_records=100 - day,
        )
        for day in range(12)
    )
    run = run_refresh(cluster=refreshed, spark=spark)
    assert run.status == RefreshRun.Status.SUCCEEDED and run.records_read == 0
    lagging = SinkPartitionLag.objects.filter(
        cluster=refreshed, connector="es-sink-clicks", lag_records__gt=0
    )
    assert lagging.exists() and {row.status for row in lagging} == {"STALL"}
    samples = LagSample.objects.filter(cluster=refreshed, connector="es-sink-clicks")
    assert samples.filter(sampled_at__gt=old + timedelta(days=20)).count() == 2 * 4
    assert sorted(
        samples.filter(sampled_at__lt=old + timedelta(days=20)).values_list("committed", flat=True)
    ) == list(range(4, 12))


def test_a_refresh_without_new_records_changes_nothing(refreshed, spark):
    def snapshot():
        return (
            sorted(
                SourceOffset.objects.filter(cluster=refreshed).values_list(
                    "topic",
                    "key_hash",
                    "offset_text",
                    "commits",
                    "rewinds",
                    "effective",
                    "first_commit_at",
                    "last_commit_at",
                )
            ),
            sorted(
                CommitBucket.objects.filter(cluster=refreshed).values_list(
                    "connector", "bucket_start", "commits"
                )
            ),
            RewindEvent.objects.filter(cluster=refreshed).count(),
        )

    before = snapshot()
    assert run_refresh(cluster=refreshed, spark=spark).status == RefreshRun.Status.SUCCEEDED
    assert snapshot() == before


def test_a_broker_that_is_down_fails_the_run_and_keeps_the_previous_results(
    refreshed, spark, settings
):
    settings.KAFKA_READ_TIMEOUT = 1
    before = stored_effective(refreshed)
    refreshed.bootstrap_servers = "127.0.0.1:1"
    refreshed.save()
    run = run_refresh(cluster=refreshed, spark=spark)
    assert run.status == RefreshRun.Status.FAILED
    assert "did not answer" in run.error
    assert stored_effective(refreshed) == before
    assert ConnectorSnapshot.objects.filter(cluster=refreshed).count() == 11


def test_the_sinks_lag_is_sampled_while_the_snapshot_is_planned(refreshed, spark, monkeypatch):
    # Started only with the Spark phase, the sampling was on the critical path whenever it
    # took longer than Spark's part of an incremental refresh. Here the planner waits until
    # the sampling has started: before, it would have waited for nothing.
    sampling_started = threading.Event()
    sample_sinks, identify_and_plan = sinks.sample_sinks, planning.identify_and_plan
    planner_saw_sampling = []

    def sample(*args, **kwargs):
        sampling_started.set()
        return sample_sinks(*args, **kwargs)

    def plan(*args, **kwargs):
        planner_saw_sampling.append(sampling_started.wait(timeout=20))
        return identify_and_plan(*args, **kwargs)

    monkeypatch.setattr(sinks, "sample_sinks", sample)
    monkeypatch.setattr(planning, "identify_and_plan", plan)
    now_ms = (int(time.time()) + 3600) * 1000  # later than the fixture's refresh
    run = run_refresh(cluster=refreshed, spark=spark, now_ms=now_ms)
    assert run.status == RefreshRun.Status.SUCCEEDED, run.error
    assert planner_saw_sampling == [True]
    # The sampling's results were saved with the run.
    sampled = set(
        SinkPartitionLag.objects.filter(cluster=refreshed).values_list("sampled_at", flat=True)
    )
    assert sampled == {ms_to_datetime(now_ms)}


@pytest.fixture
def own_cluster(db, fresh_kafka, history_dir):
    """A cluster of its own that the test may write to."""
    demo = build_demo(
        DemoOptions(end_ms=int(time.time() * 1000) // 60_000 * 60_000, hours=1, seed=11)
    )
    write_demo({"bootstrap.servers": fresh_kafka}, demo)
    return Cluster.objects.create(name="own", bootstrap_servers=fresh_kafka)


def produce(cluster, topic, records, partitions=25):
    producer = producers.java_producer(cluster.kafka_settings())
    now = int(time.time() * 1000)
    for key, value in records:
        producer.produce(
            topic, key=key, value=value, partition=java_partition(key, partitions), timestamp=now
        )
    assert producer.flush(10) == 0


def comparable(cluster):
    return (
        sorted(
            SourceOffset.objects.filter(cluster=cluster).values_list(
                "topic",
                "key_hash",
                "key_bytes",
                "connector",
                "identity",
                "partition",
                "partition_text",
                "offset",
                "offset_text",
                "kafka_partition",
                "kafka_offset",
                "progress",
                "commits",
                "rewinds",
                "effective",
                "stalled",
                "first_commit_at",
                "last_commit_at",
            )
        ),
        sorted(
            CommitBucket.objects.filter(cluster=cluster).values_list(
                "connector", "bucket_start", "commits"
            )
        ),
        sorted(
            RewindEvent.objects.filter(cluster=cluster).values_list(
                "topic", "key_hash", "kafka_offset"
            )
        ),
        sorted(KeyDrift.objects.filter(cluster=cluster).values_list("connector", "identity")),
    )


def row_ids(cluster):
    return {
        (topic, key): pk
        for topic, key, pk in SourceOffset.objects.filter(cluster=cluster).values_list(
            "topic", "key_hash", "pk"
        )
    }


@pytest.mark.parametrize("small", [True, False], ids=["kept records", "Kafka read, spread merge"])
def test_an_incremental_refresh_after_new_commits_equals_a_full_one(
    own_cluster, spark, monkeypatch, small
):
    """On both routes of the new records into Spark: the records the planner kept on its way
    to the ends (a small read's), a read task's Kafka read past PLANNER_KEEPS_RECORDS; and
    with the merge in one task (the demo cluster's) or spread over several
    (KEYS_PER_MERGE_TASK)."""
    if not small:
        monkeypatch.setattr(tuning, "KEYS_PER_MERGE_TASK", 4)
        monkeypatch.setattr(tuning, "PLANNER_KEEPS_RECORDS", 0)
    merges = []  # the merges' physical plans

    def recording_merge(*args, merge_results=merge.merge_results, **kwargs):
        frame = merge_results(*args, **kwargs)
        merges.append(frame._jdf.queryExecution().executedPlan().toString())
        return frame

    monkeypatch.setattr(merge, "merge_results", recording_merge)
    now_ms = int(time.time() * 1000)
    assert run_refresh(cluster=own_cluster, spark=spark, now_ms=now_ms).status == "succeeded"
    seeded_rewinds = RewindEvent.objects.filter(cluster=own_cluster).count()
    orders = SourceOffset.objects.get(
        cluster=own_cluster,
        connector="jdbc-source-inventory",
        partition_text__contains="public.orders",
    )
    logs = SourceOffset.objects.get(cluster=own_cluster, connector="file-source-app-logs")
    new_key = jackson.dumps_key("file-source-app-logs", {"filename": "/var/log/app/new.log"})
    produce(
        own_cluster,
        "connect-offsets",
        [
            (
                bytes(orders.key_bytes),
                jackson.dumps({**orders.offset, "incrementing": 1}),
            ),  # a rewind across refreshes
            (bytes(logs.key_bytes), None),  # deleted
            (new_key, jackson.dumps({"position": 10})),
        ],
    )
    ids_before = row_ids(own_cluster)
    # At most one run folder: this refresh's history is merged with the first one's.
    monkeypatch.setattr(history_files, "MAX_RUN_FOLDERS", 1)
    updated = []
    update = store.update_source_offsets
    monkeypatch.setattr(
        store,
        "update_source_offsets",
        lambda changed: (updated.extend(pk for pk, _ in changed), update(changed)),
    )
    run = run_refresh(cluster=own_cluster, spark=spark, now_ms=now_ms)
    assert run.status == "succeeded" and run.records_read == 3
    # Only the rows that changed were written: the two keys with new commits were updated in
    # place, the new key inserted, and every other row is the same row, left alone.
    ids_after = row_ids(own_cluster)
    changed = {("connect-offsets", key) for key in (orders.key_hash, logs.key_hash)}
    assert sorted(updated) == sorted(ids_before[k] for k in changed)
    assert ids_after == ids_before | {("connect-offsets", key_hash(new_key)): mock.ANY}
    incremental = comparable(own_cluster)
    assert len(incremental[2]) == seeded_rewinds + 1
    first, second = RefreshRun.objects.filter(cluster=own_cluster).order_by("pk")
    history_store.wait_for_merges()  # merged beside the refresh, not in it
    folders = history_files.run_folders(history_store.history_path(own_cluster))
    assert [f.name for f in folders] == [f"run={first.pk}-{second.pk}"]
    assert_history_holds_every_commit_once(own_cluster)
    points = partition_history(
        cluster=own_cluster, connector=orders.connector, key_hash=orders.key_hash
    )
    assert len(points) == orders.commits + 1 and points[-1].rewind
    assert (
        run_refresh(cluster=own_cluster, spark=spark, full=True, now_ms=now_ms).status
        == "succeeded"
    )
    assert comparable(own_cluster) == incremental
    if small:
        # Only the incremental refresh reads on from earlier positions, so only it kept
        # records, and their merge, one task's, ran in this process: no Spark job.
        first_merge, full_merge = merges
        assert "BatchScan" in first_merge and "BatchScan" in full_merge
        # A merge of one task's keys runs without generated code (tuning.NO_CODEGEN_CONF: no
        # "*(n)" stages), and the settings are put back after it.
        assert "*(" not in first_merge, first_merge
        assert spark.conf.get("spark.sql.codegen.wholeStage") == "true"
    else:
        first_merge, incremental_merge, full_merge = merges
        assert all("Exchange hashpartitioning(connector#" in plan for plan in merges), merges
        assert "BatchScan" in incremental_merge


def test_a_refresh_that_another_one_overtook_saves_nothing(own_cluster, spark):
    """Two refreshes that read the same new commits must not both add them to the counts."""
    now_ms = int(time.time() * 1000)
    assert run_refresh(cluster=own_cluster, spark=spark, now_ms=now_ms).status == "succeeded"
    logs = SourceOffset.objects.get(cluster=own_cluster, connector="file-source-app-logs")
    produce(
        own_cluster,
        "connect-offsets",
        [(bytes(logs.key_bytes), jackson.dumps({"position": n})) for n in (7, 8, 9)],
    )
    overtaking, saved = [], []

    def progress(text):
        # The first refresh has planned its read of the three new commits; a second one
        # (a loop's round beside a button press) reads and saves them first.
        if "computing offsets and history" in text and not overtaking:
            overtaking.append(run_refresh(cluster=own_cluster, spark=spark, now_ms=now_ms))
            saved.append(comparable(own_cluster))

    run = run_refresh(cluster=own_cluster, spark=spark, now_ms=now_ms, progress=progress)
    assert overtaking[0].status == "succeeded" and overtaking[0].records_read == 3
    assert run.status == "failed"
    assert run.error.startswith("Another refresh of own saved its results while this one ran")
    # Nothing of the overtaken run was saved: every count holds the three commits once.
    assert comparable(own_cluster) == saved[0]
    logs_after = SourceOffset.objects.get(pk=logs.pk)
    assert logs_after.commits == logs.commits + 3 and logs_after.offset == {"position": 9}
    assert sum(
        CommitBucket.objects.filter(cluster=own_cluster).values_list("commits", flat=True)
    ) == (sum(SourceOffset.objects.filter(cluster=own_cluster).values_list("commits", flat=True)))
    # Its history folder went with it: each commit is in the history once.
    assert_history_holds_every_commit_once(own_cluster)


def test_a_refresh_whose_claim_was_taken_over_saves_nothing(own_cluster, spark):
    """A holder cut off from the database past its lease (or paused that long) finds its claim
    taken over when it comes to save: the refresh that took over is the one that saves."""
    now_ms = int(time.time() * 1000)
    assert run_refresh(cluster=own_cluster, spark=spark, now_ms=now_ms).status == "succeeded"
    before = comparable(own_cluster)
    logs = SourceOffset.objects.get(cluster=own_cluster, connector="file-source-app-logs")
    produce(
        own_cluster,
        "connect-offsets",
        [(bytes(logs.key_bytes), jackson.dumps({"position": n})) for n in (7, 8, 9)],
    )
    claimed = background.claim_refresh(cluster=own_cluster, full=False)
    taken = []

    def progress(text):
        # Mid-refresh, its lease runs out and the next claim takes the cluster over.
        if "computing offsets and history" in text and not taken:
            RefreshRun.objects.filter(pk=claimed.pk).update(
                lease_expires_at=timezone.now() - timedelta(seconds=1)
            )
            taken.append(background.claim_refresh(cluster=own_cluster, full=False))

    run = run_refresh(
        cluster=own_cluster, spark=spark, now_ms=now_ms + 1000, progress=progress, run=claimed
    )
    assert taken[0] is not None
    # What the take-over recorded stands: the overtaken run's end did not write over it.
    assert run.status == "failed" and "stopped renewing its lease" in run.error, run.error
    stored = RefreshRun.objects.get(pk=claimed.pk)
    assert (stored.status, stored.error) == (run.status, run.error)
    assert comparable(own_cluster) == before  # its three new commits were not saved
    assert RefreshRun.objects.get(pk=taken[0].pk).status == RefreshRun.Status.RUNNING
    assert not history_store.run_folder(own_cluster, claimed.pk).exists()  # nor its history


@pytest.mark.parametrize("broker_has_topic_ids", [True, False])
def test_an_offsets_topic_deleted_and_created_again_is_rebuilt_from_the_beginning(
    own_cluster, spark, broker_has_topic_ids
):
    now_ms = int(time.time() * 1000)
    assert run_refresh(cluster=own_cluster, spark=spark, now_ms=now_ms).status == "succeeded"
    kept = SourceOffset.objects.get(cluster=own_cluster, connector="file-source-app-logs")
    old_ids = set(
        ReadPosition.objects.filter(cluster=own_cluster).values_list("topic_id", flat=True)
    )
    assert len(old_ids) == 2 and "" not in old_ids  # Kafka 2.8+ has topic IDs
    if not broker_has_topic_ids:  # as if read from a broker without them (Kafka < 2.8)
        ReadPosition.objects.filter(cluster=own_cluster).update(topic_id="")
    # The Connect cluster is rebuilt: its worker offsets topic deleted and created again, and
    # one connector commits once.
    kafka_admin = admin.admin_client(own_cluster.kafka_settings())
    kafka_admin.delete_topics(["connect-offsets"])["connect-offsets"].result(10)
    admin.create_topics(
        own_cluster.kafka_settings(),
        [admin.TopicSpec("connect-offsets", 25, {"cleanup.policy": "compact"})],
    )
    produce(
        own_cluster, "connect-offsets", [(bytes(kept.key_bytes), jackson.dumps({"position": 5}))]
    )

    said = []
    with mock.patch.object(sinks, "sample_sinks", wraps=sinks.sample_sinks) as sampling:
        run = run_refresh(cluster=own_cluster, spark=spark, now_ms=now_ms, progress=said.append)
    assert run.status == "succeeded" and run.full, run.error
    # The state is read and the topics planned twice, the sinks sampled once.
    assert sampling.call_count == 1
    assert SinkPartitionLag.objects.filter(cluster=own_cluster).exists()
    how = "its topic ID changed" if broker_has_topic_ids else "before offset"
    assert any("connect-offsets was deleted and created again" in s and how in s for s in said)
    assert run.records_by_topic["connect-offsets"] == 1
    # Only what the new topic holds (and the own topic, read again) is left.
    worker = SourceOffset.objects.filter(cluster=own_cluster, topic="connect-offsets")
    assert [(row.key_hash, row.offset, row.commits) for row in worker] == [
        (kept.key_hash, {"position": 5}, 1)
    ]
    assert set(
        ReadPosition.objects.filter(topic="connect-offsets").values_list("topic_id", flat=True)
    ).isdisjoint(old_ids)
    assert_history_holds_every_commit_once(own_cluster)
    rebuilt = comparable(own_cluster)
    assert (
        run_refresh(cluster=own_cluster, spark=spark, full=True, now_ms=now_ms).status
        == "succeeded"
    )
    assert comparable(own_cluster) == rebuilt


def test_malformed_records_are_counted_by_reason_and_good_ones_kept(own_cluster, spark):
    good = jackson.dumps_key("file-source-app-logs", {"filename": "/var/log/app/other.log"})
    produce(
        own_cluster,
        "connect-offsets",
        [
            (b"not json at all", b"{}"),
            (b'{"not":"an array"}', b"{}"),
            (b"\xff\xfe\x00", b"{}"),
            (good, b"[1,2]"),
            (good, b"\xc3\x28"),
            (good, jackson.dumps({"position": 99})),
        ],
    )
    run = run_refresh(cluster=own_cluster, spark=spark)
    assert run.status == "succeeded" and run.malformed == 5
    counts = {
        (m.connector, m.reason): m.count for m in MalformedCount.objects.filter(cluster=own_cluster)
    }
    assert counts == {
        ("", "key-not-json"): 1,
        ("", "key-not-array"): 1,
        ("", "key-not-utf8"): 1,
        ("file-source-app-logs", "value-not-object"): 1,
        ("file-source-app-logs", "value-not-utf8"): 1,
    }
    assert SourceOffset.objects.get(cluster=own_cluster, key_hash=key_hash(good)).offset == {
        "position": 99
    }
    assert (
        ConnectorSnapshot.objects.get(cluster=own_cluster, name="file-source-app-logs").malformed
        == 2
    )


def test_refresh_offsets_command_prints_progress_and_a_summary(
    own_cluster, spark, capsys, monkeypatch, settings
):
    monkeypatch.setattr("offsets.spark.session.get_spark", lambda *args, **kwargs: spark)
    monkeypatch.setattr(spark, "stop", lambda: None)
    expired = RefreshRun.objects.create(
        cluster=own_cluster,
        status=RefreshRun.Status.FAILED,
        started_at=timezone.now() - timedelta(days=settings.REFRESH_RUN_RETENTION_DAYS + 1),
        finished_at=timezone.now() - timedelta(days=settings.REFRESH_RUN_RETENTION_DAYS + 1),
    )
    call_command("refresh_offsets", "--cluster", "own")
    assert not RefreshRun.objects.filter(pk=expired.pk).exists()  # the refresh's housekeeping
    out = capsys.readouterr().out
    assert "connect-offsets:" in out and "new records" in out
    assert "computing offsets and history" in out
    assert "succeeded" in out
    with pytest.raises(CommandError, match="Unknown cluster"):
        call_command("refresh_offsets", "--cluster", "nope")
