"""The pages and the API on the seeded demo after a real refresh (Spark, embedded broker)."""

import json
import re

import pytest

from offsets.history.reading import partition_history
from offsets.models import (
    CommitBucket,
    ConnectorSnapshot,
    LagSample,
    RefreshRun,
    SinkPartitionLag,
    SourceOffset,
)

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


def test_the_refreshed_demo_has_every_demo_connector(refreshed_demo, seeded_demo):
    names = set(
        ConnectorSnapshot.objects.filter(cluster=refreshed_demo).values_list("name", flat=True)
    )
    assert names == set(seeded_demo.demo.connectors)
    assert RefreshRun.objects.filter(status=RefreshRun.Status.SUCCEEDED).count() == 2


def test_the_list_shows_every_demo_connector_with_its_numbers(logged_in_client, refreshed_demo):
    def rows_of(url: str) -> list[tuple[str, str]]:
        html = logged_in_client.get(url).content.decode()
        return re.findall(r'<tr data-connector="([^"]+)">(.*?)</tr>', html, re.S)

    names = sorted(ConnectorSnapshot.objects.values_list("name", flat=True))
    # Problems first by default; every connector either way, and by name when asked.
    rows = rows_of("/clusters/demo/connectors/")
    assert sorted(name for name, _ in rows) == names
    assert [name for name, _ in rows_of("/clusters/demo/connectors/?sort=name")] == names
    for name, row in rows:
        snapshot = ConnectorSnapshot.objects.get(name=name)
        assert f'data-field="partitions">{snapshot.partitions:,}<' in row
        if snapshot.type == "sink" and not snapshot.offsets_managed_externally:
            assert f'data-field="lag-records">{snapshot.lag_records:,}<' in row
            assert f'data-status="{snapshot.lag_status}"' in row
    assert "own offsets topic (exactly-once)" in dict(rows)["orders-cdc-eos"]
    assert "MirrorMaker 2" in dict(rows)["mm2-us-east-source"]
    assert "offsets managed outside Connect" in dict(rows)["bq-sink-events"]
    assert "deleted (offsets remain)" in dict(rows)["legacy-inventory-source"]
    assert "key drift" in dict(rows)["http-source-metrics"]
    assert 'data-reason="REWIND"' in dict(rows)["jdbc-source-inventory"]
    assert 'data-reason="STALL"' in dict(rows)["jdbc-source-inventory"]


def test_a_source_page_charts_the_rewound_partition_from_the_parquet_history(
    logged_in_client, refreshed_demo
):
    url = "/clusters/demo/connectors/jdbc-source-inventory/"
    page = logged_in_client.get(url).content.decode()
    buckets = CommitBucket.objects.filter(connector="jdbc-source-inventory").count()
    points = int(re.search(r'data-chart="commits".*?data-points="(\d+)"', page, re.S).group(1))
    assert points >= buckets > 0
    progress = logged_in_client.get(url, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="progress")
    html = progress.content.decode()
    rewound = SourceOffset.objects.get(
        connector="jdbc-source-inventory", effective=True, rewinds__gt=0
    )
    history = partition_history(
        cluster=refreshed_demo, connector=rewound.connector, key_hash=rewound.key_hash
    )
    assert int(re.search(r'data-points="(\d+)"', html).group(1)) == len(history) > 10
    assert html.count('class="marker"') == sum(point.rewind for point in history) >= 1
    assert "s3cr3t-inventory" not in page


def test_a_sink_page_shows_its_lag_and_charts_both_samples(logged_in_client, refreshed_demo):
    html = logged_in_client.get("/clusters/demo/connectors/es-sink-clicks/").content.decode()
    for lag in SinkPartitionLag.objects.filter(connector="es-sink-clicks"):
        row = html.split(f'data-partition="{lag.topic}-{lag.partition}"')[1].split("</tr>")[0]
        assert f'data-field="lag-records">{lag.lag_records:,}<' in row
    samples = LagSample.objects.filter(connector="es-sink-clicks").values("sampled_at").distinct()
    chart = html.split('data-chart="lag"')[1]
    assert f'data-points="{samples.count()}"' in chart


def test_the_export_equals_the_effective_offsets(logged_in_client, refreshed_demo):
    for name in ("jdbc-source-inventory", "orders-cdc-eos", "s3-sink-orders"):
        document = json.loads(
            logged_in_client.get(f"/clusters/demo/connectors/{name}/offsets.json").content
        )
        api = logged_in_client.get(f"/api/v1/clusters/demo/connectors/{name}/offsets/").json()
        assert document == api
        snapshot = ConnectorSnapshot.objects.get(name=name)
        if snapshot.type == "sink":
            expected = SinkPartitionLag.objects.filter(
                connector=name, committed__isnull=False
            ).count()
        else:
            expected = SourceOffset.objects.filter(
                connector=name, effective=True, offset_text__isnull=False
            ).count()
        assert len(document["offsets"]) == expected > 0
