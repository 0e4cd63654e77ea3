"""A lone surrogate in a stored offset breaks no page, export or API answer.

A Java String may hold a lone UTF-16 surrogate; Jackson writes it as `\\uD800` and Python
reads it back into a str that has no UTF-8 form. Everything that writes such a value must
escape it as Jackson does (`\\ud800`), for the one connector and for the whole cluster.
"""

import json

import pytest
from django.urls import reverse

from offsets.formats import jackson
from offsets.models import SourceOffset
from tests.support import factories as make

# db_engine: PostgreSQL refuses text SQLite stores (lone surrogates).
pytestmark = [pytest.mark.django_db, pytest.mark.db_engine]

CONNECTOR = "jdbc-source"
ODD_OFFSET = {"file": "a\ud800b", "position": 7}
ODD_PARTITION = {"table": "\udc00"}


@pytest.fixture
def odd():
    """A cluster whose source connector has one offset and one partition with a surrogate."""
    from django.db import connection

    if connection.vendor == "postgresql":
        pytest.skip(
            "PostgreSQL's jsonb cannot hold a lone surrogate: the refresh counts such an offset"
            " as value-unstorable (tests/refresh/test_refresh_garbage.py) and never stores it"
        )
    cluster = make.cluster("prod")
    make.run(cluster, ago=120)
    make.snapshot(cluster, CONNECTOR, partitions=3)
    rows = make.source_offsets(cluster, CONNECTOR, 3)
    # Stored as a refresh stores them: the texts as Jackson wrote them, the maps as read.
    SourceOffset.objects.filter(pk=rows[0].pk).update(
        offset=ODD_OFFSET, offset_text=jackson.dumps(ODD_OFFSET).decode()
    )
    SourceOffset.objects.filter(pk=rows[1].pk).update(
        partition=ODD_PARTITION, partition_text=jackson.dumps(ODD_PARTITION).decode()
    )
    return cluster


def routes(cluster) -> list[str]:
    api = f"/api/v1/clusters/{cluster.name}"
    return [
        reverse("connector", args=[cluster.name, CONNECTOR]),
        reverse("connector-offsets-json", args=[cluster.name, CONNECTOR]),
        f"{api}/connectors/{CONNECTOR}/",
        f"{api}/connectors/{CONNECTOR}/partitions/",
        f"{api}/connectors/{CONNECTOR}/offsets/",
        f"{api}/connectors/{CONNECTOR}/history/",
        f"{api}/connectors/",
    ]


def test_every_page_and_answer_about_the_connector_is_sent(logged_in_client, odd):
    for url in routes(odd):
        response = logged_in_client.get(url)
        assert response.status_code == 200, url


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/clusters/prod/connectors/jdbc-source/offsets/",
        "/clusters/prod/connectors/jdbc-source/offsets.json",
    ],
)
def test_the_kip875_export_escapes_the_surrogates_as_jackson_does(logged_in_client, odd, url):
    response = logged_in_client.get(url)
    assert response.status_code == 200
    body = response.content.decode("utf-8")
    assert "a\\ud800b" in body and "\\udc00" in body
    entries = json.loads(body)["offsets"]
    assert {"partition": {"table": "table_00000"}, "offset": ODD_OFFSET} in entries
    assert ODD_PARTITION in [entry["partition"] for entry in entries]


def test_the_partitions_answer_holds_the_escaped_values(logged_in_client, odd):
    response = logged_in_client.get("/api/v1/clusters/prod/connectors/jdbc-source/partitions/")
    assert response.status_code == 200
    assert b"\\ud800" in response.content
    partitions = [row["partition"] for row in response.json()["source_partitions"]]
    assert ODD_PARTITION in partitions


def test_the_connector_page_shows_the_escaped_values(logged_in_client, odd):
    page = logged_in_client.get(reverse("connector", args=["prod", CONNECTOR]))
    assert page.status_code == 200
    assert "\\uD800" in page.content.decode() or "\\ud800" in page.content.decode()
