"""A broker that goes away in the middle of an apply: nothing written, the edit failed, audited."""

import time

import pytest

from offsets.demo import DemoOptions, build_demo
from offsets.demo_writer import write_demo
from offsets.formats import jackson
from offsets.kafka import client
from offsets.kafka.embedded import EmbeddedKafka
from offsets.models import AuditEvent, Cluster, OffsetEdit
from offsets.services import edits
from offsets.services.edits import StageRequest
from tests.conftest import DEMO_END_MS
from tests.integration.broker_proxy import BrokerBehindProxy
from tests.integration.connect_sim import stop_connector

pytestmark = pytest.mark.integration

EOS = "orders-cdc-eos"
EOS_TOPIC = "connect-offsets-orders-cdc-eos"
EOS_KEY = jackson.dumps_key(EOS, {"server": "orders-db"})
SMALL_DEMO = DemoOptions(
    end_ms=DEMO_END_MS, hours=0.5, seed=3, source_partitions=2, data_records_per_hour=10
)


def snapshot(settings):
    """Every record of both offsets topics, for both isolation levels."""
    fast = {**settings, "fetch.wait.max.ms": 10}
    return {
        (topic, level): [
            (r.partition, r.offset, r.key, r.value)
            for r in client.read_topic(fast, topic, isolation_level=level, timeout=5, batch_size=1)
        ]
        for topic in (EOS_TOPIC, "connect-offsets")
        for level in ("read_committed", "read_uncommitted")
    }


def approved_eos_edit(cluster, editor, approver):
    edit = edits.stage_edit(
        cluster=cluster,
        connector=EOS,
        user=editor,
        request=StageRequest(strategy="set", partition={"server": "orders-db"}, offset={"lsn": 1}),
    )
    edits.submit_edit(edit=edit, user=editor)
    return edits.approve_edit(edit=edit, user=approver)


@pytest.fixture
def broker_behind_proxy(tmp_path):
    broker = BrokerBehindProxy(tmp_path / "proxied-kafka")
    broker.start()
    yield broker
    broker.stop()


def test_a_broker_unreachable_mid_apply_leaves_nothing_written_and_the_edit_failed(
    broker_behind_proxy, db, editor, approver, settings
):
    settings.KAFKA_WRITE_TIMEOUT = 3
    kafka = {"bootstrap.servers": broker_behind_proxy.bootstrap_servers}
    write_demo(kafka, build_demo(SMALL_DEMO))
    stop_connector(kafka, EOS)
    cluster = Cluster.objects.create(
        name="flaky", bootstrap_servers=broker_behind_proxy.bootstrap_servers
    )
    edit = approved_eos_edit(cluster, editor, approver)
    before = snapshot(kafka)

    # The lock check has passed and every record is handed to the producer: now the broker
    # goes away, just before the commit.
    def cut_after_a_moment():
        time.sleep(1)  # long enough for a producer that sent at once to have sent
        broker_behind_proxy.proxy.cut()

    edit = edits.apply_edit(edit=edit, user=approver, before_commit=cut_after_a_moment)

    assert edit.state == OffsetEdit.State.FAILED
    assert "nothing was written" in edit.error
    events = list(AuditEvent.objects.filter(edit=edit).order_by("at", "id"))
    assert [e.action for e in events] == [
        "staged",
        "submitted",
        "approved",
        "apply-started",
        "failed",
    ]
    failed = events[-1]
    assert failed.actor_name == "abe" and failed.details["committed"] is False
    assert failed.details["changes"][0]["after"] == {"lsn": 1}
    assert all(check["passed"] for check in failed.details["checks"])

    # The broker comes back: not one record of the edit reached it, under either isolation.
    broker_behind_proxy.proxy.restore()
    assert snapshot(kafka) == before


def test_a_broker_killed_mid_apply_fails_the_edit_with_a_complete_audit_trail(
    tmp_path, db, editor, approver, settings
):
    settings.KAFKA_WRITE_TIMEOUT = 3
    broker = EmbeddedKafka(tmp_path / "doomed-kafka")
    info = broker.start()
    try:
        kafka = {"bootstrap.servers": info.bootstrap_servers}
        write_demo(kafka, build_demo(SMALL_DEMO))
        stop_connector(kafka, EOS)
        cluster = Cluster.objects.create(name="doomed", bootstrap_servers=info.bootstrap_servers)
        edit = approved_eos_edit(cluster, editor, approver)

        edit = edits.apply_edit(edit=edit, user=approver, before_commit=broker.stop)
    finally:
        broker.stop()

    assert edit.state == OffsetEdit.State.FAILED
    assert "nothing was written" in edit.error
    assert list(
        AuditEvent.objects.filter(edit=edit).order_by("at", "id").values_list("action", flat=True)
    ) == ["staged", "submitted", "approved", "apply-started", "failed"]
    # The database says what happened; the edit cannot be applied again by accident.
    with pytest.raises(edits.EditStateConflict):
        edits.apply_edit(edit=edit, user=approver)
