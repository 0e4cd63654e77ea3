"""A partition whose newest offset the database cannot store (a NUL or a lone surrogate) is
marked wherever its stored, older offset is shown or exported."""

import pytest
from django.urls import reverse

from offsets.models import SourceOffset
from tests.support import factories as make

# db_engine: the value at stake is one PostgreSQL refuses and SQLite stores.
pytestmark = [pytest.mark.django_db, pytest.mark.db_engine]

CONNECTOR = "jdbc-source"


@pytest.fixture
def cluster():
    cluster = make.cluster("prod")
    make.run(cluster, ago=120)
    make.snapshot(cluster, CONNECTOR, partitions=3)
    rows = make.source_offsets(cluster, CONNECTOR, 3)
    SourceOffset.objects.filter(pk=rows[1].pk).update(
        newer_unstorable_offset=rows[1].kafka_offset + 1
    )
    return cluster


def test_the_page_marks_the_partition_and_says_the_json_export_holds_the_older_offset(
    logged_in_client, cluster
):
    html = logged_in_client.get(reverse("connector", args=["prod", CONNECTOR])).content.decode()
    assert html.count('data-field="newer-not-stored"') == 1
    assert 'id="newer-not-stored"' in html and "1 partition of this connector has" in html


def test_the_stored_exports_count_the_partitions_in_a_header(logged_in_client, cluster):
    for url in [
        reverse("connector-offsets-json", args=["prod", CONNECTOR]),
        f"/api/v1/clusters/prod/connectors/{CONNECTOR}/offsets/",
    ]:
        response = logged_in_client.get(url)
        assert response.status_code == 200 and response["X-Newer-Offsets-Not-Stored"] == "1"


def test_the_api_gives_the_newer_writes_kafka_offset_per_partition(logged_in_client, cluster):
    body = logged_in_client.get(f"/api/v1/clusters/prod/connectors/{CONNECTOR}/partitions/").json()
    marked = [
        row for row in body["source_partitions"] if row["newer_unstorable_offset"] is not None
    ]
    assert (
        len(marked) == 1 and marked[0]["newer_unstorable_offset"] == marked[0]["kafka_offset"] + 1
    )


def test_nothing_is_marked_when_every_newest_offset_is_stored(logged_in_client, cluster):
    SourceOffset.objects.update(newer_unstorable_offset=None)
    html = logged_in_client.get(reverse("connector", args=["prod", CONNECTOR])).content.decode()
    assert "newer-not-stored" not in html
    response = logged_in_client.get(reverse("connector-offsets-json", args=["prod", CONNECTOR]))
    assert "X-Newer-Offsets-Not-Stored" not in response
