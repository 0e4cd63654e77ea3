"""The typed plan and results that the refresh's phases hand to each other."""

from dataclasses import dataclass, field
from datetime import UTC, datetime

from offsets.kafka import planner
from offsets.models import LagSample, SinkPartitionLag

# A topic's planned read: {partition: (first offset, end offset)}.
TopicPlan = dict[int, tuple[int, int]]

# The SourceOffset fields a refresh computes (key_bytes, partition and offset follow from
# key_hash, partition_text and offset_text), in the order store.source_offset_values gives them.
SOURCE_OFFSET_FIELDS = (
    "connector",
    "identity",
    "partition_text",
    "offset_text",
    "kafka_partition",
    "kafka_offset",
    "progress",
    "first_commit_at",
    "last_commit_at",
    "commits",
    "rewinds",
    "stalled",
    "effective",
)
# A cluster's stored SourceOffset rows as the save compares them:
# {(topic, key_hash): (pk, the values of SOURCE_OFFSET_FIELDS)}.
StoredRows = dict[tuple[str, str], tuple[int, list]]

# A sink partition's lag in time as the last refresh found it:
# {(connector, (topic, partition)): ((the consumer's position, log end), lag in ms)}.
KnownTimeLags = dict[tuple[str, tuple[str, int]], tuple[tuple[int, int], int]]


def ms_to_datetime(ms: int | None) -> datetime | None:
    return None if ms is None else datetime.fromtimestamp(ms / 1000, tz=UTC)


@dataclass
class SourcePlan:
    """The snapshot of the offsets topics this refresh reads (offsets.refresh.plan)."""

    plans: dict[str, TopicPlan]
    # The cluster's read positions when this refresh planned: {(topic, partition): next offset}
    read_from: dict[tuple[str, int], int] = field(default_factory=dict)
    topic_ids: dict[str, str] = field(default_factory=dict)  # of the topics planned, if known
    # Topics deleted and created again since the last refresh: {topic: how it shows}
    recreated: dict[str, str] = field(default_factory=dict)
    # The new records of some topics, as the planner read them: {topic: records}. Spark folds
    # these instead of reading them from Kafka again.
    kept: dict[str, list[planner.KeptRecord]] = field(default_factory=dict)

    def total_records(self) -> int:
        """The records the planned snapshot covers (compaction gaps included)."""
        return sum(end - start for plan in self.plans.values() for start, end in plan.values())

    def new_records(self, topic: str) -> int:
        return sum(end - start for start, end in self.plans[topic].values())

    def reading_topics(self) -> list[str]:
        """The planned topics with new records: the others get no read at all."""
        return [topic for topic in self.plans if self.new_records(topic) > 0]


@dataclass
class SourceResults:
    """What the merge computed from the new records and the previous state (one row a dict,
    as offsets.spark collects them)."""

    records_by_topic: dict[str, int]
    latest: list[dict] = field(default_factory=list)
    drift: list[dict] = field(default_factory=list)
    rewinds: list[dict] = field(default_factory=list)
    buckets: list[dict] = field(default_factory=list)
    malformed: list[dict] = field(default_factory=list)
    # Keys whose newest record the database cannot hold: {topic, key_hash, kafka_offset}.
    unstorable: list[dict] = field(default_factory=list)
    # The keys whose `latest` rows can differ from the stored ones, when the merge knows
    # (a live round from its memory); None: any of them.
    changed_keys: set[tuple[str, str]] | None = None

    @classmethod
    def collected(cls, plan: SourcePlan, rows: dict[str, list[dict]]) -> "SourceResults":
        """The results from the merge's collected rows by name; a planned topic with no
        record read counts 0."""
        records = {topic: 0 for topic in plan.plans}
        records.update({row["topic"]: row["count"] for row in rows.get("records", [])})
        return cls(
            records_by_topic=records,
            latest=rows.get("latest", []),
            drift=rows.get("drift", []),
            rewinds=rows.get("rewinds", []),
            buckets=rows.get("buckets", []),
            malformed=rows.get("malformed", []),
            unstorable=rows.get("unstorable", []),
        )

    def records_read(self) -> int:
        return sum(self.records_by_topic.values())


@dataclass
class MirrorUpstreamFacts:
    """A MirrorSourceConnector's upstream as the refresh found it (offsets.refresh.mirrors)."""

    alias: str
    cluster: str = ""  # the registered cluster chosen for the alias; "" when none is
    error: str = ""  # why its lag could not be read (masked)


@dataclass
class StoreFacts:
    """Where a sink's offsets were read when an admin set its store (offsets.sink_stores)."""

    where: str
    error: str = ""  # why they could not be read (masked): the sink then has no lag


@dataclass
class SinkResults:
    """The sinks' and the mirrors' lag as sampled from Kafka (offsets.refresh.sinks, .mirrors)."""

    lags: list[SinkPartitionLag] = field(default_factory=list)
    samples: list[LagSample] = field(default_factory=list)
    externally_managed: set[str] = field(default_factory=set)
    # Deleted sinks whose group still has committed offsets: {connector: partitions}.
    orphan_groups: dict[str, int] = field(default_factory=dict)
    # Each MirrorSourceConnector's upstream: {connector: facts}.
    mirrors: dict[str, MirrorUpstreamFacts] = field(default_factory=dict)
    # Each sink whose store an admin set outside Connect's group: {connector: facts}.
    stores: dict[str, StoreFacts] = field(default_factory=dict)
