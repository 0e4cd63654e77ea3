"""Secrets never leave the server: recognisable secret strings are seeded in connector configs
and in a cluster's Kafka client settings, then every page, API response, download, admin page
and log line is scanned for them."""

import logging

import pytest

from offsets.domain.connectors import mask_secrets
from offsets.models import Cluster
from offsets.models.cluster import SECRET_MASK
from tests.support import factories
from tests.support.access import endpoints, sample_params
from tests.support.edits_factory import make_edit

# Kafka client settings of a cluster (librdkafka names, plus what people paste from Java).
CLIENT_SECRETS = {
    "sasl.password": "SASL-PASSWORD-3f9a1c",
    "ssl.key.password": "SSL-KEY-PASSWORD-77b2e0",
    "ssl.keystore.password": "KEYSTORE-PASSWORD-a4d1",
    "ssl.key.pem": "-----BEGIN PRIVATE KEY-----PEM-SECRET-5c2e",
    "sasl.oauthbearer.client.secret": "OAUTH-CLIENT-SECRET-91d3",
    "sasl.oauthbearer.config": "clientId=dash clientSecret=OAUTH-CONFIG-SECRET-0e7f",
    "sasl.jaas.config": 'PlainLoginModule required username="dash" password="JAAS-CLIENT-SECRET-6b8c";',
}
CLIENT_PUBLIC = {
    "security.protocol": "SASL_SSL",
    "sasl.mechanism": "PLAIN",
    "sasl.username": "dash",
}

# A connector's configuration: every kind of secret property the masking rule names.
CONNECTOR_SECRETS = {
    "connection.password": "CONN-PASSWORD-19af",
    "aws.secret.access.key": "AWS-SECRET-ACCESS-KEY-c3d4",
    "ssl.key": "SSL-PRIVATE-KEY-MATERIAL-8e1f",
    "producer.override.sasl.jaas.config": 'ScramLoginModule required password="JAAS-CONNECTOR-SECRET-2d4b";',
    "github.access.token": "GITHUB-TOKEN-6a0c",
    "basic.auth.user.info": "registry:BASIC-AUTH-SECRET-4f5e",
    "database.passwd": "DB-PASSWD-SECRET-7c1d",
    "api.key": "API-KEY-SECRET-0b9a",
}
URL_WITH_PASSWORD = "jdbc:postgresql://connect:URL-PASSWORD-SECRET-3e8d@db.internal:5432/app"
SECRETS = [
    "3f9a1c",
    "77b2e0",
    "a4d1",
    "PEM-SECRET",
    "OAUTH-CLIENT-SECRET",
    "OAUTH-CONFIG-SECRET",
    "JAAS-CLIENT-SECRET",
    "CONN-PASSWORD",
    "AWS-SECRET-ACCESS-KEY",
    "SSL-PRIVATE-KEY-MATERIAL",
    "JAAS-CONNECTOR-SECRET",
    "GITHUB-TOKEN",
    "BASIC-AUTH-SECRET",
    "DB-PASSWD-SECRET",
    "API-KEY-SECRET",
    "URL-PASSWORD-SECRET",
]


def leaks(text: str) -> list[str]:
    return [secret for secret in SECRETS if secret in text]


# --- The masking rules themselves (pure functions). --------------------------------------------


def test_every_kind_of_connector_secret_is_masked():
    config = {**CONNECTOR_SECRETS, "connection.url": URL_WITH_PASSWORD, "topics": "orders"}
    masked = mask_secrets(config)
    assert all(masked[name] == SECRET_MASK for name in CONNECTOR_SECRETS)
    assert masked["connection.url"] == (
        f"jdbc:postgresql://connect:{SECRET_MASK}@db.internal:5432/app"
    )
    assert masked["topics"] == "orders"
    assert not leaks(repr(masked))


def test_every_kind_of_kafka_client_secret_is_masked():
    cluster = Cluster(name="x", client_config={**CLIENT_SECRETS, **CLIENT_PUBLIC})
    masked = cluster.masked_client_config()
    assert all(masked[name] == SECRET_MASK for name in CLIENT_SECRETS), masked
    assert {name: masked[name] for name in CLIENT_PUBLIC} == CLIENT_PUBLIC


# --- Every page, API response and download. ------------------------------------------------------


@pytest.fixture
def secret_world(db, editor, settings):
    settings.KAFKA_READ_TIMEOUT = 1  # the cluster is unreachable: its error pages come fast
    # Port 1: nothing listens, so every live read fails -- the error paths are scanned too.
    cluster = factories.cluster("c1", client_config={**CLIENT_SECRETS, **CLIENT_PUBLIC})
    config = {
        "connector.class": "io.example.SourceConnector",
        "connection.url": URL_WITH_PASSWORD,
        **CONNECTOR_SECRETS,
    }
    factories.snapshot(cluster, "file-src", config=config)
    factories.run(cluster)
    edit = make_edit(cluster, editor)
    return cluster, sample_params(
        cluster="c1", connector="file-src", edit_pk=edit.pk, admin_pk=cluster.pk
    )


@pytest.mark.django_db
def test_no_page_api_response_or_download_shows_a_secret(client, secret_world, admin_user, caplog):
    _, params = secret_world
    client.force_login(admin_user)
    caplog.set_level(logging.DEBUG)
    seen, problems = 0, []
    urls = [endpoint.url for endpoint in endpoints(params)] + [
        "/api/v1/clusters/c1/connectors/file-src/",
        "/clusters/c1/connectors/file-src/?page=1",
        "/clusters/c1/export/?connectors=file-src&format=kip875",
        "/api/v1/edits/export/?cluster=c1&connectors=file-src",
        "/admin/offsets/cluster/",
        f"/admin/offsets/cluster/{secret_world[0].pk}/change/",
    ]
    for url in urls:
        for response in (client.get(url), client.get(url, HTTP_HX_REQUEST="true")):
            body = response.content.decode("utf-8", "replace")
            seen += response.status_code == 200
            found = leaks(body) + leaks(str(response.headers))
            if found:
                problems.append(f"GET {url} -> {response.status_code} shows {found}")
    assert not problems, "\n".join(problems)
    assert not leaks(caplog.text), "a secret reached the logs"
    # The scan looked at real pages: the connector page with its (masked) configuration ...
    page = client.get("/clusters/c1/connectors/file-src/").content.decode()
    assert "connection.password" in page and SECRET_MASK in page
    assert seen > 20


@pytest.mark.django_db
def test_the_error_of_an_unreachable_cluster_names_no_secret(client, secret_world, admin_user):
    client.force_login(admin_user)
    for url in ("/clusters/c1/live/", "/api/v1/clusters/c1/state/"):
        response = client.get(url)
        assert response.status_code == 503
        assert not leaks(response.content.decode())
