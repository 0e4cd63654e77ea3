"""Edits that never dead-end: Stop beside any failed connector-stopped check, the state now
after it, re-stage after any failed lock check with the same inputs (page and API), resume
after apply, confirms, approvals and one's own conflicts shown."""

from types import SimpleNamespace

import pytest
from django.core.paginator import Paginator
from django.utils import timezone

from dashboard.pages.edits import views as edit_views
from offsets.domain.connectors import Connector
from offsets.edits import apply as apply_module
from offsets.edits import connector_control
from offsets.edits.connector_control import ControlOutcome, StateNow
from offsets.edits.kinds.offset_changes import kind as offset_changes
from offsets.edits.live import CurrentOffsets
from offsets.models import AuditEvent, OffsetEdit
from tests.support import factories
from tests.support.edits_factory import make_edit

pytestmark = pytest.mark.django_db

STOPPED_FAILED = {
    "name": "connector-stopped",
    "passed": False,
    "message": "The target state of file-src is STARTED; stop it first.",
}
MOVED = {"name": "nothing-moved", "passed": False, "message": "filename=a moved: 1 -> 7."}
STOPPED_PASSED = {"name": "connector-stopped", "passed": True, "message": "file-src is STOPPED."}


@pytest.fixture
def cluster():
    return factories.cluster("c1", connect_url="http://connect.invalid:8083")


def url(edit, action=""):
    base = f"/clusters/{edit.cluster.name}/edits/{edit.pk}/"
    return f"{base}{action}/" if action else base


def settled(edit, state, checks, **fields):
    OffsetEdit.objects.filter(pk=edit.pk).update(
        state=state, lock_checks=checks, finished_at=timezone.now(), **fields
    )
    edit.refresh_from_db()
    return edit


def conflict(cluster, user):
    edit = make_edit(cluster, user)
    OffsetEdit.objects.filter(pk=edit.pk).update(
        parameters={"partition": {"filename": "a"}, "offset": {"position": 2}}
    )
    return settled(edit, "conflict", [STOPPED_FAILED, MOVED], error=MOVED["message"])


@pytest.fixture
def worker(monkeypatch):
    """The Connect worker as `control_connector` sees it: records each action, reaches it."""
    calls = []

    def control(*, cluster, connector, action, user, comment="", **_):
        calls.append(action)
        state = "STOPPED" if action == "stop" else "RUNNING"
        kind = AuditEvent.Action.STOPPED if action == "stop" else AuditEvent.Action.RESUMED
        AuditEvent.objects.create(
            cluster=cluster, connector=connector, action=kind, actor=user, actor_name="x"
        )
        message = f"The worker {kind} the connector: now {state} (no tasks)."
        return ControlOutcome(connector, action, True, message, state, (), "")

    # Stop for an edit (apply) and resume after one (connector_control.resume_for_edit).
    monkeypatch.setattr(apply_module, "control_connector", control)
    monkeypatch.setattr(connector_control, "control_connector", control)
    return calls


@pytest.fixture
def staged(monkeypatch, cluster):
    """The offset-change kind's `stage` without Kafka: records the inputs, saves a draft."""
    seen = []

    def stage(*, cluster, connector, user, change, comment=""):
        seen.append(change.request)
        new = make_edit(cluster, user, connector=connector)
        OffsetEdit.objects.filter(pk=new.pk).update(comment=comment)
        return new

    monkeypatch.setattr(offset_changes.KIND, "stage", stage)
    return seen


def test_a_conflict_whose_connector_ran_offers_stop_then_re_stage(client, cluster, approver):
    edit = conflict(cluster, approver)
    client.force_login(approver)
    html = client.get(url(edit)).content.decode()
    assert 'value="stop-connector"' in html and 'value="restage"' in html
    assert html.index('value="stop-connector"') < html.index('value="restage"')
    assert "Stop the connector first, then re-stage" in html


def test_stopping_from_a_conflict_stops_and_leaves_the_edit_settled(
    client, cluster, approver, worker
):
    edit = conflict(cluster, approver)
    client.force_login(approver)
    response = client.post(url(edit, "stop-connector"), HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and worker == ["stop"]
    html = response.content.decode()
    edit.refresh_from_db()
    assert edit.state == "conflict" and edit.lock_checks == [STOPPED_FAILED, MOVED]
    # Stopped from here since the conflict: only the re-stage is left to do.
    assert 'value="stop-connector"' not in html and 'value="restage"' in html


def test_an_approved_edit_offers_stop_when_other_checks_failed_too(client, cluster, approver):
    group = {"name": "group-inactive", "passed": False, "message": "The group has 1 member."}
    edit = settled(make_edit(cluster, approver), "approved", [STOPPED_FAILED, group])
    client.force_login(approver)
    assert 'value="stop-connector"' in client.get(url(edit)).content.decode()


def test_re_staging_a_conflict_stages_its_inputs_again_and_links_both_ways(
    client, cluster, editor, staged
):
    edit = conflict(cluster, editor)
    client.force_login(editor)
    response = client.post(url(edit, "restage"), {"comment": "again"})
    new = OffsetEdit.objects.exclude(pk=edit.pk).get()
    assert response.status_code == 302 and response["Location"] == url(new)
    assert staged[0].strategy == "set"
    assert staged[0].partition == {"filename": "a"} and staged[0].offset == {"position": 2}
    assert new.restaged_from_id == edit.pk and new.state == "draft"
    event = AuditEvent.objects.get(edit=edit, action="restaged")
    assert event.details["restaged_as"] == new.pk and event.comment == "again"

    old_page = client.get(url(edit)).content.decode()
    assert f'href="{url(new)}"' in old_page and 'value="restage"' not in old_page
    assert f'href="{url(edit)}"' in client.get(url(new)).content.decode()
    # Once is enough: the second try names the edit it became.
    again = client.post(url(edit, "restage"), HTTP_HX_REQUEST="true")
    assert again.status_code == 409 and f"edit #{new.pk}" in again.content.decode()


def test_re_staging_needs_the_editor_role_and_a_conflict(client, cluster, editor, user, staged):
    edit = conflict(cluster, editor)
    client.force_login(user)
    assert client.post(url(edit, "restage")).status_code == 403
    client.force_login(editor)
    draft = make_edit(cluster, editor)
    assert client.post(url(draft, "restage"), HTTP_HX_REQUEST="true").status_code == 409
    assert not staged


def test_the_api_re_stages_a_conflict(client, cluster, editor, staged):
    edit = conflict(cluster, editor)
    client.force_login(editor)
    response = client.post(f"/api/v1/edits/{edit.pk}/restage/", {}, content_type="application/json")
    assert response.status_code == 201
    body = response.json()
    assert body["restaged_from"] == edit.pk and body["state"] == "draft"
    again = client.post(f"/api/v1/edits/{edit.pk}/restage/", {}, content_type="application/json")
    assert again.status_code == 409


def test_an_applied_edit_says_the_connector_is_still_stopped_and_resumes_it(
    client, cluster, approver, worker
):
    edit = settled(make_edit(cluster, approver), "applied", [STOPPED_PASSED])
    client.force_login(approver)
    html = client.get(url(edit)).content.decode()
    assert 'id="still-stopped"' in html and 'value="resume-connector"' in html

    response = client.post(url(edit, "resume-connector"), HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and worker == ["resume"]
    html = response.content.decode()
    assert 'id="still-stopped"' not in html and 'value="resume-connector"' not in html


def test_no_resume_after_a_deleted_connector_a_move_or_without_a_worker(client, approver):
    deleted = {"name": "connector-stopped", "passed": True, "message": "x is deleted and no task"}
    with_worker = factories.cluster("c1", connect_url="http://connect.invalid:8083")
    without = factories.cluster("c2")
    client.force_login(approver)
    for edit in (
        settled(make_edit(with_worker, approver), "applied", [deleted]),
        settled(make_edit(without, approver), "applied", [STOPPED_PASSED]),
    ):
        assert 'value="resume-connector"' not in client.get(url(edit)).content.decode()
        assert client.post(url(edit, "resume-connector"), HTTP_HX_REQUEST="true").status_code == 409


def test_cancel_and_reject_ask_first(client, cluster, editor, approver):
    edit = make_edit(cluster, editor, state="submitted")
    client.force_login(approver)
    html = client.get(url(edit)).content.decode()
    assert f'hx-confirm="Reject edit #{edit.pk}?' in html
    assert f'hx-confirm="Cancel edit #{edit.pk}?' in html


def live(target_state, tasks, rows=()):
    """What `current_offsets` reads for a source connector (`rows`: its page of offsets)."""
    context = Connector(
        name="file-src",
        type="source",
        deleted=False,
        target_state=target_state,
        connector_state="RUNNING" if tasks else target_state,
        task_states=tasks,
        mirrormaker2=False,
        primary_topic="connect-offsets",
    )
    page = Paginator(list(rows), 100).page(1)
    return CurrentOffsets(context=context, page=page, total=len(rows), partitions=set())


@pytest.mark.parametrize("role", ["editor", "user"])
def test_staging_on_a_running_connector_says_stop_first_and_offers_stop(
    client, monkeypatch, cluster, request, role
):
    monkeypatch.setattr(
        "dashboard.pages.edits.views.current_offsets", lambda **_: live("STARTED", {0: "RUNNING"})
    )
    client.force_login(request.getfixturevalue(role))
    html = client.get("/clusters/c1/connectors/file-src/edits/?strategy=add").content.decode()
    if role == "user":  # a viewer cannot stage: nothing to warn about
        assert 'id="stop-first"' not in html
        return
    assert 'id="stop-first"' in html and "Stop file-src first." in html
    assert "It is STARTED with tasks 0:RUNNING" in html
    assert 'action="/clusters/c1/connectors/file-src/control/stop/"' in html
    assert 'name="next" value="/clusters/c1/connectors/file-src/edits/?strategy=add"' in html


def test_staging_on_a_stopped_connector_says_nothing_of_stopping(
    client, monkeypatch, cluster, editor
):
    monkeypatch.setattr(
        "dashboard.pages.edits.views.current_offsets", lambda **_: live("STOPPED", {})
    )
    client.force_login(editor)
    html = client.get("/clusters/c1/connectors/file-src/edits/").content.decode()
    assert 'id="stop-first"' not in html and "Stage the edit" in html


def test_approvers_see_how_many_edits_await_them_in_the_header_and_the_list(
    client, cluster, editor, approver, second_approver
):
    mine = make_edit(cluster, approver, state="submitted")
    theirs = make_edit(cluster, editor, state="submitted")
    make_edit(cluster, editor, state="draft")
    client.force_login(approver)
    # Every page's header asks for the count once loaded, so no page pays for it.
    assert 'hx-get="/edits/awaiting/"' in client.get("/").content.decode()
    html = client.get("/edits/awaiting/").content.decode()
    assert "1 edit awaiting approval" in html
    assert 'href="/clusters/c1/edits/?state=submitted"' in html
    listing = client.get("/clusters/c1/edits/").content.decode()
    assert 'id="awaiting-here"' in listing and "1 edit on c1 submitted by someone else" in listing
    # Marked on the other person's edit only: nobody approves their own.
    rows = {int(row.split('"', 1)[0]): row for row in listing.split('<tr data-edit="')[1:]}
    assert "awaiting-you" in rows[theirs.pk] and "awaiting-you" not in rows[mine.pk]
    assert listing.count('class="small awaiting-you"') == 1
    client.force_login(second_approver)
    assert "2 edits awaiting approval" in client.get("/edits/awaiting/").content.decode()


def test_editors_and_viewers_see_no_approval_count(client, cluster, editor, user):
    make_edit(cluster, editor, state="submitted")
    for someone in (editor, user):
        client.force_login(someone)
        assert client.get("/edits/awaiting/").content.decode().strip() == ""
        assert 'id="awaiting-here"' not in client.get("/clusters/c1/edits/").content.decode()


def test_the_edit_list_filters_are_labelled(client, cluster, user):
    client.force_login(user)
    html = client.get("/clusters/c1/edits/").content.decode()
    for field in ("export-connectors", "id_state", "id_connector"):
        assert f'<label for="{field}">' in html, field


def test_a_row_of_the_live_offsets_fills_the_stage_form(client, monkeypatch, cluster, editor):
    row = SimpleNamespace(
        label='{"filename":"a b"}', key='["file-src",{"filename":"a b"}]', offset="{}"
    )
    monkeypatch.setattr(
        "dashboard.pages.edits.views.current_offsets", lambda **_: live("STOPPED", {}, [row])
    )
    client.force_login(editor)
    html = client.get("/clusters/c1/connectors/file-src/edits/").content.decode()
    link = "?strategy=set&amp;existing=%7B%22filename%22%3A%22a%20b%22%7D#stage"
    assert f'<a href="{link}"' in html
    html = client.get(
        "/clusters/c1/connectors/file-src/edits/?strategy=set&existing=%7B%22filename%22%3A%22a%20b%22%7D"
    ).content.decode()
    assert 'value="{&quot;filename&quot;:&quot;a b&quot;}"' in html


def test_a_submitted_edit_says_who_must_approve_it(client, cluster, editor):
    edit = make_edit(cluster, editor)
    client.force_login(editor)
    response = client.post(url(edit, "submit"), HTTP_HX_REQUEST="true")
    assert 'id="awaiting-approver">Waiting for an approver other than erin' in response.text
    # The header's count asks again.
    assert response["HX-Trigger"] == "edit-changed"


TARGET_WARNING = "The connector's target state is STARTED: stop it before applying (the lock..."


@pytest.mark.parametrize(
    ("now", "offered"),
    [(StateNow("RUNNING", ("RUNNING",)), True), (StateNow("PAUSED", ("PAUSED",)), True),
     (StateNow("STOPPED"), False), (StateNow(None, error="no answer"), False)],
    ids=["running", "paused", "stopped", "worker-silent"],
)  # fmt: skip
def test_an_approved_edit_offers_stop_before_its_first_apply_while_the_connector_runs(
    client, cluster, approver, monkeypatch, now, offered
):
    # No lock check yet: the worker's state now decides, so that the approver stops it
    # before applying instead of after an apply the lock check refuses.
    edit = settled(make_edit(cluster, approver), "approved", [])
    monkeypatch.setattr(edit_views, "state_now", lambda **_: now)
    client.force_login(approver)
    html = client.get(url(edit)).content.decode()
    assert ('value="stop-connector"' in html) is offered
    assert 'value="apply"' in html


def test_after_a_stop_the_conflicts_page_says_stopped_now_and_drops_what_no_longer_applies(
    client, cluster, approver, worker, monkeypatch
):
    edit = conflict(cluster, approver)
    OffsetEdit.objects.filter(pk=edit.pk).update(warnings=[TARGET_WARNING, "Another warning."])
    client.force_login(approver)
    before = client.get(url(edit)).content.decode()
    assert "target state is STARTED" in before
    assert 'class="fail" data-check="connector-stopped"' in before
    monkeypatch.setattr(edit_views, "state_now", lambda **_: StateNow("STOPPED"))
    response = client.post(url(edit, "stop-connector"), HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert response.status_code == 200
    assert 'id="connector-now" data-state="STOPPED"' in html
    assert "The connector is now <strong>STOPPED (no tasks)</strong>" in html
    # The route the re-staged edit takes (no worker answers here: the topic, directly).
    assert (
        "Re-staged with the same inputs, it would be written <strong>directly to the offsets"
        in html
    )
    assert 'class="was-fail" data-check="connector-stopped"' in html
    assert "target state" not in html.split('id="edit-warnings-box"')[0]
    # The route beside the diff comes along out of band, labelled for a conflict.
    route = html.split('<div id="edit-route-facts" hx-swap-oob="true">')[1]
    assert route.lstrip().startswith("<dt>Would be written</dt>")
    # The warnings beside the diff come along out of band, without the target-state one.
    warnings = html.split('<div id="edit-warnings-box" hx-swap-oob="true">')[1]
    assert "Another warning." in warnings and "target state" not in warnings
    page = client.get(url(edit)).content.decode()
    assert '<dt>Would be written</dt><dd id="edit-route" data-via="topic">' in page
    # An edit never written claims no way it was written.
    cancelled = settled(make_edit(cluster, approver), "cancelled", [])
    page = client.get(url(cancelled)).content.decode()
    assert "<dt>Offsets topic</dt>" in page and "in one transaction" not in page


def test_an_approved_edit_whose_lock_check_failed_is_re_staged_and_cancelled(
    client, cluster, editor, staged
):
    changed = {"name": "file-as-staged", "passed": False, "message": "The file changed since..."}
    edit = settled(make_edit(cluster, editor), "approved", [changed])
    client.force_login(editor)
    page = client.get(url(edit)).content.decode()
    assert 'value="restage"' in page and 'id="restage-next"' in page
    assert f"cancel edit #{edit.pk}?" in page  # the button asks first
    response = client.post(url(edit, "restage"))
    new = OffsetEdit.objects.exclude(pk=edit.pk).get()
    assert response.status_code == 302 and new.restaged_from_id == edit.pk
    edit.refresh_from_db()
    assert edit.state == "cancelled"
    event = AuditEvent.objects.get(edit=edit, action="restaged")
    assert event.details["cancelled"] is True and event.details["restaged_as"] == new.pk
    # An approved edit whose checks passed is no dead end: nothing to re-stage.
    fine = settled(make_edit(cluster, editor), "approved", [STOPPED_PASSED])
    assert client.post(url(fine, "restage"), HTTP_HX_REQUEST="true").status_code == 409


def test_the_api_re_stages_an_edit_whose_lock_check_failed(client, cluster, editor, staged):
    edit = settled(make_edit(cluster, editor), "approved", [STOPPED_FAILED])
    client.force_login(editor)
    response = client.post(f"/api/v1/edits/{edit.pk}/restage/", {}, content_type="application/json")
    assert response.status_code == 201 and response.json()["restaged_from"] == edit.pk


def test_editors_see_their_own_conflicts_in_the_header_and_the_list(
    client, cluster, editor, approver, staged
):
    mine = conflict(cluster, editor)
    conflict(cluster, approver)  # someone else's
    client.force_login(editor)
    header = client.get("/edits/awaiting/").content.decode()
    assert "1 of your edits ended in a conflict" in header
    assert 'href="/clusters/c1/edits/?state=conflict"' in header
    listing = client.get("/clusters/c1/edits/?state=conflict").content.decode()
    rows = {int(row.split('"', 1)[0]): row for row in listing.split('<tr data-edit="')[1:]}
    assert "your edit: re-stage it" in rows[mine.pk]
    assert listing.count("your edit: re-stage it") == 1
    # Re-staged, it needs its author no more.
    client.post(url(mine, "restage"))
    assert "conflict" not in client.get("/edits/awaiting/").content.decode()
    listing = client.get("/clusters/c1/edits/?state=conflict").content.decode()
    assert "your edit: re-stage it" not in listing


def test_a_link_in_an_edits_comment_is_clickable_and_the_rest_stays_text(client, cluster, approver):
    # Skip this record writes the record's link into the comment.
    edit = make_edit(cluster, approver)
    comment = "Skip it (seen at http://dash.example/c/x/?records=show#r-0). <b>no</b>"
    OffsetEdit.objects.filter(pk=edit.pk).update(comment=comment)
    client.force_login(approver)
    html = client.get(url(edit)).content.decode()
    assert '<a href="http://dash.example/c/x/?records=show#r-0"' in html
    assert "<b>no</b>" not in html and "&lt;b&gt;no&lt;/b&gt;" in html
