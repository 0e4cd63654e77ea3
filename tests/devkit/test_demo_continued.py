"""After its simulated window the demo goes on committing, as a running cluster would."""

import itertools

from devkit.demo import (
    DemoOptions,
    connector_specs,
    continued_offset_records,
    continued_sink_flushes,
)
from devkit.demo.source_offsets import offset_records
from offsets.formats import jackson

OPTIONS = DemoOptions(end_ms=1_700_000_000_000, hours=1, seed=3)


def connector_of(key: bytes) -> str:
    return jackson.loads(key)[0]


def test_the_flushes_after_the_window_follow_it_one_interval_apart():
    ticks = [tick for tick, _ in itertools.islice(continued_offset_records(OPTIONS), 5)]
    assert ticks == list(range(OPTIONS.ticks, OPTIONS.ticks + 5))
    for tick, records in itertools.islice(continued_offset_records(OPTIONS), 5):
        assert records
        assert all(
            OPTIONS.end_ms < record.timestamp_ms <= OPTIONS.tick_ms(tick) + 3 for record in records
        )


def test_only_the_running_connectors_go_on_committing():
    running = {s.name for s in connector_specs(OPTIONS) if s.runtime_state == "RUNNING"}
    later = [
        record
        for _, records in itertools.islice(continued_offset_records(OPTIONS), 30)
        for record in records
    ]
    assert {connector_of(record.key) for record in later} <= running
    assert "jdbc-source-inventory" in running
    # The stalled table stays stalled.
    tables = {
        jackson.loads(record.key)[1].get("table")
        for record in later
        if connector_of(record.key) == "jdbc-source-inventory"
    }
    assert "inventory.public.shipments" not in tables and "inventory.public.orders" in tables


def test_offsets_go_on_from_where_the_window_left_them():
    key = jackson.dumps_key("file-source-app-logs", {"filename": "/var/log/app/events.log"})
    last = [r for r in offset_records(OPTIONS) if r.key == key][-1]
    later = next(
        r for _, records in continued_offset_records(OPTIONS) for r in records if r.key == key
    )
    assert jackson.loads(later.value)["position"] > jackson.loads(last.value)["position"]


def test_the_sinks_get_new_records_and_their_groups_commit_forward():
    flushes = list(itertools.islice(continued_sink_flushes(OPTIONS), 60))
    assert [f.tick for f in flushes[:2]] == [OPTIONS.ticks, OPTIONS.ticks + 1]
    assert sum(len(stamps) for f in flushes for stamps in f.records.values()) > 0
    assert set(flushes[0].group_offsets) == {"connect-s3-sink-orders", "search-indexer-clicks"}
    for group in flushes[0].group_offsets:
        for tp in flushes[0].group_offsets[group]:
            committed = [f.group_offsets[group][tp] for f in flushes]
            assert committed == sorted(committed)  # never backwards (no false rewind)
    ends = {tp: f.first_index[tp] + len(f.records[tp]) for f in flushes[-1:] for tp in f.records}
    last = flushes[-1].group_offsets
    # The S3 sink stays close behind; clicks partition 2 stays two hours behind.
    assert all(ends[tp] - offset <= 10 for tp, offset in last["connect-s3-sink-orders"].items())
    assert ends[("clicks", 2)] - last["search-indexer-clicks"][("clicks", 2)] > 100
