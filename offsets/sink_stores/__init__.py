"""Where sinks keep their offsets: one module per store, each with `read(store)`, and the
registry that picks a sink's store from its SinkOffsetsStore row.

Adding a store: a module here with `read(StoreSetting) -> StoreOffsets` (and `write` if the
dashboard may edit it), its kind in SinkOffsetsStore.Kind and in `READERS` below, and its
words in `StoreSetting.where` (docs/refresh.md, "Sinks whose offsets live outside Connect").
"""

from collections.abc import Callable

from offsets.models import Cluster, SinkOffsetsStore
from offsets.sink_stores import connect_group, plugin_file, remote_group
from offsets.sink_stores.base import (
    CONNECT_GROUP,
    PLUGIN_FILE,
    REMOTE_GROUP,
    StoreOffsets,
    StoreSetting,
    StoreUnreadable,
)

READERS: dict[str, Callable[[StoreSetting], StoreOffsets]] = {
    CONNECT_GROUP: connect_group.read,
    REMOTE_GROUP: remote_group.read,
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
    "setting_of",
    "store_of",
    "stores_of",
]
