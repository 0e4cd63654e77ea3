"""A reader or writer refused by the broker's authorizer says which ACL is missing."""

from confluent_kafka import KafkaError, KafkaException

from offsets.kafka import offsets_writer
from offsets.kafka.errors import KafkaNotAuthorized, KafkaUnavailable
from offsets.kafka.reading import READER_GROUP_PREFIX, read_failure, reader_config


def test_a_refused_reader_group_names_the_prefix_to_grant():
    failure = read_failure(KafkaError(KafkaError.GROUP_AUTHORIZATION_FAILED), "connect-status")

    assert isinstance(failure, KafkaNotAuthorized)
    assert str(failure) == (
        "The dashboard's principal may not READ the consumer groups prefixed"
        " 'offsets-dashboard-' (GROUP_AUTHORIZATION_FAILED): grant it READ on the consumer"
        " groups prefixed 'offsets-dashboard-' (a PREFIXED ACL: the dashboard's readers use"
        " such groups and commit nothing)."
    )


def test_a_refused_topic_is_named():
    failure = read_failure(
        KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED), "connect-offsets[0]", "connect-offsets"
    )

    assert isinstance(failure, KafkaNotAuthorized)
    assert "may not READ the topic 'connect-offsets' (TOPIC_AUTHORIZATION_FAILED)" in str(failure)
    assert "grant it READ and DESCRIBE on that topic" in str(failure)


def test_other_errors_stay_unavailable_and_name_what_was_read():
    failure = read_failure(KafkaError(KafkaError._TRANSPORT), "connect-status")

    assert type(failure) is KafkaUnavailable
    assert str(failure).startswith("Reading connect-status failed: ")


def test_every_reader_group_has_the_prefix():
    assert reader_config({}, "lag")["group.id"].startswith(READER_GROUP_PREFIX)


def test_a_refused_transactional_write_names_the_acl_to_grant():
    refused = KafkaException(KafkaError(KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED))

    assert offsets_writer._refusal(refused, "connect-offsets-dashboard.prod.orders", []) == (
        "The dashboard's principal may not WRITE the transactional id "
        "'connect-offsets-dashboard.prod.orders' (TRANSACTIONAL_ID_AUTHORIZATION_FAILED): grant "
        "it WRITE on the transactional ids prefixed 'connect-offsets-dashboard' (a PREFIXED ACL; "
        "WRITE includes DESCRIBE)."
    )


def test_a_refused_write_to_two_offsets_topics_names_both():
    refused = KafkaException(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED))

    assert offsets_writer._refusal(refused, "id", ["own-offsets", "connect-offsets"]) == (
        "The dashboard's principal may not WRITE the topic 'own-offsets' or the topic "
        "'connect-offsets' (TOPIC_AUTHORIZATION_FAILED): grant it WRITE on each."
    )


def test_other_write_failures_are_no_refusal():
    failed = KafkaException(KafkaError(KafkaError._TIMED_OUT))

    assert offsets_writer._refusal(failed, "id", ["connect-offsets"]) == ""
