"""The save of SourceOffset rows from the rows the refresh read at its start."""

import pytest
from django.db import transaction

from offsets.models import Cluster, SourceOffset
from offsets.refresh.inputs import previous_state
from offsets.refresh.store import mark_unstorable, save_source_offsets, stored_source_offsets

# The spark tier, though no test here starts a session: the save that ends a Spark refresh.
pytestmark = [pytest.mark.django_db, pytest.mark.spark]


def result_row(name: str, position: int, *, commits: int) -> dict:
    """One row of the merge's `latest` result for the key of file `name`."""
    key = b'["file-source",{"filename":"%s"}]' % name.encode()
    return {
        "topic": "connect-offsets",
        "key_hash": f"hash-{name}",
        "key": key,
        "connector": "file-source",
        "identity": f'{{"filename":"{name}"}}',
        "partition_json": f'{{"filename":"{name}"}}',
        "offset_json": f'{{"position":{position}}}',
        "kafka_partition": 0,
        "kafka_offset": position,
        "progress": float(position),
        "first_commit_ms": 1_790_000_000_000,
        "last_commit_ms": 1_790_000_000_000 + position,
        "commits": commits,
        "stalled": False,
        "effective": True,
    }


def stored_offsets(cluster: Cluster) -> dict[str, tuple]:
    return {
        key_hash: (offset, kafka_offset, commits)
        for key_hash, offset, kafka_offset, commits in SourceOffset.objects.filter(
            cluster=cluster
        ).values_list("key_hash", "offset", "kafka_offset", "commits")
    }


def test_the_previous_state_reads_the_rows_the_save_compares_with():
    cluster = Cluster.objects.create(name="prod", bootstrap_servers="localhost:9092")
    save_source_offsets(cluster, [result_row("a", 10, commits=1), result_row("b", 5, commits=2)])
    assert previous_state(cluster)[1] == stored_source_offsets(cluster)


def test_a_save_retried_from_the_rows_read_at_the_start_gives_the_same_rows():
    cluster = Cluster.objects.create(name="prod", bootstrap_servers="localhost:9092")
    save_source_offsets(cluster, [result_row("a", 10, commits=1), result_row("b", 5, commits=2)])
    stored = stored_source_offsets(cluster)
    before = dict(stored)
    # Key a moves on, b is gone, c is new.
    latest = [result_row("a", 20, commits=2), result_row("c", 7, commits=1)]

    # The first try fails inside its transaction (as a busy database makes it) and is rolled
    # back; the retry starts from the same stored rows.
    with pytest.raises(RuntimeError), transaction.atomic():
        save_source_offsets(cluster, latest, stored)
        raise RuntimeError("database is locked")
    assert stored == before
    save_source_offsets(cluster, latest, stored)

    assert stored_offsets(cluster) == {
        "hash-a": ({"position": 20}, 20, 2),
        "hash-c": ({"position": 7}, 7, 1),
    }


def test_a_newer_unstorable_write_marks_the_stored_offset_until_a_newer_one_is_kept():
    cluster = Cluster.objects.create(name="prod", bootstrap_servers="localhost:9092")
    save_source_offsets(cluster, [result_row("a", 10, commits=1), result_row("b", 5, commits=1)])
    newer = [
        {"topic": "connect-offsets", "key_hash": "hash-a", "kafka_offset": 11},
        {"topic": "connect-offsets", "key_hash": "hash-b", "kafka_offset": 4},  # older: no mark
    ]
    mark_unstorable(cluster, newer, full=False)
    assert marks(cluster) == {"hash-a": 11, "hash-b": None}

    # An incremental refresh that read nothing of a keeps its mark; a newer kept write clears it.
    save_source_offsets(cluster, [result_row("a", 10, commits=1), result_row("b", 5, commits=1)])
    mark_unstorable(cluster, [], full=False)
    assert marks(cluster) == {"hash-a": 11, "hash-b": None}
    save_source_offsets(cluster, [result_row("a", 12, commits=2), result_row("b", 5, commits=1)])
    mark_unstorable(cluster, [], full=False)
    assert marks(cluster) == {"hash-a": None, "hash-b": None}

    # A full refresh finds every mark anew.
    mark_unstorable(cluster, [{**newer[0], "kafka_offset": 13}], full=True)
    mark_unstorable(cluster, [], full=True)
    assert marks(cluster) == {"hash-a": None, "hash-b": None}


def marks(cluster: Cluster) -> dict[str, int | None]:
    return dict(
        SourceOffset.objects.filter(cluster=cluster).values_list(
            "key_hash", "newer_unstorable_offset"
        )
    )
