"""Applying an edit through the Connect worker (KIP-875 PATCH and DELETE), and when not.

The REAL worker of the test session writes, verifies and resumes; a fake worker on loopback
answers what a real one rarely does on cue (an old version, 401, HTML, 409, 500, a GET that
disagrees) on a demo cluster whose connectors are simulated in its topics.
"""

import json
import uuid

import pytest

from offsets import tuning
from offsets.edits.apply import apply_edit
from offsets.formats import jackson
from offsets.kafka import admin, producers
from offsets.models import AuditEvent, Cluster, OffsetEdit
from tests.support.demo_data import AUDIT, AUDIT_KEY, AUDIT_PARTITION
from tests.support.edit_steps import approved_audit_edit, stage_and_approve
from tests.support.fake_connect_worker import FakeWorker, closed_port_url
from tests.support.offsets_reads import latest
from tests.support.worker_files import (
    eos_file_source,
    file_sink,
    file_source,
    stopped,
    wait_for_values,
    write_lines,
)

pytestmark = pytest.mark.integration

RUN = uuid.uuid4().hex[:8]
State = OffsetEdit.State
AUDIT_OFFSETS = f"/connectors/{AUDIT}/offsets"


def name(what: str) -> str:
    return f"via-{RUN}-{what}"


def applied_event(edit: OffsetEdit) -> AuditEvent:
    return edit.audit_events.get(action__in=["applied", "failed", "reconciled"])


# --- The real worker. ----------------------------------------------------------------------


def test_deleting_every_partition_is_one_delete_and_the_worker_reads_the_file_again(
    cluster, rest, kafka, tmp_path, editor, approver
):
    connector, output, path = name("reset"), name("reset-out"), tmp_path / "reset.log"
    write_lines(path, ["one", "two"])
    rest.create(connector, file_source(path, output))
    rest.wait_for_offsets(connector, lambda o: o and o[0]["offset"]["position"] == 8)
    assert wait_for_values(kafka, output, 2) == ["one", "two"]
    stopped(rest, connector)

    edit = stage_and_approve(
        cluster, connector, editor, approver, strategy="delete", partition={"filename": str(path)}
    )
    edit = apply_edit(edit=edit, user=approver, comment="read it all again")

    assert edit.state == State.APPLIED, edit.error
    assert edit.applied_via == "worker"
    details = applied_event(edit).details
    assert details["worker_request"].startswith("DELETE /connectors/{name}/offsets")
    assert details["worker_verified"] and details["verified"]
    assert "reset" in details["worker_answer"]
    assert rest.offsets(connector)["offsets"] == []
    rest.resume(connector)
    assert wait_for_values(kafka, output, 4) == ["one", "two", "one", "two"]
    stopped(rest, connector)
    rest.delete(connector)


def test_a_sink_deletes_one_partitions_offset_through_the_worker_in_one_step(
    cluster, rest, kafka, tmp_path, editor, approver
):
    connector, topic = name("sink-del"), name("sink-del-in")
    admin.create_topics(kafka, [admin.TopicSpec(topic, 2, {})])
    producer = producers.java_producer(kafka)
    for i in range(6):  # three records in each partition
        producer.produce(topic, value=f"v{i}".encode(), partition=i % 2)
    assert producer.flush(10) == 0
    rest.create(connector, file_sink(tmp_path / "sink.txt", topic))
    rest.wait_for_offsets(connector, lambda o: sum(e["offset"]["kafka_offset"] for e in o) == 6)
    stopped(rest, connector)
    held = {
        e["partition"]["kafka_partition"]: e["offset"] for e in rest.offsets(connector)["offsets"]
    }

    edit = stage_and_approve(
        cluster, connector, editor, approver, strategy="delete-offsets", partitions=((topic, 0),)
    )
    edit = apply_edit(edit=edit, user=approver)

    assert edit.state == State.APPLIED, edit.error
    assert edit.applied_via == "worker" and edit.sink_keep is None  # no delete-and-recommit
    assert applied_event(edit).details["worker_request"].startswith("PATCH")
    assert rest.offsets(connector)["offsets"] == [
        {"partition": {"kafka_topic": topic, "kafka_partition": 1}, "offset": held[1]}
    ]
    rest.delete(connector)


def test_offsets_the_connector_refuses_leave_the_edit_truthful_with_the_workers_message(
    cluster, rest, kafka, tmp_path, editor, approver
):
    connector, path = name("refused"), tmp_path / "refused.log"
    write_lines(path, ["one", "two"])
    rest.create(connector, file_source(path, name("refused-out")))
    rest.wait_for_offsets(connector, lambda o: o and o[0]["offset"]["position"] == 8)
    stopped(rest, connector)
    # FileStreamSourceConnector.alterOffsets refuses a negative position.
    edit = stage_and_approve(
        cluster, connector, editor, approver,
        strategy="set", partition={"filename": str(path)}, offset={"position": -1},
    )  # fmt: skip
    edit = apply_edit(edit=edit, user=approver)

    # The worker answers 500 for a connector's refusal: in doubt, so read back, and nothing
    # had moved. Failed (the offsets themselves are wrong: stage them again), with its message.
    assert edit.state == State.FAILED, (edit.state, edit.error)
    assert "non-negative value. All 1 partition(s) still hold their old value." in edit.error
    assert edit.audit_events.filter(action="reconciled").exists()
    assert rest.offsets(connector)["offsets"][0]["offset"] == {"position": 8}
    rest.delete(connector)


def test_deleting_offsets_of_a_connector_with_its_own_topic_goes_to_the_topic_and_says_why(
    cluster, rest, kafka, tmp_path, editor, approver
):
    connector, path = name("own-del"), tmp_path / "own.log"
    write_lines(path, ["one", "two"])
    rest.create(connector, eos_file_source(path, name("own-del-out"), name("own-del-offsets")))
    rest.wait_for_offsets(connector, lambda o: o and o[0]["offset"]["position"] == 8)
    stopped(rest, connector)
    edit = stage_and_approve(
        cluster, connector, editor, approver, strategy="delete", partition={"filename": str(path)}
    )
    edit = apply_edit(edit=edit, user=approver)

    assert edit.state == State.APPLIED, edit.error
    assert edit.applied_via == "topic"
    assert "its own offsets topic" in applied_event(edit).details["route"]
    assert rest.offsets(connector)["offsets"] == []
    rest.delete(connector)


def test_the_edit_page_and_the_api_say_the_worker_will_write_it(
    client, cluster, rest, tmp_path, editor, approver
):
    connector, path = name("page"), tmp_path / "page.log"
    write_lines(path, ["one"])
    rest.create(connector, file_source(path, name("page-out")))
    rest.wait_for_offsets(connector, lambda o: o and o[0]["offset"]["position"] == 4)
    stopped(rest, connector)
    edit = stage_and_approve(
        cluster, connector, editor, approver,
        strategy="set", partition={"filename": str(path)}, offset={"position": 0},
    )  # fmt: skip
    client.force_login(approver)

    page = client.get(f"/clusters/{cluster.name}/edits/{edit.pk}/").content.decode()
    route = client.get(f"/api/v1/edits/{edit.pk}/route/").json()

    assert 'id="edit-route" data-via="worker"' in page
    assert "Through the Connect worker" in page and "PATCH /connectors/{name}/offsets" in page
    assert route["via"] == "worker" and not route["refused"] and "KIP-875" in route["reason"]
    applied = client.post(f"/api/v1/edits/{edit.pk}/apply/", {}, "application/json")
    assert applied.status_code == 200 and applied.json()["applied_via"] == "worker"
    page = client.get(f"/clusters/{cluster.name}/edits/{edit.pk}/").content.decode()
    assert 'id="edit-applied-via" data-via="worker"' in page
    rest.delete(connector)


# --- A fake worker in front of a simulated Connect cluster. --------------------------------

VERSION = {"version": "4.3.1", "commit": "abc", "kafka_cluster_id": "k"}


def with_worker(cluster: Cluster, url: str) -> Cluster:
    cluster.connect_url = url
    cluster.save(update_fields=["connect_url"])
    return cluster


@pytest.mark.parametrize(
    "answer, via, reason",
    [
        ((200, {**VERSION, "version": "3.5.1"}), "topic", "needs Apache Kafka 3.6 or later"),
        (None, "topic", "did not answer"),
    ],
    ids=["old-worker", "unreachable-worker"],
)
def test_an_older_or_unreachable_worker_leaves_the_direct_write(
    fresh_demo, editor, approver, answer, via, reason
):
    with FakeWorker() as worker:
        if answer:
            worker.answer("GET", "/", *answer)
        with_worker(fresh_demo.cluster, worker.url if answer else closed_port_url())
        edit = apply_edit(
            edit=approved_audit_edit(fresh_demo.cluster, editor, approver, {"position": 7}),
            user=approver,
        )

    assert edit.state == State.APPLIED, edit.error
    assert edit.applied_via == via
    details = applied_event(edit).details
    assert details["applied_via"] == via and reason in details["route"]
    written = latest(fresh_demo.settings, "connect-offsets")[AUDIT_KEY]
    assert jackson.loads(written.value_bytes) == {"position": 7}
    assert not any(r["method"] == "PATCH" for r in worker.requests)


JSON, HTML = "application/json", "text/html"


@pytest.mark.parametrize(
    "method, path, status, body, content_type, message",
    [
        ("GET", "/", 401, {"error_code": 401, "message": "Unauthorized"}, JSON, "credentials"),
        ("GET", "/", 200, b"<html><title>Login</title></html>", HTML, "answered HTML"),
        ("PATCH", AUDIT_OFFSETS, 409, {"message": "Rebalance in progress"}, JSON, "rebalancing"),
        ("PATCH", AUDIT_OFFSETS, 400, {"message": "Connector must be stopped"}, JSON, "stopped"),
        ("PATCH", AUDIT_OFFSETS, 404, {"message": "Connector not found"}, JSON, "no such"),
    ],
    ids=["401", "html", "409-rebalance", "400-refused", "404-unknown"],
)
def test_a_worker_that_refuses_writes_nothing_and_the_edit_stays_approved(
    demo_cluster, editor, approver, seeded_demo, method, path, status, body, content_type, message
):
    before = latest(seeded_demo.settings, "connect-offsets")[AUDIT_KEY].value_bytes
    with FakeWorker() as worker:
        worker.answer("GET", "/", 200, VERSION)
        worker.answer(method, path, status, body, content_type)
        edit = approved_audit_edit(
            with_worker(demo_cluster, worker.url), editor, approver, {"position": 3}
        )
        edit = apply_edit(edit=edit, user=approver)

    assert edit.state == State.APPROVED
    assert message in edit.error and edit.applied_via == ""
    refused = edit.audit_events.get(action="apply-refused")
    assert refused.details["error"] == edit.error
    assert latest(seeded_demo.settings, "connect-offsets")[AUDIT_KEY].value_bytes == before


def test_a_worker_failing_midway_is_settled_by_reading_the_topic_back(
    demo_cluster, editor, approver, seeded_demo
):
    before = latest(seeded_demo.settings, "connect-offsets")[AUDIT_KEY].value_bytes
    with FakeWorker() as worker:
        worker.answer("GET", "/", 200, VERSION)
        worker.answer("PATCH", AUDIT_OFFSETS, 500, {"message": "Failed to modify offsets"})
        edit = approved_audit_edit(
            with_worker(demo_cluster, worker.url), editor, approver, {"position": 5}
        )
        edit = apply_edit(edit=edit, user=approver)

    assert edit.state == State.FAILED
    assert "Failed to modify offsets" in edit.error and "still hold their old value" in edit.error
    assert edit.applied_via == "worker"
    assert edit.audit_events.filter(action="reconciled").exists()
    assert latest(seeded_demo.settings, "connect-offsets")[AUDIT_KEY].value_bytes == before


HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
CUT_ANSWERS = {
    "cut body": (HEAD + b'Content-Length: 200\r\n\r\n{"message": "alt', 0.0),
    "broken chunk": (HEAD + b"Transfer-Encoding: chunked\r\n\r\nzz\r\n", 0.0),
    "bad status line": (b"HTTP/1.1 2xx OK\r\n\r\n", 0.0),
    "drip past the deadline": (HEAD + b"Content-Length: 100\r\n\r\n" + b" " * 100, 0.1),
}


@pytest.mark.parametrize(("data", "drip"), CUT_ANSWERS.values(), ids=CUT_ANSWERS.keys())
def test_a_patch_whose_answer_breaks_is_in_doubt_and_settled_by_reading_back(
    demo_cluster, editor, approver, seeded_demo, monkeypatch, data, drip
):
    # The worker's calls get 30 s reads: a deadline of 1.5 s keeps the drip short.
    monkeypatch.setattr(tuning, "CONNECT_DEADLINE_FACTOR", 0.05)
    before = latest(seeded_demo.settings, "connect-offsets")[AUDIT_KEY].value_bytes
    with FakeWorker() as worker:
        worker.answer("GET", "/", 200, VERSION)
        worker.raw("PATCH", AUDIT_OFFSETS, data, drip=drip)
        edit = approved_audit_edit(
            with_worker(demo_cluster, worker.url), editor, approver, {"position": 13}
        )
        edit = apply_edit(edit=edit, user=approver)

    # The fake wrote nothing, and reading the topic back says so; never left "applying".
    assert edit.state == State.FAILED, edit.error
    assert "it may have done it" in edit.error and "still hold their old value" in edit.error
    assert edit.audit_events.filter(action="reconciled").exists()
    assert latest(seeded_demo.settings, "connect-offsets")[AUDIT_KEY].value_bytes == before


def test_a_worker_whose_offsets_disagree_after_the_patch_fails_the_edit(
    demo_cluster, editor, approver
):
    with FakeWorker() as worker:
        worker.answer("GET", "/", 200, VERSION)
        worker.answer("PATCH", AUDIT_OFFSETS, 200, {"message": "altered"})
        worker.answer("GET", AUDIT_OFFSETS, 200, {"offsets": []})
        edit = approved_audit_edit(
            with_worker(demo_cluster, worker.url), editor, approver, {"position": 9}
        )
        edit = apply_edit(edit=edit, user=approver)

    assert edit.state == State.FAILED
    assert "GET /offsets shows" in edit.error and "the worker has null" in edit.error
    assert applied_event(edit).details["verified"] is False


def test_a_garbled_offsets_answer_after_the_patch_is_recorded_and_the_topic_decides(
    demo_cluster, editor, approver
):
    with FakeWorker() as worker:
        worker.answer("GET", "/", 200, VERSION)
        worker.answer("PATCH", AUDIT_OFFSETS, 200, {"message": "altered"})
        worker.answer("GET", AUDIT_OFFSETS, 200, [{"not": "connect"}])
        edit = approved_audit_edit(
            with_worker(demo_cluster, worker.url), editor, approver, {"position": 11}
        )
        edit = apply_edit(edit=edit, user=approver)

    # The fake wrote nothing, and reading the topic back says so: never "applied".
    assert edit.state == State.FAILED
    details = applied_event(edit).details
    assert "answered no offsets list" in details["worker_verify_error"]
    assert "reading it back disagrees" in edit.error


def test_what_the_worker_answers_reaches_the_audit_log_masked(demo_cluster, editor, approver):
    with FakeWorker() as worker:
        worker.answer("GET", "/", 200, VERSION)
        worker.answer("PATCH", AUDIT_OFFSETS, 200, {"message": "altered with password=hunter2"})
        worker.answer("GET", AUDIT_OFFSETS, 200, {"offsets": "jdbc:mysql://app:hunter2@db"})
        edit = approved_audit_edit(
            with_worker(demo_cluster, worker.url), editor, approver, {"position": 17}
        )
        edit = apply_edit(edit=edit, user=approver)

    details = applied_event(edit).details
    assert "answered no offsets list" in details["worker_verify_error"]
    assert "altered with password=" in details["worker_answer"]
    assert "hunter2" not in json.dumps(details) and "hunter2" not in edit.error


def test_a_reset_whose_first_read_fails_sends_nothing_and_stays_approved(
    demo_cluster, editor, approver
):
    with FakeWorker() as worker:
        worker.answer("GET", "/", 200, VERSION)
        worker.answer("GET", AUDIT_OFFSETS, 200, b"<html>proxy</html>", "text/html")
        edit = stage_and_approve(
            with_worker(demo_cluster, worker.url), AUDIT, editor, approver,
            strategy="delete", partition=AUDIT_PARTITION,
        )  # fmt: skip
        edit = apply_edit(edit=edit, user=approver)

    assert edit.state == State.APPROVED
    assert "Reading the worker's offsets first failed" in edit.error
    assert not any(r["method"] in ("PATCH", "DELETE") for r in worker.requests)
