"""The age of a CDC source's position, from stored rows of Debezium-shaped offsets: shown beside
each partition with what it means, in the API, and nothing for shapes not recognised.

(Debezium's PostgreSQL connector runs on a real worker in
tests/refresh/test_debezium_position_age.py, the JDBC shape in
tests/refresh/test_source_position_age_live.py.)
"""

import json
from datetime import timedelta

import pytest

from offsets.models import SourceOffset
from tests.support import factories as make

pytestmark = pytest.mark.django_db

POSTGRES = "io.debezium.connector.postgresql.PostgresConnector"
BASE = "/clusters/prod/connectors"


@pytest.fixture
def prod():
    cluster = make.cluster("prod")
    make.run(cluster)
    return cluster


def cdc_source(cluster, name: str, connector_class: str, offset: dict) -> SourceOffset:
    make.snapshot(
        cluster,
        name,
        connector_class=connector_class,
        config={"connector.class": connector_class},
        partitions=1,
    )
    (row,) = make.source_offsets(cluster, name, 1)
    row.offset, row.offset_text = offset, json.dumps(offset)
    row.save()
    return row


def test_a_debezium_postgres_source_shows_its_position_age_at_its_last_commit(
    logged_in_client, prod
):
    row = cdc_source(prod, "pg-cdc", POSTGRES, {"lsn": 1, "txId": 2, "ts_usec": 0})
    # Committed 90 s after the transaction it read.
    clock = row.last_commit_at - timedelta(seconds=90)
    offset = {"lsn": 24023128, "txId": 555, "ts_usec": int(clock.timestamp() * 1_000_000)}
    SourceOffset.objects.filter(pk=row.pk).update(offset=offset, offset_text=json.dumps(offset))

    html = logged_in_client.get(f"{BASE}/pg-cdc/").content.decode()
    assert 'id="position-age-meta"' in html and "An idle source makes it grow" in html
    cell = html.split('data-field="position-age"')[1].split("</span>")[0]
    assert "source position 1m 30s old at commit" in cell
    body = logged_in_client.get(f"/api/v1{BASE}/pg-cdc/partitions/").json()
    assert body["source_partitions"][0]["position_age_ms"] == 90_000


@pytest.mark.parametrize(
    ("connector_class", "offset"),
    [
        # The right field under a class not known to mean it.
        ("com.example.CustomSourceConnector", {"ts_usec": 1_700_000_000_000_000}),
        # A known class without its clock: SQL Server's offsets hold LSNs only.
        ("io.debezium.connector.sqlserver.SqlServerConnector", {"commit_lsn": "0000:01"}),
    ],
)
def test_a_shape_not_recognised_shows_no_age(logged_in_client, prod, connector_class, offset):
    cdc_source(prod, "other", connector_class, offset)
    html = logged_in_client.get(f"{BASE}/other/").content.decode()
    assert 'data-field="position-age"' not in html
    body = logged_in_client.get(f"/api/v1{BASE}/other/partitions/").json()
    assert body["source_partitions"][0]["position_age_ms"] is None
