"""Where sinks keep their offsets, and the registry that picks a sink's store from its
SinkOffsetsStore row.

The consumer groups are read here: Connect's own group on the sink's cluster (the default),
and a group on another registered cluster, where KIP-656's MirrorSinkTask commits, through a
transactional producer, the offsets of what it wrote to its target cluster. Both are read
alike, each on its cluster; only committed transactions count (the broker returns no pending
offsets). Any other store is a module here (`plugin_file`, the project's ExternalOffsetsSink).

Adding a store: a module here with `read(StoreSetting) -> StoreOffsets` (and `write` if the
dashboard may edit it), its kind in SinkOffsetsStore.Kind and in `READERS` below, and its
words in `StoreSetting.where` (docs/refresh.md, "Sinks whose offsets live outside Connect").
"""

from collections.abc import Callable

from django.conf import settings

from offsets.kafka import groups
from offsets.models import Cluster, SinkOffsetsStore
from offsets.sink_stores import plugin_file
from offsets.sink_stores.base import (
    CONNECT_GROUP,
    PLUGIN_FILE,
    REMOTE_GROUP,
    StoreOffsets,
    StoreSetting,
    StoreUnreadable,
)


def read_group(store: StoreSetting) -> StoreOffsets:
    """A group's committed offsets on its cluster ({} before its first commit)."""
    return groups.committed_offsets(
        store.kafka, store.group_id, timeout=settings.KAFKA_READ_TIMEOUT
    )


def read_groups(kafka: dict, group_ids: list[str]) -> dict[str, StoreOffsets]:
    """Several groups of one cluster, all asked for before any answer is awaited: the refresh
    reads every Connect group of a cluster in one batch, since most sinks keep theirs there."""
    return groups.committed_offsets_of(kafka, group_ids)


READERS: dict[str, Callable[[StoreSetting], StoreOffsets]] = {
    CONNECT_GROUP: read_group,
    REMOTE_GROUP: read_group,
    PLUGIN_FILE: plugin_file.read,
}


def read(store: StoreSetting) -> StoreOffsets:
    """The sink's offsets in its store (raises StoreUnreadable, or Kafka's errors)."""
    return READERS[store.kind](store)


def setting_of(row: SinkOffsetsStore, *, sink_group: str = "") -> StoreSetting:
    """A row as the store modules read it; Connect's group needs the sink's `sink_group`."""
    if row.kind == SinkOffsetsStore.Kind.REMOTE_GROUP:
        hosting = row.group_cluster
        return StoreSetting(
            REMOTE_GROUP,
            group_id=row.group_id,
            cluster=hosting.name,
            kafka=hosting.kafka_settings(),
        )
    if row.kind == SinkOffsetsStore.Kind.PLUGIN_FILE:
        return StoreSetting(PLUGIN_FILE, path=row.offsets_file)
    return StoreSetting(
        CONNECT_GROUP,
        group_id=sink_group,
        cluster=row.cluster.name,
        kafka=row.cluster.kafka_settings(),
    )


def stores_of(cluster: Cluster) -> dict[str, SinkOffsetsStore]:
    """The cluster's sinks with a store set: {connector: row}."""
    rows = SinkOffsetsStore.objects.filter(cluster=cluster).select_related(
        "cluster", "group_cluster"
    )
    return {row.connector: row for row in rows}


def store_of(cluster: Cluster, connector: str) -> SinkOffsetsStore | None:
    """The sink's store row, or None when it keeps its offsets in Connect's group."""
    return stores_of(cluster).get(connector)


__all__ = [
    "CONNECT_GROUP",
    "PLUGIN_FILE",
    "READERS",
    "REMOTE_GROUP",
    "StoreOffsets",
    "StoreSetting",
    "StoreUnreadable",
    "read",
    "read_group",
    "read_groups",
    "setting_of",
    "store_of",
    "stores_of",
]
