"""The move's page and API without a broker: roles, the applied move's page, and resuming on
the target through a fake worker (its errors answered, never a 500)."""

import json

import pytest

from offsets.edits import connector_control
from offsets.models import AuditEvent, Cluster, OffsetEdit
from tests.support.fake_connect_worker import FakeWorker

pytestmark = pytest.mark.django_db

SECRET = "moved-secret-9c2e"


@pytest.fixture(autouse=True)
def _fast_polls(monkeypatch):
    monkeypatch.setattr(connector_control, "POLL_SECONDS", 0.05)


@pytest.fixture
def worker():
    with FakeWorker() as fake:
        yield fake


@pytest.fixture
def clusters(worker) -> tuple[Cluster, Cluster]:
    source = Cluster.objects.create(name="a", bootstrap_servers="127.0.0.1:1")
    target = Cluster.objects.create(
        name="b", bootstrap_servers="127.0.0.1:1", connect_url=worker.url
    )
    return source, target


def move_edit(clusters, editor, state: str) -> OffsetEdit:
    source, target = clusters
    return OffsetEdit.objects.create(
        cluster=source,
        connector="orders",
        connector_type="source",
        strategy="move",
        state=state,
        created_by=editor,
        target_cluster=target,
        connector_config={"connector.class": "x.Source", "db.password": SECRET},
    )


def test_viewers_may_not_stage_a_move(client, user, clusters):
    client.force_login(user)
    assert client.get("/clusters/a/connectors/orders/move/").status_code == 403
    response = client.post(
        "/api/v1/clusters/a/connectors/orders/move/", {"target": "b"}, "application/json"
    )
    assert response.status_code == 403


def test_an_unknown_target_is_a_bad_input(client, editor, clusters):
    client.force_login(editor)
    response = client.post(
        "/api/v1/clusters/a/connectors/orders/move/", {"target": "nope"}, "application/json"
    )
    assert response.status_code == 400 and "No cluster 'nope'" in response.json()["target"][0]


def test_an_applied_move_page_offers_the_resume_to_approvers_only(
    client, editor, approver, clusters
):
    edit = move_edit(clusters, editor, "applied")
    client.force_login(approver)
    page = client.get(f"/clusters/a/edits/{edit.pk}/").content.decode()
    assert "Resume on b" in page and "Moves to" in page
    assert SECRET not in page and "db.password" in page
    client.force_login(editor)
    assert "Resume on b" not in client.get(f"/clusters/a/edits/{edit.pk}/").content.decode()
    assert client.post(f"/api/v1/edits/{edit.pk}/resume-target/").status_code == 403


def test_a_moves_page_names_the_secrets_the_editor_retyped_but_not_their_values(
    client, editor, approver, clusters
):
    edit = move_edit(clusters, editor, "submitted")
    edit.parameters = {"target": "b", "secrets_supplied": ["db.password"]}
    edit.save(update_fields=["parameters"])
    client.force_login(approver)
    page = client.get(f"/clusters/a/edits/{edit.pk}/").content.decode()
    retyped = page.split('id="move-retyped"', 1)[1].split("</p>", 1)[0]
    assert "<code>db.password</code>" in retyped and "erin" in retyped
    assert "(re-typed by erin)" in page and SECRET not in page


def test_resume_on_the_target_is_audited_there(client, editor, approver, clusters, worker):
    edit = move_edit(clusters, editor, "applied")
    worker.connector("orders", "orders", state="STOPPED")
    client.force_login(approver)
    response = client.post(f"/api/v1/edits/{edit.pk}/resume-target/", {"comment": "go"})
    assert response.status_code == 200, response.content
    assert response.json()["target_cluster"] == "b"
    assert SECRET not in response.content.decode()
    assert ("PUT", "/connectors/orders/resume") in [
        (r["method"], r["path"]) for r in worker.requests
    ]
    event = AuditEvent.objects.get(cluster=clusters[1], connector="orders")
    assert (event.action, event.comment) == ("resumed", "go")


def test_resume_needs_an_applied_move_and_a_worker_that_answers(
    client, editor, approver, clusters, worker
):
    client.force_login(approver)
    draft = move_edit(clusters, editor, "draft")
    conflict = client.post(f"/api/v1/edits/{draft.pk}/resume-target/")
    assert conflict.status_code == 409 and "not an applied move" in conflict.json()["detail"]
    applied = move_edit(clusters, editor, "approved")
    OffsetEdit.objects.filter(pk=applied.pk).update(state="applied")
    worker.answer("PUT", "/connectors/orders/resume", 200, b"<html>proxy</html>", "text/html")
    html = client.post(f"/api/v1/edits/{applied.pk}/resume-target/")
    assert html.status_code == 502 and "answered HTML" in html.json()["detail"]
    page = client.post(
        f"/clusters/a/edits/{applied.pk}/resume-target/", headers={"HX-Request": "true"}
    )
    assert page.status_code == 502 and "answered HTML" in page.content.decode()


# --- Apply and reconcile against a fake target (the source side's checks stubbed) -------------

ENTRY = {"partition": {"filename": "/f"}, "offset": {"position": 8}}


@pytest.fixture
def claimed_move(clusters, editor, approver, monkeypatch):
    """An approved source move of one partition whose source-side lock check passes."""
    from offsets.domain.edits import CheckResult
    from offsets.edits.kinds.move import kind as move
    from offsets.models import OffsetEditChange

    monkeypatch.setattr(move, "POLL_SECONDS", 0.01)
    monkeypatch.setattr(
        move.MoveKind,
        "lock_checks",
        lambda self, edit: [CheckResult("connector-stopped", True, "ok")],
    )
    edit = move_edit(clusters, editor, "approved")
    OffsetEditChange.objects.create(
        edit=edit,
        position=0,
        partition=ENTRY["partition"],
        key_bytes=b'["orders",{"filename":"/f"}]',
        after=ENTRY["offset"],
        after_bytes=b'{"position":8}',
        is_new=True,
    )
    return edit


def stopped_on_target(worker) -> None:
    """The target's status of the created connector: STOPPED with no tasks, as KIP-875 wants."""
    status = {"name": "orders", "connector": {"state": "STOPPED"}, "tasks": [], "type": "source"}
    worker.answer("GET", "/connectors/orders/status", 200, status)


def requests(worker) -> list[tuple[str, str]]:
    return [(r["method"], r["path"]) for r in worker.requests]


def apply(edit, approver):
    from offsets.edits.apply import apply_edit

    return apply_edit(edit=edit, user=approver)


def test_a_create_the_target_refuses_gives_the_claim_back(claimed_move, approver, worker):
    worker.answer("POST", "/connectors", 400, {"error_code": 400, "message": "bad config"})
    edit = apply(claimed_move, approver)
    assert edit.state == "approved" and "bad config" in edit.error
    assert ("DELETE", "/connectors/orders") not in requests(worker)


def test_a_name_taken_between_the_check_and_the_create_is_said_so(claimed_move, approver, worker):
    message = {"error_code": 409, "message": "Connector orders already exists"}
    worker.answer("POST", "/connectors", 409, message)
    edit = apply(claimed_move, approver)
    assert edit.state == "approved" and "already has a connector named 'orders'" in edit.error
    assert "rebalancing" not in edit.error.split("The worker said")[0]
    assert ("DELETE", "/connectors/orders") not in requests(worker)


def test_a_create_in_doubt_that_created_it_is_rolled_back(claimed_move, approver, worker):
    worker.answer("POST", "/connectors", 500, {"error_code": 500, "message": "timed out"})
    stopped_on_target(worker)
    worker.answer("DELETE", "/connectors/orders", 204, b"")
    edit = apply(claimed_move, approver)
    assert edit.state == "failed" and "Rolled back" in edit.error, edit.error
    assert ("DELETE", "/connectors/orders") in requests(worker)
    assert ("PATCH", "/connectors/orders/offsets") not in requests(worker)


def test_offsets_read_back_wrong_restore_the_target_and_delete(claimed_move, approver, worker):
    worker.answer("POST", "/connectors", 201, {"name": "orders", "config": {"db.password": "x"}})
    stopped_on_target(worker)
    worker.answer("PATCH", "/connectors/orders/offsets", 200, {"message": "altered"})
    worker.answer("GET", "/connectors/orders/offsets", 200, {"offsets": []})
    worker.answer("DELETE", "/connectors/orders", 204, b"")
    edit = apply(claimed_move, approver)
    assert edit.state == "failed" and "1 missing" in edit.error, edit.error
    patches = [r["body"] for r in worker.requests if r["method"] == "PATCH"]
    assert [json.loads(body) for body in patches] == [
        {"offsets": [ENTRY]},
        {"offsets": [{**ENTRY, "offset": None}]},
    ]
    assert requests(worker)[-1] == ("DELETE", "/connectors/orders")


def test_a_verified_move_is_applied_through_the_worker(claimed_move, approver, worker):
    worker.answer("POST", "/connectors", 201, {"name": "orders", "config": {"db.password": "x"}})
    stopped_on_target(worker)
    worker.answer("PATCH", "/connectors/orders/offsets", 200, {"message": "altered"})
    worker.answer("GET", "/connectors/orders/offsets", 200, {"offsets": [ENTRY]})
    edit = apply(claimed_move, approver)
    assert (edit.state, edit.applied_via) == ("applied", "worker"), edit.error
    created = json.loads(next(r["body"] for r in worker.requests if r["method"] == "POST"))
    assert created["initial_state"] == "STOPPED"
    assert created["config"]["db.password"] == SECRET
    details = edit.audit_events.get(action="applied").details
    assert "config" not in details["created"] and details["verified"] is True
    assert ("DELETE", "/connectors/orders") not in requests(worker)


@pytest.mark.parametrize(
    ("exists", "offsets", "state"),
    [(True, [ENTRY], "applied"), (False, None, "failed"), (True, [], "failed")],
)
def test_a_stuck_move_is_reconciled_from_the_target(
    claimed_move, approver, worker, exists, offsets, state
):
    from offsets.edits.reconcile import reconcile

    OffsetEdit.objects.filter(pk=claimed_move.pk).update(state="applying")
    if exists:
        stopped_on_target(worker)
        worker.answer("GET", "/connectors/orders/offsets", 200, {"offsets": offsets})
    edit = reconcile(claimed_move, approver)
    assert edit.state == state, edit.error
    assert edit.applied_via == ("worker" if state == "applied" else "")
    assert not [r for r in worker.requests if r["method"] != "GET"]


def test_the_admin_shows_a_moves_config_masked(client, django_user_model, editor, clusters):
    edit = move_edit(clusters, editor, "applied")
    admin = django_user_model.objects.create_superuser("root", password="root-password")
    client.force_login(admin)
    page = client.get(f"/admin/offsets/offsetedit/{edit.pk}/change/")
    assert page.status_code == 200
    assert SECRET not in page.content.decode() and "db.password" in page.content.decode()


def test_a_source_cluster_that_cannot_be_read_is_a_503_page(client, editor, clusters, settings):
    settings.KAFKA_READ_TIMEOUT = 1
    client.force_login(editor)
    page = client.get("/clusters/a/connectors/orders/move/")
    assert page.status_code == 503 and "could not be read" in page.content.decode()


def test_an_unexpected_error_after_the_create_rolls_back(
    claimed_move, approver, worker, monkeypatch
):
    from offsets.edits.kinds.move import kind as move

    def broken(*args, **kwargs):
        raise TypeError("a bug")

    monkeypatch.setattr(move.rules, "compare_offsets", broken)
    worker.answer("POST", "/connectors", 201, {"name": "orders"})
    stopped_on_target(worker)
    worker.answer("PATCH", "/connectors/orders/offsets", 200, {"message": "altered"})
    worker.answer("GET", "/connectors/orders/offsets", 200, {"offsets": [ENTRY]})
    worker.answer("DELETE", "/connectors/orders", 204, b"")
    edit = apply(claimed_move, approver)
    assert edit.state == "failed" and "unexpectedly: a bug. Rolled back" in edit.error
    assert requests(worker)[-1] == ("DELETE", "/connectors/orders")
