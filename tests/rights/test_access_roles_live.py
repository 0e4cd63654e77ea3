"""The writes that need the real broker, done by the roles allowed to: an editor stages (page
and token API) and imports, an approver approves and applies; a viewer may only dry-run."""

import pytest
from rest_framework.authtoken.models import Token

from offsets.models import AuditEvent, OffsetEdit
from tests.support.demo_data import AUDIT, AUDIT_PARTITION
from tests.support.users import user_with

pytestmark = pytest.mark.integration

IDENTITY = '{"filename":"/var/log/app/audit.log"}'


def token(user) -> dict:
    return {"HTTP_AUTHORIZATION": f"Token {Token.objects.create(user=user).key}"}


def test_an_editor_stages_in_the_page_and_an_approver_applies_through_the_api(
    client, fresh_demo, editor, approver
):
    client.force_login(editor)
    staged = client.post(
        f"/clusters/fresh/connectors/{AUDIT}/edits/",
        {"strategy": "set", "existing": IDENTITY, "offset": '{"position": 7}', "comment": "x"},
    )
    assert staged.status_code == 302, staged.content.decode()[-2000:]
    edit = OffsetEdit.objects.get()
    assert edit.created_by == editor and edit.state == "draft"
    client.post(f"/clusters/fresh/edits/{edit.pk}/submit/", {"comment": ""})
    client.logout()

    as_approver = token(approver)
    approved = client.post(
        f"/api/v1/edits/{edit.pk}/approve/", {}, "application/json", **as_approver
    )
    assert approved.status_code == 200
    applied = client.post(f"/api/v1/edits/{edit.pk}/apply/", {}, "application/json", **as_approver)

    assert applied.status_code == 200, applied.json()
    assert applied.json()["state"] == "applied"
    assert applied.json()["applied_by"] == approver.username
    actions = list(AuditEvent.objects.filter(edit=edit).values_list("action", "actor_name"))
    assert ("staged", "erin") in actions and ("approved", "abe") in actions
    assert ("applied", "abe") in actions


def test_an_editor_stages_and_imports_with_a_token_and_a_viewer_may_only_dry_run(
    client, fresh_demo, editor, django_user_model
):
    as_editor = token(editor)
    body = {"cluster": "fresh", "connector": AUDIT, "strategy": "set"}
    body.update(partition=AUDIT_PARTITION, offset={"position": 9})
    staged = client.post("/api/v1/edits/", body, "application/json", **as_editor)
    assert staged.status_code == 201, staged.json()
    document = {AUDIT: [{"partition": AUDIT_PARTITION, "offset": {"position": 11}}]}
    imported = client.post(
        "/api/v1/edits/import/",
        {"cluster": "fresh", "document": document},
        "application/json",
        **as_editor,
    )
    assert imported.status_code == 201, imported.json()
    assert OffsetEdit.objects.filter(created_by=editor).count() == 2

    viewer = user_with(django_user_model, "vic")
    as_viewer = token(viewer)
    before = (OffsetEdit.objects.count(), AuditEvent.objects.count())
    dry = client.post(
        "/api/v1/edits/import/",
        {"cluster": "fresh", "document": document, "dry_run": True},
        "application/json",
        **as_viewer,
    )
    assert dry.status_code == 200 and dry.json()["previews"][0]["connector"] == AUDIT
    real = client.post(
        "/api/v1/edits/import/",
        {"cluster": "fresh", "document": document},
        "application/json",
        **as_viewer,
    )
    assert real.status_code == 403
    assert (OffsetEdit.objects.count(), AuditEvent.objects.count()) == before
