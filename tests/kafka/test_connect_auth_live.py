"""The dashboard against a REAL Connect worker with basic auth on (`secured_connect`).

Connect's own BasicAuthSecurityRestExtension checks every request against a users file: the
right credentials get the worker's version, a stop and an apply through the worker; a wrong
password or none get a clear "refused the credentials" message, an audited failure and
nothing done.
"""

import uuid

import pytest

from offsets.edits.apply import apply_edit
from offsets.models import AuditEvent, Cluster, OffsetEdit
from tests.support.connect_rest import ConnectRest
from tests.support.edit_steps import stage_and_approve
from tests.support.worker_files import running_source, stopped
from tests.support.workers import ConnectWorker

pytestmark = pytest.mark.integration

RUN = uuid.uuid4().hex[:8]
State = OffsetEdit.State
WRONG = {"wrong-password": ("dashboard", "not the password"), "no-credentials": ("", "")}


def name(what: str) -> str:
    return f"auth-{RUN}-{what}"


@pytest.fixture(scope="module")
def connect_worker(secured_connect) -> ConnectWorker:
    """The secured worker, with the right credentials, for `rest` and `cluster`."""
    return ConnectWorker(
        secured_connect.url,
        secured_connect.topics,
        secured_connect.username,
        secured_connect.password,
    )


def with_credentials(cluster: Cluster, username: str, password: str) -> Cluster:
    cluster.connect_username, cluster.connect_password = username, password
    cluster.save(update_fields=["connect_username", "connect_password"])
    return cluster


def test_the_worker_guards_every_resource_with_basic_auth(secured_connect, rest):
    anonymous = ConnectRest(secured_connect.url)
    for path in ("/", "/health", "/connectors"):
        status, body = anonymous.request("GET", path)
        assert (status, body) == (401, "User cannot access the resource."), path
    other_user = ConnectRest(secured_connect.url, auth=("someone-else", "other"))
    assert other_user.request("GET", "/")[0] == 200
    assert rest.request("GET", "/health")[0] == 200


def test_the_right_credentials_get_the_workers_version(client, cluster, secured_connect, user):
    client.force_login(user)

    info = client.get(f"/api/v1/clusters/{cluster.name}/worker/")
    page = client.get(f"/clusters/{cluster.name}/worker/")

    assert info.status_code == 200, info.content
    assert info.json()["version"].startswith("4.") and info.json()["capabilities"]["offsets_write"]
    assert page.status_code == 200
    html = page.content.decode()
    assert f'id="worker-version">{info.json()["version"]}' in html
    assert f"as {secured_connect.username}" in html and secured_connect.password not in html
    assert secured_connect.password not in info.content.decode()


@pytest.mark.parametrize("credentials", WRONG.values(), ids=WRONG.keys())
def test_wrong_or_missing_credentials_say_the_worker_refused_them(
    client, cluster, user, credentials
):
    with_credentials(cluster, *credentials)
    client.force_login(user)

    info = client.get(f"/api/v1/clusters/{cluster.name}/worker/")
    page = client.get(f"/clusters/{cluster.name}/worker/")

    # The dashboard's own 401 would mean its user is not logged in: the worker's refusal is a
    # bad gateway whose message says what to fix.
    assert info.status_code == 502, info.content
    detail = info.json()["detail"]
    assert "GET / on" in detail and "HTTP 401" in detail
    assert "the worker refused the credentials" in detail
    assert "User cannot access the resource." in detail  # the extension's own words
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="worker-error"' in html and "the worker refused the credentials" in html
    assert 'id="worker-version"' not in html


def test_a_stop_with_the_wrong_password_is_refused_and_audited_then_works(
    client, cluster, rest, secured_connect, tmp_path, editor
):
    connector, _ = running_source(rest, name("stop"), tmp_path / "stop.log", name("stop-out"))
    url = f"/api/v1/clusters/{cluster.name}/connectors/{connector}/stop/"
    client.force_login(editor)
    with_credentials(cluster, "dashboard", "not the password")

    refused = client.post(url, {"comment": "wrong password"})

    assert refused.status_code == 502, refused.content
    assert "HTTP 401" in refused.json()["detail"]
    assert "refused the credentials" in refused.json()["detail"]
    failed = AuditEvent.objects.get(cluster=cluster, connector=connector)
    assert (failed.action, failed.actor_name, failed.comment) == (
        "control-failed",
        editor.username,
        "wrong password",
    )
    assert failed.details["http_status"] == 401 and failed.details["action"] == "stop"
    assert "refused the credentials" in failed.details["error"]
    assert rest.status(connector)["connector"]["state"] == "RUNNING"

    with_credentials(cluster, *secured_connect.auth)
    done = client.post(url, {"comment": "right password"})

    assert done.status_code == 200, done.content
    assert done.json()["ok"] and done.json()["state"] == "STOPPED" and done.json()["tasks"] == []
    assert rest.status(connector)["connector"]["state"] == "STOPPED"
    assert AuditEvent.objects.filter(
        cluster=cluster, connector=connector, action="stopped", comment="right password"
    ).exists()
    rest.delete(connector)


def test_an_apply_with_the_wrong_password_writes_nothing_then_goes_through_the_worker(
    cluster, rest, secured_connect, tmp_path, editor, approver
):
    connector, path = running_source(rest, name("apply"), tmp_path / "apply.log", name("apply-out"))
    stopped(rest, connector)
    edit = stage_and_approve(
        cluster, connector, editor, approver,
        strategy="set", partition={"filename": str(path)}, offset={"position": 4},
    )  # fmt: skip
    edit.cluster = with_credentials(cluster, "dashboard", "not the password")

    edit = apply_edit(edit=edit, user=approver)

    assert edit.state == State.APPROVED, (edit.state, edit.error)
    assert "HTTP 401" in edit.error and "refused the credentials" in edit.error
    assert edit.applied_via == ""
    refused = edit.audit_events.get(action="apply-refused")
    assert refused.details["error"] == edit.error
    assert rest.offsets(connector)["offsets"][0]["offset"] == {"position": 8}

    edit.cluster = with_credentials(cluster, *secured_connect.auth)
    edit = apply_edit(edit=edit, user=approver)

    assert edit.state == State.APPLIED, edit.error
    assert edit.applied_via == "worker"
    assert rest.offsets(connector)["offsets"] == [
        {"partition": {"filename": str(path)}, "offset": {"position": 4}}
    ]
    rest.delete(connector)
