"""What a refresh computes (offsets/refresh/) and the pages read.

One row per thing the pages show, kept current by each refresh; history that must survive
compaction of the offsets topic (commit counts per bucket, rewinds, lag samples) is appended
and never recomputed from the topic alone. The full per-commit history lives in Parquet
(settings.OFFSETS_HISTORY_PATH).
"""

import hashlib

from django.db import models
from django.db.models import Q

from offsets.domain import pauses
from offsets.domain.mirrors import is_mirror_source
from offsets.domain.source_lag import has_source_clock
from offsets.formats.status_records import TaskRow, task_rows
from offsets.models.cluster import Cluster


def key_hash(key_bytes: bytes) -> str:
    """Return the index key for exact record key bytes (keys can be longer than an index)."""
    return hashlib.sha1(key_bytes).hexdigest()


class RefreshRun(models.Model):
    class Status(models.TextChoices):
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="refresh_runs")
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RUNNING)
    full = models.BooleanField(default=False)
    phase = models.CharField(max_length=200, blank=True)
    records_read = models.BigIntegerField(default=0)
    records_by_topic = models.JSONField(default=dict, blank=True)
    malformed = models.BigIntegerField(default=0)
    # {topic: {reason: count}}: what `malformed` is made of (reasons are the *MalformedReason
    # values of offsets/formats); the config and status topics count all their records.
    malformed_by_reason = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    seconds = models.FloatField(null=True, blank=True)
    # The process running it, so that a run whose process is gone (killed, Ctrl-C) stops
    # blocking new refreshes at once where it ran, before its lease runs out. The host names
    # the pid namespace too inside a container (background.process_host).
    host = models.CharField(max_length=255, blank=True)
    pid = models.IntegerField(null=True, blank=True)
    # When that process started (clock ticks since boot, /proc/<pid>/stat): pids wrap around,
    # and a new process holding the dead one's pid must not be taken for it.
    pid_started = models.BigIntegerField(null=True, blank=True)
    # The running process's last renewal of its lease (background.heartbeat), and when that
    # lease runs out, both by the database's clock: a RUNNING run holds its cluster until then,
    # and the next claim takes it over after (offsets.domain.leases). A long refresh that keeps
    # renewing is never taken for a dead one; a killed one lets go within the lease.
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-started_at"]
        indexes = [models.Index(fields=["cluster", "-started_at"])]

    def __str__(self) -> str:
        return f"refresh of {self.cluster} at {self.started_at:%Y-%m-%d %H:%M:%S} ({self.status})"


class ReadPosition(models.Model):
    """The next offset to read of one topic partition (incremental refresh)."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="read_positions")
    topic = models.CharField(max_length=249)
    partition = models.IntegerField()
    next_offset = models.BigIntegerField()
    # The topic's ID (KIP-516) when it was read; "" if the broker has none. A different ID now
    # means the topic was deleted and created again: what was read from it is gone.
    topic_id = models.CharField(max_length=32, blank=True, default="")

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["cluster", "topic", "partition"], name="one_position_per_partition"
            )
        ]

    def __str__(self) -> str:
        return f"{self.topic}[{self.partition}] @ {self.next_offset}"


class ConnectorSnapshot(models.Model):
    """A connector as the last successful refresh saw it (config, status, offsets, lag)."""

    class LagStatus(models.TextChoices):
        OK = "OK"
        WARN = "WARN"
        ERR = "ERR"

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="connectors")
    name = models.CharField(max_length=249)
    type = models.CharField(max_length=8)  # source or sink
    connector_class = models.CharField(max_length=500, blank=True)
    target_state = models.CharField(max_length=16, blank=True)
    runtime_state = models.CharField(max_length=16, blank=True)
    task_states = models.JSONField(default=dict, blank=True)  # {"0": "RUNNING"}
    # Each task's worker and trace (masked) from the status topic: {"0": {"worker_id": ...,
    # "trace": ...}}.
    task_details = models.JSONField(default=dict, blank=True)
    # Tasks the refresh saw FAILED: Connect leaves the connector RUNNING when only a task
    # fails, so the state filter and the overview count these too.
    failed_tasks = models.IntegerField(default=0)
    # When the worker wrote the FAILED status the connector (or its first failed task) has
    # now: the status record's timestamp; null when not failing or the record has no time.
    failed_at = models.DateTimeField(null=True, blank=True)
    task_count = models.IntegerField(null=True, blank=True)
    deleted = models.BooleanField(default=False)
    mirrormaker2 = models.BooleanField(default=False)
    own_offsets_topic = models.CharField(max_length=249, blank=True)
    # A group id has no length limit short of Kafka's 32 KB strings: "connect-" and a
    # 249-character name already pass 249.
    sink_group = models.TextField(blank=True)
    config = models.JSONField(default=dict, blank=True)  # secrets masked before saving
    trace = models.TextField(blank=True)
    # Sources: partitions and their commits. Sinks: topic-partitions and lag.
    partitions = models.IntegerField(default=0)
    last_commit_at = models.DateTimeField(null=True, blank=True)
    # A sink's: whether a refresh saw its last commit happen (its offsets moved between two
    # refreshes), or only first read the offsets as they are (unchanged since at least then).
    last_commit_seen = models.BooleanField(default=False)
    rewinds = models.IntegerField(default=0)
    stalled_partitions = models.IntegerField(default=0)
    drifted_partitions = models.IntegerField(default=0)
    malformed = models.IntegerField(default=0)
    offsets_managed_externally = models.BooleanField(default=False)
    # A sink's partitions its group has no commit for: they lag from auto.offset.reset.
    uncommitted_partitions = models.IntegerField(default=0)
    lag_records = models.BigIntegerField(null=True, blank=True)
    lag_ms = models.BigIntegerField(null=True, blank=True)
    lag_status = models.CharField(max_length=8, choices=LagStatus.choices, blank=True)
    # A MirrorSourceConnector's upstream: its source.cluster.alias, the registered cluster
    # chosen for it ("" when none is: its lag is unknown) and why its lag could not be read.
    source_alias = models.CharField(max_length=255, blank=True)
    upstream_cluster = models.CharField(max_length=63, blank=True)
    upstream_error = models.TextField(blank=True)
    # A sink whose offsets an admin placed outside Connect's group (SinkOffsetsStore): where
    # this refresh read them ("" for Connect's group) and why they could not be read.
    offsets_store = models.CharField(max_length=1000, blank=True)
    offsets_store_error = models.TextField(blank=True)
    updated_at = models.DateTimeField()
    # A digest of every field above: a refresh rewrites only the rows whose digest changed.
    fingerprint = models.CharField(max_length=40, blank=True, editable=False)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["cluster", "name"], name="one_snapshot_per_connector")
        ]

    def __str__(self) -> str:
        return f"{self.cluster}/{self.name}"

    LAST_COMMIT_BASIS_HELP = (
        "What `last_commit_at` is: `record` for a source (the time of its last offset record), "
        "`offset moved` for a sink whose offsets a refresh saw move (the refresh that first saw "
        "them as they are now: the commit came after the refresh before it; Kafka keeps no "
        "commit times), `first read` for a sink whose offsets are unchanged since at least "
        "then (the first refresh that read them; no move was seen), null without one."
    )

    @property
    def last_commit_basis(self) -> str | None:
        """What its `last_commit_at` is (`LAST_COMMIT_BASIS_HELP`)."""
        if self.last_commit_at is None:
            return None
        if self.type != "sink":
            return "record"
        return "offset moved" if self.last_commit_seen else "first read"

    @property
    def lag_tracked(self) -> bool:
        """Whether the last refresh measured its lag: a sink's unless it keeps its offsets
        outside Connect, a MirrorSourceConnector's against its upstream cluster."""
        return self.lag_records is not None

    @property
    def mirror_source(self) -> bool:
        """Whether it is a MirrorSourceConnector, whose lag needs its upstream cluster."""
        return self.type == "source" and is_mirror_source(self.config)

    @property
    def source_clock(self) -> bool:
        """Whether its offsets may carry the source's own clock (CDC, JDBC-style sources)."""
        return self.type == "source" and has_source_clock(self.connector_class)

    @property
    def failed(self) -> bool:
        """Whether the connector or one of its tasks is FAILED."""
        return not self.deleted and (self.runtime_state == "FAILED" or self.failed_tasks > 0)

    @property
    def paused_by_owner(self) -> bool:
        """Whether its owner paused or stopped it (its target state), and nothing failed: its
        lag then stops by design (the list's "problems first" order says the same)."""
        return pauses.paused_by_owner(
            target_state=self.target_state, deleted=self.deleted, failed=self.failed
        )

    @property
    def first_task_error(self) -> str:
        """The first line of its first FAILED task's trace, for a tooltip in the list."""
        return next((row.error for row in self.tasks() if row.state == "FAILED"), "")

    def tasks(self) -> list[TaskRow]:
        """Its tasks in order, each with its state, worker and trace (first line and whole)."""
        return task_rows(self.task_states, self.task_details)


class SourceOffset(models.Model):
    """The latest offset of one source partition in one offsets topic (last write per key bytes).

    A connector with its own offsets topic has rows for both topics; `effective` marks the
    value the runtime uses (its own topic wins, KIP-618).
    """

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="source_offsets")
    connector = models.CharField(max_length=249)
    topic = models.CharField(max_length=249)
    key_hash = models.CharField(max_length=40)
    key_bytes = models.BinaryField()
    identity = models.TextField()  # the logical partition, for key-drift detection
    partition = models.JSONField()
    offset = models.JSONField(null=True)  # null: tombstoned (kept for its history)
    # The maps exactly as written (field order included); PostgreSQL's jsonb reorders keys.
    partition_text = models.TextField()
    offset_text = models.TextField(null=True)  # noqa: DJ001 - null is a tombstone, "" is not
    kafka_partition = models.IntegerField()
    kafka_offset = models.BigIntegerField()
    progress = models.FloatField(null=True, blank=True)  # the numeric field rewinds watch
    first_commit_at = models.DateTimeField(null=True, blank=True)
    last_commit_at = models.DateTimeField(null=True, blank=True)
    commits = models.BigIntegerField(default=0)
    rewinds = models.IntegerField(default=0)
    stalled = models.BooleanField(default=False)
    effective = models.BooleanField(default=True)
    # A newer write of this key (at this Kafka offset) holds a NUL or a lone surrogate, which
    # the database cannot store: the runtime uses it, so `offset` is no longer the current one.
    newer_unstorable_offset = models.BigIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["connector", "identity"]
        constraints = [
            models.UniqueConstraint(
                fields=["cluster", "topic", "key_hash"], name="one_offset_per_key"
            )
        ]
        indexes = [
            models.Index(fields=["cluster", "connector", "effective"]),
            # One partition of a connector by its key (the progress chart, the API's history):
            # without it the lookup scans every partition of the connector (10,000: ~15 ms).
            models.Index(
                fields=["cluster", "connector", "key_hash"], name="offsets_sourceoffset_key"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.connector} {self.partition_text}"


class CommitBucket(models.Model):
    """Offset commits of one connector in one time bucket (settings.COMMIT_BUCKET_SECONDS)."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="commit_buckets")
    connector = models.CharField(max_length=249)
    bucket_start = models.DateTimeField()
    commits = models.BigIntegerField(default=0)

    class Meta:
        ordering = ["bucket_start"]
        constraints = [
            models.UniqueConstraint(
                fields=["cluster", "connector", "bucket_start"], name="one_bucket_per_connector"
            )
        ]
        # A refresh adds its counts to the cluster's buckets from its earliest commit on.
        indexes = [models.Index(fields=["cluster", "bucket_start"], name="offsets_bucket_time")]

    def __str__(self) -> str:
        return f"{self.connector} {self.bucket_start:%Y-%m-%d %H:%M}: {self.commits}"


class RewindEvent(models.Model):
    """A committed source offset that went backwards (e.g. a restart that lost progress, or
    an offset edit)."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="rewinds")
    connector = models.CharField(max_length=249)
    topic = models.CharField(max_length=249)
    key_hash = models.CharField(max_length=40)
    partition = models.JSONField()
    at = models.DateTimeField()
    kafka_partition = models.IntegerField()
    kafka_offset = models.BigIntegerField()
    from_progress = models.FloatField()
    to_progress = models.FloatField()
    # The applied offset edit that wrote this rewind (offsets.domain.edit_rewinds): its work,
    # not an alarm. Null: no edit explains it.
    edit = models.ForeignKey(
        "offsets.OffsetEdit",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="rewinds_written",
    )

    class Meta:
        ordering = ["-at"]
        constraints = [
            models.UniqueConstraint(
                fields=["cluster", "topic", "kafka_partition", "kafka_offset"],
                name="one_rewind_per_record",
            )
        ]
        indexes = [models.Index(fields=["cluster", "connector"])]

    def __str__(self) -> str:
        return f"{self.connector} rewind at {self.at:%Y-%m-%d %H:%M:%S}"


class KeyDrift(models.Model):
    """One logical source partition stored under more than one key byte form."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="key_drifts")
    connector = models.CharField(max_length=249)
    identity = models.TextField()
    # [{"topic", "key": text of the key bytes, "offset", "last_commit_at"}], newest first
    forms = models.JSONField()

    class Meta:
        ordering = ["connector", "identity"]

    def __str__(self) -> str:
        return f"{self.connector} {self.identity}"


class MalformedCount(models.Model):
    """Records of a topic that are not what Connect writes, by reason (never fatal)."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="malformed_counts")
    topic = models.CharField(max_length=249)
    connector = models.CharField(max_length=249, blank=True)  # known when only the value is bad
    reason = models.CharField(max_length=64)
    count = models.BigIntegerField(default=0)
    example = models.TextField(blank=True)  # one offending key/value, truncated

    class Meta:
        ordering = ["topic", "reason"]
        constraints = [
            models.UniqueConstraint(
                fields=["cluster", "topic", "connector", "reason"], name="one_count_per_reason"
            )
        ]

    def __str__(self) -> str:
        return f"{self.topic} {self.reason}: {self.count}"


class SinkPartitionLag(models.Model):
    """The latest lag of one topic-partition a connector reads: a sink's consumer group, or a
    MirrorSourceConnector's upstream partition (`upstream` names its cluster)."""

    class Status(models.TextChoices):
        OK = "OK"
        WARN = "WARN"
        STALL = "STALL"
        STOP = "STOP"
        REWIND = "REWIND"

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="sink_lags")
    connector = models.CharField(max_length=249)
    group = models.TextField()  # as long as a group id may be (sink_group)
    topic = models.CharField(max_length=249)
    partition = models.IntegerField()
    # The next offset to read: a sink group's committed offset (null: never committed), a
    # mirror's stored offset + 1.
    committed = models.BigIntegerField(null=True, blank=True)
    # When a refresh first saw `committed` as it is now: Kafka keeps no commit times
    # (OffsetFetch answers offsets only), so this is the refreshes' view of the last move.
    committed_moved_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When a refresh first saw `committed` as it is now (Kafka keeps no commit "
        "times); null when never committed.",
    )
    # Whether that refresh saw the offset move (the one before read another), or was the
    # first to read it (the offset is unchanged since at least then).
    committed_move_seen = models.BooleanField(default=False)
    # A mirror's upstream cluster (registered name); "" for a sink.
    upstream = models.CharField(max_length=63, blank=True)
    log_start = models.BigIntegerField()
    log_end = models.BigIntegerField()
    lag_records = models.BigIntegerField()
    lag_ms = models.BigIntegerField(null=True, blank=True)
    status = models.CharField(max_length=8, choices=Status.choices)
    sampled_at = models.DateTimeField()

    class Meta:
        ordering = ["connector", "topic", "partition"]
        constraints = [
            models.UniqueConstraint(
                fields=["cluster", "connector", "topic", "partition"], name="one_lag_per_partition"
            )
        ]

    def __str__(self) -> str:
        return f"{self.connector} {self.topic}[{self.partition}] lag {self.lag_records}"


class LagSample(models.Model):
    """A sink's or mirror's partition lag at one refresh: the time series Burrow's rules read."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="lag_samples")
    connector = models.CharField(max_length=249)
    topic = models.CharField(max_length=249)
    partition = models.IntegerField()
    sampled_at = models.DateTimeField()
    committed = models.BigIntegerField(null=True, blank=True)
    log_end = models.BigIntegerField()
    lag_records = models.BigIntegerField()
    lag_ms = models.BigIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["sampled_at"]
        indexes = [
            models.Index(fields=["cluster", "connector", "sampled_at"]),
            # The refresh's lag window (the last samplings of the cluster) and the retention.
            models.Index(fields=["cluster", "sampled_at"], name="offsets_lagsample_time"),
        ]

    def __str__(self) -> str:
        return f"{self.connector} {self.topic}[{self.partition}] at {self.sampled_at:%H:%M:%S}"


class ConnectorStateChange(models.Model):
    """A connector's state as a refresh found it, when it differs from the refresh before
    (or the connector is new to it): where the history charts mark a pause, a stop, a
    failure and the return to running. A refresh keeps only its latest snapshot, so these
    rows are the states' history."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="state_changes")
    connector = models.CharField(max_length=249)
    at = models.DateTimeField()  # the refresh that saw it, or a failure's status record
    target_state = models.CharField(max_length=16, blank=True)
    runtime_state = models.CharField(max_length=16, blank=True)
    failed_tasks = models.IntegerField(default=0)
    # Whether the refresh before saw the connector at all.
    first_seen = models.BooleanField(default=False)
    # Whether `at` is the status record's time of a failure (when the worker wrote FAILED),
    # not the refresh that saw the change.
    at_from_status = models.BooleanField(default=False)

    class Meta:
        ordering = ["at"]
        indexes = [models.Index(fields=["cluster", "connector", "at"])]

    def __str__(self) -> str:
        return f"{self.connector} {self.target_state}/{self.runtime_state} at {self.at:%H:%M:%S}"


__all__ = [
    "CommitBucket",
    "ConnectorSnapshot",
    "ConnectorStateChange",
    "KeyDrift",
    "LagSample",
    "MalformedCount",
    "ReadPosition",
    "RefreshRun",
    "RewindEvent",
    "SinkPartitionLag",
    "SourceOffset",
    "key_hash",
]

# Rows without a value are tombstoned partitions kept for their history.
LIVE_OFFSETS = Q(offset__isnull=False)
