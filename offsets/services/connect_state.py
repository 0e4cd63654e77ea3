"""Read the live state of every connector from the config and status topics."""

import logging
from dataclasses import dataclass, field

from django.conf import settings

from offsets.formats.config_records import fold_config_records
from offsets.formats.connectors import (
    connector_type,
    is_mirrormaker2,
    mask_secrets,
    sink_group_id,
    source_offsets_topics,
)
from offsets.formats.status_records import fold_status_records
from offsets.kafka import client
from offsets.models import Cluster

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ConnectorSummary:
    name: str
    type: str
    connector_class: str
    target_state: str
    runtime_state: str | None
    task_states: dict[int, str]
    task_count: int | None
    deleted: bool
    mirrormaker2: bool
    own_offsets_topic: str | None
    sink_group: str | None
    worker_id: str | None
    trace: str | None
    config: dict  # secrets masked
    topics: tuple[str, ...] = ()  # a sink's `topics` list
    topics_regex: str = ""

    @property
    def consuming(self) -> bool:
        """Whether its tasks are running (and so committing offsets)."""
        return (
            not self.deleted
            and self.runtime_state == "RUNNING"
            and all(state == "RUNNING" for state in self.task_states.values())
        )


@dataclass(frozen=True)
class ConnectState:
    connectors: list[ConnectorSummary]
    malformed_config_records: int
    malformed_status_records: int
    records_read: int = 0
    errors: list[str] = field(default_factory=list)


def read_connect_state(*, cluster: Cluster) -> ConnectState:
    """Read the cluster's config and status topics now and summarise every connector.

    Raises `client.KafkaUnavailable` or `client.TopicNotFound` when the cluster cannot be read.
    """
    kafka = cluster.kafka_settings()
    timeout = settings.KAFKA_READ_TIMEOUT
    config_records = [
        (r.key, r.value) for r in client.read_topic(kafka, cluster.configs_topic, timeout=timeout)
    ]
    status_records = [
        (r.key, r.value) for r in client.read_topic(kafka, cluster.status_topic, timeout=timeout)
    ]
    configs = fold_config_records(config_records)
    statuses = fold_status_records(status_records)
    summaries = []
    for name in sorted(configs.connectors):
        config = configs.connectors[name]
        properties = config.properties or {}
        status = statuses.connectors.get(name)
        kind = connector_type(properties)
        topics = (
            source_offsets_topics(properties, cluster.offsets_topic) if kind == "source" else None
        )
        summaries.append(
            ConnectorSummary(
                name=name,
                type=kind,
                connector_class=properties.get("connector.class", ""),
                target_state=config.target_state,
                runtime_state=status.state if status and not config.deleted else None,
                task_states=(
                    {task_id: task.state for task_id, task in sorted(status.tasks.items())}
                    if status and not config.deleted
                    else {}
                ),
                task_count=config.task_count,
                deleted=config.deleted,
                mirrormaker2=is_mirrormaker2(properties),
                own_offsets_topic=topics.primary if topics and topics.own_topic else None,
                sink_group=sink_group_id(name, properties) if kind == "sink" else None,
                worker_id=status.worker_id if status else None,
                trace=status.trace if status else None,
                config=mask_secrets(properties),
                topics=tuple(
                    t.strip() for t in (properties.get("topics") or "").split(",") if t.strip()
                ),
                topics_regex=(properties.get("topics.regex") or "").strip(),
            )
        )
    return ConnectState(
        connectors=summaries,
        malformed_config_records=len(configs.malformed),
        malformed_status_records=len(statuses.malformed),
        records_read=len(config_records) + len(status_records),
    )
