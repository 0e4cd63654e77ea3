"""Connect's own store: the sink's consumer group on its Connect cluster (the default).

The refresh reads every such group of a cluster in one batch (`read_many`), since most sinks
are here.
"""

from django.conf import settings

from offsets.kafka import groups
from offsets.sink_stores.base import StoreOffsets, StoreSetting


def read(store: StoreSetting) -> StoreOffsets:
    """The group's committed offsets ({} before its first commit)."""
    return groups.committed_offsets(
        store.kafka, store.group_id, timeout=settings.KAFKA_READ_TIMEOUT
    )


def read_many(kafka: dict, group_ids: list[str]) -> dict[str, StoreOffsets]:
    """Several groups of one cluster, all asked for before any answer is awaited."""
    return groups.committed_offsets_of(kafka, group_ids)
