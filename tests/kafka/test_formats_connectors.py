import pytest

from offsets.domain.connectors import (
    MASK,
    OffsetsTopics,
    connector_type,
    is_mirrormaker2,
    manages_offsets_externally,
    mask_secrets,
    sink_group_id,
    sink_offset_reset,
    sink_topics,
    source_offsets_topics,
)


@pytest.mark.parametrize(
    ("properties", "expected"),
    [
        ({"topics": "orders,users"}, "sink"),
        ({"topics.regex": "orders-.*"}, "sink"),
        ({"topics": "", "topics.regex": "x"}, "sink"),
        ({"topics": "  "}, "source"),
        ({"topics": None}, "source"),
        ({"file": "/tmp/in.txt"}, "source"),
        # MirrorMaker 2's `topics` is a filter on the source cluster, not a sink's input.
        (
            {
                "connector.class": "org.apache.kafka.connect.mirror.MirrorSourceConnector",
                "topics": "orders,payments",
            },
            "source",
        ),
        ({"connector.class": "com.example.CustomSourceConnector", "topics": "x"}, "source"),
        ({"connector.class": "io.confluent.connect.s3.S3SinkConnector"}, "sink"),
    ],
)
def test_it_tells_a_sink_from_a_source(properties: dict[str, str | None], expected: str) -> None:
    assert connector_type(properties) == expected


def test_a_sink_uses_the_connect_group_by_default() -> None:
    assert sink_group_id("orders-sink", {"topics": "orders"}) == "connect-orders-sink"


def test_a_sink_can_override_its_group() -> None:
    properties = {"topics": "orders", "consumer.override.group.id": "legacy-group"}
    assert sink_group_id("orders-sink", properties) == "legacy-group"


def test_a_blank_group_override_is_ignored() -> None:
    assert sink_group_id("s", {"consumer.override.group.id": " "}) == "connect-s"


def test_a_source_uses_the_worker_topic_by_default() -> None:
    assert source_offsets_topics({}, "connect-offsets") == OffsetsTopics(
        primary="connect-offsets", worker="connect-offsets", own_topic=False
    )


def test_a_source_with_its_own_topic_reads_that_one_first() -> None:
    topics = source_offsets_topics({"offsets.storage.topic": "jdbc-offsets"}, "connect-offsets")
    assert topics == OffsetsTopics(primary="jdbc-offsets", worker="connect-offsets", own_topic=True)


def test_naming_the_worker_topic_is_not_an_own_topic() -> None:
    topics = source_offsets_topics({"offsets.storage.topic": "connect-offsets"}, "connect-offsets")
    assert topics == OffsetsTopics(
        primary="connect-offsets", worker="connect-offsets", own_topic=False
    )


@pytest.mark.parametrize(
    ("connector_class", "expected"),
    [
        ("org.apache.kafka.connect.mirror.MirrorSourceConnector", True),
        ("org.apache.kafka.connect.mirror.MirrorCheckpointConnector", True),
        ("MirrorHeartbeatConnector", True),
        ("org.apache.kafka.connect.file.FileStreamSourceConnector", False),
        ("", False),
    ],
)
def test_it_recognises_mirror_maker_2(connector_class: str, expected: bool) -> None:
    assert is_mirrormaker2({"connector.class": connector_class}) is expected


def test_a_connector_without_a_class_is_not_mirror_maker_2() -> None:
    assert not is_mirrormaker2({})


def test_it_masks_secret_values_and_leaves_the_rest() -> None:
    properties = {
        "connector.class": "io.example.JdbcSource",
        "connection.user": "app",
        "connection.password": "hunter2",
        "sasl.jaas.config": 'PlainLoginModule required username="u" password="p";',
        "ssl.key": "-----BEGIN PRIVATE KEY-----",
        "ssl.keystore.key": "pem",
        "ssl.truststore.password": "changeit",
        "aws.secret.access.key": "abc",
        "aws.access.key.id": "AKIA",
        "api.key": "k",
        "apiKey": "k",
        "oauth.token": "t",
        "google.credentials.json": "{}",
        "basic.auth.user.info": "u:p",
        "key.converter": "org.apache.kafka.connect.json.JsonConverter",
        "tasks.max": "1",
    }
    masked = mask_secrets(properties)
    secrets = {
        "connection.password",
        "sasl.jaas.config",
        "ssl.key",
        "ssl.keystore.key",
        "ssl.truststore.password",
        "aws.secret.access.key",
        "aws.access.key.id",
        "api.key",
        "apiKey",
        "oauth.token",
        "google.credentials.json",
        "basic.auth.user.info",
    }
    assert {name for name, value in masked.items() if value == MASK} == secrets
    assert masked["connection.user"] == "app"
    assert masked["key.converter"] == "org.apache.kafka.connect.json.JsonConverter"
    assert list(masked) == list(properties)
    assert properties["connection.password"] == "hunter2"


def test_it_masks_a_password_inside_a_url() -> None:
    masked = mask_secrets({"connection.url": "jdbc:postgresql://app:s3cret@db:5432/shop"})
    assert masked == {"connection.url": f"jdbc:postgresql://app:{MASK}@db:5432/shop"}


def test_it_shows_config_provider_references_and_empty_values() -> None:
    properties = {
        "connection.password": "${file:/opt/secrets.properties:db.password}",
        "ssl.key.password": "",
        "secret.token": None,
    }
    assert mask_secrets(properties) == properties


@pytest.mark.parametrize(
    "own", ["", "  ", ".", "..", "a" * 250, "has space", "../../etc", "ü-topic", "x\x00"]
)
def test_an_offsets_topic_kafka_could_not_hold_counts_as_none(own):
    topics = source_offsets_topics({"offsets.storage.topic": own}, "connect-offsets")
    assert topics.primary == "connect-offsets" and not topics.own_topic


EXISTING = ["orders", "orders-eu", "audit-1", "__consumer_offsets", "payments"]


def test_a_sink_reads_its_listed_topics_and_those_its_pattern_matches_whole():
    assert sink_topics(["payments", "gone"], "orders.*", EXISTING) == {
        "payments",
        "orders",
        "orders-eu",
    }
    assert sink_topics([], "_.*", EXISTING) == set()  # internal topics are never matched


@pytest.mark.parametrize("pattern", ["(", "[a-", "a{2,1}", "*a"])
def test_a_pattern_that_does_not_compile_matches_nothing_and_fails_nothing(pattern, caplog):
    assert sink_topics(["orders"], pattern, EXISTING) == {"orders"}
    assert "does not compile" in caplog.text


def test_a_pattern_that_backtracks_without_end_is_cut_off_within_its_time_limit(caplog):
    # Exponential on this topic: minutes without the limit (the test would hang).
    topics = ["a" * 40 + "!", "orders"]
    assert sink_topics([], "(a|aa)+$", topics) == set()
    assert "took over 0.5 s" in caplog.text


# --- Where a sink starts without a commit; which sinks keep their offsets elsewhere. ----------


@pytest.mark.parametrize(
    ("properties", "expected"),
    [
        ({}, "earliest"),  # Worker.baseConsumerConfigs
        ({"consumer.override.auto.offset.reset": None}, "earliest"),
        ({"consumer.override.auto.offset.reset": " "}, "earliest"),
        ({"consumer.override.auto.offset.reset": "latest"}, "latest"),
        ({"consumer.override.auto.offset.reset": " LATEST "}, "latest"),
        ({"consumer.override.auto.offset.reset": "by_duration:PT1H"}, "by_duration:pt1h"),
        ({"auto.offset.reset": "latest"}, "earliest"),  # not a consumer override
    ],
)
def test_a_sink_starts_from_earliest_unless_its_consumer_override_says_otherwise(
    properties, expected
):
    assert sink_offset_reset(properties) == expected


def test_a_sink_manages_its_offsets_outside_connect_only_when_its_class_says_so():
    known = {"connector.class": "dev.offsetsdashboard.connectors.ExternalOffsetsSinkConnector"}
    other = {"connector.class": "io.example.HdfsSinkConnector", "topics": "t"}
    assert manages_offsets_externally(known)
    assert not manages_offsets_externally(other)
    assert manages_offsets_externally(other, ["io.example.HdfsSinkConnector"])
    assert not manages_offsets_externally({"connector.class": None}, [""])
    assert not manages_offsets_externally({}, [])
