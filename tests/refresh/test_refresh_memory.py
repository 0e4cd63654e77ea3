"""A live loop's round from its memory of the last save stores what a round reading the
database stores, and the memory is dropped once another save came (offsets.refresh.memory).

On the session's scratch broker (`fresh_kafka`): the test writes new commits to it.
"""

import time

import pytest

from devkit.demo import DemoOptions, build_demo
from devkit.demo_writer import write_demo
from offsets.formats import jackson
from offsets.models import Cluster, ConnectorSnapshot, RefreshRun, SourceOffset
from offsets.refresh import inputs, memory
from offsets.refresh.run import run_refresh
from tests.refresh.test_refresh import comparable, produce

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

HOUR_MS = 3_600_000


@pytest.fixture
def twins(db, fresh_kafka, history_dir, settings):
    """Two clusters over the same topics: one refreshes from its memory, one from the database."""
    demo = build_demo(
        DemoOptions(end_ms=int(time.time() * 1000) // 60_000 * 60_000, hours=3, seed=5)
    )
    write_demo({"bootstrap.servers": fresh_kafka}, demo)
    # Keys stall two hours after their last commit: the rounds below, hours apart, see
    # untouched keys' stall flags flip.
    flush_ms = 2 * HOUR_MS // settings.STALL_AFTER_FLUSH_INTERVALS
    return tuple(
        Cluster.objects.create(
            name=name, bootstrap_servers=fresh_kafka, offset_flush_interval_ms=flush_ms
        )
        for name in ("remembers", "reads")
    )


def snapshots(cluster):
    return sorted(
        ConnectorSnapshot.objects.filter(cluster=cluster).values_list(
            "name", "partitions", "last_commit_at", "rewinds", "stalled_partitions", "fingerprint"
        )
    )


def both_rounds(twins, spark, monkeypatch, now_ms, *, from_memory=True):
    """A round of each twin at the same time: the first from its memory (the database's
    stored rows are not read), the second with its memory dropped."""
    remembers, reads = twins
    if from_memory:
        assert memory.recall(remembers) is not None

        def unread(cluster):
            raise AssertionError("read the stored rows back despite the memory")

        monkeypatch.setattr(inputs, "previous_rows", unread)
    run = run_refresh(cluster=remembers, spark=spark, now_ms=now_ms)
    monkeypatch.undo()
    assert run.status == RefreshRun.Status.SUCCEEDED, run.error
    memory.forget(reads)
    run = run_refresh(cluster=reads, spark=spark, now_ms=now_ms)
    assert run.status == RefreshRun.Status.SUCCEEDED, run.error
    assert comparable(remembers) == comparable(reads)
    assert snapshots(remembers) == snapshots(reads)


def test_rounds_from_memory_store_what_rounds_from_the_database_store(twins, spark, monkeypatch):
    remembers, _ = twins
    now_ms = int(time.time() * 1000)
    # The first rounds create every row, so they remember nothing (new rows' ids are unknown).
    both_rounds(twins, spark, monkeypatch, now_ms, from_memory=False)
    assert memory.recall(remembers) is None
    # Nothing new; from here the rounds of `remembers` start from what it saved.
    both_rounds(twins, spark, monkeypatch, now_ms + 1_000, from_memory=False)
    orders, logs, other = SourceOffset.objects.filter(
        cluster=remembers, topic=remembers.offsets_topic, offset__isnull=False
    ).order_by("connector", "key_hash")[:3]
    produce(
        remembers,
        remembers.offsets_topic,
        [
            (bytes(orders.key_bytes), jackson.dumps({**orders.offset, "moved": 1})),
            (bytes(logs.key_bytes), None),  # deleted
        ],
    )
    # An hour later: untouched keys' stall flags flip as their last commits age.
    both_rounds(twins, spark, monkeypatch, now_ms + HOUR_MS)
    stalled = SourceOffset.objects.filter(cluster=remembers, stalled=True).count()
    both_rounds(twins, spark, monkeypatch, now_ms + 3 * HOUR_MS)
    assert SourceOffset.objects.filter(cluster=remembers, stalled=True).count() > stalled
    # A new key: that round's save creates a row, so the next round reads the rows back.
    new_key = jackson.dumps_key(other.connector, {"new": "partition"})
    produce(remembers, remembers.offsets_topic, [(new_key, jackson.dumps({"position": 1}))])
    both_rounds(twins, spark, monkeypatch, now_ms + 4 * HOUR_MS)
    assert memory.recall(remembers) is None
    both_rounds(twins, spark, monkeypatch, now_ms + 5 * HOUR_MS, from_memory=False)
    assert memory.recall(remembers) is not None


def test_a_save_by_another_refresh_drops_the_memory(twins, spark):
    remembers, _ = twins
    now_ms = int(time.time() * 1000)
    for seconds in (0, 1):
        run_refresh(cluster=remembers, spark=spark, now_ms=now_ms + seconds * 1000)
    remembered = memory.recall(remembers)
    assert remembered is not None
    assert remembered.token == Cluster.objects.get(pk=remembers.pk).results_token
    # Every save writes a new token in its transaction: another process's save shows so.
    Cluster.objects.filter(pk=remembers.pk).update(results_token="another save")
    assert memory.recall(remembers) is None
    assert memory.recall(remembers) is None  # and it stays dropped
