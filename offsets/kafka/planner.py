"""Snapshot planning: fix where a read of several topics ends, keeping what it reads on the way."""

import time
from collections.abc import Collection
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaError, TopicPartition

from offsets import tuning
from offsets.kafka import admin, reading
from offsets.kafka.admin import TopicPartitionKey
from offsets.kafka.errors import KafkaUnavailable, TopicNotFound

# A record the planner kept: (partition, offset, timestamp ms, key, value).
KeptRecord = tuple[int, int, int, bytes | None, bytes | None]

Plans = dict[str, dict[int, tuple[int, int]]]  # {topic: {partition: (start, end)}}


@dataclass
class Snapshot:
    """What `plan_snapshot` fixed, and the records it read on the way."""

    plans: Plans
    # The whole planned ranges of some topics, as read by the planner: {topic: records in
    # offset order per partition}. Only topics whose every partition with new records it read
    # from the start (see `plan_snapshot`).
    records: dict[str, list[KeptRecord]]


def plan_read(
    settings: dict,
    topic: str,
    start_offsets: dict[int, int] | None = None,
    *,
    isolation_level: str = "read_committed",
    timeout: float = 30.0,
) -> dict[int, tuple[int, int]]:
    """Fix what a snapshot read of `topic` covers: {partition: (start, end)}, end exclusive.

    `start_offsets` are where a previous read stopped (missing partitions start at the log
    start). See `plan_snapshot`.
    """
    plans = plan_snapshot(
        settings, {topic: start_offsets}, isolation_level=isolation_level, timeout=timeout
    ).plans
    if topic not in plans:
        raise TopicNotFound(f"Topic {topic!r} does not exist on {settings['bootstrap.servers']}")
    return plans[topic]


def plan_snapshot(
    settings: dict,
    start_offsets: dict[str, dict[int, int] | None],
    *,
    read_on: Collection[str] = (),
    keep_records: int = 0,
    partition_counts: dict[str, int] | None = None,
    isolation_level: str = "read_committed",
    timeout: float = 30.0,
) -> Snapshot:
    """Fix what a snapshot read of several topics covers: {topic: {partition: (start, end)}}.

    `start_offsets` maps each topic to where a previous read stopped (missing partitions start
    at the log start); topics that do not exist are left out of the answer. Every partition's
    end is where a consumer reading it reports end-of-partition, all partitions in one
    consumer: a too-low high watermark (some Kafka-compatible brokers) would otherwise hide
    records, and with read_committed the end-of-partition is the last stable offset, past
    which a reader must not go anyway. A partition whose last delivered record reaches the
    high watermark its fetch reported ends there without waiting for end-of-partition, which
    costs a second fetch (`_end_at_high_watermarks`).

    Where that consumer starts, and which records it keeps with `keep_records`: `_Planner`.

    `partition_counts`: the topics' partition counts, when the caller described them already
    (`admin.describe_topics`); otherwise they are asked for.
    """
    counts = (
        partition_counts
        if partition_counts is not None
        else admin.topic_partition_counts(settings, list(start_offsets), timeout=timeout)
    )
    topics = [topic for topic in start_offsets if topic in counts]
    every = [(t, p) for t in topics for p in range(counts[t])]
    if not every:
        return Snapshot({topic: {} for topic in topics}, {})
    planner = _Planner(
        settings,
        every,
        known={(t, p): start for t in topics for p, start in (start_offsets[t] or {}).items()},
        read_on=read_on,
        keep_records=keep_records,
        isolation_level=isolation_level,
        timeout=timeout,
    )
    ends = planner.find_ends()
    plans: Plans = {topic: {} for topic in topics}
    for (topic, partition), end in sorted(ends.items()):
        plans[topic][partition] = (min(planner.starts[(topic, partition)], end), end)
    return Snapshot(plans, _kept_topics(plans, planner.kept or {}))


class _Planner:
    """One planning read: where each partition starts, and the consumer that finds the ends.

    Where that consumer starts:
    - a partition of a topic in `read_on` that has a previous position starts there. The
      caller vouches that the position lies within the log (the topic has the same topic ID
      as when it was read): past the end of a topic created again, some brokers answer neither
      records nor end-of-partition. This needs no ListOffsets request. A partition more than
      CATCH_UP_RECORDS behind its high watermark skips ahead to its last record, so a long
      pause between refreshes is not read twice;
    - any other partition starts at its last record (high watermark - 1), from one batched
      ListOffsets request for the log ends (plus one for the log starts of the partitions
      without a previous position; not one request per partition, which costs a round trip
      each). Never at the previous position: after the topic was recreated that may lie past
      the end. A previous position below the log start (retention, deleteRecords) is not
      asked about: the reader resumes at the earliest offset still there (`reader_consumer`),
      which only makes the planned record count too high.

    With `keep_records`, the planner also keeps the records it reads on through (at most that
    many in all), so that a small incremental read need not fetch them a second time: a
    topic's records are kept when every one of its partitions with new records was read on
    from its previous position and not skipped ahead. They are the records a read of the
    planned ranges gets (the same consumer settings and isolation level; records past a
    partition's end are dropped). Past `keep_records`, nothing is kept.
    """

    def __init__(
        self,
        settings: dict,
        every: list[TopicPartitionKey],
        *,
        known: dict[TopicPartitionKey, int],
        read_on: Collection[str],
        keep_records: int,
        isolation_level: str,
        timeout: float,
    ) -> None:
        self.settings = settings
        self.every = every
        self.isolation_level = isolation_level
        self.timeout = timeout
        self.reading_on = {tp: known[tp] for tp in every if tp in known and tp[0] in read_on}
        self.lows, self.highs = admin.log_bounds(
            settings,
            [tp for tp in every if tp not in known],
            [tp for tp in every if tp not in self.reading_on],
            isolation_level=isolation_level,
            timeout=timeout,
        )
        self.starts = {tp: known[tp] if tp in known else self.lows[tp] for tp in every}
        self.ends: dict[TopicPartitionKey, int] = {}
        self.kept: dict[TopicPartitionKey, list[KeptRecord]] | None = (
            {tp: [] for tp in self.reading_on} if keep_records > 0 else None
        )
        self.kept_count = 0
        self.keep_records = keep_records
        self.caught_up: set[TopicPartitionKey] = set()
        self.skipped: set[TopicPartitionKey] = set()
        # The last record each partition delivered, for ending it without end-of-partition.
        self.last_offsets: dict[TopicPartitionKey, int] = {}

    def find_ends(self) -> dict[TopicPartitionKey, int]:
        """Read every partition to its end, keeping the records read on through as
        `keep_records` allows; return {partition: end}."""
        # The planner fetches a refresh's new records, or one record per partition: a bulk
        # read's fetch tuning (a large fetch.min.bytes) would make every answer wait out the
        # cluster's fetch wait, and leave out some partitions' new records.
        self.consumer = reading.reader_consumer(
            tuning.short_read_settings(self.settings, wait_ms=tuning.PLANNER_WAIT_MS),
            "planner",
            isolation_level=self.isolation_level,
        )
        try:
            self.consumer.assign(
                [TopicPartition(*tp, self._first(tp)) for tp in sorted(self.every)]
            )
            deadline = time.monotonic() + self.timeout
            while len(self.ends) < len(self.every):
                if time.monotonic() > deadline:
                    missing = sorted(set(self.every) - set(self.ends))
                    raise KafkaUnavailable(f"Could not find the end of partitions {missing}")
                messages = self.consumer.consume(
                    num_messages=tuning.PLANNER_BATCH, timeout=tuning.POLL_SECONDS
                )
                for message in messages:
                    self._take(message)
                if len(messages) < tuning.PLANNER_BATCH:
                    _end_at_high_watermarks(self.consumer, self.last_offsets, self.ends)
        finally:
            self.consumer.close()
        return self.ends

    def _first(self, tp: TopicPartitionKey) -> int:
        """The offset a partition is read from: its vouched position, or its last record
        (high - 1), never a previous end that is not vouched for. An offset below the log
        start resumes at the log start."""
        if tp in self.reading_on:
            return self.reading_on[tp]
        return max(self.lows.get(tp, 0), self.highs[tp] - 1)

    def _take(self, message) -> None:
        """Note one message: a record read on through, or a partition's end."""
        tp = (message.topic(), message.partition())
        error = message.error()
        if error is not None:
            if error.code() != KafkaError._PARTITION_EOF:
                raise reading.read_failure(error, f"the end of {message.topic()}", message.topic())
            self.ends.setdefault(tp, message.offset())
            return
        if tp in self.reading_on and tp not in self.caught_up:
            self.caught_up.add(tp)
            if _skip_far_behind(self.consumer, tp, message.offset()):
                self.skipped.add(tp)
                if self.kept is not None:
                    self.kept.pop(tp, None)  # its records up to the end are not read
        if tp not in self.skipped:
            self.last_offsets[tp] = message.offset()
        if self.kept is not None and tp in self.kept and tp not in self.ends:
            self._keep(tp, message)

    def _keep(self, tp: TopicPartitionKey, message) -> None:
        """Keep a record for the read, or stop keeping any past `keep_records`."""
        assert self.kept is not None
        self.kept[tp].append(
            (
                message.partition(),
                message.offset(),
                message.timestamp()[1],
                message.key(),
                message.value(),
            )
        )
        self.kept_count += 1
        if self.kept_count > self.keep_records:
            self.kept = None  # too many to hold: the read fetches them again


def _skip_far_behind(consumer: Consumer, tp: TopicPartitionKey, offset: int) -> bool:
    """Seek a partition that the planner reads on through to its last record when its high
    watermark (known from the first fetch, no request) is more than CATCH_UP_RECORDS ahead;
    return whether it did.

    Records fetched before the seek still arrive and are ignored; only end-of-partition
    counts.
    """
    watermarks = consumer.get_watermark_offsets(TopicPartition(*tp), cached=True)
    if watermarks and watermarks[1] - offset > tuning.CATCH_UP_RECORDS:
        consumer.seek(TopicPartition(*tp, watermarks[1] - 1))
        return True
    return False


def _end_at_high_watermarks(
    consumer: Consumer,
    last_offsets: dict[TopicPartitionKey, int],
    ends: dict[TopicPartitionKey, int],
) -> None:
    """End each partition whose last delivered record reaches its high watermark, without
    waiting for end-of-partition; call it only when the consumer's queue was just drained.

    librdkafka reports end-of-partition in the handling of the fetch response after the one
    that brought the last records, and with nothing left to send the broker holds that fetch
    for its whole `fetch.wait.max.ms` (PLANNER_WAIT_MS, or a shorter one the cluster
    sets): a second round trip on every refresh that has new records. The high
    watermark of the response that brought them is known without a request (the cached
    watermark).

    Why this ends nowhere too early:
    - On Kafka the high watermark is exact. With read_committed, records are delivered only
      below the last stable offset, which is at most the high watermark, so a delivered
      record at high watermark - 1 means both are there. A partition whose last offsets are
      a transaction marker or an open transaction never qualifies and ends at
      end-of-partition.
    - Some Kafka-compatible brokers report the base offset of the last produce batch + 1. A
      record at or past it comes from that last batch, and librdkafka puts a fetched batch's
      records on the queue all at once (a partial batch not at all), so with the queue
      drained the whole batch was delivered and the last delivered record is the last one.
    - A watermark from an older response than the records only ends the partition at a
      point every record below which was delivered: an earlier, consistent end.
    """
    for tp, offset in last_offsets.items():
        if tp in ends:
            continue
        _, high = consumer.get_watermark_offsets(TopicPartition(*tp), cached=True)
        if high >= 0 and offset + 1 >= high:
            ends[tp] = offset + 1


def _kept_topics(
    plans: Plans, kept: dict[TopicPartitionKey, list[KeptRecord]]
) -> dict[str, list[KeptRecord]]:
    """The kept records of the topics whose every partition with new records was kept whole,
    each partition's within its planned range."""
    records: dict[str, list[KeptRecord]] = {}
    for topic, plan in plans.items():
        reading_now = [p for p, (start, end) in plan.items() if end > start]
        if reading_now and all((topic, p) in kept for p in reading_now):
            records[topic] = [
                record
                for p in reading_now
                for record in kept[(topic, p)]
                if plan[p][0] <= record[1] < plan[p][1]
            ]
    return records
