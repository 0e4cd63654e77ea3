"""/api/v1/edits/: the same roles as the pages; 400 naming the field, 403, 404, 409, 503."""

import base64

import pytest

from offsets.models import AuditEvent, OffsetEdit
from tests.support import factories
from tests.support.edits_factory import make_edit, make_stuck

pytestmark = pytest.mark.django_db


@pytest.fixture
def cluster():
    return factories.cluster("c1")


def api(client, user):
    client.force_login(user)
    return client


def test_the_edits_api_requires_login(client, cluster, editor):
    edit = make_edit(cluster, editor)
    assert client.get("/api/v1/edits/").status_code == 401
    assert client.get(f"/api/v1/edits/{edit.pk}/").status_code == 401
    assert client.post(f"/api/v1/edits/{edit.pk}/submit/").status_code == 401


def test_it_lists_edits_with_filters(logged_in_client, cluster, editor):
    draft = make_edit(cluster, editor)
    make_edit(cluster, editor, state="applied", connector="other")
    response = logged_in_client.get("/api/v1/edits/?cluster=c1&state=draft")
    assert response.status_code == 200
    assert [e["id"] for e in response.json()] == [draft.pk]
    assert logged_in_client.get("/api/v1/edits/?connector=other").json()[0]["state"] == "applied"
    assert logged_in_client.get("/api/v1/edits/?cluster=nope").status_code == 404
    response = logged_in_client.get("/api/v1/edits/?state=sideways")
    assert response.status_code == 400 and "state" in response.json()


def test_it_shows_an_edit_with_its_diff_exact_key_bytes_and_audit(
    logged_in_client, cluster, editor
):
    edit = make_edit(cluster, editor)
    AuditEvent.objects.create(
        cluster=cluster, connector=edit.connector, edit=edit, action="staged", actor_name="erin"
    )
    body = logged_in_client.get(f"/api/v1/edits/{edit.pk}/").json()
    (change,) = body["changes"]
    assert change["before"] == {"position": 1} and change["after"] == {"position": 2}
    assert change["key"] == '["file-src",{"filename":"a"}]'
    assert base64.b64decode(change["key_base64"]) == b'["file-src",{"filename":"a"}]'
    assert body["audit"][0]["action"] == "staged"
    assert body["created_by"] == "erin" and body["approved_by"] is None
    assert logged_in_client.get("/api/v1/edits/999/").status_code == 404


@pytest.mark.parametrize(
    "payload,field",
    [
        ({"connector": "x", "strategy": "latest"}, "cluster"),
        ({"cluster": "c1", "connector": "x", "strategy": "sideways"}, "strategy"),
        ({"cluster": "c1", "connector": "x", "strategy": "import"}, "strategy"),
        (
            {"cluster": "c1", "connector": "x", "strategy": "duration", "duration": "soon"},
            "duration",
        ),
        (
            {
                "cluster": "c1",
                "connector": "x",
                "strategy": "earliest",
                "partitions": [{"topic": "t", "partition": -1}],
            },
            "partitions",
        ),
        ({"cluster": "c1", "connector": "x", "strategy": "set", "offset": [1]}, "offset"),
        (
            {"cluster": "c1", "connector": "x", "strategy": "set", "partition": {"a": {"b": 1}}},
            "partition",
        ),
        ({"cluster": "c1", "connector": "x", "strategy": "offset", "value": "ten"}, "value"),
        ({"cluster": "c1", "connector": "x", "strategy": "store-offset"}, "value"),
        ({"cluster": "c1", "connector": "x", "strategy": "restore", "at": "yesterday"}, "at"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(client, cluster, editor, payload, field):
    response = api(client, editor).post("/api/v1/edits/", payload, content_type="application/json")
    assert response.status_code == 400
    assert field in response.json()
    assert not OffsetEdit.objects.exists()


def test_staging_needs_the_editor_role(logged_in_client, cluster):
    response = logged_in_client.post(
        "/api/v1/edits/",
        {"cluster": "c1", "connector": "x", "strategy": "latest"},
        content_type="application/json",
    )
    assert response.status_code == 403


def test_staging_on_an_unknown_cluster_is_a_404(client, cluster, editor):
    response = api(client, editor).post(
        "/api/v1/edits/",
        {"cluster": "nope", "connector": "x", "strategy": "latest"},
        content_type="application/json",
    )
    assert response.status_code == 404


def test_staging_on_an_unreachable_cluster_is_a_503(client, cluster, editor, settings):
    settings.KAFKA_READ_TIMEOUT = 1
    response = api(client, editor).post(
        "/api/v1/edits/",
        {"cluster": "c1", "connector": "x", "strategy": "latest"},
        content_type="application/json",
    )
    assert response.status_code == 503
    assert "did not answer" in response.json()["detail"]


def test_the_review_actions_follow_the_roles_and_states(client, cluster, editor, approver):
    edit = make_edit(cluster, editor)
    as_editor = api(client, editor)
    assert as_editor.post(f"/api/v1/edits/{edit.pk}/approve/").status_code == 403
    response = as_editor.post(
        f"/api/v1/edits/{edit.pk}/submit/", {"comment": "ready"}, content_type="application/json"
    )
    assert response.status_code == 200 and response.json()["state"] == "submitted"
    assert as_editor.post(f"/api/v1/edits/{edit.pk}/submit/").status_code == 409

    as_approver = api(client, approver)
    response = as_approver.post(f"/api/v1/edits/{edit.pk}/approve/")
    assert response.status_code == 200 and response.json()["approved_by"] == "abe"
    assert as_approver.post(f"/api/v1/edits/{edit.pk}/approve/").status_code == 409
    response = as_approver.post(f"/api/v1/edits/{edit.pk}/reject/", {"comment": "no"})
    assert response.status_code == 200 and response.json()["state"] == "rejected"
    assert as_approver.post(f"/api/v1/edits/{edit.pk}/apply/").status_code == 409
    assert as_approver.post("/api/v1/edits/999/apply/").status_code == 404
    actions = [a["action"] for a in as_approver.get(f"/api/v1/edits/{edit.pk}/").json()["audit"]]
    assert actions == ["submitted", "approved", "rejected"]


def test_reconcile_answers_403_without_the_role_and_409_unless_stuck_long_enough(
    client, cluster, editor, approver
):
    edit = make_edit(cluster, editor, state="approved")
    reconcile = f"/api/v1/edits/{edit.pk}/reconcile/"
    make_stuck(edit)
    assert api(client, editor).post(reconcile).status_code == 403
    as_approver = api(client, approver)
    make_stuck(edit, stale=False)
    response = as_approver.post(reconcile)
    assert response.status_code == 409 and "may still be running" in response.json()["detail"]
    OffsetEdit.objects.filter(pk=edit.pk).update(state="approved")
    response = as_approver.post(reconcile)
    assert response.status_code == 409 and "not applying" in response.json()["detail"]
    assert as_approver.post("/api/v1/edits/999/reconcile/").status_code == 404
    assert not AuditEvent.objects.exists()


def test_reconcile_answers_503_when_the_broker_is_unreachable_and_changes_nothing(
    client, cluster, editor, approver, settings
):
    settings.KAFKA_WRITE_TIMEOUT = 2  # the fence gives up quickly on the dead port
    edit = make_stuck(make_edit(cluster, editor))
    response = api(client, approver).post(f"/api/v1/edits/{edit.pk}/reconcile/")
    assert response.status_code == 503
    edit.refresh_from_db()
    assert edit.state == "applying" and edit.error == ""
    assert not AuditEvent.objects.exists()


def test_stage_restore_answers_403_without_the_role_and_409_for_any_edit_but_a_lossy_delete(
    client, cluster, editor, user
):
    failed = make_edit(cluster, editor, state="failed")  # a source edit: nothing to commit back
    url = f"/api/v1/edits/{failed.pk}/stage-restore/"
    assert api(client, user).post(url).status_code == 403  # a viewer
    response = api(client, editor).post(url)
    assert response.status_code == 409
    assert "not a failed sink edit with offsets to commit back" in response.json()["detail"]
    sink = make_edit(cluster, editor, state="applied")
    OffsetEdit.objects.filter(pk=sink.pk).update(
        connector_type="sink", sink_keep=[["orders", 0, 5]]
    )
    assert api(client, editor).post(f"/api/v1/edits/{sink.pk}/stage-restore/").status_code == 409
    assert api(client, editor).post("/api/v1/edits/999/stage-restore/").status_code == 404
    assert OffsetEdit.objects.count() == 2 and not AuditEvent.objects.exists()


def test_self_approval_is_a_403(client, cluster, approver):
    edit = make_edit(cluster, approver, state="submitted")
    response = api(client, approver).post(f"/api/v1/edits/{edit.pk}/approve/")
    assert response.status_code == 403
    assert "own edit" in response.json()["detail"]


def test_an_overlong_comment_is_a_400(client, cluster, editor):
    edit = make_edit(cluster, editor)
    response = api(client, editor).post(
        f"/api/v1/edits/{edit.pk}/submit/", {"comment": "x" * 5001}, content_type="application/json"
    )
    assert response.status_code == 400 and "comment" in response.json()


def test_export_input_is_checked(logged_in_client, cluster, settings):
    assert logged_in_client.get("/api/v1/edits/export/").status_code == 400  # cluster missing
    response = logged_in_client.get("/api/v1/edits/export/?cluster=c1&shape=kip875")
    assert response.status_code == 400 and "connectors" in response.json()
    assert logged_in_client.get("/api/v1/edits/export/?cluster=nope").status_code == 404
    settings.KAFKA_READ_TIMEOUT = 1
    assert logged_in_client.get("/api/v1/edits/export/?cluster=c1").status_code == 503


def test_a_bad_import_document_is_a_400_naming_the_field_before_any_broker_is_asked(
    client, cluster, editor
):
    response = api(client, editor).post(
        "/api/v1/edits/import/",
        {"cluster": "c1", "document": {"orders-sink": [{"partition": {}, "offset": None}]}},
        content_type="application/json",
    )
    assert response.status_code == 400
    # A place in the document nests under "document": a connector's name is not a field.
    assert response.json() == {"document": {"orders-sink[0].partition": ["must not be empty"]}}
    response = client.post(
        "/api/v1/edits/import/",
        {"cluster": "c1", "document": {"offsets": []}},
        content_type="application/json",
    )
    assert response.status_code == 400 and "connector" in response.json()
    assert not OffsetEdit.objects.exists()


def test_importing_needs_the_editor_role_unless_it_is_a_dry_run(logged_in_client, cluster):
    response = logged_in_client.post(
        "/api/v1/edits/import/",
        {"cluster": "c1", "document": {}},
        content_type="application/json",
    )
    assert response.status_code == 403


def test_the_schema_lists_the_edit_endpoints(logged_in_client):
    paths = logged_in_client.get(
        "/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json"
    ).json()["paths"]
    for path in (
        "/api/v1/edits/",
        "/api/v1/edits/{id}/",
        "/api/v1/edits/{id}/apply/",
        "/api/v1/edits/{id}/reconcile/",
        "/api/v1/edits/{id}/stage-restore/",
        "/api/v1/edits/export/",
        "/api/v1/edits/import/",
    ):
        assert path in paths


# --- With a broker ------------------------------------------------------------------------


@pytest.mark.integration
def test_the_whole_workflow_over_the_api(client, fresh_demo, editor, approver):
    from tests.support.connect_sim import stop_connector

    stop_connector(fresh_demo.settings, "s3-sink-orders", tasks=2)
    as_editor = api(client, editor)
    response = as_editor.post(
        "/api/v1/edits/",
        {
            "cluster": "fresh",
            "connector": "s3-sink-orders",
            "strategy": "offset",
            "value": 2,
            "partitions": [{"topic": "orders", "partition": 4}],
            "comment": "replay",
        },
        content_type="application/json",
    )
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["changes"][0]["after"] == {"kafka_offset": 2}
    edit_id = body["id"]
    assert as_editor.post(f"/api/v1/edits/{edit_id}/submit/").status_code == 200
    as_approver = api(client, approver)
    assert as_approver.post(f"/api/v1/edits/{edit_id}/approve/").status_code == 200
    response = as_approver.post(f"/api/v1/edits/{edit_id}/apply/", {"comment": "go"})
    assert response.status_code == 200
    body = response.json()
    assert body["state"] == "applied", body["error"]
    assert [c["name"] for c in body["lock_checks"]] == [
        "connector-stopped",
        "group-inactive",
        "nothing-moved",
        "single-apply",
    ]
    exported = as_approver.get(
        "/api/v1/edits/export/?cluster=fresh&connectors=s3-sink-orders"
    ).json()
    assert {
        "partition": {"kafka_topic": "orders", "kafka_partition": 4},
        "offset": {"kafka_offset": 2},
    } in exported["offsets"]


@pytest.mark.integration
def test_a_running_connector_answers_apply_with_the_refusing_check(
    client, fresh_demo, editor, approver
):
    edit_id = (
        api(client, editor)
        .post(
            "/api/v1/edits/",
            {"cluster": "fresh", "connector": "s3-sink-orders", "strategy": "earliest"},
            content_type="application/json",
        )
        .json()["id"]
    )
    client.post(f"/api/v1/edits/{edit_id}/submit/")
    as_approver = api(client, approver)
    as_approver.post(f"/api/v1/edits/{edit_id}/approve/")
    body = as_approver.post(f"/api/v1/edits/{edit_id}/apply/").json()
    assert body["state"] == "approved"
    assert {c["name"]: c["passed"] for c in body["lock_checks"]}["connector-stopped"] is False


@pytest.mark.integration
def test_an_unknown_connector_is_a_404_and_a_dry_run_import_previews(client, fresh_demo, editor):
    as_editor = api(client, editor)
    response = as_editor.post(
        "/api/v1/edits/",
        {"cluster": "fresh", "connector": "nope", "strategy": "latest"},
        content_type="application/json",
    )
    assert response.status_code == 404
    response = as_editor.post(
        "/api/v1/edits/import/",
        {
            "cluster": "fresh",
            "connector": "file-source-audit",
            "dry_run": True,
            "document": {
                "offsets": [
                    {"partition": {"filename": "/var/log/app/new.log"}, "offset": {"position": 0}}
                ]
            },
        },
        content_type="application/json",
    )
    assert response.status_code == 200
    (preview,) = response.json()["previews"]
    assert preview["changes"][0]["is_new"] is True
    assert (
        preview["changes"][0]["key"] == '["file-source-audit",{"filename":"/var/log/app/new.log"}]'
    )
    assert not OffsetEdit.objects.exists()
