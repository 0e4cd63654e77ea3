"""MirrorMaker 2's rules: which connector is a MirrorSourceConnector, where it resumes on each
upstream partition, which upstream partitions it copies and where it starts on one it has no
offset for, and which registered cluster is its upstream. Pure rules, no I/O.

Read against apache/kafka's `connect/mirror` (the worker's connect-mirror 4.3.1 jar):
`MirrorSourceConnector.taskConfigs` gives each task `task.assigned.partitions`, its
topic-partitions as `TopicPartition.toString()` ("topic-3") joined by commas. A task seeks
only on partitions with an offset (`MirrorSourceTask.initializeConsumer`); on the others its
consumer starts where `auto.offset.reset` says, which `MirrorConnectorConfig.sourceConsumerConfig`
takes from `consumer.`, then `source.consumer.` properties, else "earliest".
"""

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = [
    "TASK_ASSIGNED_PARTITIONS",
    "MirrorPosition",
    "assigned_partitions",
    "is_mirror_source",
    "mirror_offset_reset",
    "mirror_position",
    "mirror_source_alias",
    "replicated_topics",
    "suggested_upstream",
]

TASK_ASSIGNED_PARTITIONS = "task.assigned.partitions"

# MirrorSourceConnector copies records; the checkpoint and heartbeat connectors write
# offsets of other shapes, which say nothing of lag.
_MIRROR_SOURCE_CLASS = "MirrorSourceConnector"

TopicPartition = tuple[str, int]

# ConfigDef's LIST type: the trimmed value split at commas with the spaces around them.
_LIST_SEPARATOR = re.compile(r"\s*,\s*")

# DefaultTopicFilter's defaults in 4.3.1 (`topics`, `topics.exclude`).
_TOPICS_DEFAULT = ".*"
_TOPICS_EXCLUDE_DEFAULT = r"mm2.*\.internal, .*\.replica, __.*"
_DEFAULT_CLASSES = {
    "topic.filter.class": "org.apache.kafka.connect.mirror.DefaultTopicFilter",
    "replication.policy.class": "org.apache.kafka.connect.mirror.DefaultReplicationPolicy",
}


def _list(value: str | None) -> list[str]:
    trimmed = (value or "").strip()
    return _LIST_SEPARATOR.split(trimmed) if trimmed else []


def _decode(entry: str) -> TopicPartition | None:
    # MirrorUtils.decodeTopicPartition: the partition follows the LAST dash.
    topic, dash, number = entry.rpartition("-")
    if not dash or not topic or not number.isascii() or not number.isdigit():
        return None
    return topic, int(number)


def assigned_partitions(
    task_configs: Mapping[int, Mapping[str, str | None]],
) -> frozenset[TopicPartition] | None:
    """The upstream partitions a mirror's tasks are assigned; None when it has no task
    configs (created PAUSED or STOPPED: KIP-980 writes none until it starts)."""
    if not task_configs:
        return None
    partitions = set()
    for config in task_configs.values():
        for entry in _list(config.get(TASK_ASSIGNED_PARTITIONS)):
            decoded = _decode(entry)
            if decoded is not None:
                partitions.add(decoded)
    return frozenset(partitions)


def mirror_offset_reset(properties: Mapping[str, str | None]) -> str:
    """Where a mirror's consumer starts on a partition it has no offset for: its
    `auto.offset.reset` ("earliest" unless the connector overrides it).

    `source.cluster.auto.offset.reset` does not count: only client settings (bootstrap,
    security) survive from the `source.cluster.` prefix.
    """
    for name in ("source.consumer.auto.offset.reset", "consumer.auto.offset.reset"):
        value = (properties.get(name) or "").strip().lower()
        if value:
            return value
    return "earliest"


def _pattern(value: str | None) -> re.Pattern | None:
    # MirrorUtils.compilePatternList: the list joined with "|"; an empty one matches nothing.
    fields = _list(value)
    return re.compile("|".join(fields)) if fields else None


def _matches(pattern: re.Pattern | None, topic: str) -> bool:
    return pattern is not None and pattern.fullmatch(topic) is not None


class _Policy:
    """DefaultReplicationPolicy with its separator: remote topics are "<alias><sep><topic>"."""

    def __init__(self, properties: Mapping[str, str | None]) -> None:
        self.separator = properties.get("replication.policy.separator") or "."
        internal_enabled = properties.get("replication.policy.internal.topic.separator.enabled")
        internal = "." if (internal_enabled or "").strip().lower() == "false" else self.separator
        self.internal_suffix = f"{internal}internal"
        self.checkpoints_suffix = f"{internal}checkpoints{self.internal_suffix}"

    def topic_source(self, topic: str) -> str | None:
        # Java's String.split drops trailing empty parts.
        parts = topic.split(self.separator)
        while parts and parts[-1] == "":
            parts.pop()
        return parts[0] if len(parts) >= 2 else None

    def upstream_topic(self, topic: str) -> str | None:
        source = self.topic_source(topic)
        return None if source is None else topic[len(source) + len(self.separator) :]

    def original_topic(self, topic: str) -> str:
        upstream = self.upstream_topic(topic)
        return topic if upstream is None or upstream == topic else self.original_topic(upstream)

    def is_internal(self, topic: str) -> bool:
        mm2_internal = (
            topic.startswith("mm2") and topic.endswith(self.internal_suffix)
        ) or topic.endswith(self.checkpoints_suffix)
        return topic.startswith("__") or topic.startswith(".") or mm2_internal

    def is_cycle(self, topic: str, target: str) -> bool:
        source = self.topic_source(topic)
        if source is None:
            return False
        if source == target:
            return True
        upstream = self.upstream_topic(topic)
        return False if upstream is None or upstream == topic else self.is_cycle(upstream, target)


def replicated_topics(
    properties: Mapping[str, str | None], topics: Iterable[str]
) -> set[str] | None:
    """The upstream topics a mirror copies, as `MirrorSourceConnector.shouldReplicateTopic`
    picks them: its `topics` / `topics.exclude` filter, heartbeats topics unless
    `heartbeats.replication.enabled` is false, never internal topics nor cycles.

    None when it cannot be told here: a custom topic filter or replication policy, or a
    pattern Python's `re` does not read as Java does.
    """
    for name, default in _DEFAULT_CLASSES.items():
        if (properties.get(name) or default).strip() != default:
            return None
    include_value, exclude_value = properties.get("topics"), properties.get("topics.exclude")
    try:
        include = _pattern(_TOPICS_DEFAULT if include_value is None else include_value)
        exclude = _pattern(_TOPICS_EXCLUDE_DEFAULT if exclude_value is None else exclude_value)
    except re.error:
        return None
    policy = _Policy(properties)
    heartbeats = (properties.get("heartbeats.replication.enabled") or "").strip().lower() != "false"
    target = (properties.get("target.cluster.alias") or "target").strip()
    return {
        topic
        for topic in topics
        if (
            (_matches(include, topic) and not _matches(exclude, topic))
            or (heartbeats and policy.original_topic(topic) == "heartbeats")
        )
        and not policy.is_internal(topic)
        and not policy.is_cycle(topic, target)
    }


@dataclass(frozen=True)
class MirrorPosition:
    """Where a MirrorSourceConnector resumes on one upstream partition."""

    alias: str  # the upstream cluster's alias (source.cluster.alias)
    topic: str
    partition: int
    # The next upstream offset to copy: the stored offset is the last record copied
    # (MirrorSourceTask.convertRecord wraps record.offset()), and a task seeks to it + 1.
    next_offset: int


def is_mirror_source(properties: Mapping[str, str | None]) -> bool:
    """Tell whether the connector is MirrorMaker 2's MirrorSourceConnector."""
    connector_class = (properties.get("connector.class") or "").strip()
    return connector_class == _MIRROR_SOURCE_CLASS or connector_class.endswith(
        "." + _MIRROR_SOURCE_CLASS
    )


def mirror_source_alias(properties: Mapping[str, str | None]) -> str:
    """The upstream cluster's alias of a MirrorSourceConnector ("" when not set)."""
    return (properties.get("source.cluster.alias") or "").strip()


def _integer(value: object) -> int | None:
    # JSON true/false are no offsets, though Python counts them as ints.
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def mirror_position(partition: object, offset: object) -> MirrorPosition | None:
    """Read a MirrorSourceConnector's source partition and offset; None for any other shape.

    MirrorUtils.wrapPartition writes {"cluster": alias, "topic": t, "partition": p} and
    wrapOffset {"offset": n}; a negative offset is "uncommitted" to the task.
    """
    if not isinstance(partition, Mapping) or not isinstance(offset, Mapping):
        return None
    alias, topic = partition.get("cluster"), partition.get("topic")
    number, copied = _integer(partition.get("partition")), _integer(offset.get("offset"))
    if not isinstance(alias, str) or not isinstance(topic, str) or number is None:
        return None
    if copied is None or copied < 0 or number < 0:
        return None
    return MirrorPosition(alias=alias, topic=topic, partition=number, next_offset=copied + 1)


def _servers(bootstrap: str) -> set[str]:
    return {server.strip().lower() for server in bootstrap.split(",") if server.strip()}


def suggested_upstream(
    properties: Mapping[str, str | None], clusters: Iterable[tuple[str, str]]
) -> str | None:
    """The registered cluster a MirrorSourceConnector's `source.cluster.bootstrap.servers`
    names: the first of `clusters` ((name, bootstrap servers), in order) sharing a server."""
    wanted = _servers(properties.get("source.cluster.bootstrap.servers") or "")
    if not wanted:
        return None
    return next((name for name, servers in clusters if wanted & _servers(servers)), None)
