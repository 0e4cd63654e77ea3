"""Roles on every write, through the pages, the API with a session and the API with a token.

viewer: reads only. editor: stage, import, submit and cancel own edits. approver: approve,
reject, cancel, apply, reconcile too; never their own edit's approval. Starting a refresh needs
the refresh operator role. Each role on every cluster (tests/support/users.py). A refused write answers
403 and changes nothing: no edit, no state change, no audit event, no refresh run.
"""

import pytest
from rest_framework.authtoken.models import Token

from offsets.models import AuditEvent, OffsetEdit, OffsetEditChange, RefreshRun
from offsets.refresh import background
from tests.support import factories
from tests.support.edits_factory import make_edit
from tests.support.users import user_with

pytestmark = pytest.mark.django_db

CHANNELS = ("page", "api-session", "api-token")


@pytest.fixture
def cluster():
    return factories.cluster("c1")


@pytest.fixture
def viewer(db, django_user_model):
    return user_with(django_user_model, "vic")


@pytest.fixture
def other_editor(db, django_user_model):
    return user_with(django_user_model, "eddy", "stage_offsetedit")


@pytest.fixture
def people(viewer, editor, other_editor, approver, operator):
    return {
        "viewer": viewer,
        "editor": editor,
        "other_editor": other_editor,
        "approver": approver,
        "operator": operator,
    }


@pytest.fixture
def launched(monkeypatch):
    # The claim (a RUNNING RefreshRun) is what these tests look at; no Spark process is needed.
    calls = []
    monkeypatch.setattr(background, "_launch", lambda **kwargs: calls.append(kwargs))
    return calls


def as_user(client, user, channel):
    """A client acting for `user` through one channel; returns (client, extra request args)."""
    if channel == "api-token":
        token, _ = Token.objects.get_or_create(user=user)
        return client, {"HTTP_AUTHORIZATION": f"Token {token.key}"}
    client.force_login(user)
    return client, {}


def state_of_the_world() -> tuple:
    """Everything a write could change, to compare before and after a refused one."""
    return (
        list(OffsetEdit.objects.order_by("pk").values_list("pk", "state", "approved_by_id")),
        OffsetEditChange.objects.count(),
        list(AuditEvent.objects.order_by("pk").values_list("pk", "action")),
        RefreshRun.objects.count(),
    )


def post(client, channel, url_page, url_api, data, extra):
    if channel == "page":
        return client.post(url_page, data, **extra)
    return client.post(url_api, data, content_type="application/json", **extra)


def edit_action(client, channel, edit, action, extra, comment="because"):
    return post(
        client,
        channel,
        f"/clusters/{edit.cluster.name}/edits/{edit.pk}/{action}/",
        f"/api/v1/edits/{edit.pk}/{action}/",
        {"comment": comment},
        extra,
    )


# (action, the state the edit is in, who may, who may not). The edit's author is "editor".
ACTION_RULES = [
    ("submit", "draft", ["editor"], ["viewer", "other_editor", "approver"]),
    ("approve", "submitted", ["approver"], ["viewer", "editor", "other_editor"]),
    ("reject", "submitted", ["approver"], ["viewer", "editor", "other_editor"]),
    ("reject", "approved", ["approver"], ["viewer", "editor", "other_editor"]),
    ("cancel", "draft", ["editor", "approver"], ["viewer", "other_editor"]),
    ("cancel", "approved", ["editor", "approver"], ["viewer", "other_editor"]),
    ("apply", "approved", [], ["viewer", "editor", "other_editor"]),  # allowed: integration
    # allowed: integration (test_edits_crash.py, after a real crash)
    ("reconcile", "applying", [], ["viewer", "editor", "other_editor"]),
]
EXPECTED_STATE = {"submit": "submitted", "approve": "approved", "reject": "rejected"}


@pytest.mark.parametrize("channel", CHANNELS)
@pytest.mark.parametrize("action,state,allowed,refused", ACTION_RULES)
def test_each_review_action_is_refused_to_the_wrong_roles_and_changes_nothing(
    client, cluster, people, channel, action, state, allowed, refused
):
    edit = make_edit(cluster, people["editor"], state=state)
    for who in refused:
        before = state_of_the_world()
        acting, extra = as_user(client, people[who], channel)
        response = edit_action(acting, channel, edit, action, extra)
        assert response.status_code == 403, (who, response.content[:300])
        assert state_of_the_world() == before, who
        client.logout()


@pytest.mark.parametrize("channel", CHANNELS)
@pytest.mark.parametrize("action,state,allowed,refused", ACTION_RULES)
def test_each_review_action_succeeds_for_the_right_roles_and_is_audited(
    client, cluster, people, channel, action, state, allowed, refused
):
    for who in allowed:
        edit = make_edit(cluster, people["editor"], state=state)
        audit_before = AuditEvent.objects.filter(edit=edit).count()
        acting, extra = as_user(client, people[who], channel)
        response = edit_action(acting, channel, edit, action, extra)
        assert response.status_code in (200, 302), (who, response.content[:300])
        edit.refresh_from_db()
        assert edit.state == EXPECTED_STATE.get(action, "cancelled"), who
        events = AuditEvent.objects.filter(edit=edit)
        assert events.count() == audit_before + 1
        assert events.latest("pk").actor_name == people[who].username
        client.logout()


@pytest.mark.parametrize("channel", CHANNELS)
def test_nobody_approves_their_own_edit_even_as_an_approver(client, cluster, approver, channel):
    edit = make_edit(cluster, approver, state="submitted")
    before = state_of_the_world()
    acting, extra = as_user(client, approver, channel)

    response = edit_action(acting, channel, edit, "approve", extra)

    assert response.status_code == 403
    assert "own edit" in response.content.decode()
    assert state_of_the_world() == before
    # Rejecting one's own edit is refused too (the author cancels instead).
    assert edit_action(acting, channel, edit, "reject", extra).status_code == 403
    assert state_of_the_world() == before


def test_the_self_approval_rule_holds_for_a_superuser_too(client, cluster, admin_user):
    edit = make_edit(cluster, admin_user, state="submitted")
    client.force_login(admin_user)
    assert edit_action(client, "page", edit, "approve", {}).status_code == 403
    assert edit_action(client, "api-session", edit, "approve", {}).status_code == 403
    edit.refresh_from_db()
    assert edit.state == "submitted"


STAGE_BODY = {
    "strategy": "set",
    "existing": '{"filename": "a"}',
    "offset": '{"position": 5}',
    "comment": "",
}
API_STAGE_BODY = {
    "cluster": "c1",
    "connector": "file-src",
    "strategy": "set",
    "partition": {"filename": "a"},
    "offset": {"position": 5},
}
IMPORT_DOCUMENT = {"file-src": [{"partition": {"filename": "a"}, "offset": {"position": 5}}]}


@pytest.mark.parametrize("who", ["viewer", "operator"])
@pytest.mark.parametrize("channel", CHANNELS)
def test_staging_and_importing_are_refused_without_the_editor_role(
    client, cluster, people, who, channel
):
    before = state_of_the_world()
    acting, extra = as_user(client, people[who], channel)
    if channel == "page":
        stage = acting.post("/clusters/c1/connectors/file-src/edits/", STAGE_BODY, **extra)
        import_form = acting.get("/clusters/c1/import/", **extra)
        imported = acting.post(
            "/clusters/c1/import/", {"connector": "", "comment": "", "dry_run": ""}, **extra
        )
        assert import_form.status_code == 403
    else:
        stage = acting.post(
            "/api/v1/edits/", API_STAGE_BODY, content_type="application/json", **extra
        )
        imported = acting.post(
            "/api/v1/edits/import/",
            {"cluster": "c1", "document": IMPORT_DOCUMENT},
            content_type="application/json",
            **extra,
        )
    assert stage.status_code == 403
    assert imported.status_code == 403
    assert state_of_the_world() == before


@pytest.mark.parametrize("channel", CHANNELS)
def test_only_the_refresh_permission_starts_a_refresh(client, cluster, people, channel, launched):
    for who in ("viewer", "editor", "approver"):
        before = state_of_the_world()
        acting, extra = as_user(client, people[who], channel)
        response = post(
            acting, channel, "/clusters/c1/refreshes/", "/api/v1/clusters/c1/refreshes/", {}, extra
        )
        assert response.status_code == 403, who
        assert state_of_the_world() == before
        client.logout()
    assert launched == []

    acting, extra = as_user(client, people["operator"], channel)
    response = post(
        acting, channel, "/clusters/c1/refreshes/", "/api/v1/clusters/c1/refreshes/", {}, extra
    )
    assert response.status_code in (202, 302)
    assert RefreshRun.objects.get().status == RefreshRun.Status.RUNNING
    assert len(launched) == 1


def test_the_admin_is_for_staff_only_and_edits_are_read_only_there(
    client, cluster, editor, admin_user
):
    edit = make_edit(cluster, editor)
    client.force_login(editor)  # not staff
    response = client.get(f"/admin/offsets/offsetedit/{edit.pk}/change/")
    assert response.status_code == 302 and response["Location"].startswith("/admin/login/")
    client.force_login(admin_user)
    before = state_of_the_world()
    # Even a superuser cannot rewrite or delete an edit or its audit trail in the admin.
    assert (
        client.post(f"/admin/offsets/offsetedit/{edit.pk}/delete/", {"post": "yes"}).status_code
        == 403
    )
    assert client.get("/admin/offsets/offsetedit/add/").status_code == 403
    assert state_of_the_world() == before
