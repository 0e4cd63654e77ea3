"""One connector: the facts its configuration and its status say, for every part of the app.

`Connector` is the one model of a connector read from Connect's topics: the refresh stores it,
the live page and the API show it, the edits check it before they write. The functions below
read single facts from a connector's configuration properties.
"""

import logging
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

import regex

from offsets.domain.masking import MASK, is_secret_name, mask_secrets, mask_text
from offsets.domain.mirrors import assigned_partitions, is_mirror_source
from offsets.formats.config_records import ConnectorConfig
from offsets.formats.status_records import ConnectorStatus, TaskRow, task_rows

__all__ = [
    "MASK",
    "Connector",
    "OffsetsTopics",
    "connector_from",
    "connector_type",
    "is_mirrormaker2",
    "is_secret_name",
    "manages_offsets_externally",
    "mask_secrets",
    "mask_text",
    "sink_group_id",
    "sink_offset_reset",
    "sink_topics",
    "source_offsets_topics",
    "suggested_offsets_file",
]

logger = logging.getLogger(__name__)

# What Kafka accepts as a topic name (Topic.validate): 1-249 of these characters, not . or ..
_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]{1,249}")
# A connector's topics.regex is anyone's pattern: matching it against every topic of the
# cluster may take at most this long in all, so that one pattern that backtracks without end
# cannot hold a refresh or a page.
SINK_PATTERN_SECONDS = 0.5

_MIRROR_MAKER_2_CLASSES = (
    "MirrorSourceConnector",
    "MirrorCheckpointConnector",
    "MirrorHeartbeatConnector",
)

# Sinks whose tasks keep their offsets in the system they write to and hand Connect nothing to
# commit (`preCommit` returns {}): their group's empty offsets say nothing of their lag. The
# project's own test connector is the one known here; operators name others with
# EXTERNAL_OFFSETS_SINK_CLASSES (docs/refresh.md).
EXTERNAL_OFFSETS_SINK_CLASSES = ("dev.offsetsdashboard.connectors.ExternalOffsetsSinkConnector",)

# Where a sink's consumer starts on a partition its group has no (valid) offset for
# (auto.offset.reset). Worker.baseConsumerConfigs sets "earliest", then applies the worker's
# consumer.* and the connector's consumer.override.* properties on top.
EARLIEST, LATEST = "earliest", "latest"


@dataclass(frozen=True)
class OffsetsTopics:
    """Where a source connector's offsets live."""

    # The topic tasks read first and write to: the connector's own topic if it has one.
    primary: str
    # The worker's global offsets topic (offset.storage.topic).
    worker: str
    # True when the connector has its own offsets topic, distinct from the worker's.
    own_topic: bool


@dataclass(frozen=True)
class Connector:
    """One connector as the config and status topics say. Secrets and traces are masked."""

    name: str
    type: Literal["source", "sink"]
    deleted: bool
    # The config topic's target state ("STARTED" when none is written); None when the topic
    # holds no record of the connector any more (compacted away while its offsets remain).
    target_state: str | None
    # The status topic's word, kept for a deleted connector too: a task it still lists may
    # still run, which a lock check must see. The pages show the `runtime_*` view instead.
    connector_state: str | None
    task_states: dict[int, str]
    mirrormaker2: bool
    connector_class: str = ""
    task_count: int | None = None
    worker_id: str | None = None
    trace: str | None = None
    config: dict = field(default_factory=dict)
    # Each task's worker and trace: {task: {"worker_id": str, "trace": str}}.
    task_details: dict[int, dict[str, str]] = field(default_factory=dict)
    # When the worker wrote the FAILED status it has now (the status record's timestamp, ms):
    # the connector's own, else its first failed task's; None when not failing or unknown.
    failed_at_ms: int | None = None
    # A MirrorSourceConnector's upstream partitions, as its task configs assign them; None
    # when it has no task configs (or is no mirror).
    mirror_partitions: frozenset[tuple[str, int]] | None = None
    # Source: where its offsets live (primary = its own topic when it has one).
    primary_topic: str = ""
    worker_topic: str = ""
    own_topic: bool = False
    # Sink: its consumer group and input topics.
    group_id: str = ""
    sink_topics: tuple[str, ...] = ()
    sink_topics_regex: str = ""

    @property
    def is_source(self) -> bool:
        return self.type == "source"

    @property
    def own_offsets_topic(self) -> str | None:
        """A source's own offsets topic (KIP-618), if it has one."""
        return self.primary_topic if self.own_topic else None

    @property
    def sink_group(self) -> str | None:
        """A sink's consumer group; None for a source."""
        return None if self.is_source else self.group_id

    # A deleted connector's status is what its last worker left: the pages, the API and the
    # stored results show no runtime state or tasks for it.
    @property
    def runtime_state(self) -> str | None:
        return None if self.deleted else self.connector_state

    @property
    def runtime_tasks(self) -> dict[int, str]:
        return {} if self.deleted else self.task_states

    @property
    def runtime_task_details(self) -> dict[int, dict[str, str]]:
        return {} if self.deleted else self.task_details

    @property
    def runtime_failed_at_ms(self) -> int | None:
        return None if self.deleted else self.failed_at_ms

    def tasks(self) -> list[TaskRow]:
        """Its running tasks in order, each with its state, worker and masked trace."""
        return task_rows(self.runtime_tasks, self.runtime_task_details)

    @property
    def consuming(self) -> bool:
        """Whether its tasks are running (and so committing offsets)."""
        return (
            not self.deleted
            and self.connector_state == "RUNNING"
            and all(state == "RUNNING" for state in self.task_states.values())
        )


def connector_from(
    name: str,
    config: ConnectorConfig | None,
    status: ConnectorStatus | None,
    *,
    worker_offsets_topic: str,
) -> Connector:
    """The connector from its folded config (None: compacted away) and status."""
    properties = (config.properties if config else None) or {}
    kind = connector_type(properties)
    tasks = sorted(status.tasks.items()) if status else []
    return Connector(
        name=name,
        type=kind,
        deleted=config.deleted if config else True,
        target_state=config.target_state if config else None,
        connector_state=status.state if status else None,
        task_states={task_id: task.state for task_id, task in tasks},
        mirrormaker2=is_mirrormaker2(properties),
        # `or ""`: the property may be present with a JSON null value.
        connector_class=properties.get("connector.class") or "",
        task_count=config.task_count if config else None,
        worker_id=status.worker_id if status else None,
        # Error messages quote configs and URLs: masked once here, for every page, API
        # answer and export.
        trace=mask_text(status.trace) if status and status.trace else None,
        config=mask_secrets(properties),
        task_details={
            task_id: {
                "worker_id": task.worker_id or "",
                "trace": mask_text(task.trace) if task.trace else "",
            }
            for task_id, task in tasks
        },
        failed_at_ms=failed_at_ms(status),
        mirror_partitions=assigned_partitions(config.task_configs)
        if config and is_mirror_source(properties)
        else None,
        **_offsets_place(name, kind, properties, worker_offsets_topic),
    )


def failed_at_ms(status: ConnectorStatus | None) -> int | None:
    """When the worker wrote the failure a connector has now, by the status topic's record
    timestamps: its own FAILED record's, else its earliest FAILED task's (when it began to
    fail). None when nothing is FAILED or the records carry no time."""
    if status is None:
        return None
    if status.state == "FAILED":
        return status.written_ms
    times = [task.written_ms for task in status.tasks.values() if task.state == "FAILED"]
    known = [written for written in times if written is not None]
    return min(known) if known and len(known) == len(times) else None


def _offsets_place(
    name: str, kind: str, properties: Mapping[str, str | None], worker_offsets_topic: str
) -> dict:
    """Where the connector's offsets live: a source's topics, a sink's group and input."""
    if kind == "source":
        topics = source_offsets_topics(properties, worker_offsets_topic)
        return {
            "primary_topic": topics.primary,
            "worker_topic": topics.worker,
            "own_topic": topics.own_topic,
        }
    return {
        "group_id": sink_group_id(name, properties),
        "sink_topics": tuple(
            t.strip() for t in (properties.get("topics") or "").split(",") if t.strip()
        ),
        "sink_topics_regex": (properties.get("topics.regex") or "").strip(),
    }


def connector_type(properties: Mapping[str, str | None]) -> Literal["source", "sink"]:
    """Tell source from sink, as closely as possible without loading the plugin class.

    The runtime decides by the plugin class (SinkConnector or SourceConnector), which a
    dashboard cannot load. In order: MirrorMaker 2's connectors are sources although their
    ``topics`` property is a topic filter; a class named ``...SinkConnector`` or
    ``...SourceConnector`` says so by convention; otherwise a sink is what names its input
    with ``topics`` or ``topics.regex`` (SinkConnectorConfig requires one of them).
    """
    connector_class = (properties.get("connector.class") or "").strip()
    if is_mirrormaker2(properties) or connector_class.endswith("SourceConnector"):
        return "source"
    if connector_class.endswith("SinkConnector"):
        return "sink"
    for name in ("topics", "topics.regex"):
        value = properties.get(name)
        if value is not None and value.strip():
            return "sink"
    return "source"


def sink_group_id(name: str, properties: Mapping[str, str | None]) -> str:
    """Return the consumer group holding a sink's offsets (SinkUtils.consumerGroupId)."""
    # Worker.baseConsumerConfigs sets group.id to connect-<name>, then applies the connector's
    # consumer.override.* properties on top.
    override = properties.get("consumer.override.group.id")
    if override is not None and override.strip():
        return override
    return f"connect-{name}"


def sink_offset_reset(properties: Mapping[str, str | None]) -> str:
    """Return where a sink's consumer starts without a committed offset: "earliest",
    "latest", or the connector's other value as written ("none", "by_duration:PT1H")."""
    # A worker-wide consumer.auto.offset.reset lives in the worker's properties, which no
    # Connect topic holds: the dashboard cannot see it (docs/refresh.md).
    value = (properties.get("consumer.override.auto.offset.reset") or "").strip().lower()
    return value or EARLIEST


def manages_offsets_externally(
    properties: Mapping[str, str | None], known_classes: Iterable[str] = ()
) -> bool:
    """Tell whether a sink is known to keep its offsets outside Connect: its class is one of
    EXTERNAL_OFFSETS_SINK_CLASSES or `known_classes`.

    Never from its group having no commits: a sink just created, paused, stopped or failing
    before its first commit has none either, and its records wait all the same.
    """
    connector_class = (properties.get("connector.class") or "").strip()
    return bool(connector_class) and connector_class in {
        *EXTERNAL_OFFSETS_SINK_CLASSES,
        *known_classes,
    }


def suggested_offsets_file(properties: Mapping[str, str | None]) -> str | None:
    """The offsets file of the project's own ExternalOffsetsSink (its `offsets.file`): the
    store the connector page suggests for it; None for any other class."""
    if (properties.get("connector.class") or "").strip() not in EXTERNAL_OFFSETS_SINK_CLASSES:
        return None
    return (properties.get("offsets.file") or "").strip() or None


def source_offsets_topics(
    properties: Mapping[str, str | None], worker_offsets_topic: str
) -> OffsetsTopics:
    """Return a source connector's primary offsets topic and the worker's (KIP-618).

    An ``offsets.storage.topic`` that is no valid topic name counts as none.

    ``Worker.offsetStoreForRegularSourceConnector``: with ``offsets.storage.topic`` set, the
    connector's topic is the primary store and the worker's global topic a secondary copy;
    when it names the worker's own topic there is just the one. (The runtime also compares
    bootstrap servers: a same-named topic on another cluster, via producer overrides, would be
    a distinct topic; that case is not detected here.)
    """
    own = properties.get("offsets.storage.topic")
    # A name Kafka cannot hold was never written to: the worker fails such a connector.
    if own is not None and is_topic_name(own) and own != worker_offsets_topic:
        return OffsetsTopics(primary=own, worker=worker_offsets_topic, own_topic=True)
    return OffsetsTopics(primary=worker_offsets_topic, worker=worker_offsets_topic, own_topic=False)


def is_mirrormaker2(properties: Mapping[str, str | None]) -> bool:
    """Tell whether the connector is one of MirrorMaker 2's three connectors."""
    connector_class = (properties.get("connector.class") or "").strip()
    return connector_class.endswith(_MIRROR_MAKER_2_CLASSES)


def is_topic_name(name: str) -> bool:
    """Tell whether Kafka would accept `name` as a topic name."""
    return name not in (".", "..") and _TOPIC_NAME.fullmatch(name) is not None


def sink_topics(
    listed: Iterable[str], pattern: str, existing: Iterable[str], *, connector: str = ""
) -> set[str]:
    """Return the existing topics a sink reads: those its `topics` lists, and those its
    `topics.regex` (`pattern`) matches whole (internal `__` topics aside, as the consumer
    leaves them).

    A pattern Python cannot compile matches nothing, and so does the rest of a match that
    runs past SINK_PATTERN_SECONDS; both are logged, neither fails the caller.
    """
    existing = set(existing)
    topics = set(listed) & existing
    if not pattern.strip():
        return topics
    try:
        compiled = regex.compile(pattern.strip())
    except (regex.error, ValueError, OverflowError) as exc:
        logger.warning("Sink %r: topics.regex does not compile (%s)", connector, exc)
        return topics
    deadline = time.monotonic() + SINK_PATTERN_SECONDS
    for topic in sorted(existing):
        if topic.startswith("__"):
            continue
        left = deadline - time.monotonic()
        try:
            if left > 0 and compiled.fullmatch(topic, timeout=left):
                topics.add(topic)
                continue
        except TimeoutError:
            left = 0
        if left <= 0:
            logger.warning(
                "Sink %r: topics.regex took over %.1f s; the topics not yet matched are left out",
                connector,
                SINK_PATTERN_SECONDS,
            )
            break
    return topics
