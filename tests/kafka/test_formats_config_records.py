import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offsets.formats.config_records import (
    ConfigMalformedReason,
    ConfigSnapshot,
    RestartRequest,
    fold_config_records,
)

quick = settings(database=None, deadline=None, max_examples=200)

SOURCE = (
    b'{"properties":{"connector.class":"FileStreamSource","file":"/tmp/in.txt","tasks.max":"2"}}'
)


def record(key: str, value: str | bytes | None) -> tuple[bytes, bytes | None]:
    return key.encode(), value.encode() if isinstance(value, str) else value


def fold(*records: tuple[bytes | None, bytes | None]) -> ConfigSnapshot:
    return fold_config_records(records)


def test_it_reads_a_new_connector_as_started_without_tasks() -> None:
    snapshot = fold(record("connector-files", SOURCE))
    connector = snapshot.connectors["files"]
    assert connector.properties == {
        "connector.class": "FileStreamSource",
        "file": "/tmp/in.txt",
        "tasks.max": "2",
    }
    assert connector.connector_class == "FileStreamSource"
    assert connector.target_state == "STARTED"
    assert connector.task_count is None
    assert connector.task_configs == {}
    assert not connector.deleted
    assert snapshot.malformed == []


def test_it_applies_task_configs_only_once_committed() -> None:
    pending = fold(
        record("connector-files", SOURCE),
        record("task-files-0", '{"properties":{"task":"0"}}'),
        record("task-files-1", '{"properties":{"task":"1"}}'),
    )
    assert pending.connectors["files"].task_configs == {}
    assert pending.connectors["files"].task_count is None

    committed = fold(
        record("connector-files", SOURCE),
        record("task-files-0", '{"properties":{"task":"0"}}'),
        record("task-files-1", '{"properties":{"task":"1"}}'),
        record("commit-files", '{"tasks":2}'),
    )
    connector = committed.connectors["files"]
    assert connector.task_count == 2
    assert connector.task_configs == {0: {"task": "0"}, 1: {"task": "1"}}
    assert not connector.inconsistent


def test_it_marks_a_commit_with_missing_task_configs_inconsistent() -> None:
    # As after compaction removed task-files-0 (KafkaConfigBackingStore's own example).
    snapshot = fold(
        record("connector-files", SOURCE),
        record("task-files-1", '{"properties":{"task":"1"}}'),
        record("commit-files", '{"tasks":2}'),
    )
    connector = snapshot.connectors["files"]
    assert connector.inconsistent
    assert connector.task_count == 2
    assert connector.task_configs == {}


def test_a_complete_later_commit_heals_an_inconsistent_connector() -> None:
    snapshot = fold(
        record("connector-files", SOURCE),
        record("task-files-1", '{"properties":{"task":"old-1"}}'),
        record("commit-files", '{"tasks":2}'),
        record("task-files-0", '{"properties":{"task":"0"}}'),
        record("commit-files", '{"tasks":1}'),
    )
    connector = snapshot.connectors["files"]
    assert not connector.inconsistent
    assert connector.task_configs == {0: {"task": "0"}}


def test_it_accepts_extra_task_configs_left_by_a_shrink() -> None:
    snapshot = fold(
        record("connector-files", SOURCE),
        record("task-files-1", '{"properties":{"task":"1"}}'),
        record("task-files-0", '{"properties":{"task":"0"}}'),
        record("commit-files", '{"tasks":1}'),
    )
    assert snapshot.connectors["files"].task_configs == {0: {"task": "0"}}
    assert not snapshot.connectors["files"].inconsistent


def test_it_reads_task_keys_of_connector_names_with_dashes() -> None:
    snapshot = fold(
        record("connector-my-file-source", SOURCE),
        record("task-my-file-source-10", '{"properties":{"task":"10"}}'),
        record("commit-my-file-source", '{"tasks":0}'),
    )
    assert snapshot.connectors["my-file-source"].task_count == 0
    assert snapshot.malformed == []


def test_it_prefers_state_v2_for_the_target_state() -> None:
    snapshot = fold(
        record("connector-files", SOURCE),
        record("target-state-files", '{"state":"PAUSED","state.v2":"STOPPED"}'),
    )
    assert snapshot.connectors["files"].target_state == "STOPPED"


def test_it_falls_back_on_the_old_state_field() -> None:
    snapshot = fold(
        record("connector-files", SOURCE), record("target-state-files", '{"state":"PAUSED"}')
    )
    assert snapshot.connectors["files"].target_state == "PAUSED"


def test_it_reads_a_target_state_written_before_the_connector() -> None:
    # KIP-980: a connector can be created STOPPED; the target state comes first.
    snapshot = fold(
        record("target-state-files", '{"state":"PAUSED","state.v2":"STOPPED"}'),
        record("connector-files", SOURCE),
    )
    assert snapshot.connectors["files"].target_state == "STOPPED"


def test_a_target_state_tombstone_means_started_again() -> None:
    snapshot = fold(
        record("connector-files", SOURCE),
        record("target-state-files", '{"state":"PAUSED"}'),
        record("target-state-files", None),
    )
    assert snapshot.connectors["files"].target_state == "STARTED"


def test_a_deleted_connector_keeps_its_last_properties() -> None:
    snapshot = fold(
        record("connector-files", SOURCE),
        record("task-files-0", '{"properties":{"task":"0"}}'),
        record("commit-files", '{"tasks":1}'),
        record("connector-files", None),
        record("target-state-files", None),
    )
    connector = snapshot.connectors["files"]
    assert connector.deleted
    assert connector.properties is not None
    assert connector.properties["file"] == "/tmp/in.txt"
    assert connector.task_count is None
    assert connector.task_configs == {}
    assert snapshot.malformed == []


def test_a_recreated_connector_is_alive_again() -> None:
    snapshot = fold(
        record("connector-files", SOURCE),
        record("connector-files", None),
        record("connector-files", '{"properties":{"connector.class":"Other"}}'),
    )
    connector = snapshot.connectors["files"]
    assert not connector.deleted
    assert connector.connector_class == "Other"


def test_it_reads_the_bookkeeping_records() -> None:
    snapshot = fold(
        record("connector-files", SOURCE),
        record("tasks-fencing-files", '{"task-count":2}'),
        record(
            "session-key",
            '{"key":"c2VjcmV0","algorithm":"HmacSHA256","creation-timestamp":1700000000000}',
        ),
        record("restart-connector-files", '{"include-tasks":true,"only-failed":false}'),
        record("logger-cluster-org.apache.kafka.connect", '{"level":"DEBUG"}'),
    )
    assert snapshot.malformed == []
    assert snapshot.connectors["files"].fencing_task_count == 2
    assert snapshot.has_session_key
    assert snapshot.restart_requests == {
        "files": RestartRequest(connector="files", only_failed=False, include_tasks=True)
    }
    assert snapshot.logger_levels == {"org.apache.kafka.connect": "DEBUG"}


@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [
        (None, SOURCE, ConfigMalformedReason.KEY_NULL),
        (b"mystery-files", SOURCE, ConfigMalformedReason.KEY_NOT_RECOGNISED),
        (b"connector-", SOURCE, ConfigMalformedReason.KEY_NOT_RECOGNISED),
        (b"task-files", b'{"properties":{}}', ConfigMalformedReason.KEY_BAD_TASK_ID),
        (b"task-files-x", b'{"properties":{}}', ConfigMalformedReason.KEY_BAD_TASK_ID),
        (b"task-files-99999999999", b'{"properties":{}}', ConfigMalformedReason.KEY_BAD_TASK_ID),
        (b"connector-files", b'{"properties":', ConfigMalformedReason.VALUE_NOT_JSON),
        (b"connector-files", b'{"properties":{"a":"\xff"}}', ConfigMalformedReason.VALUE_NOT_JSON),
        (b"connector-files", b'["properties"]', ConfigMalformedReason.VALUE_NOT_OBJECT),
        (b"connector-files", b'{"props":{}}', ConfigMalformedReason.VALUE_BAD_FIELD),
        (
            b"connector-files",
            b'{"properties":{"tasks.max":2}}',
            ConfigMalformedReason.VALUE_BAD_FIELD,
        ),
        (b"commit-files", b'{"tasks":"2"}', ConfigMalformedReason.VALUE_BAD_FIELD),
        (b"commit-files", b'{"tasks":-1}', ConfigMalformedReason.VALUE_BAD_FIELD),
        (b"target-state-files", b'{"state":"RUNNING"}', ConfigMalformedReason.VALUE_BAD_FIELD),
        (b"target-state-files", b'{"state.v2":7}', ConfigMalformedReason.VALUE_BAD_FIELD),
        (b"tasks-fencing-files", b'{"task-count":true}', ConfigMalformedReason.VALUE_BAD_FIELD),
        (b"session-key", b'{"key":"x","algorithm":"y"}', ConfigMalformedReason.VALUE_BAD_FIELD),
        (b"logger-cluster-root", b'{"level":null}', ConfigMalformedReason.VALUE_BAD_FIELD),
        (b"task-files-0", None, ConfigMalformedReason.VALUE_UNEXPECTED_TOMBSTONE),
        (b"commit-files", None, ConfigMalformedReason.VALUE_UNEXPECTED_TOMBSTONE),
        (b"session-key", None, ConfigMalformedReason.VALUE_UNEXPECTED_TOMBSTONE),
    ],
)
def test_it_reports_records_the_runtime_would_ignore(
    key: bytes | None, value: bytes | None, reason: ConfigMalformedReason
) -> None:
    snapshot = fold((key, value))
    assert [entry.reason for entry in snapshot.malformed] == [reason]
    entry = snapshot.malformed[0]
    assert entry.detail
    assert entry.key == (None if key is None else key.decode("utf-8"))
    assert entry.value_bytes == value


def test_a_bad_record_does_not_undo_the_good_one_before_it() -> None:
    snapshot = fold(record("connector-files", SOURCE), record("connector-files", b"{broken"))
    assert snapshot.connectors["files"].properties is not None
    assert [entry.reason for entry in snapshot.malformed] == [ConfigMalformedReason.VALUE_NOT_JSON]


def test_every_config_reason_has_a_label() -> None:
    assert (
        ConfigMalformedReason.KEY_BAD_TASK_ID.label == "The task key does not end in a task number."
    )
    assert all(reason.label.endswith(".") for reason in ConfigMalformedReason)


config_keys = (
    st.sampled_from(
        [
            "connector-c",
            "task-c-0",
            "task-c-1",
            "commit-c",
            "target-state-c",
            "tasks-fencing-c",
            "session-key",
            "restart-connector-c",
            "logger-cluster-x",
            "junk",
        ]
    ).map(str.encode)
    | st.binary(max_size=20)
    | st.none()
)


config_values = (
    st.sampled_from(
        [
            SOURCE,
            b'{"properties":{"a":"b"}}',
            b'{"tasks":1}',
            b'{"tasks":0}',
            b'{"state":"PAUSED"}',
            b"{}",
            b"null",
        ]
    )
    | st.binary(max_size=40)
    | st.none()
)


@given(st.lists(st.tuples(config_keys, config_values), max_size=12))
@quick
def test_it_never_raises_on_arbitrary_records(
    records: list[tuple[bytes | None, bytes | None]],
) -> None:
    snapshot = fold_config_records(records)
    assert isinstance(snapshot, ConfigSnapshot)


def test_a_lone_surrogate_in_a_config_shows_as_a_replacement_character() -> None:
    config = '{"properties":{"connector.class":"A","note\\udfff":"a\\ud800b"}}'
    snapshot = fold(record("connector-c", config))
    assert snapshot.malformed == []
    assert snapshot.connectors["c"].properties == {"connector.class": "A", "note\ufffd": "a\ufffdb"}


def test_a_name_the_database_cannot_store_is_counted_and_skipped() -> None:
    snapshot = fold(
        record("connector-a\x00b", SOURCE),
        record("task-" + "c" * 250 + "-0", '{"properties":{}}'),
        record("target-state-a\x00b", '{"state":"PAUSED"}'),
        record("connector-ok", SOURCE),
    )
    assert list(snapshot.connectors) == ["ok"]
    assert [m.reason for m in snapshot.malformed] == [
        ConfigMalformedReason.KEY_CONNECTOR_UNSTORABLE
    ] * 3
