"""Pure rules of the Connect REST adapter: versions, the URL list, answers mapped to errors."""

import pytest

from offsets.domain.workers import kafka_version, parse_connect_urls, worker_capabilities
from offsets.kafka.connect_answers import (
    ConnectAuthFailed,
    ConnectBadRequest,
    ConnectMalformed,
    ConnectNotJson,
    ConnectorUnknown,
    ConnectRebalancing,
    ConnectServerError,
    error_for_answer,
    parse_json,
)


@pytest.mark.parametrize(
    ("version", "read", "write", "stopped"),
    [
        ("3.4.1", False, False, False),
        ("3.5.0", True, False, False),
        ("3.6.2", True, True, False),
        ("3.7.0", True, True, True),
        ("4.1.0", True, True, True),
        ("3.9.0-SNAPSHOT", True, True, True),
        ("7.5.3-ccs", True, False, False),  # Confluent Platform 7.5 ships Kafka 3.5
        ("7.7.0-ce", True, True, True),
        ("2.8.0", False, False, False),
    ],
)
def test_it_knows_what_a_worker_version_supports(version, read, write, stopped):
    capabilities = worker_capabilities(version)
    assert capabilities.known
    assert (capabilities.offsets_read, capabilities.offsets_write) == (read, write)
    assert capabilities.create_stopped == stopped


@pytest.mark.parametrize("version", ["", "unknown", "v3.7", "9.0.0-ccs", "<html>"])
def test_it_assumes_nothing_of_an_unknown_version(version):
    capabilities = worker_capabilities(version)
    assert not capabilities.known
    assert not (capabilities.offsets_read or capabilities.offsets_write)
    assert not capabilities.create_stopped


def test_confluent_versions_map_to_kafka_versions():
    assert kafka_version("7.6.1-ccs") == (3, 6)
    assert kafka_version("8.0.0-ccs") == (4, 0)
    assert kafka_version("3.7.0") == (3, 7)


def test_it_splits_several_worker_urls_in_order():
    assert parse_connect_urls(" http://w1:8083/, https://w2:8443 ,,http://w1:8083") == (
        "http://w1:8083",
        "https://w2:8443",
    )
    assert parse_connect_urls("") == ()


@pytest.mark.parametrize("text", ["w1:8083", "http://w1:8083,ftp://w2", "http://user:pw@w1"])
def test_it_rejects_a_bad_worker_url(text):
    with pytest.raises(ValueError, match="not an http"):
        parse_connect_urls(text)


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (401, ConnectAuthFailed),
        (403, ConnectAuthFailed),
        (404, ConnectorUnknown),
        (409, ConnectRebalancing),
        (400, ConnectBadRequest),
        (405, ConnectBadRequest),
        (500, ConnectServerError),
    ],
)
def test_it_maps_error_statuses_to_errors(status, error):
    body = b'{"error_code": %d, "message": "said the worker"}' % status
    found = error_for_answer("PUT /connectors/x/stop on http://w", status, body)
    assert type(found) is error and found.status == status
    assert "said the worker" in found.message and "PUT /connectors/x/stop" in found.message


def test_a_500_saying_a_rebalance_is_expected_is_a_rebalance_not_a_failure():
    # What a worker answered a GET config on the real runtime just after a config change.
    body = b'{"error_code":500,"message":"Request cannot be completed because a rebalance is expected"}'
    found = error_for_answer("GET /connectors/x/config on http://w", 500, body)
    assert type(found) is ConnectRebalancing and found.status == 500
    assert "rebalancing; try again" in found.message
    other = error_for_answer("GET /connectors/x/config on http://w", 500, b'{"message":"boom"}')
    assert type(other) is ConnectServerError


def test_a_success_is_no_error():
    assert error_for_answer("GET /", 200, b"{}") is None
    assert error_for_answer("PUT /stop", 202, b"") is None


def test_an_html_answer_says_it_is_not_the_worker_url():
    body = b"<!DOCTYPE html><html><body>Welcome to nginx</body></html>"
    found = error_for_answer("GET /", 404, body, "text/html")
    assert isinstance(found, ConnectNotJson)
    assert "answered HTML, not Connect's JSON: is this the worker URL?" in found.message
    with pytest.raises(ConnectNotJson, match="is this the worker URL"):
        parse_json("GET /", b"<html>hi</html>", "text/html")


def test_malformed_json_is_its_own_error():
    with pytest.raises(ConnectMalformed, match="not valid JSON"):
        parse_json("GET /", b'{"version": "3.7', "application/json")
    assert parse_json("GET /", b"", "") is None
    assert parse_json("GET /", b'{"a": 1}', "application/json") == {"a": 1}


def test_the_workers_message_is_masked():
    body = b'{"message": "Failed: jdbc:postgresql://app:hunter2@db/x"}'
    found = error_for_answer("PUT /stop", 400, body)
    assert "hunter2" not in found.message


def test_an_html_error_page_of_the_workers_jetty_keeps_its_status_and_title():
    body = b"<html><head><title>Error 400 Ambiguous URI path separator</title></head></html>"
    found = error_for_answer("GET /connectors/a%2Fb/status", 400, body, "text/html")
    assert isinstance(found, ConnectBadRequest)
    assert "Ambiguous URI path separator" in found.message
