"""Offsets that outlived their connector, as the last refresh stored them (no Kafka read).

A source's offsets stay in every offsets topic after its connector is deleted, and a sink's
group keeps its committed offsets: a new connector of the same name would resume from them.
The refresh keeps every source key's latest value per topic (`SourceOffset`, tombstones as
a null offset) and, for a deleted sink whose config it still reads, how many partitions its
group has committed (`ConnectorSnapshot.partitions`).
"""

from dataclasses import dataclass, field

from django.db.models import Count

from offsets.models import Cluster, ConnectorSnapshot, SourceOffset


@dataclass
class Orphan:
    """One deleted connector's leftover offsets."""

    connector: str
    type: str
    # Source: live keys per offsets topic. Sink: its group and committed partitions.
    topics: dict[str, int] = field(default_factory=dict)
    group: str = ""
    partitions: int = 0

    @property
    def total(self) -> int:
        return sum(self.topics.values()) + self.partitions


def orphans(cluster: Cluster) -> list[Orphan]:
    """The cluster's connectors that have offsets but no connector, by name."""
    existing = set(
        ConnectorSnapshot.objects.filter(cluster=cluster, deleted=False).values_list(
            "name", flat=True
        )
    )
    found: dict[str, Orphan] = {}
    rows = (
        SourceOffset.objects.filter(cluster=cluster, offset_text__isnull=False)
        .values_list("connector", "topic")
        .annotate(keys=Count("id"))
        .order_by("connector", "topic")
    )
    for connector, topic, keys in rows:
        if connector not in existing:
            found.setdefault(connector, Orphan(connector, "source")).topics[topic] = keys
    sinks = ConnectorSnapshot.objects.filter(
        cluster=cluster, deleted=True, type="sink", partitions__gt=0
    ).values_list("name", "sink_group", "partitions")
    for name, group, partitions in sinks:
        found[name] = Orphan(name, "sink", group=group, partitions=partitions)
    return [found[name] for name in sorted(found)]
