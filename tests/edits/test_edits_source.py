"""Source connector edits against the embedded broker: every strategy, the lock check, apply."""

import time
from datetime import UTC, datetime

import pytest

from offsets.domain.edits import offsets_as_of, runtime_view
from offsets.edits.apply import apply_edit
from offsets.edits.errors import EditInputError, EditStateConflict
from offsets.formats import jackson
from offsets.formats.murmur2 import java_partition
from offsets.kafka import reading
from offsets.models import AuditEvent, OffsetEdit
from tests.support.connect_sim import commit_source_offset, resume_connector, stop_connector
from tests.support.demo_data import AUDIT, AUDIT_KEY, AUDIT_PARTITION, EOS, EOS_KEY, EOS_TOPIC
from tests.support.edit_steps import approve, stage
from tests.support.offsets_reads import latest

pytestmark = pytest.mark.integration


def records(settings, topic, isolation_level="read_committed"):
    fast = {**settings, "fetch.wait.max.ms": 10}
    return list(
        reading.read_topic(fast, topic, isolation_level=isolation_level, timeout=5, batch_size=1)
    )


def values(view):
    return {key: record.value_bytes for key, record in view.items()}


def test_setting_an_offset_writes_the_exact_key_on_the_java_partition_and_nothing_else(
    fresh_demo, editor, approver
):
    settings = fresh_demo.settings
    before = values(latest(settings, "connect-offsets"))
    edit = stage(
        fresh_demo.cluster,
        AUDIT,
        editor,
        strategy="set",
        partition=AUDIT_PARTITION,
        offset={"position": 7},
    )
    (change,) = edit.changes.all()
    assert bytes(change.key_bytes) == AUDIT_KEY
    assert bytes(change.before_bytes) == before[AUDIT_KEY]
    assert edit.primary_topic == "connect-offsets" and edit.mirror_topic == ""

    approve(edit, editor, approver)
    edit = apply_edit(edit=edit, user=approver, comment="go")

    assert edit.state == OffsetEdit.State.APPLIED, edit.error
    assert [c["name"] for c in edit.lock_checks] == [
        "connector-stopped",
        "nothing-moved",
        "single-apply",
    ]
    assert all(c["passed"] for c in edit.lock_checks)
    # Read back like the runtime: exactly the edited offset changed.
    after = values(latest(settings, "connect-offsets"))
    assert after == {**before, AUDIT_KEY: b'{"position":7}'}
    written = [r for r in records(settings, "connect-offsets") if r.key == AUDIT_KEY][-1]
    assert written.value == b'{"position":7}'
    assert written.partition == java_partition(AUDIT_KEY, 25)
    # The audit log has every step, and the final entry has the before and after values.
    actions = list(
        AuditEvent.objects.filter(edit=edit).order_by("at", "id").values_list("action", flat=True)
    )
    assert actions == ["staged", "submitted", "approved", "apply-started", "applied"]
    applied = AuditEvent.objects.get(edit=edit, action="applied")
    assert applied.actor_name == "abe"
    (detail,) = applied.details["changes"]
    assert detail["before"] == jackson.loads(before[AUDIT_KEY])
    assert detail["after"] == {"position": 7}
    assert applied.details["verified"] is True


def test_adding_a_partition_writes_jackson_key_bytes_in_the_order_given(
    fresh_demo, editor, approver
):
    partition = {"filename": "/var/log/app/audit-ü.log", "shard": 2}
    edit = stage(
        fresh_demo.cluster, AUDIT, editor, strategy="add", partition=partition, offset={"pos": 0}
    )
    (change,) = edit.changes.all()
    expected_key = '["file-source-audit",{"filename":"/var/log/app/audit-ü.log","shard":2}]'
    assert bytes(change.key_bytes) == expected_key.encode()
    assert change.is_new

    approve(edit, editor, approver)
    edit = apply_edit(edit=edit, user=approver)

    assert edit.state == "applied", edit.error
    view = latest(fresh_demo.settings, "connect-offsets")
    assert view[expected_key.encode()].value_bytes == b'{"pos":0}'


def test_adding_a_partition_that_exists_or_setting_one_that_does_not_is_refused(fresh_demo, editor):
    with pytest.raises(EditInputError) as error:
        stage(
            fresh_demo.cluster,
            AUDIT,
            editor,
            strategy="add",
            partition=AUDIT_PARTITION,
            offset={"a": 1},
        )
    assert error.value.field == "partition" and "use 'set'" in error.value.message
    with pytest.raises(EditInputError) as error:
        stage(
            fresh_demo.cluster,
            AUDIT,
            editor,
            strategy="set",
            partition={"filename": "x"},
            offset={"a": 1},
        )
    assert "use 'add'" in error.value.message
    assert not OffsetEdit.objects.exists()


def test_deleting_a_partition_writes_a_tombstone_the_runtime_reads_as_no_offset(
    fresh_demo, editor, approver
):
    edit = stage(fresh_demo.cluster, AUDIT, editor, strategy="delete", partition=AUDIT_PARTITION)
    (change,) = edit.changes.all()
    assert change.is_delete and change.after_bytes is None

    approve(edit, editor, approver)
    edit = apply_edit(edit=edit, user=approver)

    assert edit.state == "applied", edit.error
    assert AUDIT_KEY not in latest(fresh_demo.settings, "connect-offsets")
    last = [r for r in records(fresh_demo.settings, "connect-offsets") if r.key == AUDIT_KEY][-1]
    assert last.value is None and last.partition == java_partition(AUDIT_KEY, 25)


def test_restoring_to_a_time_brings_every_partition_back_to_its_value_then(
    fresh_demo, editor, approver
):
    settings = fresh_demo.settings
    connector = "jdbc-source-inventory"
    stop_connector(settings, connector, tasks=2)
    history = [(r.key, r.value, r.timestamp_ms) for r in records(settings, "connect-offsets")]
    options = fresh_demo.demo.options
    at_ms = options.start_ms + (options.end_ms - options.start_ms) // 2
    expected = values(runtime_view(connector, offsets_as_of(history, at_ms)))
    assert expected and expected != values(
        runtime_view(connector, latest(settings, "connect-offsets"))
    )

    edit = stage(
        fresh_demo.cluster,
        connector,
        editor,
        strategy="restore",
        at=datetime.fromtimestamp(at_ms / 1000, tz=UTC),
    )
    assert edit.changes.count() >= 1
    approve(edit, editor, approver)
    edit = apply_edit(edit=edit, user=approver)

    assert edit.state == "applied", edit.error
    now = values(runtime_view(connector, latest(settings, "connect-offsets")))
    assert now == expected


def test_an_own_topic_connector_is_written_in_its_topic_and_mirrored_in_one_transaction(
    fresh_demo, editor, approver
):
    settings = fresh_demo.settings
    stop_connector(settings, EOS)
    edit = stage(
        fresh_demo.cluster,
        EOS,
        editor,
        strategy="set",
        partition={"server": "orders-db"},
        offset={"lsn": 1, "txId": 2},
    )
    assert edit.primary_topic == EOS_TOPIC and edit.mirror_topic == "connect-offsets"
    assert any("own offsets topic" in warning for warning in edit.warnings)
    approve(edit, editor, approver)
    edit = apply_edit(edit=edit, user=approver)

    assert edit.state == "applied", edit.error
    for topic in (EOS_TOPIC, "connect-offsets"):
        assert latest(settings, topic)[EOS_KEY].value_bytes == b'{"lsn":1,"txId":2}'
        last = [r for r in records(settings, topic) if r.key == EOS_KEY][-1]
        assert last.partition == java_partition(EOS_KEY, 25)


def test_deleting_an_own_topic_partition_tombstones_both_topics_so_it_stays_deleted(
    fresh_demo, editor, approver
):
    settings = fresh_demo.settings
    stop_connector(settings, EOS)
    edit = stage(
        fresh_demo.cluster, EOS, editor, strategy="delete", partition={"server": "orders-db"}
    )
    approve(edit, editor, approver)
    edit = apply_edit(edit=edit, user=approver)

    assert edit.state == "applied", edit.error
    own, worker = latest(settings, EOS_TOPIC), latest(settings, "connect-offsets")
    assert EOS_KEY not in own and EOS_KEY not in worker
    assert EOS_KEY not in runtime_view(EOS, worker, own)


def test_a_running_connector_fails_the_lock_check_and_nothing_is_written(
    fresh_demo, editor, approver
):
    connector = "file-source-app-logs"  # RUNNING in the demo
    partition = {"filename": "/var/log/app/events.log"}
    edit = stage(
        fresh_demo.cluster,
        connector,
        editor,
        strategy="set",
        partition=partition,
        offset={"position": 1},
    )
    assert any("stop it before applying" in warning for warning in edit.warnings)
    approve(edit, editor, approver)
    count = len(records(fresh_demo.settings, "connect-offsets"))

    edit = apply_edit(edit=edit, user=approver)

    # Refused: back to approved, so it can be applied once the connector is stopped.
    assert edit.state == OffsetEdit.State.APPROVED
    checks = {c["name"]: c for c in edit.lock_checks}
    assert not checks["connector-stopped"]["passed"]
    assert "RUNNING" in checks["connector-stopped"]["message"]
    assert len(records(fresh_demo.settings, "connect-offsets")) == count
    assert AuditEvent.objects.filter(edit=edit, action="apply-refused").count() == 1

    stop_connector(fresh_demo.settings, connector)
    edit = apply_edit(edit=edit, user=approver)
    assert edit.state == "applied", edit.error


def test_a_paused_connector_is_not_stopped_enough(fresh_demo, editor, approver):
    connector = "http-source-metrics"  # PAUSED in the demo
    view = runtime_view(connector, latest(fresh_demo.settings, "connect-offsets"))
    partition = next(iter(view.values())).partition
    edit = stage(
        fresh_demo.cluster, connector, editor, strategy="set", partition=partition, offset={"c": 1}
    )
    approve(edit, editor, approver)
    edit = apply_edit(edit=edit, user=approver)
    assert edit.state == "approved"
    assert "PAUSED is not enough" in edit.error


def test_a_connector_resumed_after_approval_is_caught_at_apply(fresh_demo, editor, approver):
    edit = stage(
        fresh_demo.cluster,
        AUDIT,
        editor,
        strategy="set",
        partition=AUDIT_PARTITION,
        offset={"p": 1},
    )
    approve(edit, editor, approver)
    resume_connector(fresh_demo.settings, AUDIT)
    edit = apply_edit(edit=edit, user=approver)
    assert edit.state == "approved"
    assert not {c["name"]: c for c in edit.lock_checks}["connector-stopped"]["passed"]


def test_offsets_moved_after_staging_make_the_edit_a_conflict_and_nothing_is_written(
    fresh_demo, editor, approver
):
    settings = fresh_demo.settings
    edit = stage(
        fresh_demo.cluster,
        AUDIT,
        editor,
        strategy="set",
        partition=AUDIT_PARTITION,
        offset={"p": 1},
    )
    approve(edit, editor, approver)
    # A task (or another tool) commits a new offset after the diff was made.
    commit_source_offset(settings, "connect-offsets", AUDIT_KEY, b'{"position":999}')

    edit = apply_edit(edit=edit, user=approver)

    assert edit.state == OffsetEdit.State.CONFLICT
    checks = {c["name"]: c for c in edit.lock_checks}
    assert checks["connector-stopped"]["passed"]
    assert not checks["nothing-moved"]["passed"]
    assert '{"position":999} now' in checks["nothing-moved"]["message"]
    assert latest(settings, "connect-offsets")[AUDIT_KEY].value_bytes == b'{"position":999}'
    assert AuditEvent.objects.filter(edit=edit, action="conflict").count() == 1
    with pytest.raises(EditStateConflict):
        apply_edit(edit=edit, user=approver)


def test_a_failure_before_the_commit_writes_nothing_at_all(fresh_demo, editor, approver):
    settings = fresh_demo.settings
    stop_connector(settings, EOS)
    edit = stage(
        fresh_demo.cluster,
        EOS,
        editor,
        strategy="set",
        partition={"server": "orders-db"},
        offset={"lsn": 5},
    )
    approve(edit, editor, approver)
    before = {
        (topic, level): [(r.partition, r.offset) for r in records(settings, topic, level)]
        for topic in (EOS_TOPIC, "connect-offsets")
        for level in ("read_committed", "read_uncommitted")
    }

    def fail_before_commit():
        # A moment passes between handing the records over and the failure: long enough for
        # a producer that sent records at once to have sent them.
        time.sleep(1)
        raise RuntimeError("simulated failure after producing, before the commit")

    edit = apply_edit(edit=edit, user=approver, before_commit=fail_before_commit)

    assert edit.state == OffsetEdit.State.FAILED
    assert "simulated failure" in edit.error and "nothing was committed" in edit.error
    # Not even read_uncommitted readers (workers without exactly-once) see a record: the
    # records were still in the client when the transaction was aborted.
    after = {
        (topic, level): [(r.partition, r.offset) for r in records(settings, topic, level)]
        for topic in (EOS_TOPIC, "connect-offsets")
        for level in ("read_committed", "read_uncommitted")
    }
    assert after == before
    failed = AuditEvent.objects.get(edit=edit, action="failed")
    assert failed.details["committed"] is False
    assert failed.details["changes"][0]["after"] == {"lsn": 5}


def test_a_drifted_partition_is_changed_under_every_byte_form(fresh_demo, editor, approver):
    connector = "http-source-metrics"  # its partition key drifted between two byte forms
    settings = fresh_demo.settings
    view = runtime_view(connector, latest(settings, "connect-offsets"))
    forms = {record.key_bytes for record in view.values()}
    assert len(forms) == 2
    partition = next(iter(view.values())).partition
    edit = stage(
        fresh_demo.cluster, connector, editor, strategy="set", partition=partition, offset={"c": 2}
    )
    assert {bytes(c.key_bytes) for c in edit.changes.all()} == forms
    assert all("Key drift" in c.warnings[0] for c in edit.changes.all())
    stop_connector(settings, connector)
    approve(edit, editor, approver)
    assert apply_edit(edit=edit, user=approver).state == "applied"
    after = runtime_view(connector, latest(settings, "connect-offsets"))
    assert {key: r.value_bytes for key, r in after.items()} == dict.fromkeys(forms, b'{"c":2}')


def test_a_deleted_connectors_remaining_offsets_can_be_edited_with_a_warning(
    fresh_demo, editor, approver
):
    connector = "legacy-inventory-source"  # deleted; its offsets remain
    edit = stage(
        fresh_demo.cluster, connector, editor, strategy="delete", partition={"table": "stock"}
    )
    assert any("connector is deleted" in w for w in edit.warnings)
    approve(edit, editor, approver)
    edit = apply_edit(edit=edit, user=approver)
    assert edit.state == "applied", edit.error
    assert "is deleted" in edit.lock_checks[0]["message"]
    view = runtime_view(connector, latest(fresh_demo.settings, "connect-offsets"))
    assert [r.partition for r in view.values()] == [{"table": "locations"}]


def test_a_mirrormaker2_edit_warns_what_it_does_not_change(fresh_demo, editor):
    connector = "mm2-us-east-source"
    view = runtime_view(connector, latest(fresh_demo.settings, "connect-offsets"))
    partition = next(iter(view.values())).partition
    edit = stage(
        fresh_demo.cluster,
        connector,
        editor,
        strategy="set",
        partition=partition,
        offset={"offset": 1},
    )
    assert any("MirrorMaker 2" in w for w in edit.warnings)
    assert any("stop it before applying" in w for w in edit.warnings)
    # The key keeps MirrorMaker's HashMap field order, byte for byte.
    (change,) = edit.changes.all()
    assert bytes(change.key_bytes) in view
