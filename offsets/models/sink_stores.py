"""Where a sink keeps its offsets, when an admin says it is not Connect's consumer group."""

from django.core.exceptions import ValidationError
from django.db import models

from offsets.models.cluster import Cluster


class SinkOffsetsStore(models.Model):
    """The store of one sink's offsets: Connect's group (the default), a consumer group on
    another registered cluster (KIP-656's MirrorSinkTask commits there), or the project's
    own plugin's properties file.

    A sink with no row reads Connect's group; one whose class is known to keep its offsets
    elsewhere (EXTERNAL_OFFSETS_SINK_CLASSES) is "managed outside Connect" until a row
    says where. The connector page suggests a row; nothing is stored until an admin saves it.
    """

    class Kind(models.TextChoices):
        CONNECT_GROUP = "connect_group", "Connect's consumer group"
        REMOTE_GROUP = "remote_group", "A consumer group on another registered cluster"
        PLUGIN_FILE = "plugin_file", "The project's plugin's offsets file"

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="sink_stores")
    connector = models.CharField(max_length=255, help_text="The sink connector's name.")
    kind = models.CharField(max_length=20, choices=Kind.choices, default=Kind.CONNECT_GROUP)
    group_id = models.CharField(
        max_length=255,
        blank=True,
        help_text="A consumer group on another cluster: its id (e.g. the sink's target group).",
    )
    group_cluster = models.ForeignKey(
        Cluster,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="hosted_sink_stores",
        help_text="A consumer group on another cluster: the registered cluster it lives on.",
    )
    offsets_file = models.CharField(
        max_length=1000,
        blank=True,
        help_text="The plugin's offsets file (its offsets.file), as this dashboard reaches it.",
    )

    class Meta:
        ordering = ["cluster__name", "connector"]
        constraints = [
            models.UniqueConstraint(fields=["cluster", "connector"], name="one_store_per_sink")
        ]

    def __str__(self) -> str:
        return f"{self.cluster}: {self.connector} in {self.get_kind_display()}"

    def _known_as_a_source(self) -> bool:
        # A connector no refresh has seen yet may be set up ahead of it; one seen as a
        # source never reads this row, and a row for it would only mislead.
        from offsets.models.refresh import ConnectorSnapshot

        if self.cluster_id is None or not self.connector:
            return False
        return ConnectorSnapshot.objects.filter(
            cluster_id=self.cluster_id, name=self.connector, type="source"
        ).exists()

    def clean(self) -> None:
        """Each kind's own fields are given, and the other kinds' are empty."""
        errors = {}
        remote = self.kind == self.Kind.REMOTE_GROUP
        if remote and not self.group_id:
            errors["group_id"] = "Name the consumer group that holds the sink's offsets."
        if remote and self.group_cluster_id is None:
            errors["group_cluster"] = "Choose the registered cluster the group lives on."
        if not remote and (self.group_id or self.group_cluster_id is not None):
            errors["group_id"] = "A group and its cluster are for a group on another cluster."
        if self.kind == self.Kind.PLUGIN_FILE and not self.offsets_file:
            errors["offsets_file"] = "Give the path of the plugin's offsets file."
        if self.kind != self.Kind.PLUGIN_FILE and self.offsets_file:
            errors["offsets_file"] = "An offsets file is for the plugin's store."
        if self._known_as_a_source():
            errors["connector"] = (
                f"{self.connector!r} is a source connector on {self.cluster.name}: only a sink "
                "reads its offsets from a store."
            )
        if errors:
            raise ValidationError(errors)
