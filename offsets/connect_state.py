"""Read every connector of a cluster now from its config and status topics."""

import dataclasses
import logging
from collections import Counter
from dataclasses import dataclass, field

from django.conf import settings

from offsets import tuning
from offsets.formats.config_records import fold_config_records
from offsets.formats.connectors import Connector, connector_from
from offsets.formats.masking import mask_text, prefix_between_tokens
from offsets.formats.offset_records import SourceOffsetRecord, parse_offset_record
from offsets.formats.status_records import fold_status_records
from offsets.kafka import reading, standalone_worker
from offsets.kafka.connect_answers import ConnectRestError
from offsets.models import Cluster

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ConnectState:
    connectors: list[Connector]
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

    Raises `KafkaUnavailable` or `TopicNotFound` when the cluster cannot be read. A standalone
    worker's connectors come from its REST API and its offsets file (`standalone_state`).
    """
    if cluster.is_standalone:
        return standalone_state(cluster, standalone_worker.read_offsets_file(cluster.offsets_file))
    records = _read_config_and_status(cluster)
    config_records = records[cluster.configs_topic]
    status_records = records[cluster.status_topic]
    configs = fold_config_records(config_records)
    statuses = fold_status_records(status_records)
    connectors = [
        connector_from(
            name,
            configs.connectors[name],
            statuses.connectors.get(name),
            worker_offsets_topic=cluster.offsets_topic,
        )
        for name in sorted(configs.connectors)
    ]
    return ConnectState(
        connectors=connectors,
        malformed_config_records=len(configs.malformed),
        malformed_status_records=len(statuses.malformed),
        records_read=len(config_records) + len(status_records),
        config_malformed=dict(Counter(str(record.reason) for record in configs.malformed)),
        status_malformed=dict(Counter(str(record.reason) for record in statuses.malformed)),
        config_examples=_examples(configs.malformed),
        status_examples=_examples(statuses.malformed),
    )


def standalone_state(cluster: Cluster, offsets: standalone_worker.OffsetsFile) -> ConnectState:
    """A standalone worker's connectors: those its REST API lists, and those its offsets file
    names.

    A connector only the file names is deleted when the worker answered without it; when no
    worker answers (or none is configured) its state is unknown, not deleted.
    """
    errors: list[str] = []
    snapshots = None
    if cluster.connect_urls:
        try:
            snapshots = standalone_worker.worker_snapshots(cluster)
        except ConnectRestError as exc:
            errors.append(mask_text(str(exc)))
            logger.warning("The standalone worker of %s did not answer: %s", cluster.name, exc)
    configs = snapshots.configs.connectors if snapshots else {}
    statuses = snapshots.statuses.connectors if snapshots else {}
    names = set(configs) | file_connectors(offsets.entries)
    connectors = []
    for name in sorted(names):
        connector = connector_from(
            name, configs.get(name), statuses.get(name), worker_offsets_topic=cluster.offsets_topic
        )
        if name not in configs:
            # No config topic keeps a target state for it: "" (unknown), not None (compacted).
            connector = dataclasses.replace(
                connector, target_state="", deleted=snapshots is not None
            )
        connectors.append(connector)
    return ConnectState(
        connectors=connectors, malformed_config_records=0, malformed_status_records=0, errors=errors
    )


def file_connectors(entries: dict[bytes, bytes | None]) -> set[str]:
    """The connectors an offsets file's well-formed keys name with an offset (a reset one is
    forgotten, as a connector whose offsets topic keys are all tombstones is)."""
    names = set()
    for key, value in entries.items():
        parsed = parse_offset_record(key, value)
        if isinstance(parsed, SourceOffsetRecord) and value is not None:
            names.add(parsed.connector)
    return names


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
