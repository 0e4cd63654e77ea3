"""Read facts about a connector from its configuration properties."""

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

MASK = "********"

_MIRROR_MAKER_2_CLASSES = (
    "MirrorSourceConnector",
    "MirrorCheckpointConnector",
    "MirrorHeartbeatConnector",
)

# Lower-cased fragments of property names whose values are secret.
_SECRET_NAME_FRAGMENTS = (
    "password",
    "passwd",
    "secret",
    "token",
    "credential",
    "jaas",  # sasl.jaas.config embeds username and password
    "user.info",  # basic.auth.user.info is "user:password"
    "api.key",
    "apikey",
    "api_key",
    "api-key",
    "access.key",
    "private",
)
# Property names ending like this hold key material (ssl.key, ssl.keystore.key, aws...key).
_SECRET_NAME_SUFFIXES = (".key", "_key", "-key")
# A value that is only a config-provider reference (${provider:path:key}) holds no secret and
# tells the reader where the secret lives, so it stays visible.
_CONFIG_PROVIDER_REFERENCE = re.compile(r"\$\{[^}]*\}")
# user:password@ inside a URL, e.g. a JDBC connection.url.
_URL_CREDENTIALS = re.compile(r"(?P<prefix>[A-Za-z][A-Za-z0-9+.\-]*://[^/:@\s]+:)[^/@\s]+(?=@)")


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


def mask_secrets(properties: Mapping[str, str | None]) -> dict[str, str | None]:
    """Return a copy of ``properties`` safe to show, with secret values replaced by ``MASK``.

    The rule: a value is masked when its property name, lower-cased, contains one of
    password, passwd, secret, token, credential, jaas, user.info, api.key, apikey, api_key,
    api-key, access.key, private; or ends in ``.key``, ``_key`` or ``-key`` (ssl.key,
    ssl.keystore.key ...). Empty and null values stay as they are (nothing to hide), and so
    does a value that is only a config-provider reference such as ``${file:/secrets:db}``. In
    every other value, a password inside a URL (``scheme://user:password@host``) is masked.
    """
    masked: dict[str, str | None] = {}
    for name, value in properties.items():
        if not value or _CONFIG_PROVIDER_REFERENCE.fullmatch(value.strip()):
            masked[name] = value
        elif is_secret_name(name):
            masked[name] = MASK
        else:
            masked[name] = _URL_CREDENTIALS.sub(rf"\g<prefix>{MASK}", value)
    return masked


def is_secret_name(name: str) -> bool:
    """Tell whether a property of this name holds a secret (the rule of `mask_secrets`)."""
    lowered = name.lower()
    return any(fragment in lowered for fragment in _SECRET_NAME_FRAGMENTS) or lowered.endswith(
        _SECRET_NAME_SUFFIXES
    )
