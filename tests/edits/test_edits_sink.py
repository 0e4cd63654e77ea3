"""Sink connector edits against the embedded broker: every strategy, clamping, the group check."""

import time
from datetime import UTC, datetime, timedelta

import pytest
from confluent_kafka import Consumer

from offsets.edits.apply import apply_edit
from offsets.edits.errors import EditInputError
from offsets.edits.review import approve_edit, submit_edit
from offsets.edits.workflow import OffsetChange, StageRequest, stage
from offsets.kafka import admin, groups, reading
from offsets.models import AuditEvent, OffsetEdit
from tests.support.connect_sim import stop_connector
from tests.support.demo_data import S3, S3_GROUP
from tests.support.edit_steps import stage_approve_apply
from tests.support.offsets_reads import committed

pytestmark = pytest.mark.integration


@pytest.fixture
def stopped_s3(fresh_demo):
    stop_connector(fresh_demo.settings, S3, tasks=2)
    return fresh_demo


def log_ends(fresh_demo):
    """Each data partition's end: the demo writes one record per batch, so it is exact."""
    return {
        (topic.name, partition): len(stamps)
        for topic in fresh_demo.demo.data_topics
        for partition, stamps in enumerate(topic.timestamps)
    }


def test_to_earliest_resets_every_partition_of_the_sinks_topics(stopped_s3, editor, approver):
    edit = stage_approve_apply(stopped_s3.cluster, S3, editor, approver, strategy="earliest")
    assert edit.state == OffsetEdit.State.APPLIED, edit.error
    expected = {("orders", p): 0 for p in range(6)} | {("payments", p): 0 for p in range(3)}
    assert committed(stopped_s3) == expected
    assert [c["name"] for c in edit.lock_checks] == [
        "connector-stopped",
        "group-inactive",
        "nothing-moved",
        "single-apply",
    ]


def test_to_latest_sets_each_partition_to_its_log_end(stopped_s3, editor, approver):
    edit = stage_approve_apply(stopped_s3.cluster, S3, editor, approver, strategy="latest")
    assert edit.state == "applied", edit.error
    ends = log_ends(stopped_s3)
    assert committed(stopped_s3) == {tp: ends[tp] for tp in committed(stopped_s3)}
    assert len(committed(stopped_s3)) == 9


def test_an_offset_outside_the_log_is_clamped_with_a_visible_warning(stopped_s3, editor, approver):
    ends = log_ends(stopped_s3)
    # A partition the sink has not read to the end, so "the end" is a change.
    tp = next(tp for tp, offset in sorted(committed(stopped_s3).items()) if offset < ends[tp])
    edit = stage(
        cluster=stopped_s3.cluster,
        connector=S3,
        user=editor,
        change=OffsetChange(StageRequest(strategy="offset", value=10**9, partitions=(tp,))),
    )
    (change,) = edit.changes.all()
    assert change.after == {"kafka_offset": ends[tp]}
    assert "beyond the log end" in change.warnings[0] and "clamped" in change.warnings[0]
    submit_edit(edit=edit, user=editor)
    approve_edit(edit=edit, user=approver)
    edit = apply_edit(edit=edit, user=approver)
    assert edit.state == "applied", edit.error
    assert committed(stopped_s3)[tp] == ends[tp]


def test_shifting_moves_the_committed_offsets_by_n(stopped_s3, editor, approver):
    before = committed(stopped_s3)
    edit = stage_approve_apply(
        stopped_s3.cluster,
        S3,
        editor,
        approver,
        strategy="shift",
        value=-3,
        partitions=(("orders", 0),),
    )
    assert edit.state == "applied", edit.error
    after = committed(stopped_s3)
    assert after[("orders", 0)] == before[("orders", 0)] - 3
    assert {tp: o for tp, o in after.items() if tp != ("orders", 0)} == {
        tp: o for tp, o in before.items() if tp != ("orders", 0)
    }


def test_a_date_time_before_every_record_resets_to_the_log_start(stopped_s3, editor, approver):
    options = stopped_s3.demo.options
    before_everything = datetime.fromtimestamp(options.start_ms / 1000 - 3600, tz=UTC)
    edit = stage_approve_apply(
        stopped_s3.cluster,
        S3,
        editor,
        approver,
        strategy="datetime",
        at=before_everything,
        partitions=(("orders", 2),),
    )
    assert edit.state == "applied", edit.error
    assert committed(stopped_s3)[("orders", 2)] == 0


def test_a_date_time_in_the_middle_goes_to_the_first_record_at_or_after_it(
    stopped_s3, editor, approver
):
    options = stopped_s3.demo.options
    middle_ms = (options.start_ms + options.end_ms) // 2
    middle = datetime.fromtimestamp(middle_ms / 1000, tz=UTC)
    edit = stage_approve_apply(
        stopped_s3.cluster,
        S3,
        editor,
        approver,
        strategy="datetime",
        at=middle,
        partitions=(("orders", 2),),
    )
    assert edit.state == "applied", edit.error
    target = committed(stopped_s3)[("orders", 2)]
    records = sorted(
        (record.offset, record.timestamp_ms)
        for record in reading.read_topic(stopped_s3.settings, "orders", timeout=5)
        if record.partition == 2
    )
    # Apache Kafka's answer: the first record whose timestamp is at or after the time.
    assert target == next(offset for offset, stamp in records if stamp >= middle_ms)
    assert records[0][0] < target <= records[-1][0]


def test_a_date_time_the_broker_answers_wrongly_for_is_caught_and_nothing_is_staged(
    stopped_s3, editor, monkeypatch
):
    # What some Kafka-compatible brokers answer: offset 0 for any time. The record at 0 is
    # older than the time asked for, so the answer cannot be trusted.
    monkeypatch.setattr(
        admin, "offsets_for_times", lambda kafka, times, **kw: dict.fromkeys(times, 0)
    )
    options = stopped_s3.demo.options
    middle = datetime.fromtimestamp((options.start_ms + options.end_ms) / 2000, tz=UTC)
    with pytest.raises(EditInputError) as error:
        stage(
            cluster=stopped_s3.cluster,
            connector=S3,
            user=editor,
            change=OffsetChange(
                StageRequest(strategy="datetime", at=middle, partitions=(("orders", 2),))
            ),
        )
    assert error.value.field == "at"
    assert "broker answered offset 0" in error.value.message
    assert "cannot be trusted" in error.value.message
    assert not OffsetEdit.objects.exists()


def test_a_duration_reaching_before_every_record_resets_to_the_start_and_a_short_one_is_checked(
    stopped_s3, editor, approver, monkeypatch
):
    long_ago = timedelta(days=365 * 20)
    edit = stage_approve_apply(
        stopped_s3.cluster,
        S3,
        editor,
        approver,
        strategy="duration",
        duration=long_ago,
        partitions=(("payments", 1),),
    )
    assert edit.state == "applied", edit.error
    assert committed(stopped_s3)[("payments", 1)] == 0
    # "One minute ago" is after the record at offset 0, so offset 0 cannot be the answer; a
    # broker that answers 0 anyway is refused.
    with monkeypatch.context() as patch:
        patch.setattr(
            admin, "offsets_for_times", lambda kafka, times, **kw: dict.fromkeys(times, 0)
        )
        with pytest.raises(EditInputError) as error:
            stage(
                cluster=stopped_s3.cluster,
                connector=S3,
                user=editor,
                change=OffsetChange(
                    StageRequest(
                        strategy="duration",
                        duration=timedelta(minutes=1),
                        partitions=(("payments", 1),),
                    )
                ),
            )
    assert error.value.field == "duration"


def test_copying_from_another_group_takes_its_offsets_and_skips_what_it_lacks(
    stopped_s3, editor, approver
):
    groups.alter_offsets(stopped_s3.settings, "replay-orders", {("orders", 0): 1, ("orders", 3): 2})
    before = committed(stopped_s3)
    edit = stage(
        cluster=stopped_s3.cluster,
        connector=S3,
        user=editor,
        change=OffsetChange(StageRequest(strategy="copy-group", group="replay-orders")),
    )
    assert {(c.topic, c.kafka_partition) for c in edit.changes.all()} == {
        ("orders", 0),
        ("orders", 3),
    }
    submit_edit(edit=edit, user=editor)
    approve_edit(edit=edit, user=approver)
    edit = apply_edit(edit=edit, user=approver)
    assert edit.state == "applied", edit.error
    assert committed(stopped_s3) == {**before, ("orders", 0): 1, ("orders", 3): 2}


def test_copying_from_a_group_without_offsets_is_refused(stopped_s3, editor):
    with pytest.raises(EditInputError) as error:
        stage(
            cluster=stopped_s3.cluster,
            connector=S3,
            user=editor,
            change=OffsetChange(StageRequest(strategy="copy-group", group="no-such-group")),
        )
    assert error.value.field == "group"


def test_deleting_some_partitions_offsets_warns_it_is_not_atomic_and_keeps_the_others(
    stopped_s3, editor, approver
):
    before = committed(stopped_s3)
    edit = stage(
        cluster=stopped_s3.cluster,
        connector=S3,
        user=editor,
        change=OffsetChange(StageRequest(strategy="delete-offsets", partitions=(("payments", 2),))),
    )
    assert any("not one atomic write" in w for w in edit.warnings)
    submit_edit(edit=edit, user=editor)
    approve_edit(edit=edit, user=approver)
    edit = apply_edit(edit=edit, user=approver)
    assert edit.state == "applied", edit.error
    after = committed(stopped_s3)
    assert ("payments", 2) not in after
    assert after == {tp: o for tp, o in before.items() if tp != ("payments", 2)}
    # What had to come back was stored on the edit, and verified on the whole group.
    assert edit.sink_keep == [[t, p, o] for (t, p), o in sorted(after.items())]
    applied = AuditEvent.objects.get(edit=edit, action="applied")
    assert f"Every kept partition ({len(after)}) is back" in applied.details["verification"]


def test_deleting_every_partitions_offsets_deletes_the_group(stopped_s3, editor, approver):
    edit = stage_approve_apply(stopped_s3.cluster, S3, editor, approver, strategy="delete-offsets")
    assert edit.state == "applied", edit.error
    assert not any("atomic" in w for w in edit.warnings)
    assert committed(stopped_s3) == {}


def test_a_sink_with_topics_regex_covers_the_matching_topics(fresh_demo, editor):
    edit = stage(
        cluster=fresh_demo.cluster,
        connector="jdbc-sink-audit",  # topics.regex audit-.*
        user=editor,
        change=OffsetChange(StageRequest(strategy="earliest")),
    )
    assert {c.topic for c in edit.changes.all()} == {"audit-events"}


def test_an_edit_of_a_group_without_commits_warns_it_may_not_be_where_the_sink_resumes(
    fresh_demo, editor
):
    edit = stage(
        cluster=fresh_demo.cluster,
        connector="bq-sink-events",
        user=editor,
        change=OffsetChange(StageRequest(strategy="latest")),
    )
    assert any("manage its offsets outside Kafka" in w for w in edit.warnings)
    assert all(c.is_new for c in edit.changes.all())


def test_a_group_with_a_live_member_fails_the_lock_check(stopped_s3, editor, approver):
    edit = stage(
        cluster=stopped_s3.cluster,
        connector=S3,
        user=editor,
        change=OffsetChange(StageRequest(strategy="earliest", partitions=(("orders", 0),))),
    )
    submit_edit(edit=edit, user=editor)
    approve_edit(edit=edit, user=approver)
    before = committed(stopped_s3)
    # A zombie sink task: a consumer that joined the connector's group and stays in it.
    member = Consumer(
        {
            **stopped_s3.settings,
            "group.id": S3_GROUP,
            "log_level": 0,
            "enable.auto.commit": False,
            # A short session: the member leaves soon after the test closes it.
            "session.timeout.ms": 6000,
        }
    )
    member.subscribe(["orders"])
    deadline = time.monotonic() + 60
    while not member.assignment() and time.monotonic() < deadline:
        member.poll(0.2)
    try:
        assert member.assignment(), "the test consumer never joined its group"
        edit = apply_edit(edit=edit, user=approver)
    finally:
        member.close()

    assert edit.state == OffsetEdit.State.APPROVED
    checks = {c["name"]: c for c in edit.lock_checks}
    assert checks["connector-stopped"]["passed"]
    assert not checks["group-inactive"]["passed"]
    assert "stable" in checks["group-inactive"]["message"]
    assert committed(stopped_s3) == before
    assert AuditEvent.objects.filter(edit=edit, action="apply-refused").exists()


def test_sink_offsets_moved_after_staging_make_a_conflict(stopped_s3, editor, approver):
    edit = stage(
        cluster=stopped_s3.cluster,
        connector=S3,
        user=editor,
        change=OffsetChange(StageRequest(strategy="earliest", partitions=(("orders", 0),))),
    )
    submit_edit(edit=edit, user=editor)
    approve_edit(edit=edit, user=approver)
    groups.alter_offsets(stopped_s3.settings, S3_GROUP, {("orders", 0): 2})
    edit = apply_edit(edit=edit, user=approver)
    assert edit.state == OffsetEdit.State.CONFLICT
    assert "orders-0" in edit.error
    assert committed(stopped_s3)[("orders", 0)] == 2
