"""A broker that goes away in the middle of an apply: nothing written, the edit failed, audited."""

import time

import pytest

from devkit.demo import DemoOptions, build_demo
from devkit.demo_writer import write_demo
from devkit.embedded import EmbeddedKafka
from offsets.edits.apply import apply_edit
from offsets.edits.errors import EditStateConflict
from offsets.edits.live import LiveReader
from offsets.edits.reconcile import reconcile_edits
from offsets.kafka import groups
from offsets.kafka.errors import KafkaUnavailable
from offsets.models import AuditEvent, Cluster, OffsetEdit
from tests.support.broker_proxy import BrokerBehindProxy
from tests.support.connect_sim import stop_connector
from tests.support.demo_data import DELETED, DEMO_END_MS, EOS, EOS_TOPIC, S3, S3_GROUP
from tests.support.edit_steps import approved_eos_edit, approved_sink_edit
from tests.support.librdkafka_abort import in_child_process
from tests.support.offsets_reads import eos_records

pytestmark = pytest.mark.integration

SMALL_DEMO = DemoOptions(
    end_ms=DEMO_END_MS, hours=0.5, seed=3, source_partitions=2, data_records_per_hour=10
)


@pytest.fixture
def broker_behind_proxy(tmp_path):
    # A broker of its own: the test cuts every connection to it at the proxy.
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
    before = eos_records(kafka)

    # The lock check has passed and every record is handed to the producer: now the broker
    # goes away, just before the commit.
    def cut_after_a_moment():
        time.sleep(1)  # long enough for a producer that sent at once to have sent
        broker_behind_proxy.proxy.cut()

    edit = apply_edit(edit=edit, user=approver, before_commit=cut_after_a_moment)

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
    assert eos_records(kafka) == before


def test_a_broker_killed_mid_apply_fails_the_edit_with_a_complete_audit_trail(
    tmp_path, db, editor, approver, settings
):
    settings.KAFKA_WRITE_TIMEOUT = 3
    # A broker of its own: the test stops it in the middle of the apply.
    broker = EmbeddedKafka(tmp_path / "doomed-kafka")
    info = broker.start(worker=False)
    try:
        kafka = {"bootstrap.servers": info.bootstrap_servers}
        write_demo(kafka, build_demo(SMALL_DEMO))
        stop_connector(kafka, EOS)
        cluster = Cluster.objects.create(name="doomed", bootstrap_servers=info.bootstrap_servers)
        edit = approved_eos_edit(cluster, editor, approver)

        edit = apply_edit(edit=edit, user=approver, before_commit=broker.stop)
    finally:
        broker.stop()

    assert edit.state == OffsetEdit.State.FAILED
    assert "nothing was written" in edit.error
    assert list(
        AuditEvent.objects.filter(edit=edit).order_by("at", "id").values_list("action", flat=True)
    ) == ["staged", "submitted", "approved", "apply-started", "failed"]
    # The database says what happened; the edit cannot be applied again by accident.
    with pytest.raises(EditStateConflict):
        apply_edit(edit=edit, user=approver)


# --- The broker lost during the lock check, and during a sink's apply. -----------------------


def proxied_demo(broker, name="flaky"):
    kafka = {"bootstrap.servers": broker.bootstrap_servers}
    write_demo(kafka, build_demo(SMALL_DEMO))
    return kafka, Cluster.objects.create(name=name, bootstrap_servers=broker.bootstrap_servers)


def cut_before(monkeypatch, broker, owner, name, when=lambda *args, **kwargs: True):
    """Cut the proxy just before ``owner.name`` runs (when ``when`` says so), then run it."""
    original = getattr(owner, name)

    def cut_then_call(*args, **kwargs):
        if when(*args, **kwargs):
            broker.proxy.cut()
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, cut_then_call)


def actions(edit):
    return list(
        AuditEvent.objects.filter(edit=edit).order_by("at", "id").values_list("action", flat=True)
    )


def test_a_broker_lost_during_a_source_lock_check_writes_nothing_and_gives_the_edit_back(
    broker_behind_proxy, db, editor, approver, settings, monkeypatch
):
    settings.KAFKA_READ_TIMEOUT = 2
    kafka, cluster = proxied_demo(broker_behind_proxy)
    stop_connector(kafka, EOS)
    edit = approved_eos_edit(cluster, editor, approver)
    before = eos_records(kafka)
    # The check has read the config and status topics; the broker goes as it reads offsets.
    cut_before(
        monkeypatch,
        broker_behind_proxy,
        LiveReader,
        "records",
        when=lambda reader, topic: topic in (EOS_TOPIC, "connect-offsets"),
    )

    edit = apply_edit(edit=edit, user=approver)

    # Truthful: nothing was written, so the edit is approved again and can be applied later.
    assert edit.state == OffsetEdit.State.APPROVED
    assert edit.error.startswith("The lock check could not read the cluster:")
    assert actions(edit) == ["staged", "submitted", "approved", "apply-started", "apply-refused"]
    refused = AuditEvent.objects.get(edit=edit, action="apply-refused")
    assert refused.actor_name == "abe" and refused.details["error"] == edit.error
    monkeypatch.undo()
    broker_behind_proxy.proxy.restore()
    assert eos_records(kafka) == before
    # And it can be applied once the broker is back.
    assert apply_edit(edit=edit, user=approver).state == OffsetEdit.State.APPLIED


@in_child_process  # librdkafka#4605 may abort the process: see librdkafka_abort.py
def test_a_broker_lost_during_a_sink_lock_check_leaves_the_group_alone(
    broker_behind_proxy, db, editor, approver, settings, monkeypatch
):
    settings.KAFKA_READ_TIMEOUT = 2
    kafka, cluster = proxied_demo(broker_behind_proxy)
    stop_connector(kafka, S3, tasks=2)
    edit = approved_sink_edit(cluster, editor, approver)
    before = groups.committed_offsets(kafka, S3_GROUP, timeout=5)
    cut_before(monkeypatch, broker_behind_proxy, groups, "describe_group")

    edit = apply_edit(edit=edit, user=approver)

    assert edit.state == OffsetEdit.State.APPROVED
    assert edit.error.startswith("The lock check could not read the cluster:")
    assert actions(edit) == ["staged", "submitted", "approved", "apply-started", "apply-refused"]
    monkeypatch.undo()
    broker_behind_proxy.proxy.restore()
    assert groups.committed_offsets(kafka, S3_GROUP, timeout=5) == before


@in_child_process  # librdkafka#4605 may abort the process: see librdkafka_abort.py
def test_a_broker_lost_as_a_sink_edit_is_written_stays_in_doubt_until_reconciled(
    broker_behind_proxy, db, editor, approver, settings, monkeypatch
):
    settings.KAFKA_READ_TIMEOUT = 2
    settings.KAFKA_WRITE_TIMEOUT = 3
    kafka, cluster = proxied_demo(broker_behind_proxy)
    stop_connector(kafka, S3, tasks=2)
    edit = approved_sink_edit(cluster, editor, approver)
    before = groups.committed_offsets(kafka, S3_GROUP, timeout=5)
    cut_before(monkeypatch, broker_behind_proxy, groups, "alter_offsets")

    edit = apply_edit(edit=edit, user=approver)

    # The request may or may not have reached the coordinator, and the read-back failed too:
    # the edit says so instead of guessing.
    assert edit.state == OffsetEdit.State.APPLYING
    assert edit.error
    assert actions(edit) == ["staged", "submitted", "approved", "apply-started", "in-doubt"]
    in_doubt = AuditEvent.objects.get(edit=edit, action="in-doubt")
    assert in_doubt.details["read_back_error"]

    monkeypatch.undo()
    broker_behind_proxy.proxy.restore()
    (settled, error), *_ = reconcile_edits(cluster=cluster)
    assert error == "" and settled.pk == edit.pk
    edit.refresh_from_db()
    assert edit.state == OffsetEdit.State.FAILED
    assert actions(edit)[-1] == "reconciled"
    assert groups.committed_offsets(kafka, S3_GROUP, timeout=5) == before


def test_a_failure_between_the_two_steps_of_a_partial_sink_delete_fails_with_what_to_restore(
    fresh_demo, editor, approver, monkeypatch
):
    """Deleting some partitions' offsets deletes the group, then commits the others again.

    If the second step fails, the other partitions have lost their offsets: the edit must
    say "failed" and list what to restore, not read back its own partitions and say
    "applied".
    """
    kafka = fresh_demo.settings
    stop_connector(kafka, S3, tasks=2)
    edit = approved_sink_edit(
        fresh_demo.cluster,
        editor,
        approver,
        strategy="delete-offsets",
        partitions=(("payments", 2),),
    )
    before = groups.committed_offsets(kafka, S3_GROUP, timeout=5)
    others = {tp: offset for tp, offset in before.items() if tp != ("payments", 2)}
    assert others
    original_delete, original_alter = groups.delete_group, groups.alter_offsets
    steps = []

    def delete_group(*args, **kwargs):
        steps.append("delete")
        return original_delete(*args, **kwargs)

    def alter_offsets(*args, **kwargs):
        if steps == ["delete"]:
            raise KafkaUnavailable("injected: the coordinator is not available")
        return original_alter(*args, **kwargs)

    monkeypatch.setattr(groups, "delete_group", delete_group)
    monkeypatch.setattr(groups, "alter_offsets", alter_offsets)

    edit = apply_edit(edit=edit, user=approver)

    assert groups.committed_offsets(kafka, S3_GROUP, timeout=5) == {}  # the truth on the broker
    assert edit.state == OffsetEdit.State.FAILED
    assert "Commit these offsets to restore them" in edit.error
    for (topic, partition), offset in others.items():
        assert f"{topic}-{partition}={offset}" in edit.error
    failed = AuditEvent.objects.get(edit=edit, action="failed")
    assert failed.details["committed"] == "partial"
    assert failed.details["restore"] == {f"{t}-{p}": o for (t, p), o in sorted(others.items())}


def partial_delete_whose_second_step_answers_badly(fresh_demo, editor, approver, monkeypatch, land):
    """A partial sink delete whose re-commit commits ``land(keep)`` and then reports an error.

    Returns the edit after the apply and the other partitions' offsets read before it.
    """
    kafka = fresh_demo.settings
    stop_connector(kafka, S3, tasks=2)
    edit = approved_sink_edit(
        fresh_demo.cluster, editor, approver, strategy="delete-offsets", partitions=(DELETED,)
    )
    before = groups.committed_offsets(kafka, S3_GROUP, timeout=5)
    others = {tp: offset for tp, offset in before.items() if tp != DELETED}
    original_alter = groups.alter_offsets

    def alter_offsets(settings, group, offsets, **kwargs):
        original_alter(settings, group, land(offsets), **kwargs)
        raise KafkaUnavailable("injected: the answer was lost")

    monkeypatch.setattr(groups, "alter_offsets", alter_offsets)
    return apply_edit(edit=edit, user=approver), others


def test_a_partial_sink_delete_whose_lost_answer_hid_a_full_recommit_is_applied(
    fresh_demo, editor, approver, monkeypatch
):
    edit, others = partial_delete_whose_second_step_answers_badly(
        fresh_demo, editor, approver, monkeypatch, land=lambda keep: keep
    )

    assert edit.state == OffsetEdit.State.APPLIED, edit.error
    assert groups.committed_offsets(fresh_demo.settings, S3_GROUP, timeout=5) == others
    applied = AuditEvent.objects.get(edit=edit, action="applied")
    assert applied.details["second_step_error"]  # what the second step reported
    assert applied.details["verified"] is True


def test_a_partial_sink_delete_whose_recommit_half_landed_fails_naming_only_what_is_missing(
    fresh_demo, editor, approver, monkeypatch
):
    def first_half(keep):
        return dict(sorted(keep.items())[: len(keep) // 2])

    edit, others = partial_delete_whose_second_step_answers_badly(
        fresh_demo, editor, approver, monkeypatch, land=first_half
    )

    back = groups.committed_offsets(fresh_demo.settings, S3_GROUP, timeout=5)
    assert back == first_half(others) and back  # the truth on the broker
    missing = {tp: o for tp, o in others.items() if tp not in back}
    assert edit.state == OffsetEdit.State.FAILED
    listed = ", ".join(f"{t}-{p}={o}" for (t, p), o in sorted(missing.items()))
    assert f"Commit these offsets to restore them: {listed}" in edit.error
    failed = AuditEvent.objects.get(edit=edit, action="failed")
    assert failed.details["committed"] == "partial"
    assert failed.details["restore"] == {f"{t}-{p}": o for (t, p), o in sorted(missing.items())}
