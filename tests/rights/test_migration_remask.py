"""Migration 0014 masks what earlier versions stored with narrower rules."""

import pytest
from django.utils import timezone

from tests.support.migrations import migrate, migrate_to_latest

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("offsets", "0013_refreshrun_heartbeat")]
AFTER = [("offsets", "0014_remask_stored_text")]
URL = "jdbc:postgresql://db/app?user=app&password=OLD-SECRET-1"
TRACE = "java.sql.SQLException: login as scott/OLD-SECRET-2@db failed"


@pytest.fixture(autouse=True)
def _latest_schema_after():
    # The test moves the schema back and forth; the tests after it in this process need
    # every migration applied.
    yield
    migrate_to_latest()


def test_it_masks_configs_traces_examples_and_errors_stored_before():
    apps = migrate(BEFORE)
    cluster = apps.get_model("offsets", "Cluster").objects.create(
        name="old", bootstrap_servers="127.0.0.1:1"
    )
    run = apps.get_model("offsets", "RefreshRun").objects.create(
        cluster=cluster, started_at=timezone.now(), status="failed", error=f"cannot read {URL}"
    )
    apps.get_model("offsets", "ConnectorSnapshot").objects.create(
        cluster=cluster,
        name="jdbc",
        type="source",
        config={"connection.url": URL, "topic.prefix": "shop-", "connection.password": "********"},
        trace=TRACE,
        updated_at=timezone.now(),
    )
    apps.get_model("offsets", "MalformedCount").objects.create(
        cluster=cluster,
        topic="connect-configs",
        reason="value-not-json",
        count=1,
        example=f'key=connector-x value={{"url": "{URL}"',
    )

    apps = migrate(AFTER)

    snapshot = apps.get_model("offsets", "ConnectorSnapshot").objects.get(name="jdbc")
    example = apps.get_model("offsets", "MalformedCount").objects.get().example
    error = apps.get_model("offsets", "RefreshRun").objects.get(pk=run.pk).error
    stored = f"{snapshot.config} {snapshot.trace} {example} {error}"
    assert "OLD-SECRET" not in stored
    assert snapshot.config["topic.prefix"] == "shop-"
    assert (
        snapshot.config["connection.url"] == "jdbc:postgresql://db/app?user=app&password=********"
    )
    assert snapshot.trace == "java.sql.SQLException: login as scott/********@db failed"
