"""The pure rules of offset edits: diffs, sink targets, offsets-for-times checks, lock checks."""

from datetime import timedelta

import pytest

from offsets.domain.edits import (
    CONNECTOR_STOPPED,
    GROUP_INACTIVE,
    NOTHING_MOVED,
    EditRuleError,
    Observed,
    PartitionLog,
    check_connector_stopped,
    check_group_inactive,
    check_nothing_moved,
    check_offset_for_time,
    check_single_apply,
    clamp,
    keep_as_json,
    keep_from_json,
    offsets_as_of,
    parse_duration,
    restore_details,
    restore_diff,
    restore_text,
    runtime_view,
    settle,
    settle_sink_group,
    sink_target,
    source_diff,
)
from offsets.formats import jackson
from offsets.formats.offset_records import latest_offsets
from offsets.formats.offsets_json import PartitionOffset

C = "jdbc-source"


def key(partition, connector=C):
    return jackson.dumps_key(connector, partition)


def view(*records):
    """The runtime view of (key bytes, value bytes) records written in this order."""
    return latest_offsets(records).offsets


LOG = PartitionLog("orders", 0, log_start=100, log_end=500)


# --- Lock-check decisions ---------------------------------------------------------------------


def test_a_stopped_connector_with_no_running_task_passes():
    result = check_connector_stopped(
        connector=C,
        deleted=False,
        target_state="STOPPED",
        connector_state="STOPPED",
        task_states={0: "UNASSIGNED"},
    )
    assert result.name == CONNECTOR_STOPPED and result.passed


@pytest.mark.parametrize("state", ["STARTED", "PAUSED", None])
def test_a_connector_not_stopped_fails_and_paused_is_not_enough(state):
    result = check_connector_stopped(
        connector=C, deleted=False, target_state=state, connector_state=None, task_states={}
    )
    assert not result.passed
    assert "PAUSED is not enough" in result.message


def test_a_running_task_fails_the_check_even_when_the_target_state_says_stopped():
    result = check_connector_stopped(
        connector=C,
        deleted=False,
        target_state="STOPPED",
        connector_state="STOPPED",
        task_states={0: "UNASSIGNED", 1: "RUNNING"},
    )
    assert not result.passed
    assert "1 (RUNNING)" in result.message


def test_a_connector_still_stopping_fails():
    result = check_connector_stopped(
        connector=C,
        deleted=False,
        target_state="STOPPED",
        connector_state="RUNNING",
        task_states={},
    )
    assert not result.passed


def test_a_deleted_connector_without_tasks_passes_but_with_a_running_task_fails():
    assert check_connector_stopped(
        connector=C, deleted=True, target_state=None, connector_state=None, task_states={}
    ).passed
    assert not check_connector_stopped(
        connector=C,
        deleted=True,
        target_state=None,
        connector_state=None,
        task_states={0: "RUNNING"},
    ).passed


@pytest.mark.parametrize(
    "state,members,passed",
    [
        ("EMPTY", 0, True),
        ("DEAD", 0, True),
        ("Empty", 0, True),
        ("STABLE", 1, False),
        ("STABLE", 0, False),  # a broker that hides member details still reports the state
        ("PREPARING_REBALANCE", 2, False),
        ("UNKNOWN", 0, False),
    ],
)
def test_only_an_empty_or_dead_group_passes(state, members, passed):
    result = check_group_inactive(group_id="connect-s3", state=state, member_count=members)
    assert result.name == GROUP_INACTIVE
    assert result.passed is passed


def test_nothing_moved_passes_when_every_value_matches_and_names_what_moved_otherwise():
    assert check_nothing_moved([Observed("a", b"1", b"1"), Observed("b", None, None)]).passed
    result = check_nothing_moved([Observed("a", b"1", b"1"), Observed("orders-0", 5, 9)])
    assert result.name == NOTHING_MOVED and not result.passed
    assert "orders-0: 5 at staging, 9 now" in result.message
    assert "Re-stage it with the same inputs" in result.message


def test_a_partition_deleted_since_staging_counts_as_moved():
    result = check_nothing_moved([Observed("a", b'{"position":1}', None)])
    assert not result.passed and "no offset now" in result.message


def test_the_claim_check_reports_who_got_there_first():
    assert check_single_apply(claimed=True).passed
    assert not check_single_apply(claimed=False).passed


# --- Source diffs -----------------------------------------------------------------------------


def test_setting_an_existing_partition_reuses_the_exact_key_bytes_read_from_the_topic():
    # Field order "table, protocol" is not what dumps_key would produce for the request below.
    stored_key = b'["jdbc-source",{"table":"orders","protocol":"1"}]'
    current = view((stored_key, b'{"incrementing":5}'))
    diff = source_diff(
        connector=C,
        current=current,
        entries=[PartitionOffset({"protocol": "1", "table": "orders"}, {"incrementing": 7})],
    )
    (change,) = diff.changes
    assert change.key_bytes == stored_key
    assert change.before_bytes == b'{"incrementing":5}'
    assert change.after_bytes == b'{"incrementing":7}'
    assert not change.is_new and not change.is_delete


def test_a_new_partition_is_serialized_like_jackson_in_the_order_given_and_flagged():
    diff = source_diff(
        connector=C,
        current={},
        entries=[PartitionOffset({"table": "new", "ratio": 1.0e7}, {"pos": 1})],
    )
    (change,) = diff.changes
    assert change.is_new
    assert change.key_bytes == b'["jdbc-source",{"table":"new","ratio":1.0E7}]'
    assert "byte for byte" in change.warnings[0]


def test_a_new_partition_is_refused_when_only_existing_ones_may_change():
    with pytest.raises(EditRuleError) as error:
        source_diff(
            connector=C,
            current={},
            entries=[PartitionOffset({"table": "x"}, {"pos": 1})],
            allow_new=False,
        )
    assert error.value.field == "entries[0].partition"


def test_deleting_writes_a_tombstone_and_deleting_what_is_absent_changes_nothing():
    current = view((key({"f": "a"}), b'{"position":3}'))
    diff = source_diff(
        connector=C,
        current=current,
        entries=[PartitionOffset({"f": "a"}, None), PartitionOffset({"f": "gone"}, None)],
    )
    (change,) = diff.changes
    assert change.is_delete and change.after_bytes is None
    assert diff.unchanged == ['{"f":"gone"}: no offset to delete']


def test_an_unchanged_value_is_left_out_of_the_diff():
    current = view((key({"f": "a"}), b'{"position":3}'))
    diff = source_diff(
        connector=C, current=current, entries=[PartitionOffset({"f": "a"}, {"position": 3})]
    )
    assert diff.changes == [] and len(diff.unchanged) == 1


def test_a_drifted_partition_changes_every_byte_form_with_a_warning():
    form_a = b'["jdbc-source",{"a":1,"b":2}]'
    form_b = b'["jdbc-source",{"b":2,"a":1}]'
    current = view((form_a, b'{"p":1}'), (form_b, b'{"p":2}'))
    diff = source_diff(
        connector=C, current=current, entries=[PartitionOffset({"a": 1, "b": 2}, {"p": 9})]
    )
    assert {c.key_bytes for c in diff.changes} == {form_a, form_b}
    assert all("Key drift" in c.warnings[0] for c in diff.changes)


def test_other_connectors_partitions_are_never_touched():
    current = view((key({"f": "a"}, connector="other"), b'{"position":3}'))
    diff = source_diff(connector=C, current=current, entries=[PartitionOffset({"f": "a"}, None)])
    assert diff.changes == []


def test_the_runtime_view_lets_the_own_topic_win_over_the_worker_topic():
    k1, k2 = key({"s": 1}), key({"s": 2})
    worker = view((k1, b'{"o":1}'), (k2, b'{"o":2}'), (key({"s": 1}, "other"), b'{"o":0}'))
    own = view((k1, b'{"o":10}'))
    merged = runtime_view(C, worker, own)
    assert merged[k1].value_bytes == b'{"o":10}'
    assert merged[k2].value_bytes == b'{"o":2}'
    assert all(record.connector == C for record in merged.values())


def test_a_key_tombstoned_only_in_the_own_topic_still_shows_the_worker_value():
    # Why the writer mirrors tombstones to the worker topic too (KAFKA-15018).
    k1 = key({"s": 1})
    worker = view((k1, b'{"o":1}'))
    own = view((k1, b'{"o":10}'), (k1, None))
    assert runtime_view(C, worker, own)[k1].value_bytes == b'{"o":1}'


# --- Restore to a time ------------------------------------------------------------------------


def test_offsets_as_of_a_time_take_the_last_value_per_exact_key_at_or_before_it():
    k1, k2 = key({"f": "a"}), key({"f": "b"})
    history = [
        (k1, b'{"p":1}', 1000),
        (k2, b'{"p":5}', 1500),
        (k1, b'{"p":2}', 2000),
        (k2, None, 2500),
        (k1, b'{"p":3}', 3000),
    ]
    at_2000 = offsets_as_of(history, 2000)
    assert at_2000[k1].value_bytes == b'{"p":2}'  # the record written exactly at T counts
    assert at_2000[k2].value_bytes == b'{"p":5}'
    at_2600 = offsets_as_of(history, 2600)
    assert k2 not in at_2600  # the tombstone at 2500 removed it
    assert offsets_as_of(history, 999) == {}


def test_restoring_rewrites_changed_keys_deletes_newer_ones_and_recreates_deleted_ones():
    k_changed, k_new, k_deleted, k_same = (key({"f": n}) for n in ("changed", "new", "del", "same"))
    history = [
        (k_changed, b'{"p":1}', 1000),
        (k_deleted, b'{"p":7}', 1000),
        (k_same, b'{"p":4}', 1000),
        (k_changed, b'{"p":2}', 3000),
        (k_new, b'{"p":1}', 3000),
        (k_deleted, None, 3000),
    ]
    now = offsets_as_of(history, 10_000)
    then = offsets_as_of(history, 2000)
    diff = restore_diff(connector=C, current=now, as_of=then, at_label="T")
    by_key = {c.key_bytes: c for c in diff.changes}
    assert set(by_key) == {k_changed, k_new, k_deleted}
    assert by_key[k_changed].after_bytes == b'{"p":1}'
    assert by_key[k_new].is_delete and "no offset at T" in by_key[k_new].warnings[0]
    assert by_key[k_deleted].after_bytes == b'{"p":7}' and by_key[k_deleted].before_bytes is None
    assert diff.unchanged == ["1 partition(s) already hold their value as of T"]


# --- Sink targets -----------------------------------------------------------------------------


def test_clamping_keeps_targets_inside_the_log_with_a_visible_warning():
    assert clamp(250, LOG).offset == 250 and clamp(250, LOG).warnings == ()
    low = clamp(3, LOG)
    assert low.offset == 100 and "before the log start" in low.warnings[0]
    high = clamp(9000, LOG)
    assert high.offset == 500 and "beyond the log end" in high.warnings[0]
    assert clamp(500, LOG).warnings == ()  # the end itself is a valid position


@pytest.mark.parametrize(
    "strategy,kwargs,expected",
    [
        ("earliest", {}, 100),
        ("latest", {}, 500),
        ("offset", {"value": 321}, 321),
        ("offset", {"value": 7}, 100),
        ("shift", {"value": -50}, 150),
        ("shift", {"value": 1000}, 500),
        ("datetime", {"time_offset": 300}, 300),
        ("duration", {"time_offset": 99}, 100),
        ("datetime", {"time_offset": None}, 500),
        ("copy-group", {"copied": 444}, 444),
        ("copy-group", {"copied": 9999}, 500),
    ],
)
def test_each_sink_strategy_lands_on_the_expected_offset(strategy, kwargs, expected):
    assert sink_target(strategy, log=LOG, committed=200, **kwargs).offset == expected


def test_shifting_a_partition_without_a_committed_offset_is_skipped():
    target = sink_target("shift", log=LOG, committed=None, value=5)
    assert target.offset is None and "no committed offset" in target.skip


def test_copying_from_a_group_without_that_partition_is_skipped():
    target = sink_target("copy-group", log=LOG, committed=200, copied=None)
    assert target.offset is None and target.skip


def test_a_missing_value_and_an_unknown_strategy_name_the_field():
    with pytest.raises(EditRuleError) as error:
        sink_target("offset", log=LOG, committed=None)
    assert error.value.field == "offset"
    with pytest.raises(EditRuleError) as error:
        sink_target("sideways", log=LOG, committed=None)
    assert error.value.field == "strategy"


# --- Offsets for times ------------------------------------------------------------------------


def test_a_correct_offsets_for_times_answer_checks_out():
    result = check_offset_for_time(
        at_ms=5000, answer=300, log=LOG, timestamp_at=5000, timestamp_before=4999
    )
    assert result.passed


def test_an_answer_whose_record_is_older_than_the_time_is_caught():
    # What some Kafka-compatible brokers do: offset 0 (here the log start) for any time.
    result = check_offset_for_time(
        at_ms=5000, answer=100, log=LOG, timestamp_at=1000, timestamp_before=None
    )
    assert not result.passed and "before the requested" in result.message


def test_an_answer_with_a_later_record_before_it_is_caught():
    result = check_offset_for_time(
        at_ms=5000, answer=300, log=LOG, timestamp_at=6000, timestamp_before=5500
    )
    assert not result.passed and "earlier record" in result.message


def test_an_answer_outside_the_log_is_caught():
    result = check_offset_for_time(
        at_ms=5000, answer=9000, log=LOG, timestamp_at=None, timestamp_before=None
    )
    assert not result.passed and "outside its log" in result.message


def test_no_record_that_recent_is_believed_only_if_the_last_record_is_older():
    assert check_offset_for_time(
        at_ms=5000, answer=None, log=LOG, timestamp_at=None, timestamp_before=4000
    ).passed
    assert not check_offset_for_time(
        at_ms=5000, answer=None, log=LOG, timestamp_at=None, timestamp_before=6000
    ).passed


def test_the_log_start_is_the_answer_when_every_record_is_newer():
    assert check_offset_for_time(
        at_ms=5000, answer=100, log=LOG, timestamp_at=7000, timestamp_before=None
    ).passed


# --- Settling an edit left in "applying" ------------------------------------------------------


def test_settling_reads_applied_not_applied_or_mixed():
    assert settle([("a", 1, 2, 2), ("b", None, 5, 5)]).outcome == "applied"
    assert settle([("a", 1, 2, 1), ("b", None, 5, None)]).outcome == "not-applied"
    mixed = settle([("a", 1, 2, 2), ("b", 3, 4, 9)])
    assert mixed.outcome == "mixed" and "b" in mixed.message


def test_a_delete_that_committed_settles_as_applied():
    assert settle([("a", b"{}", None, None)]).outcome == "applied"


# A partial sink delete: the edit deletes my-topic-1 and sets my-topic-2 (from 7 to 3); the
# group also holds my-topic-0 and other-0. "keep" is what the group must hold afterwards.
# Topic names with '-' on purpose: the labels "topic-partition" are ambiguous, the keys not.
BEFORE = {("my-topic", 0): 10, ("my-topic", 1): 20, ("my-topic", 2): 7, ("other", 0): 5}
KEEP = {("my-topic", 0): 10, ("my-topic", 2): 3, ("other", 0): 5}
DELETED = [("my-topic", 1)]


def settle_group(group):
    observed = [
        ("my-topic-1", 20, None, group.get(("my-topic", 1))),
        ("my-topic-2", 7, 3, group.get(("my-topic", 2))),
    ]
    return settle_sink_group(observed, deleted=DELETED, keep=KEEP, group=group)


def test_a_partial_sink_delete_is_applied_only_when_every_kept_partition_is_back():
    settled = settle_group(dict(KEEP))
    assert settled.outcome == "applied" and settled.restore == {}


def test_a_partial_sink_delete_killed_between_its_steps_is_incomplete_with_all_to_restore():
    # The group was deleted and nothing was committed back: the edit's own partitions alone
    # (my-topic-1 gone) would not say "applied" here only because my-topic-2 is missing too.
    settled = settle_group({})
    assert settled.outcome == "incomplete"
    assert settled.restore == KEEP
    assert "my-topic-0=10, my-topic-2=3, other-0=5" in settled.message


def test_the_edits_own_partitions_right_but_the_others_gone_is_incomplete_never_applied():
    # What the old rule (the edit's partitions only) called "applied".
    group = {("my-topic", 2): 3}
    assert settle([("my-topic-1", 20, None, None), ("my-topic-2", 7, 3, 3)]).outcome == "applied"
    settled = settle_group(group)
    assert settled.outcome == "incomplete"
    assert settled.restore == {("my-topic", 0): 10, ("other", 0): 5}
    assert "2 of the 3 partition(s)" in settled.message and "2 missing, 0 at another" in (
        settled.message
    )


def test_a_kept_partition_at_another_offset_after_the_delete_is_incomplete():
    group = {("my-topic", 0): 11, ("my-topic", 2): 3, ("other", 0): 5}
    settled = settle_group(group)
    assert settled.outcome == "incomplete"
    assert settled.restore == {("my-topic", 0): 10}
    assert "0 missing, 1 at another offset" in settled.message


def test_a_group_never_deleted_is_not_applied():
    # Killed after storing "keep" but before the delete: the group is as it was.
    settled = settle_group(dict(BEFORE))
    assert settled.outcome == "not-applied" and settled.restore == {}


def test_a_group_not_deleted_but_changed_by_someone_else_is_mixed():
    group = {**BEFORE, ("my-topic", 2): 9}
    assert settle_group(group).outcome == "mixed"


def test_kept_offsets_round_trip_through_json_with_dashes_in_topic_names():
    stored = keep_as_json(KEEP)
    assert stored == [["my-topic", 0, 10], ["my-topic", 2, 3], ["other", 0, 5]]
    assert keep_from_json(stored) == KEEP
    assert restore_text(KEEP) == "my-topic-0=10, my-topic-2=3, other-0=5"
    assert restore_details(KEEP) == {"my-topic-0": 10, "my-topic-2": 3, "other-0": 5}


# --- Inputs -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,expected",
    [
        ("PT1H30M", timedelta(hours=1, minutes=30)),
        ("P2D", timedelta(days=2)),
        ("P1DT2H", timedelta(days=1, hours=2)),
        ("PT0.5S", timedelta(seconds=0.5)),
        ("90m", timedelta(minutes=90)),
        ("2h", timedelta(hours=2)),
        ("1w", timedelta(weeks=1)),
    ],
)
def test_durations_parse_as_iso_8601_or_short_forms(text, expected):
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["", "P", "PT", "1 hour", "-1h", "P1DT"])
def test_bad_durations_are_refused(text):
    with pytest.raises(ValueError):
        parse_duration(text)
