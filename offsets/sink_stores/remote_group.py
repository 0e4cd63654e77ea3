"""A consumer group on another registered cluster: where KIP-656's MirrorSinkTask commits,
through a transactional producer, the offsets of what it wrote to its target cluster.

Read and written like any group, on that cluster: `connect_group` with another cluster's
settings. Only committed transactions count (the broker returns no pending offsets).
"""

from offsets.sink_stores import connect_group
from offsets.sink_stores.base import StoreOffsets, StoreSetting


def read(store: StoreSetting) -> StoreOffsets:
    """The group's committed offsets on its cluster ({} before its first commit)."""
    return connect_group.read(store)
