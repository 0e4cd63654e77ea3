"""The secured runtime itself: its listeners and its worker's HTTPS REST API refuse whoever
lacks the credentials, and let in whoever has them."""

import ssl
import urllib.error
import urllib.request

import pytest

from offsets.kafka import admin
from tests.support import secured_runtime
from tests.support.connect_rest import ConnectRest

pytestmark = pytest.mark.integration


def test_the_worker_answers_a_client_certificate_with_basic_auth(secured_kafka):
    rest = ConnectRest(
        secured_kafka.info.connect_url,
        auth=("dashboard", secured_kafka.rest_password),
        context=secured_kafka.rest_context(),
    )

    assert isinstance(rest.call("GET", "/connectors"), list)


def test_the_worker_refuses_a_wrong_rest_password(secured_kafka):
    rest = ConnectRest(
        secured_kafka.info.connect_url,
        auth=("dashboard", "wrong"),
        context=secured_kafka.rest_context(),
    )

    assert rest.request("GET", "/connectors")[0] == 401


def test_the_worker_refuses_a_client_without_certificate(secured_kafka):
    context = ssl.create_default_context(cafile=str(secured_kafka.tls.ca))
    request = urllib.request.Request(secured_kafka.info.connect_url + "/connectors")

    with pytest.raises((ssl.SSLError, urllib.error.URLError, ConnectionError)):
        urllib.request.urlopen(request, timeout=10, context=context).read()


def test_the_super_user_sees_the_worker_topics(secured_kafka):
    counts = admin.topic_partition_counts(secured_kafka.setup, timeout=10)

    assert "tls-connect-offsets" in counts


def test_a_principal_without_acls_sees_no_topic_on_either_listener(secured_kafka):
    # Both connect and authenticate; the authorizer hides every topic (no ACL, no access).
    nobody = secured_runtime.NOBODY_USER
    for settings in (
        secured_kafka.sasl(nobody),
        secured_kafka.mutual_tls(secured_kafka.nobody_cert),
    ):
        assert admin.topic_partition_counts(settings, timeout=10) == {}
