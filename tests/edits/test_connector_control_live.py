"""Stop, resume and restart through the API and the edit page against the REAL Connect worker
of the test session: the worker's own status, the audit log, and the lock check after a stop."""

import urllib.parse
import uuid

import pytest

from offsets.edits.apply import apply_edit
from offsets.formats.connector_paths import to_segment
from offsets.models import AuditEvent, Cluster, OffsetEdit
from tests.support.edit_steps import stage_and_approve
from tests.support.worker_files import running_source

pytestmark = pytest.mark.integration

RUN = uuid.uuid4().hex[:8]


def connector_name(what: str) -> str:
    # A space and a question mark: the adapter must quote them. (Connect 4's Jetty refuses an
    # encoded slash, %2F, with 400 "Ambiguous URI path separator", so no slash here.)
    return f"ctl {RUN}?{what}"


def api_url(cluster: Cluster, connector: str, action: str) -> str:
    segment = urllib.parse.quote(to_segment(connector), safe="")
    return f"/api/v1/clusters/{cluster.name}/connectors/{segment}/{action}/"


def test_stop_resume_and_restart_through_the_api(client, cluster, rest, tmp_path, editor):
    connector, _ = running_source(
        rest, connector_name("api"), tmp_path / "api.log", f"ctl-{RUN}-api-out"
    )
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
    connector, path = running_source(
        rest, connector_name("edit"), tmp_path / "edit.log", f"ctl-{RUN}-edit-out"
    )
    edit = stage_and_approve(
        cluster, connector, editor, approver,
        strategy="set", partition={"filename": str(path)}, offset={"position": 0},
    )  # fmt: skip
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
