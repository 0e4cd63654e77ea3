"""Rows of the refresh models made directly, for page and API tests that need no Spark.

The values mimic what a refresh stores (see offsets/models/refresh.py); browser tests and the
integration tests use a real refresh of the seeded demo instead (`refreshed_demo`).
"""

import json
from datetime import datetime, timedelta

from django.utils import timezone

from offsets import tuning
from offsets.history.reading import CommitPoint
from offsets.models import (
    Cluster,
    CommitBucket,
    ConnectorSnapshot,
    KeyDrift,
    LagSample,
    RefreshRun,
    RewindEvent,
    SinkPartitionLag,
    SourceOffset,
)
from offsets.models.refresh import key_hash


def now() -> datetime:
    return timezone.now()


def cluster(name: str = "prod", **fields: object) -> Cluster:
    # Port 1 by default: nothing listens there, so any Kafka access fails fast and visibly.
    return Cluster.objects.create(
        name=name, bootstrap_servers=fields.pop("bootstrap_servers", "127.0.0.1:1"), **fields
    )


def run(
    cluster: Cluster,
    status: str = RefreshRun.Status.SUCCEEDED,
    *,
    ago: float = 60,
    **fields: object,
) -> RefreshRun:
    started = now() - timedelta(seconds=ago)
    running = status == RefreshRun.Status.RUNNING
    finished = None if running else started + timedelta(seconds=min(20, ago))
    defaults = {"records_read": 1234, "seconds": 20.0, "phase": "done" if finished else "reading"}
    if running:
        # Its lease just renewed, as a live process keeps it.
        defaults["lease_expires_at"] = now() + timedelta(seconds=tuning.REFRESH_LEASE_SECONDS)
    return RefreshRun.objects.create(
        cluster=cluster,
        started_at=started,
        finished_at=fields.pop("finished_at", finished),
        status=status,
        **{**defaults, **fields},
    )


def snapshot(
    cluster: Cluster, name: str, type: str = "source", **fields: object
) -> ConnectorSnapshot:
    defaults: dict[str, object] = {
        "connector_class": "io.example.SourceConnector"
        if type == "source"
        else "io.example.SinkConnector",
        "target_state": "STARTED",
        "runtime_state": "RUNNING",
        "task_states": {"0": "RUNNING"},
        "task_count": 1,
        "config": {"connector.class": "io.example.Connector", "tasks.max": "1"},
        "lag_status": "OK",
        "updated_at": now(),
    }
    if type == "sink":
        defaults.update(sink_group=f"connect-{name}", lag_records=0, lag_ms=0)
    values = {**defaults, **fields}
    # As a refresh stores it (summaries._connector_fields).
    values.setdefault(
        "failed_tasks", sum(state == "FAILED" for state in values["task_states"].values())
    )
    return ConnectorSnapshot.objects.create(cluster=cluster, name=name, type=type, **values)


def source_offsets(
    cluster: Cluster,
    connector: str,
    count: int,
    *,
    topic: str = "connect-offsets",
    **fields: object,
) -> list[SourceOffset]:
    rows = []
    for index in range(count):
        partition = {"table": f"table_{index:05d}"}
        key = json.dumps([connector, partition], separators=(",", ":")).encode()
        rows.append(
            SourceOffset(
                cluster=cluster,
                connector=connector,
                topic=topic,
                key_hash=key_hash(key),
                key_bytes=key,
                identity=json.dumps(partition, sort_keys=True, separators=(",", ":")),
                partition=partition,
                partition_text=json.dumps(partition, separators=(",", ":")),
                offset={"id": index * 10},
                offset_text=json.dumps({"id": index * 10}, separators=(",", ":")),
                kafka_partition=index % 25,
                kafka_offset=index,
                progress=float(index * 10),
                first_commit_at=now() - timedelta(hours=3),
                last_commit_at=now() - timedelta(minutes=1),
                commits=180,
                **fields,
            )
        )
    return SourceOffset.objects.bulk_create(rows, batch_size=1000)


def sink_lags(
    cluster: Cluster, connector: str, topic: str, partitions: int, **fields: object
) -> list[SinkPartitionLag]:
    rows = [
        SinkPartitionLag(
            cluster=cluster,
            connector=connector,
            group="" if fields.get("upstream") else f"connect-{connector}",
            upstream=fields.get("upstream", ""),
            topic=topic,
            partition=partition,
            committed=fields.get("committed", 90 + partition),
            log_start=0,
            log_end=100 + partition,
            lag_records=fields.get("lag_records", 10),
            lag_ms=fields.get("lag_ms", 5_000),
            status=fields.get("status", "OK"),
            sampled_at=now(),
        )
        for partition in range(partitions)
    ]
    return SinkPartitionLag.objects.bulk_create(rows)


def commit_buckets(
    cluster: Cluster, connector: str, count: int, *, width_s: int = 300
) -> list[CommitBucket]:
    start = now().replace(second=0, microsecond=0) - timedelta(seconds=width_s * count)
    return CommitBucket.objects.bulk_create(
        CommitBucket(
            cluster=cluster,
            connector=connector,
            bucket_start=start + timedelta(seconds=width_s * index),
            commits=5 + index % 3,
        )
        for index in range(count)
    )


def lag_samples(
    cluster: Cluster, connector: str, topic: str, partitions: int, samples: int
) -> list[LagSample]:
    start = now() - timedelta(minutes=samples)
    return LagSample.objects.bulk_create(
        LagSample(
            cluster=cluster,
            connector=connector,
            topic=topic,
            partition=partition,
            sampled_at=start + timedelta(minutes=index),
            committed=100 + index,
            log_end=110 + 2 * index,
            lag_records=10 + index,
            lag_ms=1000 * (index + 1),
        )
        for index in range(samples)
        for partition in range(partitions)
    )


def rewind(cluster: Cluster, offset: SourceOffset, **fields: object) -> RewindEvent:
    return RewindEvent.objects.create(
        cluster=cluster,
        connector=offset.connector,
        topic=offset.topic,
        key_hash=offset.key_hash,
        partition=offset.partition,
        at=fields.pop("at", now() - timedelta(hours=1)),
        kafka_partition=offset.kafka_partition,
        kafka_offset=fields.pop("kafka_offset", 5),
        from_progress=fields.pop("from_progress", 500.0),
        to_progress=fields.pop("to_progress", 100.0),
    )


def drift(cluster: Cluster, connector: str, identity: str, forms: list[dict]) -> KeyDrift:
    return KeyDrift.objects.create(
        cluster=cluster, connector=connector, identity=identity, forms=forms
    )


def history(count: int, *, rewind_at: int | None = None) -> list[CommitPoint]:
    """A partition's commits, one a minute, its offset going back once at `rewind_at`."""
    start = now() - timedelta(minutes=count)
    points = []
    progress = 0.0
    for index in range(count):
        progress = progress - 200 if index == rewind_at else progress + 10
        points.append(
            CommitPoint(
                at=start + timedelta(minutes=index),
                progress=progress,
                offset={"id": int(progress)},
                kafka_offset=index,
                rewind=index == rewind_at,
            )
        )
    return points
