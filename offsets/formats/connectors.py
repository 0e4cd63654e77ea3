"""Read facts about a connector from its configuration properties."""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from offsets.formats.masking import MASK, is_secret_name, mask_secrets, mask_text

__all__ = [
    "MASK",
    "OffsetsTopics",
    "connector_type",
    "is_mirrormaker2",
    "is_secret_name",
    "mask_secrets",
    "mask_text",
    "sink_group_id",
    "source_offsets_topics",
]

_MIRROR_MAKER_2_CLASSES = (
    "MirrorSourceConnector",
    "MirrorCheckpointConnector",
    "MirrorHeartbeatConnector",
)


@dataclass(frozen=True)
class OffsetsTopics:
    """Where a source connector's offsets live."""

    # The topic tasks read first and write to: the connector's own topic if it has one.
    primary: str
    # The worker's global offsets topic (offset.storage.topic).
    worker: str
    # True when the connector has its own offsets topic, distinct from the worker's.
    own_topic: bool


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


def source_offsets_topics(
    properties: Mapping[str, str | None], worker_offsets_topic: str
) -> OffsetsTopics:
    """Return a source connector's primary offsets topic and the worker's (KIP-618).

    ``Worker.offsetStoreForRegularSourceConnector``: with ``offsets.storage.topic`` set, the
    connector's topic is the primary store and the worker's global topic a secondary copy;
    when it names the worker's own topic there is just the one. (The runtime also compares
    bootstrap servers: a same-named topic on another cluster, via producer overrides, would be
    a distinct topic; that case is not detected here.)
    """
    own = properties.get("offsets.storage.topic")
    if own is not None and own.strip() and own != worker_offsets_topic:
        return OffsetsTopics(primary=own, worker=worker_offsets_topic, own_topic=True)
    return OffsetsTopics(primary=worker_offsets_topic, worker=worker_offsets_topic, own_topic=False)


def is_mirrormaker2(properties: Mapping[str, str | None]) -> bool:
    """Tell whether the connector is one of MirrorMaker 2's three connectors."""
    connector_class = (properties.get("connector.class") or "").strip()
    return connector_class.endswith(_MIRROR_MAKER_2_CLASSES)
