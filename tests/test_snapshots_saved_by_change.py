"""A refresh's save rewrites only the connector snapshots that changed: a live loop over a
fleet where few connectors change writes few rows, whatever the fleet's size. Every row is
still dated with the refresh that saw it."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from offsets.formats.config_records import ConnectorConfig
from offsets.formats.connectors import connector_from
from offsets.models import ConnectorSnapshot
from offsets.refresh import summaries
from offsets.refresh.results import SinkResults
from tests import factories

pytestmark = pytest.mark.django_db


def _connectors(changed: str = "") -> list:
    return [
        connector_from(
            name,
            ConnectorConfig(
                name=name,
                properties={
                    "connector.class": "FileStreamSource",
                    "x": changed if name == "c3" else "",
                },
                target_state="STARTED",
                task_count=1,
                task_configs={},
                deleted=False,
            ),
            None,
            worker_offsets_topic="connect-offsets",
        )
        for name in (f"c{n}" for n in range(10))
    ]


def _rows(cluster) -> dict[str, tuple]:
    return {
        name: (pk, updated)
        for name, pk, updated in ConnectorSnapshot.objects.filter(cluster=cluster).values_list(
            "name", "pk", "updated_at"
        )
    }


def test_only_the_changed_snapshots_are_written_again():
    cluster = factories.cluster()
    summaries.save_snapshots(cluster, _connectors(), SinkResults())
    first = _rows(cluster)
    with CaptureQueriesContext(connection) as unchanged:
        summaries.save_snapshots(cluster, _connectors(), SinkResults())
    assert not [q for q in unchanged.captured_queries if q["sql"].startswith("INSERT")]
    second = _rows(cluster)
    assert {name: pk for name, (pk, _) in second.items()} == {
        name: pk for name, (pk, _) in first.items()
    }
    assert all(second[name][1] > first[name][1] for name in first)  # dated anew

    summaries.save_snapshots(cluster, _connectors(changed="new"), SinkResults())
    third = _rows(cluster)
    moved = {name for name in third if third[name][0] != second[name][0]}
    assert moved == {"c3"}
    assert ConnectorSnapshot.objects.get(cluster=cluster, name="c3").config["x"] == "new"

    summaries.save_snapshots(cluster, _connectors(changed="new")[:9], SinkResults())
    assert "c9" not in _rows(cluster)
