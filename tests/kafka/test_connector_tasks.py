"""A connector's tasks as the pages read them: state, worker and masked trace."""

from offsets.domain.connectors import connector_from
from offsets.domain.edits import check_stopped
from offsets.formats.config_records import ConnectorConfig
from offsets.formats.status_records import ConnectorStatus, TaskStatus

SECRET_TRACE = (
    "org.apache.kafka.connect.errors.ConnectException: connection.password=hunter2 refused\n"
    "\tat io.example.Task.put(Task.java:42)"
)


def summary(status: ConnectorStatus | None, *, deleted: bool = False):
    config = ConnectorConfig(
        name="jdbc-sink",
        properties={"connector.class": "io.example.JdbcSinkConnector", "topics": "t"},
        target_state="STARTED",
        task_count=2,
        task_configs={},
        deleted=deleted,
    )
    return connector_from("jdbc-sink", config, status, worker_offsets_topic="connect-offsets")


def status() -> ConnectorStatus:
    return ConnectorStatus(
        name="jdbc-sink",
        state="RUNNING",
        trace=None,
        worker_id="w0:8083",
        generation=3,
        tasks={
            0: TaskStatus("jdbc-sink", 0, "RUNNING", None, "w1:8083", 3),
            1: TaskStatus("jdbc-sink", 1, "FAILED", SECRET_TRACE, "w2:8083", 3),
        },
    )


def test_each_task_keeps_its_worker_and_its_trace_masked():
    connector = summary(status())
    assert connector.task_states == {0: "RUNNING", 1: "FAILED"}
    assert connector.task_details[0] == {"worker_id": "w1:8083", "trace": ""}
    failed = connector.task_details[1]
    assert failed["worker_id"] == "w2:8083"
    assert "hunter2" not in failed["trace"]
    assert failed["trace"].startswith(
        "org.apache.kafka.connect.errors.ConnectException: connection.password=********"
    )
    assert "Task.java:42" in failed["trace"]


def test_a_deleted_connector_has_no_tasks():
    connector = summary(status(), deleted=True)
    assert connector.runtime_task_details == {}
    assert connector.runtime_tasks == {} and connector.runtime_state is None


def test_a_deleted_connector_keeps_what_the_status_topic_says_for_the_lock_check():
    connector = summary(status(), deleted=True)
    assert connector.task_states == {0: "RUNNING", 1: "FAILED"}
    assert not check_stopped(connector).passed


def test_a_failure_is_dated_by_the_status_record_the_worker_wrote_it_in():
    def task(task_id: int, state: str, written_ms: int | None) -> TaskStatus:
        return TaskStatus("jdbc-sink", task_id, state, None, "w", 3, written_ms)

    def failing(state: str, *tasks: TaskStatus) -> ConnectorStatus:
        return ConnectorStatus(
            "jdbc-sink", state, None, "w", 3, {t.task: t for t in tasks}, written_ms=500
        )

    # The connector's own FAILED record, else the earliest failed task's.
    assert summary(failing("FAILED", task(0, "FAILED", 900))).failed_at_ms == 500
    tasks = (task(0, "FAILED", 900), task(1, "RUNNING", 100), task(2, "FAILED", 700))
    assert summary(failing("RUNNING", *tasks)).failed_at_ms == 700
    # Nothing failing, or a failed task whose record has no time: unknown.
    assert summary(failing("RUNNING", task(0, "RUNNING", 900))).failed_at_ms is None
    unknown = (task(0, "FAILED", 900), task(1, "FAILED", None))
    assert summary(failing("RUNNING", *unknown)).failed_at_ms is None
    assert summary(failing("FAILED"), deleted=True).runtime_failed_at_ms is None
