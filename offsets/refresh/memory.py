"""A live loop's memory of the results it saved, so that its next round starts from them.

A round of `refresh_offsets --every 1` at fleet size touches a few dozen of the thousands of
stored keys. Reading every stored key back, judging every untouched key again and comparing
every one with the database cost each round what exists rather than what changed. What one
round saved is what the next starts from, as long as no other save came between them: every
save writes a new `Cluster.results_token` in its transaction, and a memory is used only while
the database still holds the token of the save it remembers. Any other save (another process,
a button press, a full refresh elsewhere) changes the token, and the next round reads the
stored results back as it would without a memory. Only a refresh's save writes the stored
offsets, so no other writer can change them behind the token.

One memory per cluster and process (`refresh_offsets` and the scheduler refresh a cluster
from one thread at a time; the lock only keeps the dictionary whole).
"""

import threading
from dataclasses import dataclass

from offsets.models import Cluster
from offsets.refresh.results import StoredRows

# (topic, key_hash): a stored key.
Slot = tuple[str, str]


@dataclass(frozen=True)
class Remembered:
    """What a save stored, as the next round's merge and save use it."""

    token: str  # the Cluster.results_token the save wrote
    stored: StoredRows  # the SourceOffset rows as saved, with their primary keys
    latest: dict[Slot, dict]  # the merge's latest row of every stored key
    drift: list[dict]  # the merge's key drift rows
    own_topics: dict[str, str]  # the connectors' own offsets topics the merge judged with
    worker_topic: str


_MEMORIES: dict[int, Remembered] = {}
_LOCK = threading.Lock()


def recall(cluster: Cluster) -> Remembered | None:
    """What this process last saved of the cluster, if nothing was saved after it."""
    with _LOCK:
        remembered = _MEMORIES.get(cluster.pk)
    if remembered is None:
        return None
    token = Cluster.objects.filter(pk=cluster.pk).values_list("results_token", flat=True).first()
    if token != remembered.token:
        forget(cluster)
        return None
    return remembered


def remember(cluster: Cluster, remembered: Remembered) -> None:
    """Keep what a save stored, in place of what an earlier one did."""
    with _LOCK:
        _MEMORIES[cluster.pk] = remembered


def forget(cluster: Cluster) -> None:
    """Drop what was kept (a save that could not say all it stored, a token gone)."""
    with _LOCK:
        _MEMORIES.pop(cluster.pk, None)
