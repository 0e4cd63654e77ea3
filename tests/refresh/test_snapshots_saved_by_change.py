"""A refresh's save rewrites only the connector snapshots that changed: a live loop over a
fleet where few connectors change writes few rows, whatever the fleet's size. Every row is
still dated with the refresh that saw it."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from offsets.domain.connectors import connector_from
from offsets.formats.config_records import ConnectorConfig
from offsets.models import ConnectorSnapshot
from offsets.refresh import summaries
from offsets.refresh.results import SinkResults
from tests.support import factories

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

    with CaptureQueriesContext(connection) as one_changed:
        summaries.save_snapshots(cluster, _connectors(changed="new"), SinkResults())
    # Updated in place, in the fields that changed: no row deleted or inserted.
    assert not [
        q for q in one_changed.captured_queries if q["sql"].startswith(("INSERT", "DELETE"))
    ]
    assert {name: pk for name, (pk, _) in _rows(cluster).items()} == {
        name: pk for name, (pk, _) in first.items()
    }
    # And it says what a snapshot written whole says.
    fresh = factories.cluster("fresh")
    summaries.save_snapshots(fresh, _connectors(changed="new"), SinkResults())
    assert _said(cluster) == _said(fresh)
    assert ConnectorSnapshot.objects.get(cluster=cluster, name="c3").config["x"] == "new"

    summaries.save_snapshots(cluster, _connectors(changed="new")[:9], SinkResults())
    assert "c9" not in _rows(cluster)


def _said(cluster) -> list[tuple]:
    fields = [
        f.attname
        for f in ConnectorSnapshot._meta.concrete_fields
        if f.name not in ("id", "cluster", "updated_at")
    ]
    return sorted(ConnectorSnapshot.objects.filter(cluster=cluster).values_list(*fields))


def test_a_row_another_save_wrote_is_written_whole():
    cluster = factories.cluster()
    summaries.save_snapshots(cluster, _connectors(), SinkResults())
    # As another process's save would leave it: a digest this process never said.
    ConnectorSnapshot.objects.filter(cluster=cluster, name="c5").update(
        fingerprint="another", config={}, partitions=7
    )
    summaries.save_snapshots(cluster, _connectors(), SinkResults())
    fresh = factories.cluster("fresh")
    summaries.save_snapshots(fresh, _connectors(), SinkResults())
    assert _said(cluster) == _said(fresh)
