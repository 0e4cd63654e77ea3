"""Read the live state of every connector from the config and status topics."""

import logging
from collections import Counter
from dataclasses import dataclass, field

from django.conf import settings

from offsets import tuning
from offsets.formats.config_records import ConnectorConfig, fold_config_records
from offsets.formats.connectors import (
    connector_type,
    is_mirrormaker2,
    mask_secrets,
    mask_text,
    sink_group_id,
    source_offsets_topics,
)
from offsets.formats.masking import prefix_between_tokens
from offsets.formats.status_records import ConnectorStatus, fold_status_records
from offsets.kafka import reading
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
    # Each task's worker and trace (masked): {task: {"worker_id": str, "trace": str}}.
    task_details: dict[int, dict[str, str]] = field(default_factory=dict)

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
    # Reason (ConfigMalformedReason / StatusMalformedReason value) -> records skipped, so that
    # a refresh can report what the runtime would ignore rather than drop it silently.
    config_malformed: dict[str, int] = field(default_factory=dict)
    status_malformed: dict[str, int] = field(default_factory=dict)
    # reason -> one offending record, for the operator to find it ("key=... value=...").
    config_examples: dict[str, str] = field(default_factory=dict)
    status_examples: dict[str, str] = field(default_factory=dict)


def read_connect_state(*, cluster: Cluster) -> ConnectState:
    """Read the cluster's config and status topics now and summarise every connector.

    Raises `KafkaUnavailable` or `TopicNotFound` when the cluster cannot be read.
    """
    records = _read_config_and_status(cluster)
    config_records = records[cluster.configs_topic]
    status_records = records[cluster.status_topic]
    configs = fold_config_records(config_records)
    statuses = fold_status_records(status_records)
    summaries = [
        _summary(name, configs.connectors[name], statuses.connectors.get(name), cluster)
        for name in sorted(configs.connectors)
    ]
    return ConnectState(
        connectors=summaries,
        malformed_config_records=len(configs.malformed),
        malformed_status_records=len(statuses.malformed),
        records_read=len(config_records) + len(status_records),
        config_malformed=dict(Counter(str(record.reason) for record in configs.malformed)),
        status_malformed=dict(Counter(str(record.reason) for record in statuses.malformed)),
        config_examples=_examples(configs.malformed),
        status_examples=_examples(statuses.malformed),
    )


def _read_config_and_status(cluster: Cluster) -> dict[str, list[tuple[bytes | None, bytes | None]]]:
    """Return the (key, value) records of the cluster's config and status topics, by topic."""
    # Both topics in one read: their fetches overlap (each is a few small fetches, and each
    # fetch may wait up to fetch.wait.max.ms at the end of the data).
    records: dict[str, list[tuple[bytes | None, bytes | None]]] = {
        cluster.configs_topic: [],
        cluster.status_topic: [],
    }
    for record in reading.read_topics(
        tuning.short_read_settings(cluster.kafka_settings()),
        [cluster.configs_topic, cluster.status_topic],
        timeout=settings.KAFKA_READ_TIMEOUT,
    ):
        records[record.topic].append((record.key, record.value))
    return records


def _summary(
    name: str, config: ConnectorConfig, status: ConnectorStatus | None, cluster: Cluster
) -> ConnectorSummary:
    """One connector as the pages show it, from its folded config and status."""
    properties = config.properties or {}
    kind = connector_type(properties)
    topics = source_offsets_topics(properties, cluster.offsets_topic) if kind == "source" else None
    running = status if status and not config.deleted else None
    return ConnectorSummary(
        name=name,
        type=kind,
        # `or ""`: the property may be present with a JSON null value.
        connector_class=properties.get("connector.class") or "",
        target_state=config.target_state,
        runtime_state=running.state if running else None,
        task_states=(
            {task_id: task.state for task_id, task in sorted(running.tasks.items())}
            if running
            else {}
        ),
        task_details=(
            {
                task_id: {
                    "worker_id": task.worker_id or "",
                    "trace": mask_text(task.trace) if task.trace else "",
                }
                for task_id, task in sorted(running.tasks.items())
            }
            if running
            else {}
        ),
        task_count=config.task_count,
        deleted=config.deleted,
        mirrormaker2=is_mirrormaker2(properties),
        own_offsets_topic=topics.primary if topics and topics.own_topic else None,
        sink_group=sink_group_id(name, properties) if kind == "sink" else None,
        worker_id=status.worker_id if status else None,
        # Error messages quote configs and URLs: masked once here, for every page,
        # API answer and export.
        trace=mask_text(status.trace) if status and status.trace else None,
        config=mask_secrets(properties),
        topics=tuple(t.strip() for t in (properties.get("topics") or "").split(",") if t.strip()),
        topics_regex=(properties.get("topics.regex") or "").strip(),
    )


EXAMPLE_CHARS = 200


def _examples(malformed) -> dict[str, str]:
    """The first offending record per reason, truncated and masked.

    A value may be megabytes; the prefix shown ends between tokens, so that masking sees every
    secret whole.
    """
    examples: dict[str, str] = {}
    for record in malformed:
        if str(record.reason) in examples:
            continue
        # repr escapes control characters (PostgreSQL text cannot hold NUL).
        key = (
            "null"
            if record.key is None
            else repr(prefix_between_tokens(record.key, EXAMPLE_CHARS))[1:-1]
        )
        value = (
            "null"
            if record.value_bytes is None
            else repr(
                prefix_between_tokens(record.value_bytes[: EXAMPLE_CHARS + 1], EXAMPLE_CHARS)
            )[2:-1]
        )
        examples[str(record.reason)] = mask_text(f"key={key} value={value}")
    return examples
