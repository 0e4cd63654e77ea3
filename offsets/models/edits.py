"""Offset edits: a staged change of one connector's offsets, its touched partitions, the audit log.

An edit goes draft -> submitted -> approved -> applying -> applied | failed | conflict, or ends
rejected or cancelled. State changes are conditional ``.update()`` calls whose row count is
checked (see ``offsets.edits``), never read-modify-save, so two people acting at once
cannot both win.
"""

from dataclasses import dataclass

from django.conf import settings
from django.db import models
from django.db.models import Count, Q
from django.utils import timezone

from offsets.models.cluster import Cluster


@dataclass(frozen=True)
class ChangeCounts:
    """How many partitions a diff touches, by kind: the summary above one page of it."""

    total: int
    added: int
    deleted: int

    @property
    def changed(self) -> int:
        return self.total - self.added - self.deleted


class OffsetEdit(models.Model):
    """One connector's staged offset change, with the "before" values captured at staging."""

    class State(models.TextChoices):
        DRAFT = "draft"
        SUBMITTED = "submitted"
        APPROVED = "approved"
        APPLYING = "applying"
        APPLIED = "applied"
        FAILED = "failed"
        CONFLICT = "conflict"
        REJECTED = "rejected"
        CANCELLED = "cancelled"

    class ConnectorType(models.TextChoices):
        SOURCE = "source"
        SINK = "sink"

    class Strategy(models.TextChoices):
        # Source connectors.
        SET = "set", "Set an existing partition's offset"
        ADD = "add", "Add a partition"
        DELETE = "delete", "Delete a partition (tombstone)"
        RESTORE = "restore", "Restore every partition as of a time"
        # Sink connectors.
        EARLIEST = "earliest", "To earliest"
        LATEST = "latest", "To latest"
        OFFSET = "offset", "To an offset"
        SHIFT = "shift", "Shift by N"
        DATETIME = "datetime", "To a date-time"
        DURATION = "duration", "Back by a duration"
        COPY_GROUP = "copy-group", "Copy from another consumer group"
        DELETE_OFFSETS = "delete-offsets", "Delete committed offsets"
        # A sink whose offsets live outside Connect's group (SinkOffsetsStore).
        STORE_OFFSET = "store-offset", "Set offsets in the sink's own store"
        # Both.
        IMPORT = "import", "Imported document"
        # The connector itself: created on another cluster with these offsets (KIP-980),
        # deleted with every offset it has, or offsets left behind by a deleted connector.
        MOVE = "move", "Move to another cluster"
        REMOVE = "remove", "Delete the connector with its offsets"
        CLEANUP = "cleanup", "Clean up offsets that outlived their connector"
        # A stopped standalone worker's source offsets, written to its offsets file.
        OFFLINE_FILE = "offline-file", "Written to a stopped standalone worker's offsets file"

    class AppliedVia(models.TextChoices):
        WORKER = "worker", "Connect's REST API (KIP-875)"
        TOPIC = "topic", "Direct write to the offsets topic or group"
        FILE = "file", "A stopped standalone worker's offsets file, replaced"

    OPEN_STATES = (State.DRAFT, State.SUBMITTED, State.APPROVED)
    FINAL_STATES = (State.APPLIED, State.FAILED, State.CONFLICT, State.REJECTED, State.CANCELLED)

    cluster = models.ForeignKey(Cluster, on_delete=models.PROTECT, related_name="offset_edits")
    connector = models.CharField(max_length=249)
    connector_type = models.CharField(max_length=6, choices=ConnectorType.choices)
    strategy = models.CharField(max_length=20, choices=Strategy.choices)
    # The strategy's inputs as given (for display and for staging the same edit again).
    parameters = models.JSONField(default=dict, blank=True)
    state = models.CharField(max_length=10, choices=State.choices, default=State.DRAFT)
    comment = models.TextField(blank=True, help_text="Why the offsets change (the staging note).")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="offset_edits"
    )
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="approved_offset_edits",
    )
    applied_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="applied_offset_edits",
    )
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    approved_at = models.DateTimeField(null=True, blank=True)
    apply_started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Where the edit writes. Source: the primary offsets topic (the connector's own topic when
    # it has one) and the worker's topic it is mirrored to (blank without an own topic).
    # Sink: the consumer group.
    primary_topic = models.CharField(max_length=249, blank=True)
    mirror_topic = models.CharField(max_length=249, blank=True)
    group_id = models.TextField(blank=True)  # as long as a group id may be
    warnings = models.JSONField(default=list, blank=True)
    # A sink edit that deletes some of a group's partitions deletes the whole group, then
    # commits back every other partition (and the edit's own new values). Those offsets,
    # [[topic, partition, offset], ...], are stored and committed here BEFORE the delete, so
    # a crash between the two steps still leaves the database knowing what the group must
    # hold: reconciliation compares the whole group with it and lists what to restore.
    # None: the edit never reached that step (or is not such an edit).
    sink_keep = models.JSONField(null=True, blank=True)
    # The last lock check: [{"name": ..., "passed": bool, "message": ...}, ...].
    lock_checks = models.JSONField(default=list, blank=True)
    error = models.TextField(blank=True)
    # How the offsets were written: through the worker's REST API or straight to Kafka.
    applied_via = models.CharField(max_length=6, choices=AppliedVia.choices, blank=True)
    # A move: the cluster the connector goes to, and the config it is created with there
    # (secrets as the user supplied them again; shown masked like every config).
    target_cluster = models.ForeignKey(
        Cluster,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="incoming_moves",
    )
    connector_config = models.JSONField(null=True, blank=True)
    # The conflicted edit this one was staged again from, with the same inputs ("Re-stage").
    restaged_from = models.ForeignKey(
        "self", on_delete=models.PROTECT, null=True, blank=True, related_name="restaged_as"
    )

    class Meta:
        ordering = ["-created", "-id"]
        permissions = [
            ("stage_offsetedit", "Can stage offset edits (and import offsets documents)"),
            ("approve_offsetedit", "Can approve, reject and apply other people's offset edits"),
        ]
        constraints = [
            # The database's own guard behind the conditional-update claim: whatever happens
            # in the application, one connector never has two edits being applied at once.
            models.UniqueConstraint(
                fields=["cluster", "connector"],
                condition=Q(state="applying"),
                name="one_applying_edit_per_connector",
            )
        ]
        indexes = [models.Index(fields=["cluster", "connector", "state"])]

    def __str__(self) -> str:
        return f"Edit #{self.pk} of {self.connector} ({self.state})"

    @property
    def is_source(self) -> bool:
        return self.connector_type == self.ConnectorType.SOURCE

    @property
    def is_move(self) -> bool:
        return self.strategy == self.Strategy.MOVE

    @property
    def is_removal(self) -> bool:
        """A delete of the connector with its offsets, or a clean-up of offsets it left."""
        return self.strategy in (self.Strategy.REMOVE, self.Strategy.CLEANUP)

    @property
    def is_open(self) -> bool:
        return self.state in self.OPEN_STATES

    def change_counts(self) -> ChangeCounts:
        """Count the touched partitions in the database, without loading them."""
        return ChangeCounts(
            **self.changes.aggregate(
                total=Count("pk"),
                added=Count("pk", filter=Q(is_new=True)),
                deleted=Count("pk", filter=Q(is_delete=True)),
            )
        )


class OffsetEditChange(models.Model):
    """One partition an edit touches: its value before (captured at staging) and after."""

    edit = models.ForeignKey(OffsetEdit, on_delete=models.CASCADE, related_name="changes")
    position = models.PositiveIntegerField()
    # The logical partition: a source partition map, or {"kafka_topic", "kafka_partition"}.
    partition = models.JSONField()
    # Source: the exact key bytes written (read from the topic, or serialized like Jackson for
    # a new partition). The runtime matches keys byte for byte, so these are never rebuilt.
    key_bytes = models.BinaryField(null=True, blank=True)
    # Sink: the topic-partition whose committed offset changes. Source: blank (the edit's
    # primary topic, mirrored), or the one offsets topic this change's tombstone goes to
    # (a delete or clean-up reaches every offsets topic that holds the connector).
    topic = models.CharField(max_length=249, blank=True)
    kafka_partition = models.IntegerField(null=True, blank=True)
    # Offsets as maps ({"kafka_offset": n} for sinks); None = no offset (absent or deleted).
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    # Source: the exact value bytes, so "nothing moved" compares bytes, not parsed JSON.
    before_bytes = models.BinaryField(null=True, blank=True)
    after_bytes = models.BinaryField(null=True, blank=True)
    is_delete = models.BooleanField(default=False)
    is_new = models.BooleanField(default=False)
    warnings = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["edit", "position"]
        constraints = [
            models.UniqueConstraint(fields=["edit", "position"], name="one_change_per_position")
        ]

    def __str__(self) -> str:
        return f"{self.edit_id}:{self.position} {self.partition}"

    @property
    def key_text(self) -> str:
        """Return the key bytes as text, undecodable bytes escaped."""
        if self.key_bytes is None:
            return ""
        return bytes(self.key_bytes).decode("utf-8", "backslashreplace")

    @property
    def after_text(self) -> str:
        if self.after_bytes is None:
            return ""
        return bytes(self.after_bytes).decode("utf-8", "backslashreplace")


class AuditEventQuerySet(models.QuerySet):
    # Bulk paths bypass Model.save/delete; close them too so the log stays append-only.
    def update(self, **kwargs):
        raise AuditLogIsAppendOnly("Audit events cannot be changed.")

    def delete(self):
        raise AuditLogIsAppendOnly("Audit events cannot be deleted.")


class AuditLogIsAppendOnly(Exception):
    pass


class AuditEvent(models.Model):
    """One step in the life of an offset edit. Append-only: never updated, never deleted."""

    class Action(models.TextChoices):
        STAGED = "staged"
        IMPORTED = "imported"
        SUBMITTED = "submitted"
        APPROVED = "approved"
        REJECTED = "rejected"
        CANCELLED = "cancelled"
        APPLY_STARTED = "apply-started"
        APPLY_REFUSED = "apply-refused"
        APPLIED = "applied"
        FAILED = "failed"
        CONFLICT = "conflict"
        IN_DOUBT = "in-doubt"
        RECONCILED = "reconciled"
        # A conflicted edit was staged again with the same inputs (details name the new one).
        RESTAGED = "restaged"
        # A connector's state changed through the Connect REST API (with the edit whose page
        # asked, if any).
        STOPPED = "stopped"
        PAUSED = "paused"
        RESUMED = "resumed"
        RESTARTED = "restarted"
        TASK_RESTARTED = "task-restarted"
        CONTROL_FAILED = "control-failed"

    cluster = models.ForeignKey(Cluster, on_delete=models.PROTECT, related_name="audit_events")
    connector = models.CharField(max_length=249)
    edit = models.ForeignKey(
        OffsetEdit, on_delete=models.PROTECT, null=True, blank=True, related_name="audit_events"
    )
    action = models.CharField(max_length=14, choices=Action.choices)
    # None for the system (e.g. reconcile_edits without --user). PROTECT, not SET_NULL: a
    # deletion would rewrite these rows; deactivate users instead. The name is kept as text
    # so the log reads the same after a rename.
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True
    )
    actor_name = models.CharField(max_length=150)
    # The identity provider's subject of an actor who logged in through single sign-on: the
    # person, whatever their user name at the time.
    actor_subject = models.CharField(max_length=255, blank=True)
    at = models.DateTimeField(default=timezone.now, db_index=True)
    comment = models.TextField(blank=True)
    # Partition values before/after, lock check results, errors: whatever the step produced.
    details = models.JSONField(default=dict, blank=True)

    objects = AuditEventQuerySet.as_manager()

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["cluster", "connector", "-at"])]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.actor_name} {self.action} {self.connector}"

    def save(self, *args, **kwargs) -> None:
        if not self._state.adding:
            raise AuditLogIsAppendOnly("Audit events cannot be changed.")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise AuditLogIsAppendOnly("Audit events cannot be deleted.")
