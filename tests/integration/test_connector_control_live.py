"""Stop, resume and restart through the API and the edit page against the REAL Connect worker
of the test session: the worker's own status, the audit log, and the lock check after a stop."""

import urllib.parse
import uuid
from pathlib import Path

import pytest

from offsets.edits.apply import apply_edit
from offsets.edits.preview import StageRequest
from offsets.edits.review import approve_edit, submit_edit
from offsets.edits.staging import stage_edit
from offsets.formats.connector_paths import to_segment
from offsets.kafka import embedded
from offsets.models import AuditEvent, Cluster, OffsetEdit
from tests.integration.connect_rest import STRING_CONVERTERS, ConnectRest

pytestmark = pytest.mark.integration

RUN = uuid.uuid4().hex[:8]
FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"


@pytest.fixture(scope="module")
def rest(kafka_runtime) -> ConnectRest:
    if not kafka_runtime.connect_url:
        pytest.skip("no Connect worker (KAFKA_TEST_CONNECT_URL)")
    return ConnectRest(kafka_runtime.connect_url)


@pytest.fixture
def cluster(db, kafka_runtime) -> Cluster:
    return Cluster.objects.create(
        name=f"ctl-{RUN}",
        bootstrap_servers=kafka_runtime.bootstrap_servers,
        connect_url=kafka_runtime.connect_url,
        offset_flush_interval_ms=embedded.WORKER_FLUSH_INTERVAL_MS,
        **embedded.WORKER_TOPICS,
    )


def running_source(rest: ConnectRest, tmp_path: Path, what: str) -> tuple[str, Path]:
    # A space and a question mark: the adapter must quote them. (Connect 4's Jetty refuses an
    # encoded slash, %2F, with 400 "Ambiguous URI path separator", so no slash here.)
    connector, path = f"ctl {RUN}?{what}", tmp_path / f"{what}.log"
    path.write_text("one\ntwo\n")
    config = {
        "connector.class": FILE_SOURCE,
        "file": str(path),
        "topic": f"ctl-{RUN}-{what}-out",
        "tasks.max": "1",
        **STRING_CONVERTERS,
    }
    rest.create(connector, config)
    rest.wait_for_offsets(connector, lambda o: o and o[0]["offset"]["position"] == 8)
    rest.wait_for_state(connector, "RUNNING", tasks=1)
    return connector, path


def api_url(cluster: Cluster, connector: str, action: str) -> str:
    segment = urllib.parse.quote(to_segment(connector), safe="")
    return f"/api/v1/clusters/{cluster.name}/connectors/{segment}/{action}/"


def test_stop_resume_and_restart_through_the_api(client, cluster, rest, tmp_path, editor):
    connector, _ = running_source(rest, tmp_path, "api")
    client.force_login(editor)

    stopped = client.post(api_url(cluster, connector, "stop"), {"comment": "maintenance"})
    assert stopped.status_code == 200, stopped.content
    assert stopped.json()["ok"] and stopped.json()["state"] == "STOPPED"
    assert stopped.json()["tasks"] == []
    status = rest.status(connector)
    assert status["connector"]["state"] == "STOPPED" and status["tasks"] == []

    resumed = client.post(api_url(cluster, connector, "resume"))
    assert resumed.status_code == 200 and resumed.json()["state"] == "RUNNING"
    rest.wait_for_state(connector, "RUNNING", tasks=1)

    restarted = client.post(
        api_url(cluster, connector, "restart"), {"include_tasks": True}, "application/json"
    )
    assert restarted.status_code == 200 and restarted.json()["ok"], restarted.content
    rest.wait_for_state(connector, "RUNNING", tasks=1)

    events = AuditEvent.objects.filter(cluster=cluster, connector=connector).order_by("at", "id")
    assert [(e.action, e.actor_name) for e in events] == [
        ("stopped", editor.username),
        ("resumed", editor.username),
        ("restarted", editor.username),
    ]
    assert events[0].comment == "maintenance" and events[0].details["tasks"] == []
    unknown = client.post(api_url(cluster, f"ctl {RUN} no such", "stop"))
    assert unknown.status_code == 404
    slash = client.post(api_url(cluster, f"ctl {RUN}/slash", "stop"))
    assert slash.status_code == 502 and "with a slash" in slash.json()["detail"]
    rest.delete(connector)


def test_the_worker_reports_its_version_and_capabilities(client, cluster, rest, user):
    client.force_login(user)
    info = client.get(f"/api/v1/clusters/{cluster.name}/worker/").json()
    assert info["version"].startswith(("3.", "4.")) and info["commit"]
    # The embedded worker is Connect 4.x: every KIP-875/KIP-980 feature.
    assert info["capabilities"] == {
        "kafka_version": info["capabilities"]["kafka_version"],
        "offsets_read": True,
        "offsets_write": True,
        "create_stopped": True,
    }


def test_the_edit_page_stops_the_connector_and_the_lock_check_passes(
    client, cluster, rest, tmp_path, editor, approver
):
    connector, path = running_source(rest, tmp_path, "edit")
    request = StageRequest(
        strategy="set", partition={"filename": str(path)}, offset={"position": 0}
    )
    edit = stage_edit(cluster=cluster, connector=connector, user=editor, request=request)
    submit_edit(edit=edit, user=editor)
    approve_edit(edit=edit, user=approver)
    edit = apply_edit(edit=edit, user=approver)
    assert edit.state == OffsetEdit.State.APPROVED  # refused: the connector runs
    client.force_login(approver)
    page = client.get(f"/clusters/{cluster.name}/edits/{edit.pk}/").content.decode()
    assert 'value="stop-connector"' in page and "Stop the connector" in page

    response = client.post(
        f"/clusters/{cluster.name}/edits/{edit.pk}/stop-connector/",
        {"comment": "stop to rewind"},
        headers={"HX-Request": "true"},
    )

    assert response.status_code == 200, response.content.decode()
    edit.refresh_from_db()
    assert edit.state == OffsetEdit.State.APPROVED and not edit.error
    assert edit.lock_checks and all(check["passed"] for check in edit.lock_checks)
    assert 'value="stop-connector"' not in response.content.decode()
    assert rest.status(connector)["connector"]["state"] == "STOPPED"
    event = AuditEvent.objects.get(cluster=cluster, connector=connector, action="stopped")
    assert (event.actor_name, event.comment) == (approver.username, "stop to rewind")
    assert apply_edit(edit=edit, user=approver).state == OffsetEdit.State.APPLIED
    rest.delete(connector)


def test_viewers_get_no_stop_button(client, cluster, rest, tmp_path, editor, approver, user):
    edit = OffsetEdit.objects.create(
        cluster=cluster,
        connector="x",
        connector_type="source",
        strategy="set",
        state="approved",
        created_by=editor,
        lock_checks=[{"name": "connector-stopped", "passed": False, "message": "runs"}],
    )
    client.force_login(user)
    page = client.get(f"/clusters/{cluster.name}/edits/{edit.pk}/").content.decode()
    assert 'value="stop-connector"' not in page
    assert (
        client.post(f"/clusters/{cluster.name}/edits/{edit.pk}/stop-connector/").status_code == 403
    )
