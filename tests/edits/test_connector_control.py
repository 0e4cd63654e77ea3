"""Stop, pause, resume, restart (a connector or one task, followed until it settles) and the
worker's version against a fake worker on loopback: the adapter's errors, auth and URL list,
the API's and the page's answers, roles and audit."""

import base64
import re
import urllib.parse

import pytest
from django.contrib.messages import get_messages
from django.core.management import call_command

from offsets.domain import restarts
from offsets.edits import connector_control
from offsets.kafka.connect_rest import (
    ConnectAuthFailed,
    ConnectBadRequest,
    ConnectMalformed,
    ConnectNotJson,
    ConnectorUnknown,
    ConnectRebalancing,
    ConnectRest,
    ConnectSettings,
    ConnectUnreachable,
)
from offsets.models import AuditEvent, Cluster, ConnectorSnapshot
from tests.support import factories as make
from tests.support.fake_connect_worker import FakeWorker, closed_port_url

pytestmark = pytest.mark.django_db

SECRET = "worker-pw-4f7a1c"
# A name with a slash, a space and a question mark: quoted as one path segment to the worker.
ODD = "orders/eu src?"
ODD_PATH = urllib.parse.quote(ODD, safe="")


@pytest.fixture
def worker():
    with FakeWorker() as fake:
        fake.answer(
            "GET", "/", 200, {"version": "3.6.1", "commit": "abc123", "kafka_cluster_id": "k"}
        )
        yield fake


@pytest.fixture
def cluster(worker):
    return Cluster.objects.create(
        name="c1",
        bootstrap_servers="127.0.0.1:1",
        connect_url=f"{closed_port_url()},{worker.url}",
        connect_username="dash",
        connect_password=SECRET,
    )


@pytest.fixture(autouse=True)
def _fast_polls(monkeypatch):
    monkeypatch.setattr(connector_control, "POLL_SECONDS", 0.05)
    # A restart is followed until it settles: no second-long waits against a fake worker.
    monkeypatch.setattr(restarts, "SETTLE_SECONDS", 0.1)
    monkeypatch.setattr(restarts, "GRACE_SECONDS", 0.0)


def rest(url: str, **settings) -> ConnectRest:
    return ConnectRest(ConnectSettings(urls=(url,), timeout=5, **settings))


# --- The adapter -----------------------------------------------------------------------------


def test_it_skips_an_unreachable_url_and_sends_basic_auth(worker, cluster):
    info = ConnectRest.for_cluster(cluster).worker_info()
    assert (info.version, info.commit, info.url) == ("3.6.1", "abc123", worker.url)
    assert info.capabilities.offsets_write and not info.capabilities.create_stopped
    expected = "Basic " + base64.b64encode(f"dash:{SECRET}".encode()).decode()
    assert worker.requests[-1]["headers"]["Authorization"] == expected


def test_no_worker_answering_is_unreachable():
    with pytest.raises(ConnectUnreachable, match="no Connect worker answered") as error:
        ConnectRest(ConnectSettings(urls=(closed_port_url(), closed_port_url()))).worker_info()
    assert error.value.message.count("did not answer") == 2


@pytest.mark.parametrize(
    ("status", "body", "content_type", "error", "words"),
    [
        (401, b"", "text/plain", ConnectAuthFailed, "refused the credentials"),
        (403, b'{"message":"no"}', "application/json", ConnectAuthFailed, "HTTP 403"),
        (404, b'{"message":"Connector x not found"}', "application/json", ConnectorUnknown, "x"),
        (409, b'{"message":"rebalance"}', "application/json", ConnectRebalancing, "rebalancing"),
        (
            409,
            b'{"message":"Connector x already exists"}',
            "application/json",
            ConnectBadRequest,
            "HTTP 409: Connector x already exists",
        ),
        (200, b"<html><body>Grafana</body></html>", "text/html", ConnectNotJson, "is this the"),
        (200, b'{"version": ', "application/json", ConnectMalformed, "not valid JSON"),
    ],
)
def test_a_bad_answer_is_a_clear_error(worker, status, body, content_type, error, words):
    worker.answer("GET", "/", status, body, content_type)
    with pytest.raises(error, match=words):
        rest(worker.url).worker_info()


def test_connector_names_are_quoted_as_one_segment(worker):
    worker.connector(ODD, ODD_PATH)
    assert rest(worker.url).status(ODD).state == "RUNNING"
    assert worker.requests[-1]["path"] == f"/connectors/{ODD_PATH}/status"


# --- The API ---------------------------------------------------------------------------------


def control_url(action: str, name: str = ODD) -> str:
    from offsets.formats.connector_paths import to_segment

    segment = urllib.parse.quote(to_segment(name), safe="")
    return f"/api/v1/clusters/c1/connectors/{segment}/{action}/"


def test_stop_waits_for_stopped_and_is_audited(client, editor, worker, cluster):
    worker.connector(ODD, ODD_PATH)
    client.force_login(editor)
    response = client.post(control_url("stop"), {"comment": "before an edit"})
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["ok"] and body["state"] == "STOPPED" and body["tasks"] == []
    event = AuditEvent.objects.get(connector=ODD)
    assert (event.action, event.actor_name, event.comment) == (
        "stopped",
        editor.username,
        "before an edit",
    )
    assert event.details["state"] == "STOPPED" and event.edit is None


def test_resume_and_restart(client, approver, worker, cluster):
    worker.connector(ODD, ODD_PATH, state="STOPPED")
    worker.answer(
        "POST",
        f"/connectors/{ODD_PATH}/restart?includeTasks=true&onlyFailed=false",
        202,
        {"name": ODD, "connector": {"state": "RESTARTING"}, "tasks": []},
    )
    client.force_login(approver)
    assert client.post(control_url("resume")).json()["state"] == "RUNNING"
    response = client.post(
        control_url("restart"), {"include_tasks": True}, content_type="application/json"
    )
    assert response.status_code == 200 and "RESTARTING" in response.json()["answer"]
    actions = list(AuditEvent.objects.filter(connector=ODD).values_list("action", flat=True))
    assert actions == ["restarted", "resumed"]


def test_a_stop_that_does_not_settle_says_so(client, editor, worker, cluster, monkeypatch):
    monkeypatch.setattr(connector_control, "WAIT_SECONDS", 0.3)
    worker.connector(ODD, ODD_PATH)
    worker.on_put = {}  # the worker accepts, but its tasks never stop
    client.force_login(editor)
    body = client.post(control_url("stop")).json()
    assert not body["ok"] and "not STOPPED with no tasks" in body["message"]
    assert AuditEvent.objects.get(connector=ODD).action == "control-failed"


@pytest.mark.parametrize(("status", "expected"), [(404, 404), (409, 409), (401, 502), (500, 502)])
def test_worker_errors_map_to_api_statuses(client, editor, worker, cluster, status, expected):
    worker.answer("PUT", f"/connectors/{ODD_PATH}/stop", status, {"message": "worker says no"})
    client.force_login(editor)
    response = client.post(control_url("stop"))
    assert response.status_code == expected
    assert "worker says no" in response.json()["detail"]
    event = AuditEvent.objects.get(connector=ODD)
    assert event.action == "control-failed" and event.details["http_status"] == status


def test_viewers_may_not_control_connectors(client, user, worker, cluster):
    worker.connector(ODD, ODD_PATH)
    client.force_login(user)
    for action in ("stop", "pause", "resume", "restart", "tasks/0/restart"):
        assert client.post(control_url(action)).status_code == 403, action
    for action in ("stop", "pause", "restart-task"):
        assert client.post(f"/clusters/c1/connectors/x/control/{action}/").status_code == 403
    assert not any(r["method"] in ("PUT", "POST") for r in worker.requests)
    client.logout()
    assert client.post(control_url("stop")).status_code == 401


def test_no_worker_url_is_a_conflict(client, editor, cluster):
    Cluster.objects.filter(pk=cluster.pk).update(connect_url="")
    client.force_login(editor)
    assert client.post(control_url("stop")).status_code == 409


def test_the_clusters_api_never_shows_the_worker_password(client, user, worker, cluster):
    client.force_login(user)
    listed = client.get("/api/v1/clusters/")
    assert SECRET not in listed.content.decode()
    summary = listed.json()[0]
    assert summary["connect_urls"][1] == worker.url and summary["connect_password_set"]
    info = client.get("/api/v1/clusters/c1/worker/").json()
    assert info["version"] == "3.6.1" and info["capabilities"]["offsets_write"]
    assert not info["capabilities"]["create_stopped"]
    page = client.get("/clusters/c1/worker/")
    assert (
        page.status_code == 200 and b"3.6.1" in page.content and SECRET.encode() not in page.content
    )


def test_the_worker_page_escapes_what_the_worker_says(client, user, worker, cluster):
    worker.answer("GET", "/", 200, {"version": "<script>alert(1)</script>", "commit": "x"})
    client.force_login(user)
    page = client.get("/clusters/c1/worker/").content.decode()
    assert "<script>alert(1)" not in page and "&lt;script&gt;" in page


# --- The page --------------------------------------------------------------------------------


def test_the_page_control_answers_htmx_with_the_card(client, editor, worker, cluster):
    worker.connector("plain", "plain")
    client.force_login(editor)
    response = client.post(
        "/clusters/c1/connectors/plain/control/stop/", headers={"HX-Request": "true"}
    )
    assert response.status_code == 200
    assert b'id="control-outcome" data-ok="true"' in response.content
    response = client.post("/clusters/c1/connectors/plain/control/stop/")
    assert response.status_code == 302


TRACE = "org.apache.kafka.connect.errors.ConnectException: Couldn't find or create file\n\tat x.y"


def failing_task(worker) -> None:
    worker.answer(
        "GET",
        "/connectors/plain/status",
        200,
        {
            "name": "plain",
            "connector": {"state": "RUNNING", "worker_id": "w:8083"},
            "tasks": [{"id": 0, "state": "FAILED", "worker_id": "w:8083", "trace": TRACE}],
        },
    )


def test_a_task_that_fails_again_after_a_restart_is_a_warning_naming_its_first_line(
    client, editor, worker, cluster
):
    worker.answer("POST", "/connectors/plain/restart?includeTasks=true&onlyFailed=true", 204, None)
    failing_task(worker)
    client.force_login(editor)
    restart = {"include_tasks": "on", "only_failed": "on"}
    response = client.post(
        "/clusters/c1/connectors/plain/control/restart/", restart, headers={"HX-Request": "true"}
    )
    html = response.content.decode()
    assert response.status_code == 200 and 'class="warning"' in html
    assert 'data-warning="true"' in html and 'class="notice"' not in html
    assert (
        "Failed again: task 0: org.apache.kafka.connect.errors.ConnectException: Couldn&#x27;t "
        "find or create file (now the connector RUNNING, task 0 FAILED)." in html
    )
    # Final: the card stops following.
    assert 'data-settled="true"' in html and "data-following" not in html
    # The whole trace is folded under it, its lines as lines.
    assert '<details class="task-trace" data-failed="task 0">' in html and r"\n\tat" not in html
    # Without htmx, the next page says the same as a warning.
    response = client.post("/clusters/c1/connectors/plain/control/restart/", restart)
    assert response.status_code == 302
    [message] = get_messages(response.wsgi_request)
    assert message.level_tag == "warning" and message.message.startswith("Failed again: task 0")


def test_a_plain_restart_says_a_failed_task_is_still_failed_not_failed_again(
    client, editor, worker, cluster
):
    worker.answer(
        "POST", "/connectors/plain/restart?includeTasks=false&onlyFailed=false", 204, None
    )
    failing_task(worker)
    client.force_login(editor)
    body = client.post(control_url("restart", "plain")).json()
    assert body["warning"] and body["settled"] and "Failed again" not in body["message"]
    assert body["message"].startswith("task 0 is still FAILED: only the connector was restarted")
    assert body["failed_again"] == [
        {
            "name": "task 0",
            "first_line": "org.apache.kafka.connect.errors.ConnectException: Couldn't find or "
            "create file",
        }
    ]


def test_the_card_follows_a_restart_until_it_runs_steadily(client, editor, worker, cluster):
    worker.connector("plain", "plain")
    worker.answer("POST", "/connectors/plain/restart?includeTasks=true&onlyFailed=false", 202, None)
    client.force_login(editor)
    card = client.post(
        "/clusters/c1/connectors/plain/control/restart/",
        {"include_tasks": "on"},
        headers={"HX-Request": "true"},
    ).content.decode()
    # Just restarted: RUNNING is not yet steady, so the outcome polls the follow view.
    assert 'data-settled="false"' in card and 'data-following="true"' in card
    assert "Restarting: now the connector RUNNING, task 0 RUNNING" in card
    follow = re.search(r'hx-get="([^"]+control-follow/[^"]+)"', card).group(1)
    started = float(re.search(r"started=([0-9.]+)", follow).group(1))
    assert "tasks_restarted=on" in follow and "running_since=" in follow
    # A poll a while later, everything RUNNING since the restart: running, final.
    steady = client.get(
        "/clusters/c1/connectors/plain/control-follow/",
        {"started": started - 30, "tasks_restarted": "on", "running_since": started - 29},
        headers={"HX-Request": "true"},
    ).content.decode()
    assert 'data-settled="true"' in steady and 'class="notice"' in steady
    assert "Running: the connector RUNNING, task 0 RUNNING, steady for" in steady
    assert "hx-get" not in steady
    # Never steady within the bound: "still restarting", as a warning.
    worker.on_put["/connectors/plain/pause"]()
    late = client.get(
        "/clusters/c1/connectors/plain/control-follow/",
        {"started": started - 60, "tasks_restarted": "on"},
        headers={"HX-Request": "true"},
    ).content.decode()
    assert "Still restarting after 60 s: now the connector PAUSED, task 0 PAUSED." in late
    assert 'data-warning="true"' in late and "hx-get" not in late
    # A follow that is not one is refused, and the follow needs sight of the connector.
    bad = client.get("/clusters/c1/connectors/plain/control-follow/", {"started": "soon"})
    assert bad.status_code == 400


def test_pause_waits_for_paused_and_is_audited(client, editor, worker, cluster):
    worker.connector(ODD, ODD_PATH)
    client.force_login(editor)
    body = client.post(control_url("pause"), {"comment": "quiet night"}).json()
    assert body["ok"] and body["state"] == "PAUSED" and body["tasks"] == ["PAUSED"]
    event = AuditEvent.objects.get(connector=ODD)
    assert (event.action, event.comment) == ("paused", "quiet night")


def test_one_task_restarts_through_its_own_endpoint(client, editor, worker, cluster):
    worker.connector(ODD, ODD_PATH)
    worker.answer("POST", f"/connectors/{ODD_PATH}/tasks/0/restart", 204, None)
    client.force_login(editor)
    body = client.post(control_url("tasks/0/restart")).json()
    assert body["ok"] and body["action"] == "restart-task" and body["settled"]
    assert body["message"].startswith("Running: task 0 RUNNING")
    assert any(r["path"] == f"/connectors/{ODD_PATH}/tasks/0/restart" for r in worker.requests)
    event = AuditEvent.objects.get(connector=ODD)
    assert (event.action, event.details["task"]) == ("task-restarted", 0)
    # The page: the task number is required, a number.
    page = "/clusters/c1/connectors/plain/control/restart-task/"
    worker.connector("plain", "plain")
    answer = client.post(page, {"task": "x"}, headers={"HX-Request": "true"})
    assert answer.status_code == 400 and "not a task number" in answer.content.decode()
    answer = client.post(page, headers={"HX-Request": "true"})
    assert answer.status_code == 400 and "Say which task" in answer.content.decode()


def test_the_page_restarts_only_the_failed_tasks_when_asked(client, editor, worker, cluster):
    path = "/connectors/plain/restart?includeTasks=true&onlyFailed=true"
    worker.connector("plain", "plain")
    worker.answer("POST", path, 204, None)
    client.force_login(editor)
    response = client.post(
        "/clusters/c1/connectors/plain/control/restart/",
        {"include_tasks": "on", "only_failed": "on"},
        headers={"HX-Request": "true"},
    )
    assert response.status_code == 200
    assert any(request["path"] == path for request in worker.requests)


def test_a_control_with_a_page_to_go_back_to_returns_there(client, editor, worker, cluster):
    worker.connector("plain", "plain")
    client.force_login(editor)
    back = "/clusters/c1/connectors/plain/edits/?strategy=set"
    response = client.post(
        "/clusters/c1/connectors/plain/control/stop/",
        {"next": back},
        headers={"HX-Request": "true"},
    )
    assert response.status_code == 204 and response["HX-Redirect"] == back
    response = client.post("/clusters/c1/connectors/plain/control/stop/", {"next": back})
    assert response.status_code == 302 and response["Location"] == back
    # Another site is no place to go back to.
    response = client.post(
        "/clusters/c1/connectors/plain/control/stop/", {"next": "https://evil.example/"}
    )
    assert response["Location"] == "/clusters/c1/connectors/plain/"


def test_the_page_control_shows_a_worker_error(client, editor, worker, cluster):
    client.force_login(editor)
    response = client.post(
        "/clusters/c1/connectors/gone/control/resume/", headers={"HX-Request": "true"}
    )
    assert response.status_code == 404 and b'id="control-error"' in response.content


# --- add_cluster -----------------------------------------------------------------------------


def test_add_cluster_takes_the_worker_options(tmp_path, capsys):
    password_file = tmp_path / "pw"
    password_file.write_text(SECRET + "\n")
    call_command(
        "add_cluster", "w", "--bootstrap-servers", "k:9092",
        "--connect-url", "http://w1:8083,http://w2:8083", "--connect-url", "https://w3:8443",
        "--connect-username", "dash", "--connect-password-file", str(password_file),
        "--connect-ca-file", "/ca.pem", "--connect-cert-file", "/c.pem", "--connect-key-file", "/k.pem",
    )  # fmt: skip
    cluster = Cluster.objects.get(name="w")
    assert cluster.connect_urls == ("http://w1:8083", "http://w2:8083", "https://w3:8443")
    assert (cluster.connect_username, cluster.connect_password) == ("dash", SECRET)
    assert (cluster.connect_ca_file, cluster.connect_key_file) == ("/ca.pem", "/k.pem")
    assert SECRET not in capsys.readouterr().out


def test_add_cluster_rejects_a_bad_worker_url():
    from django.core.management import CommandError

    with pytest.raises(CommandError, match="connect_url"):
        call_command(
            "add_cluster", "w", "--bootstrap-servers", "k:9092", "--connect-url", "w1:8083"
        )


def test_the_admin_masks_the_worker_password(admin_client, cluster):
    page = admin_client.get(f"/admin/offsets/cluster/{cluster.pk}/change/").content.decode()
    assert SECRET not in page and "********" in page
    listing = admin_client.get("/admin/offsets/cluster/").content.decode()
    assert SECRET not in listing


def test_the_cards_buttons_keep_the_workers_answer_until_a_newer_refresh_offers_others(
    client, editor, worker, cluster
):
    worker.connector("plain", "plain")
    first = make.run(cluster, ago=60)
    make.snapshot(cluster, "plain", target_state="STARTED", runtime_state="RUNNING")
    client.force_login(editor)
    page = client.get("/clusters/c1/connectors/plain/").content.decode()
    assert f'"shown": "stop pause restart", "run": "{first.pk}"' in page
    card = client.post(
        "/clusters/c1/connectors/plain/control/stop/", headers={"HX-Request": "true"}
    ).content.decode()
    # The worker said STOPPED: Resume only, until a refresh sees past it.
    assert f'"shown": "resume", "run": "{first.pk}"' in card

    def poll(run: int, shown: str):
        return client.get(
            f"/clusters/c1/connectors/plain/?shown={shown}&run={run}",
            headers={"HX-Request": "true", "HX-Target": "control-buttons"},
        )

    # The refresh on show still says RUNNING: it must not undo what the worker reported.
    assert poll(first.pk, "resume").status_code == 204
    ConnectorSnapshot.objects.filter(name="plain").update(
        target_state="STOPPED", runtime_state="STOPPED"
    )
    second = make.run(cluster, ago=10)
    # A newer refresh that offers the same buttons: nothing to swap either.
    assert poll(first.pk, "resume").status_code == 204
    ConnectorSnapshot.objects.filter(name="plain").update(
        target_state="STARTED", runtime_state="RUNNING"
    )
    third = make.run(cluster, ago=2)
    response = poll(second.pk, "resume")
    html = response.content.decode()
    assert response.status_code == 200
    assert html.lstrip().startswith('<div class="buttons" id="control-buttons">')
    assert ">Stop</button>" in html and ">Restart</button>" in html and "Resume" not in html
    assert f'"shown": "stop pause restart", "run": "{third.pk}"' in html
    assert poll(third.pk, "stop pause restart").status_code == 204
