import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offsets.formats.status_records import (
    STATES,
    TRACE_SUMMARY_CHARS,
    ConnectorStatus,
    StatusMalformedReason,
    StatusSnapshot,
    TaskStatus,
    fold_status_records,
    trace_summary,
)

quick = settings(database=None, deadline=None, max_examples=200)


def status(
    state: str, generation: int = 7, worker: str = "host:8083", trace: str | None = None
) -> bytes:
    trace_json = "null" if trace is None else f'"{trace}"'
    return (
        f'{{"state":"{state}","trace":{trace_json},"worker_id":"{worker}","generation":{generation}}}'
    ).encode()


def topic_status(topic: str, connector: str) -> bytes:
    return (
        f'{{"topic":{{"name":"{topic}","connector":"{connector}","task":0,'
        f'"discoverTimestamp":1700000000000}}}}'
    ).encode()


def fold(*records: tuple[bytes | None, bytes | None]) -> StatusSnapshot:
    return fold_status_records(records)


def test_it_reads_a_connector_and_its_tasks() -> None:
    snapshot = fold(
        (b"status-connector-my-sink", status("RUNNING")),
        (b"status-task-my-sink-0", status("RUNNING", worker="a:8083")),
        (b"status-task-my-sink-12", status("FAILED", trace="boom")),
    )
    assert snapshot.malformed == []
    assert snapshot.connectors == {
        "my-sink": ConnectorStatus(
            name="my-sink",
            state="RUNNING",
            trace=None,
            worker_id="host:8083",
            generation=7,
            tasks={
                0: TaskStatus("my-sink", 0, "RUNNING", None, "a:8083", 7),
                12: TaskStatus("my-sink", 12, "FAILED", "boom", "host:8083", 7),
            },
            topics=frozenset(),
        )
    }


@pytest.mark.parametrize("state", STATES)
def test_it_accepts_every_state_the_runtime_knows(state: str) -> None:
    snapshot = fold((b"status-connector-c", status(state)))
    assert snapshot.connectors["c"].state == state


def test_a_later_record_wins_even_with_an_older_generation() -> None:
    # KafkaStatusBackingStore.read puts whatever it reads; generations only guard putSafe.
    snapshot = fold(
        (b"status-task-c-0", status("RUNNING", generation=9)),
        (b"status-task-c-0", status("UNASSIGNED", generation=3)),
    )
    task = snapshot.connectors["c"].tasks[0]
    assert (task.state, task.generation) == ("UNASSIGNED", 3)


def test_a_connector_tombstone_removes_its_tasks_but_not_its_topics() -> None:
    snapshot = fold(
        (b"status-connector-c", status("RUNNING")),
        (b"status-task-c-0", status("RUNNING")),
        (b"status-topic-orders:connector-c", topic_status("orders", "c")),
        (b"status-connector-c", None),
    )
    connector = snapshot.connectors["c"]
    assert connector.state is None
    assert connector.tasks == {}
    assert connector.topics == {"orders"}


def test_a_destroyed_connector_without_topics_disappears() -> None:
    snapshot = fold(
        (b"status-connector-c", status("RUNNING")),
        (b"status-task-c-0", status("RUNNING")),
        (b"status-connector-c", None),
    )
    assert snapshot.connectors == {}


def test_a_task_tombstone_removes_only_that_task() -> None:
    snapshot = fold(
        (b"status-connector-c", status("RUNNING")),
        (b"status-task-c-0", status("RUNNING")),
        (b"status-task-c-1", status("RUNNING")),
        (b"status-task-c-0", None),
    )
    assert list(snapshot.connectors["c"].tasks) == [1]


def test_it_collects_the_topics_a_connector_used() -> None:
    snapshot = fold(
        (b"status-topic-orders:connector-my-sink", topic_status("orders", "my-sink")),
        (b"status-topic-users:connector-my-sink", topic_status("users", "my-sink")),
        (b"status-topic-gone:connector-my-sink", topic_status("gone", "my-sink")),
        (b"status-topic-gone:connector-my-sink", None),
    )
    connector = snapshot.connectors["my-sink"]
    assert connector.topics == {"orders", "users"}
    assert connector.state is None


@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [
        (None, status("RUNNING"), StatusMalformedReason.KEY_NULL),
        (b"status-worker-x", status("RUNNING"), StatusMalformedReason.KEY_NOT_RECOGNISED),
        (b"status-connector-", status("RUNNING"), StatusMalformedReason.KEY_NOT_RECOGNISED),
        (b"status-task-c", status("RUNNING"), StatusMalformedReason.KEY_BAD_TASK_ID),
        (b"status-task-c-zero", status("RUNNING"), StatusMalformedReason.KEY_BAD_TASK_ID),
        (b"status-task--0", status("RUNNING"), StatusMalformedReason.KEY_BAD_TASK_ID),
        (b"status-topic-orders", topic_status("orders", "c"), StatusMalformedReason.KEY_BAD_TOPIC),
        (b"status-topic-:connector-c", topic_status("", "c"), StatusMalformedReason.KEY_BAD_TOPIC),
        (b"status-topic-orders:connector-", None, StatusMalformedReason.KEY_BAD_TOPIC),
        (b"status-connector-c", b'{"state":', StatusMalformedReason.VALUE_NOT_JSON),
        (b"status-connector-c", b"[]", StatusMalformedReason.VALUE_NOT_OBJECT),
        (b"status-connector-c", status("SLEEPING"), StatusMalformedReason.VALUE_BAD_FIELD),
        (
            b"status-connector-c",
            b'{"state":"RUNNING","worker_id":"w","generation":1.5}',
            StatusMalformedReason.VALUE_BAD_FIELD,
        ),
        (
            b"status-task-c-0",
            b'{"state":"RUNNING","worker_id":"w"}',
            StatusMalformedReason.VALUE_BAD_FIELD,
        ),
        (
            b"status-task-c-0",
            b'{"state":"RUNNING","trace":42,"worker_id":"w","generation":1}',
            StatusMalformedReason.VALUE_BAD_FIELD,
        ),
        (b"status-topic-t:connector-c", b'{"topic":"t"}', StatusMalformedReason.VALUE_BAD_FIELD),
        (
            b"status-topic-t:connector-c",
            b'{"topic":{"name":1,"connector":"c","task":0,"discoverTimestamp":1}}',
            StatusMalformedReason.VALUE_BAD_FIELD,
        ),
        (
            b"status-topic-t:connector-c",
            b'{"topic":{"name":"t","connector":"c","task":0}}',
            StatusMalformedReason.VALUE_BAD_FIELD,
        ),
    ],
)
def test_it_reports_records_the_runtime_would_discard(
    key: bytes | None, value: bytes | None, reason: StatusMalformedReason
) -> None:
    snapshot = fold((key, value))
    assert [entry.reason for entry in snapshot.malformed] == [reason]
    assert snapshot.malformed[0].detail
    assert snapshot.malformed[0].value_bytes == value
    assert snapshot.connectors == {}


def test_a_discarded_record_leaves_the_previous_status_in_place() -> None:
    snapshot = fold((b"status-connector-c", status("RUNNING")), (b"status-connector-c", b"{oops"))
    assert snapshot.connectors["c"].state == "RUNNING"


def test_every_status_reason_has_a_label() -> None:
    assert (
        StatusMalformedReason.KEY_BAD_TOPIC.label
        == "The topic status key lacks a topic or a connector."
    )
    assert all(reason.label.endswith(".") for reason in StatusMalformedReason)


status_keys = (
    st.sampled_from(
        [
            "status-connector-c",
            "status-task-c-0",
            "status-task-c-x",
            "status-topic-t:connector-c",
            "status-x",
        ]
    ).map(str.encode)
    | st.binary(max_size=20)
    | st.none()
)
status_values = (
    st.sampled_from([status("RUNNING"), topic_status("t", "c"), b"{}", b"null"])
    | st.binary(max_size=30)
    | st.none()
)


@given(st.lists(st.tuples(status_keys, status_values), max_size=12))
@quick
def test_it_never_raises_on_arbitrary_records(
    records: list[tuple[bytes | None, bytes | None]],
) -> None:
    assert isinstance(fold_status_records(records), StatusSnapshot)


def test_a_lone_surrogate_in_a_trace_shows_as_a_replacement_character() -> None:
    snapshot = fold((b"status-connector-c", status("FAILED", trace="boom \\ud800 at")))
    assert snapshot.malformed == []
    assert snapshot.connectors["c"].trace == "boom \ufffd at"


def test_a_name_the_database_cannot_store_is_counted_and_skipped() -> None:
    snapshot = fold(
        (b"status-connector-a\x00b", status("RUNNING")),
        (b"status-task-" + b"c" * 250 + b"-0", status("RUNNING")),
        (b"status-topic-t:connector-a\x00b", topic_status("t", "a\\u0000b")),
        (b"status-connector-ok", status("RUNNING")),
    )
    assert list(snapshot.connectors) == ["ok"]
    assert [m.reason for m in snapshot.malformed] == [
        StatusMalformedReason.KEY_CONNECTOR_UNSTORABLE
    ] * 3


def test_a_traces_summary_is_its_first_non_blank_line_shortened():
    trace = "\n  org.apache.kafka.connect.errors.DataException: bad record  \n\tat X.y(X.java:1)\n"
    assert trace_summary(trace) == "org.apache.kafka.connect.errors.DataException: bad record"
    assert trace_summary(None) == trace_summary("") == trace_summary(" \n ") == ""
    long = trace_summary("E: " + "x" * 1000)
    assert len(long) == TRACE_SUMMARY_CHARS and long.endswith("…")


def test_a_tasks_worker_and_trace_are_kept_with_its_state():
    records = [
        (b"status-task-c-0", status("RUNNING", worker="w1:8083")),
        (b"status-task-c-1", status("FAILED", worker="w2:8083", trace="E: boom")),
    ]
    tasks = fold_status_records(records).connectors["c"].tasks
    assert (tasks[0].worker_id, tasks[0].trace) == ("w1:8083", None)
    assert (tasks[1].state, tasks[1].worker_id, tasks[1].trace) == ("FAILED", "w2:8083", "E: boom")


def test_each_status_keeps_when_the_worker_wrote_it():
    """A record's Kafka timestamp is when the worker wrote the state (a failure's time)."""
    snapshot = fold_status_records(
        [
            (b"status-connector-c", status("RUNNING"), 1_000),
            (b"status-task-c-0", status("RUNNING"), 2_000),
            (b"status-task-c-0", status("FAILED"), 3_000),
            (b"status-task-c-1", status("RUNNING"), -1),  # no timestamp (format v0)
            (b"status-task-c-2", status("RUNNING")),  # read without one
        ]
    )
    connector = snapshot.connectors["c"]
    assert connector.written_ms == 1_000
    assert [task.written_ms for task in connector.tasks.values()] == [3_000, None, None]
