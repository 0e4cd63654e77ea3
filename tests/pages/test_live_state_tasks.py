"""The live state page and API show each task's state, worker and error, as the connector page
does: the first line of the trace beside the state, the whole trace masked and folded.

The live state is read from the config and status topics on each request; here the read
finds records written for the test, one task's trace hostile (markup, a secret, 200 KB).
"""

import html
import json

import pytest

from offsets.domain.masking import MASK
from offsets.formats.status_records import TRACE_SUMMARY_CHARS
from offsets.kafka import reading
from offsets.models import Cluster

pytestmark = pytest.mark.django_db

SECRET = "live-trace-secret-41d7"
MARKUP = '<script>alert("x")</script><b onmouseover="steal()">'
FIRST_LINE = (
    f"org.apache.kafka.connect.errors.ConnectException: {MARKUP} password={SECRET} refused"
    + " because the database said no" * 12
)
# A very long trace: every line of it is shown, masked, under the fold.
HOSTILE_TRACE = "\n".join(
    [FIRST_LINE, *(f"\tat io.example.Task.put(Task.java:{n})" for n in range(6000))]
)
WORKER = '<i>worker</i>:8083"'


def record(topic: str, key: str, value: dict) -> reading.RawRecord:
    return reading.RawRecord(
        topic=topic,
        partition=0,
        offset=0,
        timestamp_ms=0,
        key=key.encode(),
        value=json.dumps(value).encode(),
    )


def status(state: str, *, trace: str | None = None, worker: str = "w0:8083") -> dict:
    return {"state": state, "trace": trace, "worker_id": worker, "generation": 1}


RECORDS = [
    record(
        "connect-configs",
        "connector-jdbc-sink",
        {"properties": {"connector.class": "io.example.JdbcSinkConnector", "topics": "t"}},
    ),
    record("connect-configs", "commit-jdbc-sink", {"tasks": 2}),
    record("connect-status", "status-connector-jdbc-sink", status("RUNNING")),
    record("connect-status", "status-task-jdbc-sink-0", status("RUNNING", worker="w1:8083")),
    record(
        "connect-status",
        "status-task-jdbc-sink-1",
        status("FAILED", trace=HOSTILE_TRACE, worker=WORKER),
    ),
]


def reads(records: list[reading.RawRecord]):
    """A read of Connect's topics that finds `records`, each once (the topics are followed:
    a later read asks only for what comes after the ends it was told)."""

    def read_on(settings, topics, starts, **kwargs):
        ends: dict[tuple[str, int], int] = {}
        for r in records:
            slot = (r.topic, r.partition)
            ends[slot] = max(ends.get(slot, 0), r.offset + 1)
        found = [r for r in records if r.offset >= starts.get((r.topic, r.partition), 0)]
        return reading.ReadOn(found, ends, {})

    return read_on


@pytest.fixture
def cluster(monkeypatch, settings):
    settings.KAFKA_READ_TIMEOUT = 1
    monkeypatch.setattr(reading, "read_on", reads(RECORDS))
    return Cluster.objects.create(
        name="c1",
        bootstrap_servers="127.0.0.1:1",
        configs_topic="connect-configs",
        status_topic="connect-status",
        offsets_topic="connect-offsets",
    )


def task_cells(page: str, task: int) -> str:
    row = page.split('data-connector="jdbc-sink"')[1].split('data-field="tasks"')[1]
    return row.split(f'data-task="{task}"')[1].split("</tr>")[0]


def test_the_live_page_shows_each_tasks_worker_and_first_error_line(logged_in_client, cluster):
    page = logged_in_client.get("/clusters/c1/live/").content.decode()
    running = task_cells(page, 0)
    assert 'class="state state-running">RUNNING<' in running
    assert "<code>w1:8083</code>" in running and "<details" not in running
    failed = task_cells(page, 1)
    assert 'class="state state-failed">FAILED<' in failed
    summary = failed.split("<summary>")[1].split("</summary>")[0]
    assert html.unescape(summary).startswith(
        "org.apache.kafka.connect.errors.ConnectException: <script>"
    )
    assert len(html.unescape(summary)) == TRACE_SUMMARY_CHARS
    # The whole trace is folded under it, every line.
    trace = failed.split('<details class="task-trace">')[1].split("</details>")[0]
    assert '<pre class="trace">' in trace and "Task.java:5999)" in trace


def test_the_worker_strings_are_data_never_markup(logged_in_client, cluster):
    page = logged_in_client.get("/clusters/c1/live/").content.decode()
    failed = task_cells(page, 1)
    assert MARKUP not in page and "<i>worker</i>" not in page
    assert html.escape(MARKUP) in failed
    assert f"<code>{html.escape(WORKER)}</code>" in failed


def test_the_secret_in_a_trace_is_masked_on_the_page_and_in_the_api(logged_in_client, cluster):
    page = logged_in_client.get("/clusters/c1/live/").content.decode()
    assert SECRET not in page
    assert f"password={MASK}" in task_cells(page, 1)
    body = logged_in_client.get("/api/v1/clusters/c1/state/")
    assert SECRET not in body.content.decode()


def test_the_api_lists_each_task_with_its_worker_error_and_masked_trace(logged_in_client, cluster):
    (connector,) = logged_in_client.get("/api/v1/clusters/c1/state/").json()
    assert connector["task_states"] == {"0": "RUNNING", "1": "FAILED"}
    running, failed = connector["tasks"]
    assert running == {
        "task": 0,
        "state": "RUNNING",
        "worker_id": "w1:8083",
        "error": "",
        "trace": "",
    }
    assert (failed["task"], failed["state"], failed["worker_id"]) == (1, "FAILED", WORKER)
    assert failed["error"] == failed["trace"].splitlines()[0][: TRACE_SUMMARY_CHARS - 1] + "…"
    assert f"password={MASK}" in failed["trace"] and MARKUP in failed["trace"]
    assert failed["trace"].endswith("Task.java:5999)")


def test_a_deleted_connector_shows_no_tasks_live(logged_in_client, cluster, monkeypatch):
    tombstone = reading.RawRecord(
        topic="connect-configs",
        partition=0,
        offset=1,
        timestamp_ms=0,
        key=b"connector-jdbc-sink",
        value=None,
    )
    records = [*RECORDS, tombstone]
    monkeypatch.setattr(reading, "read_on", reads(records))
    (connector,) = logged_in_client.get("/api/v1/clusters/c1/state/").json()
    assert connector["deleted"] and connector["tasks"] == []
    page = logged_in_client.get("/clusters/c1/live/").content.decode()
    assert "data-task=" not in page and SECRET not in page
