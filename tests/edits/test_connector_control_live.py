"""Stop, pause, resume and restart (a connector or one task) through the API, the connector's
control card and the edit page against the REAL Connect worker of the test session: the
worker's own status, the audit log, a restart followed to "failed again", and the edit page's
state and route after a stop and its history after a resume."""

import re
import time
import urllib.parse
import uuid

import pytest

from offsets.edits.apply import apply_edit
from offsets.formats.connector_paths import to_segment
from offsets.models import AuditEvent, Cluster, OffsetEdit
from tests.support.connect_rest import wait_until
from tests.support.edit_steps import stage_and_approve
from tests.support.worker_files import file_sink, produce, running_source

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
    # The page says the state it is in now, and the route the apply takes.
    html = response.content.decode()
    assert 'id="connector-now" data-state="STOPPED"' in html
    assert "Will be written <strong>through the Connect worker</strong>" in html
    assert event.edit_id == edit.pk  # in the edit's history
    assert apply_edit(edit=edit, user=approver).state == OffsetEdit.State.APPLIED

    response = client.post(
        f"/clusters/{cluster.name}/edits/{edit.pk}/resume-connector/",
        {"comment": "rewound"},
        headers={"HX-Request": "true"},
    )
    html = response.content.decode()
    assert response.status_code == 200, html
    resumed = AuditEvent.objects.get(edit=edit, action="resumed")
    assert (resumed.actor_name, resumed.comment) == (approver.username, "rewound")
    assert '<li data-action="resumed"><strong>resumed</strong> by abe' in html
    assert 'id="resumed"' in html and 'id="connector-now" data-state="RUNNING"' in html
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


def test_pause_resume_and_restart_one_task_through_the_api(
    client, cluster, rest, tmp_path, editor, user
):
    connector, _ = running_source(
        rest, connector_name("pause"), tmp_path / "pause.log", f"ctl-{RUN}-pause-out"
    )
    client.force_login(user)
    assert client.post(api_url(cluster, connector, "pause")).status_code == 403
    assert client.post(api_url(cluster, connector, "tasks/0/restart")).status_code == 403
    client.force_login(editor)

    paused = client.post(api_url(cluster, connector, "pause"), {"comment": "hold"})
    assert paused.status_code == 200, paused.content
    assert paused.json()["state"] == "PAUSED" and paused.json()["tasks"] == ["PAUSED"]
    # PAUSED keeps the task assigned (a stop would drop it).
    status = rest.status(connector)
    assert status["connector"]["state"] == "PAUSED" and len(status["tasks"]) == 1
    assert client.post(api_url(cluster, connector, "resume")).json()["state"] == "RUNNING"
    rest.wait_for_state(connector, "RUNNING", tasks=1)

    restarted = client.post(api_url(cluster, connector, "tasks/0/restart"))
    body = restarted.json()
    assert restarted.status_code == 200, body
    assert body["settled"] and not body["warning"], body
    assert body["message"].startswith("Running: task 0 RUNNING, steady for")
    events = AuditEvent.objects.filter(cluster=cluster, connector=connector).order_by("at", "id")
    assert [(e.action, e.actor_name) for e in events] == [
        ("paused", editor.username),
        ("resumed", editor.username),
        ("task-restarted", editor.username),
    ]
    assert events[0].comment == "hold" and events[2].details["task"] == 0
    unknown = f"ctl {RUN} no such"
    assert client.post(api_url(cluster, unknown, "pause")).status_code == 404
    assert client.post(api_url(cluster, unknown, "tasks/0/restart")).status_code == 404
    missing_task = client.post(api_url(cluster, connector, "tasks/7/restart"))
    assert missing_task.status_code == 404, missing_task.content
    rest.delete(connector)


def failing_sink(rest, kafka, tmp_path, what: str) -> str:
    """A file sink whose file is in a missing folder: its task fails at start, every time."""
    connector, topic = connector_name(what), f"ctl-{RUN}-{what}-in"
    produce(kafka, topic, ["a"])
    rest.create(connector, file_sink(tmp_path / "missing" / "out.txt", topic))
    wait_for_failed_task(rest, connector)
    return connector


def wait_for_failed_task(rest, connector: str) -> None:
    wait_until(
        lambda: rest.status(connector),
        lambda status: status and [t["state"] for t in status["tasks"]] == ["FAILED"],
        timeout=60,
        what=f"{connector} task FAILED",
    )


def test_a_restart_of_a_task_that_fails_at_start_ends_failed_again(
    client, cluster, rest, kafka, tmp_path, editor
):
    connector = failing_sink(rest, kafka, tmp_path, "fails")
    client.force_login(editor)
    body = client.post(
        api_url(cluster, connector, "restart"),
        {"include_tasks": True, "only_failed": True},
        "application/json",
    ).json()
    assert body["settled"] and body["warning"], body
    assert body["message"].startswith("Failed again: task 0: "), body
    assert body["failed_again"][0]["name"] == "task 0"

    # The card: the restart answers at once, then its outcome follows until it is final.
    segment = urllib.parse.quote(to_segment(connector), safe="")
    card = client.post(
        f"/clusters/{cluster.name}/connectors/{segment}/control/restart/",
        {"include_tasks": "on", "only_failed": "on"},
        headers={"HX-Request": "true"},
    ).content.decode()
    # Each poll is one request the page's htmx would send a second later; the rule's own
    # bound (20 s) ends the follow, so this loop ends too.
    while 'data-following="true"' in card:
        time.sleep(0.5)  # paced like the page's poll (a second), not an assertion on time
        follow = re.search(r'hx-get="([^"]+)"', card).group(1).replace("&amp;", "&")
        card = client.get(follow, headers={"HX-Request": "true"}).content.decode()
    assert 'data-settled="true"' in card and 'data-warning="true"' in card, card
    assert "Failed again: task 0: " in card and 'data-failed="task 0"' in card
    rest.delete(connector)
