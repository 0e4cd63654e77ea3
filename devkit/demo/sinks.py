"""The demo's sinks: data topics with real records and the groups' committed offsets."""

import itertools
import random
from collections.abc import Iterator
from dataclasses import dataclass

from devkit.demo.options import DataTopic, DemoOptions, failure_ms

DATA_TOPICS = {"orders": 6, "payments": 3, "clicks": 4, "app-logs": 2, "audit-events": 2}


def data_topics(options: DemoOptions) -> list[DataTopic]:
    rng = random.Random(f"{options.seed}:data")
    topics = []
    span = options.end_ms - options.start_ms
    for name, partitions in DATA_TOPICS.items():
        per_partition = []
        for _ in range(partitions):
            count = max(
                5, int(options.data_records_per_hour * options.hours * rng.uniform(0.6, 1.4))
            )
            stamps = sorted(options.start_ms + rng.randrange(span) for _ in range(count))
            per_partition.append(tuple(stamps))
        topics.append(DataTopic(name, partitions, tuple(per_partition)))
    return topics


def _committed_at(timestamps: tuple[int, ...], at_ms: int) -> int:
    """The committed offset of a sink that had consumed everything written before `at_ms`."""
    return sum(1 for stamp in timestamps if stamp < at_ms)


def group_offsets(
    options: DemoOptions, data: list[DataTopic]
) -> dict[str, dict[tuple[str, int], int]]:
    by_name = {topic.name: topic for topic in data}
    rng = random.Random(f"{options.seed}:groups")
    groups: dict[str, dict[tuple[str, int], int]] = {}

    s3: dict[tuple[str, int], int] = {}
    for topic in ("orders", "payments"):
        for partition, stamps in enumerate(by_name[topic].timestamps):
            # Healthy: a flush interval or two behind the end of the log.
            s3[(topic, partition)] = _committed_at(
                stamps, options.end_ms - rng.randint(1, 3) * options.flush_interval_ms
            )
    groups["connect-s3-sink-orders"] = s3

    clicks: dict[tuple[str, int], int] = {}
    for partition, stamps in enumerate(by_name["clicks"].timestamps):
        behind_ms = 2 * 3_600_000 if partition == 2 else options.flush_interval_ms
        clicks[(("clicks"), partition)] = _committed_at(
            stamps, options.end_ms - min(behind_ms, options.end_ms - options.start_ms - 1)
        )
    groups["search-indexer-clicks"] = clicks

    audit: dict[tuple[str, int], int] = {}
    for partition, stamps in enumerate(by_name["audit-events"].timestamps):
        audit[("audit-events", partition)] = _committed_at(stamps, failure_ms(options))
    groups["connect-jdbc-sink-audit"] = audit
    # bq-sink-events keeps its offsets in its destination: its group never commits.
    return groups


@dataclass(frozen=True)
class SinkFlush:
    """One flush after the simulated window: the sinks' new data records (their timestamps
    per topic-partition, from `first_index` on) and the groups' committed offsets."""

    tick: int
    records: dict[tuple[str, int], list[int]]
    first_index: dict[tuple[str, int], int]
    group_offsets: dict[str, dict[tuple[str, int], int]]


def continued_sink_flushes(options: DemoOptions) -> Iterator[SinkFlush]:
    """Yield every flush after the simulated window, without end: new records arrive on the
    data topics at the seeded pace; the S3 sink stays a flush behind, the search indexer
    keeps up except on the partition two hours behind; the failed sink and the one that
    manages its own offsets commit nothing."""
    stamps = {
        (topic.name, partition): list(timestamps)
        for topic in data_topics(options)
        for partition, timestamps in enumerate(topic.timestamps)
    }
    rng = random.Random(f"{options.seed}:sinks-later")
    per_flush = options.data_records_per_hour * options.flush_interval_ms / 3_600_000
    flush = options.flush_interval_ms
    for tick in itertools.count(options.ticks):
        t_ms = options.tick_ms(tick)
        records, first_index = {}, {}
        for tp, timestamps in stamps.items():
            count = int(per_flush) + (rng.random() < per_flush % 1)
            first_index[tp] = len(timestamps)
            records[tp] = sorted(t_ms - rng.randrange(flush) for _ in range(count))
            timestamps.extend(records[tp])
        groups = {
            "connect-s3-sink-orders": {
                tp: _committed_at(timestamps, t_ms - flush)
                for tp, timestamps in stamps.items()
                if tp[0] in ("orders", "payments")
            },
            "search-indexer-clicks": {
                tp: _committed_at(timestamps, t_ms - (2 * 3_600_000 if tp[1] == 2 else flush))
                for tp, timestamps in stamps.items()
                if tp[0] == "clicks"
            },
        }
        yield SinkFlush(tick, records, first_index, groups)
