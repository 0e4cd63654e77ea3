"""Moving a connector between two REAL Connect clusters (KIP-980): the session's worker (A) and
a second worker group with its own topics on the same broker (B, `second_connect`).

A FileStreamSource moved to B resumes there where it stopped on A; a FileStreamSink moved
resumes without re-delivering; unfit targets are refused with nothing left on B; a PATCH that
B refuses after the create is rolled back.
"""

import json
import time
import urllib.parse
import uuid
from pathlib import Path

import pytest

from offsets.edits.apply import apply_edit
from offsets.edits.errors import EditInputError, EditStateConflict
from offsets.edits.live import LiveReader
from offsets.edits.workflow import Move, stage
from offsets.formats.connector_paths import to_segment
from offsets.formats.offset_records import partition_identity
from offsets.kafka.connect_rest import ConnectMalformed, ConnectNotJson
from offsets.models import AuditEvent, Cluster, OffsetEdit
from tests.support.connect_rest import ConnectRest, wait_until
from tests.support.connect_topics import write_records
from tests.support.edit_steps import approve, approve_and_apply
from tests.support.fake_connect_worker import FakeWorker
from tests.support.worker_files import FILE_SOURCE, file_sink, file_source, topic_values
from tests.support.workers import ConnectWorker, register

pytestmark = pytest.mark.integration

RUN = uuid.uuid4().hex[:8]


@pytest.fixture(scope="module")
def rest_a(rest) -> ConnectRest:
    """The session's worker (A)."""
    return rest


@pytest.fixture(scope="module")
def rest_b(second_connect) -> ConnectRest:
    return ConnectRest(second_connect.url)


@pytest.fixture
def cluster_a(cluster) -> Cluster:
    """The session worker's Connect cluster (A)."""
    return cluster


@pytest.fixture
def cluster_b(db, kafka_runtime, second_connect) -> Cluster:
    worker = ConnectWorker(second_connect.url, second_connect.topics)
    return register(f"mv-b-{RUN}", kafka_runtime.bootstrap_servers, worker)


def segment(name: str) -> str:
    return urllib.parse.quote(to_segment(name), safe="")


def offsets_topic_view(cluster: Cluster, connector: str) -> dict[str, object]:
    """The connector's offsets in the cluster's offsets topic: partition -> offset (None gone)."""
    latest = LiveReader(cluster).latest(cluster.offsets_topic).offsets
    return {
        record.partition_identity: record.offset
        for record in latest.values()
        if record.connector == connector and record.offset is not None
    }


def test_a_file_source_moved_to_b_resumes_there_where_it_stopped_on_a(
    client, cluster_a, cluster_b, rest_a, rest_b, tmp_path, editor, approver
):
    connector, path, topic = f"mv src {RUN}", tmp_path / "source.txt", f"mv-{RUN}-out"
    path.write_text("one\ntwo\n")
    # An extra property the connector ignores, secret by its name: masked, supplied again.
    rest_a.create(connector, {**file_source(path, topic), "hook.api.token": "s3cret-a"})
    rest_a.wait_for_offsets(connector, lambda o: o and o[0]["offset"]["position"] == 8)
    rest_a.stop(connector)
    rest_a.wait_for_state(connector, "STOPPED")
    wait_until(
        lambda: topic_values(cluster_a.kafka_settings(), topic),
        lambda v: len(v) == 2,
        timeout=30,
        what=topic,
    )

    # Staged as an editor on the page; the form offers B (a cluster with a worker URL).
    client.force_login(editor)
    form = client.get(f"/clusters/{cluster_a.name}/connectors/{segment(connector)}/move/")
    assert form.status_code == 200 and cluster_b.name in form.content.decode()
    assert "hook.api.token" in form.content.decode() and "s3cret-a" not in form.content.decode()
    move_url = f"/clusters/{cluster_a.name}/connectors/{segment(connector)}/move/"
    refused = client.post(move_url, {"target": cluster_b.name})
    assert refused.status_code == 400 and "Supply the value of hook.api.token" in (
        refused.content.decode()
    )
    staged = client.post(
        move_url, {"target": cluster_b.name, "secret_0": "s3cret-b", "comment": "to B"}
    )
    assert staged.status_code == 302, staged.content.decode()
    edit = OffsetEdit.objects.get(cluster=cluster_a, connector=connector)
    assert (edit.strategy, edit.target_cluster, edit.state) == ("move", cluster_b, "draft")
    change = edit.changes.get()
    assert (change.before, change.after) == (None, {"position": 8})
    assert change.partition == {"filename": str(path)}
    page = client.get(staged.url).content.decode()
    assert "Moves to" in page and cluster_b.name in page and str(path) in page
    assert "s3cret-b" not in page

    edit = approve_and_apply(edit, editor, approver)

    assert edit.state == "applied", (edit.error, edit.lock_checks)
    assert edit.applied_via == "worker"
    assert rest_b.call("GET", f"/connectors/{segment(connector)}/config")["hook.api.token"] == (
        "s3cret-b"
    )
    status = rest_b.status(connector)
    assert status["connector"]["state"] == "STOPPED" and status["tasks"] == []
    assert rest_b.offsets(connector)["offsets"] == [
        {"partition": {"filename": str(path)}, "offset": {"position": 8}}
    ]
    assert offsets_topic_view(cluster_b, connector) == {
        partition_identity({"filename": str(path)}): {"position": 8}
    }
    # A keeps it, STOPPED.
    assert rest_a.status(connector)["connector"]["state"] == "STOPPED"

    # Resumed only when the approver asks, from the edit page.
    client.force_login(approver)
    assert f"Resume on {cluster_b.name}" in client.get(staged.url).content.decode()
    resumed = client.post(
        f"/clusters/{cluster_a.name}/edits/{edit.pk}/resume-target/",
        {"comment": "go"},
        headers={"HX-Request": "true"},
    )
    assert resumed.status_code == 200, resumed.content.decode()
    assert "Resumed on" in resumed.content.decode()
    rest_b.wait_for_state(connector, "RUNNING", tasks=1)
    event = AuditEvent.objects.get(cluster=cluster_b, connector=connector, action="resumed")
    assert event.actor_name == approver.username

    with path.open("a") as lines:
        lines.write("three\nfour\n")
    rest_b.wait_for_offsets(connector, lambda o: o and o[0]["offset"]["position"] == 19)
    values = wait_until(
        lambda: topic_values(cluster_a.kafka_settings(), topic),
        lambda v: len(v) >= 4,
        timeout=30,
        what=topic,
    )
    time.sleep(2)  # a task that started from position 0 would be sending "one" again by now
    assert (
        topic_values(cluster_a.kafka_settings(), topic) == values == ["one", "two", "three", "four"]
    )
    rest_b.delete(connector)
    rest_a.delete(connector)


def test_a_sink_moved_to_b_resumes_without_delivering_a_record_twice(
    client, cluster_a, cluster_b, rest_a, rest_b, tmp_path, editor, approver
):
    connector, path, topic = f"mv-sink-{RUN}", tmp_path / "sink.txt", f"mv-{RUN}-in"
    settings = cluster_a.kafka_settings()
    write_records(settings, [(topic, None, f"r{i}".encode(), None) for i in range(3)])
    rest_a.create(connector, file_sink(path, topic))
    group = f"connect-{connector}"
    wait_until(
        lambda: LiveReader(cluster_a).committed(group),
        lambda c: c.get((topic, 0)) == 3,
        timeout=60,
        what=f"{group} at 3",
    )
    rest_a.stop(connector)
    rest_a.wait_for_state(connector, "STOPPED")

    # Staged through the API.
    client.force_login(editor)
    staged = client.post(
        f"/api/v1/clusters/{cluster_a.name}/connectors/{segment(connector)}/move/",
        {"target": cluster_b.name},
        "application/json",
    )
    assert staged.status_code == 201, staged.content
    body = staged.json()
    assert body["target_cluster"] == cluster_b.name and body["connector_type"] == "sink"
    # One Kafka cluster: B's group IS A's group, so B already holds these offsets.
    assert [(c["before"], c["after"]) for c in body["changes"]] == [
        ({"kafka_offset": 3}, {"kafka_offset": 3})
    ]
    assert any("same Kafka cluster" in warning for warning in body["warnings"])

    edit = approve_and_apply(OffsetEdit.objects.get(pk=body["id"]), editor, approver)
    assert edit.state == "applied", (edit.error, edit.lock_checks)
    assert rest_b.offsets(connector)["offsets"] == [
        {"partition": {"kafka_topic": topic, "kafka_partition": 0}, "offset": {"kafka_offset": 3}}
    ]
    assert LiveReader(cluster_b).committed(group) == {(topic, 0): 3}

    client.force_login(approver)
    resumed = client.post(f"/api/v1/edits/{edit.pk}/resume-target/", {})
    assert resumed.status_code == 200, resumed.content
    rest_b.wait_for_state(connector, "RUNNING", tasks=1)
    write_records(settings, [(topic, None, f"r{i}".encode(), None) for i in range(3, 5)])
    wait_until(
        lambda: LiveReader(cluster_b).committed(group),
        lambda c: c.get((topic, 0)) == 5,
        timeout=60,
        what=f"{group} at 5",
    )
    assert path.read_text().splitlines() == ["r0", "r1", "r2", "r3", "r4"]
    rest_b.delete(connector)
    rest_a.delete(connector)


def stopped_source_on_a(rest_a: ConnectRest, tmp_path: Path, what: str) -> tuple[str, Path]:
    connector, path = f"mv-{what}-{RUN}", tmp_path / f"{what}.txt"
    path.write_text("")
    rest_a.create(connector, file_source(path, f"mv-{RUN}-{what}"), initial_state="STOPPED")
    rest_a.wait_for_state(connector, "STOPPED")
    return connector, path


def write_source_offset(cluster: Cluster, connector: str, partition: dict, offset: dict) -> None:
    key = json.dumps([connector, partition], separators=(",", ":")).encode()
    value = json.dumps(offset, separators=(",", ":")).encode()
    write_records(cluster.kafka_settings(), [(cluster.offsets_topic, key, value, None)])


def test_a_name_taken_on_b_is_refused_at_staging_and_at_apply(
    client, cluster_a, cluster_b, rest_a, rest_b, tmp_path, editor, approver
):
    connector, path = stopped_source_on_a(rest_a, tmp_path, "taken")
    write_source_offset(cluster_a, connector, {"filename": str(path)}, {"position": 4})
    edit = stage(cluster=cluster_a, connector=connector, user=editor, change=Move(cluster_b, {}))
    approve(edit, editor, approver)
    theirs = file_source(tmp_path / "theirs.txt", f"mv-{RUN}-theirs")
    rest_b.create(connector, theirs, initial_state="STOPPED")
    rest_b.wait_for_state(connector, "STOPPED")

    edit = apply_edit(edit=edit, user=approver)

    assert edit.state == "approved" and "already has a connector" in edit.error
    # B's own connector is untouched: never deleted by a refused move.
    assert rest_b.call("GET", f"/connectors/{segment(connector)}/config")["file"] == theirs["file"]
    client.force_login(editor)
    again = client.post(
        f"/api/v1/clusters/{cluster_a.name}/connectors/{segment(connector)}/move/",
        {"target": cluster_b.name},
        "application/json",
    )
    assert again.status_code == 409 and "already has a connector" in again.json()["detail"]
    rest_b.delete(connector)
    rest_a.delete(connector)


def test_offsets_that_moved_on_a_since_staging_make_a_conflict(
    cluster_a, cluster_b, rest_a, rest_b, tmp_path, editor, approver
):
    connector, path = stopped_source_on_a(rest_a, tmp_path, "moved")
    write_source_offset(cluster_a, connector, {"filename": str(path)}, {"position": 4})
    edit = stage(cluster=cluster_a, connector=connector, user=editor, change=Move(cluster_b, {}))
    write_source_offset(cluster_a, connector, {"filename": str(path)}, {"position": 9})

    edit = approve_and_apply(edit, editor, approver)

    assert edit.state == "conflict" and "moved since the edit was staged" in edit.error
    assert rest_b.status(connector) is None
    rest_a.delete(connector)


def test_an_offset_b_refuses_rolls_the_move_back(
    cluster_a, cluster_b, rest_a, rest_b, tmp_path, editor, approver
):
    connector, path = stopped_source_on_a(rest_a, tmp_path, "refused")
    write_source_offset(cluster_a, connector, {"filename": str(path)}, {"position": 4})
    # FileStreamSource's alterOffsets refuses a partition without "filename" (Connect 4 answers
    # HTTP 500 with the connector's message).
    write_source_offset(cluster_a, connector, {"file": "/elsewhere"}, {"position": 3})
    edit = stage(cluster=cluster_a, connector=connector, user=editor, change=Move(cluster_b, {}))
    assert edit.changes.count() == 2

    edit = approve_and_apply(edit, editor, approver)

    assert edit.state == "failed", edit.error
    assert "should contain the key 'filename'" in edit.error and "Rolled back" in edit.error
    failed = edit.audit_events.get(action="failed")
    assert failed.details["rolled_back"] is True
    rest_b.wait_until_forgotten(connector)
    assert offsets_topic_view(cluster_b, connector) == {}
    rest_a.delete(connector)


def fake_b(cluster_a: Cluster, worker: FakeWorker) -> Cluster:
    return Cluster.objects.create(
        name=f"mv-fake-{RUN}",
        bootstrap_servers=cluster_a.bootstrap_servers,
        connect_url=worker.url,
        offsets_topic=f"mv-fake-{RUN}-offsets",
        configs_topic=f"mv-fake-{RUN}-configs",
        status_topic=f"mv-fake-{RUN}-status",
    )


def test_unfit_or_broken_targets_are_refused_with_nothing_created(
    client, cluster_a, rest_a, tmp_path, editor
):
    connector, _ = stopped_source_on_a(rest_a, tmp_path, "fake")
    url = f"/api/v1/clusters/{cluster_a.name}/connectors/{segment(connector)}/move/"
    client.force_login(editor)
    with FakeWorker() as worker:
        target = fake_b(cluster_a, worker)
        worker.answer("GET", "/", 200, {"version": "3.7.0", "commit": "c"})
        worker.answer(
            "GET", "/connector-plugins?connectorsOnly=true", 200, [{"class": "x.OtherSource"}]
        )
        missing = client.post(url, {"target": target.name}, "application/json")
        assert missing.status_code == 400, missing.content
        assert f"has no plugin {FILE_SOURCE}" in missing.json()["target"][0]

        worker.answer("GET", "/", 200, {"version": "3.6.2", "commit": "c"})
        worker.answer(
            "GET", "/connector-plugins?connectorsOnly=true", 200, [{"class": FILE_SOURCE}]
        )
        old = client.post(url, {"target": target.name}, "application/json")
        assert old.status_code == 400 and "KIP-980" in old.json()["target"][0]

        worker.answer("GET", "/", 200, b"<html><title>Login</title></html>", "text/html")
        html = client.post(url, {"target": target.name}, "application/json")
        assert html.status_code == 502 and "answered HTML" in html.json()["detail"]
        with pytest.raises(ConnectNotJson):
            stage(cluster=cluster_a, connector=connector, user=editor, change=Move(target, {}))

        worker.answer("GET", "/", 200, b"{not json", "application/json")
        with pytest.raises(ConnectMalformed):
            stage(cluster=cluster_a, connector=connector, user=editor, change=Move(target, {}))
        assert not [r for r in worker.requests if r["method"] != "GET"]
    unknown = client.post(
        f"/api/v1/clusters/{cluster_a.name}/connectors/no-such-{RUN}/move/",
        {"target": target.name},
        "application/json",
    )
    assert unknown.status_code == 404
    same = client.post(url, {"target": cluster_a.name}, "application/json")
    assert same.status_code == 400 and "own cluster" in same.json()["target"][0]
    with pytest.raises(EditInputError, match="no Connect worker URL"):
        bare = Cluster.objects.create(name=f"mv-bare-{RUN}", bootstrap_servers="127.0.0.1:1")
        stage(cluster=cluster_a, connector=connector, user=editor, change=Move(bare, {}))
    assert not OffsetEdit.objects.filter(connector=connector).exists()
    rest_a.delete(connector)


def test_a_deleted_connector_has_no_config_to_move(cluster_a, cluster_b, rest_a, tmp_path, editor):
    connector, path = stopped_source_on_a(rest_a, tmp_path, "gone")
    write_source_offset(cluster_a, connector, {"filename": str(path)}, {"position": 1})
    rest_a.delete(connector)
    rest_a.wait_until_forgotten(connector)
    with pytest.raises(EditStateConflict, match="deleted"):
        stage(cluster=cluster_a, connector=connector, user=editor, change=Move(cluster_b, {}))
