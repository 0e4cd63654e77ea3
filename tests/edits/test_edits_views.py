"""The offset-edit pages: roles (403), unknown things (404), the diff, htmx actions."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from offsets.models import AuditEvent, OffsetEdit, OffsetEditChange
from tests.support import factories
from tests.support.edits_factory import make_edit, make_stuck

pytestmark = pytest.mark.django_db


@pytest.fixture
def cluster():
    return factories.cluster("c1")


def url(edit, action=""):
    base = f"/clusters/{edit.cluster.name}/edits/{edit.pk}/"
    return f"{base}{action}/" if action else base


def test_the_edit_pages_require_login(client, cluster, editor):
    edit = make_edit(cluster, editor)
    for page in (
        url(edit),
        "/clusters/c1/edits/",
        "/clusters/c1/import/",
        "/clusters/c1/export/",
        "/clusters/c1/connectors/file-src/edits/",
    ):
        response = client.get(page)
        assert response.status_code == 302 and response["Location"].startswith("/login/"), page
    assert client.post(url(edit, "approve")).status_code == 302


def test_an_unknown_cluster_edit_or_action_is_a_404(logged_in_client, cluster, editor):
    edit = make_edit(cluster, editor)
    factories.cluster("c2")
    assert logged_in_client.get("/clusters/nope/edits/").status_code == 404
    assert logged_in_client.get("/clusters/c1/edits/999/").status_code == 404
    # An edit is only found under its own cluster.
    assert logged_in_client.get(f"/clusters/c2/edits/{edit.pk}/").status_code == 404
    assert logged_in_client.post(url(edit, "explode")).status_code == 404


def test_the_diff_page_shows_before_after_the_exact_key_bytes_and_warnings(
    logged_in_client, cluster, editor
):
    edit = make_edit(cluster, editor)
    response = logged_in_client.get(url(edit))
    assert response.status_code == 200
    html = response.content.decode()
    assert "{&quot;position&quot;:1}" in html and "{&quot;position&quot;:2}" in html
    assert "key bytes: [&quot;file-src&quot;,{&quot;filename&quot;:&quot;a&quot;}]" in html
    assert "New partition: check the field order." in html
    assert 'id="edit-state">draft<' in html


def test_a_viewer_sees_the_diff_but_no_buttons_and_cannot_act(logged_in_client, cluster, editor):
    edit = make_edit(cluster, editor, state="submitted")
    html = logged_in_client.get(url(edit)).content.decode()
    assert 'name="do"' not in html
    for action in ("submit", "approve", "reject", "cancel", "apply"):
        response = logged_in_client.post(url(edit, action))
        assert response.status_code == 403, action
    edit.refresh_from_db()
    assert edit.state == "submitted"
    assert not AuditEvent.objects.exists()


def test_the_author_submits_with_htmx_and_gets_the_status_panel_back(client, cluster, editor):
    edit = make_edit(cluster, editor)
    client.force_login(editor)
    assert 'value="submit"' in client.get(url(edit)).content.decode()

    response = client.post(url(edit, "submit"), {"comment": "please look"}, HTTP_HX_REQUEST="true")

    assert response.status_code == 200
    html = response.content.decode()
    assert html.lstrip().startswith('<section class="card actions" id="edit-status">')
    assert 'id="edit-state">submitted<' in html
    assert "please look" in html
    event = AuditEvent.objects.get(edit=edit)
    assert (event.action, event.actor_name, event.comment) == ("submitted", "erin", "please look")


def test_a_plain_form_post_redirects_back_to_the_edit(client, cluster, editor):
    edit = make_edit(cluster, editor)
    client.force_login(editor)
    response = client.post(url(edit, "submit"))
    assert response.status_code == 302 and response["Location"] == url(edit)


def test_an_approver_cannot_approve_their_own_edit(client, cluster, approver):
    edit = make_edit(cluster, approver, state="submitted")
    client.force_login(approver)
    html = client.get(url(edit)).content.decode()
    assert 'value="approve"' not in html
    assert "another approver must approve it" in html
    response = client.post(url(edit, "approve"), HTTP_HX_REQUEST="true")
    assert response.status_code == 403
    assert "Nobody approves their own edit" in response.content.decode()
    edit.refresh_from_db()
    assert edit.state == "submitted"


def test_another_approver_approves_and_a_second_click_is_a_conflict(
    client, cluster, editor, approver
):
    edit = make_edit(cluster, editor, state="submitted")
    client.force_login(approver)
    response = client.post(url(edit, "approve"), {"comment": "ok"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    edit.refresh_from_db()
    assert edit.state == "approved" and edit.approved_by == approver
    response = client.post(url(edit, "approve"), HTTP_HX_REQUEST="true")
    assert response.status_code == 409
    assert "cannot become approved" in response.content.decode()


def test_an_editor_cannot_approve_reject_or_apply(client, cluster, editor, approver):
    edit = make_edit(cluster, approver, state="submitted")
    client.force_login(editor)
    for action in ("approve", "reject"):
        assert client.post(url(edit, action)).status_code == 403
    OffsetEdit.objects.filter(pk=edit.pk).update(state="approved")
    assert client.post(url(edit, "apply")).status_code == 403


def test_applying_an_edit_that_is_not_approved_is_a_conflict_and_touches_no_broker(
    client, cluster, editor, approver
):
    edit = make_edit(cluster, editor, state="submitted")
    client.force_login(approver)
    response = client.post(url(edit, "apply"), HTTP_HX_REQUEST="true")
    assert response.status_code == 409
    assert "not approved" in response.content.decode()


def test_the_reconcile_button_shows_only_to_approvers_once_the_apply_cannot_be_running(
    client, cluster, editor, approver
):
    edit = make_stuck(make_edit(cluster, editor), stale=False)
    client.force_login(approver)
    html = client.get(url(edit)).content.decode()
    assert 'value="reconcile"' not in html
    assert 'id="reconcile-from"' in html  # says from when it can be reconciled
    make_stuck(edit)
    html = client.get(url(edit)).content.decode()
    assert 'value="reconcile"' in html and "Reconcile from Kafka" in html
    assert 'id="reconcile-from"' not in html
    client.force_login(editor)
    assert 'value="reconcile"' not in client.get(url(edit)).content.decode()


def test_reconciling_needs_the_approver_role(client, cluster, editor):
    edit = make_stuck(make_edit(cluster, editor))
    client.force_login(editor)
    response = client.post(url(edit, "reconcile"), HTTP_HX_REQUEST="true")
    assert response.status_code == 403
    edit.refresh_from_db()
    assert edit.state == "applying" and not AuditEvent.objects.exists()


@pytest.mark.parametrize("state", ["approved", "applied", "failed"])
def test_reconciling_an_edit_that_is_not_applying_is_a_conflict(
    client, cluster, editor, approver, state
):
    edit = make_edit(cluster, editor, state=state)
    client.force_login(approver)
    response = client.post(url(edit, "reconcile"), HTTP_HX_REQUEST="true")
    assert response.status_code == 409
    assert "not applying" in response.content.decode()
    edit.refresh_from_db()
    assert edit.state == state


def test_reconciling_an_apply_that_may_still_be_running_is_a_conflict_and_touches_no_broker(
    client, cluster, editor, approver
):
    edit = make_stuck(make_edit(cluster, editor), stale=False)
    client.force_login(approver)
    response = client.post(url(edit, "reconcile"), HTTP_HX_REQUEST="true")
    assert response.status_code == 409
    assert "may still be running" in response.content.decode()
    edit.refresh_from_db()
    assert edit.state == "applying" and not AuditEvent.objects.exists()


def test_reconciling_with_the_broker_unreachable_is_a_503_and_changes_nothing(
    client, cluster, editor, approver, settings
):
    settings.KAFKA_WRITE_TIMEOUT = 2  # the fence gives up quickly on the dead port
    edit = make_stuck(make_edit(cluster, editor))
    client.force_login(approver)
    response = client.post(url(edit, "reconcile"), HTTP_HX_REQUEST="true")
    assert response.status_code == 503
    assert "could not be reached" in response.content.decode()
    edit.refresh_from_db()
    assert edit.state == "applying" and edit.error == ""
    assert not AuditEvent.objects.exists()


def test_the_author_or_an_approver_cancels_and_a_cancelled_edit_stays_cancelled(
    client, cluster, editor, second_approver
):
    edit = make_edit(cluster, editor, state="approved")
    client.force_login(second_approver)
    assert client.post(url(edit, "cancel"), {"comment": "wrong table"}).status_code == 302
    edit.refresh_from_db()
    assert edit.state == "cancelled"
    client.force_login(editor)
    assert client.post(url(edit, "submit")).status_code == 409  # cancelled is final
    assert AuditEvent.objects.get(edit=edit).comment == "wrong table"


def test_a_too_long_comment_is_refused_by_the_form(client, cluster, editor):
    edit = make_edit(cluster, editor)
    client.force_login(editor)
    response = client.post(url(edit, "submit"), {"comment": "x" * 5001}, HTTP_HX_REQUEST="true")
    assert response.status_code == 400
    edit.refresh_from_db()
    assert edit.state == "draft"


def test_a_viewer_cannot_stage_or_import(logged_in_client, cluster):
    response = logged_in_client.post(
        "/clusters/c1/connectors/file-src/edits/", {"strategy": "latest"}
    )
    assert response.status_code == 403
    assert logged_in_client.get("/clusters/c1/import/").status_code == 403
    assert not OffsetEdit.objects.exists()


def test_the_connector_page_reports_an_unreachable_cluster(logged_in_client, cluster, settings):
    settings.KAFKA_READ_TIMEOUT = 1
    response = logged_in_client.get("/clusters/c1/connectors/file-src/edits/")
    assert response.status_code == 503
    assert "Cannot read the cluster" in response.content.decode()


def test_the_edit_list_filters_by_state_and_shows_the_audit_log(logged_in_client, cluster, editor):
    draft = make_edit(cluster, editor)
    applied = make_edit(cluster, editor, state="applied", connector="other-src")
    AuditEvent.objects.create(
        cluster=cluster, connector="other-src", edit=applied, action="applied", actor_name="abe"
    )
    html = logged_in_client.get("/clusters/c1/edits/?state=applied").content.decode()
    assert f'data-edit="{applied.pk}"' in html and f'data-edit="{draft.pk}"' not in html
    assert 'id="audit-log"' in html and 'data-action="applied"' in html


def test_the_edit_list_counts_each_edits_changes_in_one_query_however_many_edits(
    logged_in_client, cluster, editor
):
    def shown_and_queries() -> tuple[str, int]:
        with CaptureQueriesContext(connection) as queries:
            html = logged_in_client.get("/clusters/c1/edits/").content.decode()
        return html, len(queries)

    make_edit(cluster, editor)
    _, with_one = shown_and_queries()
    for number in range(5):
        edit = make_edit(cluster, editor, connector=f"src-{number}")
        OffsetEditChange.objects.create(edit=edit, position=1, partition={"filename": "b"})
    html, with_six = shown_and_queries()
    assert with_six == with_one
    # Five edits of two changes each, and the first of one.
    assert html.count("<td>2</td>") == 5 and html.count("<td>1</td>") >= 1


def test_an_export_with_bad_options_is_a_400_and_an_unreachable_cluster_a_503(
    logged_in_client, cluster, settings
):
    response = logged_in_client.get("/clusters/c1/export/?format=kip875")
    assert response.status_code == 400
    assert "connectors" in response.json()["errors"]
    settings.KAFKA_READ_TIMEOUT = 1
    assert logged_in_client.get("/clusters/c1/export/?connectors=a").status_code == 503


def test_the_audit_log_refuses_changes_and_deletions(cluster, editor):
    from offsets.models.edits import AuditLogIsAppendOnly

    event = AuditEvent.objects.create(
        cluster=cluster, connector="x", action="staged", actor_name="erin"
    )
    event.comment = "rewritten"
    with pytest.raises(AuditLogIsAppendOnly):
        event.save()
    with pytest.raises(AuditLogIsAppendOnly):
        event.delete()
    with pytest.raises(AuditLogIsAppendOnly):
        AuditEvent.objects.filter(pk=event.pk).update(comment="rewritten")
    with pytest.raises(AuditLogIsAppendOnly):
        AuditEvent.objects.all().delete()
    assert AuditEvent.objects.get(pk=event.pk).comment == ""


def test_the_admin_shows_the_audit_log_read_only(admin_client, cluster):
    event = AuditEvent.objects.create(
        cluster=cluster, connector="x", action="staged", actor_name="erin"
    )
    assert admin_client.get("/admin/offsets/auditevent/").status_code == 200
    assert admin_client.get(f"/admin/offsets/auditevent/{event.pk}/change/").status_code == 200
    assert admin_client.post(f"/admin/offsets/auditevent/{event.pk}/delete/").status_code == 403
    assert admin_client.get("/admin/offsets/auditevent/add/").status_code == 403
    assert AuditEvent.objects.filter(pk=event.pk).exists()


# --- With a broker ------------------------------------------------------------------------


@pytest.mark.integration
def test_the_connector_page_lists_live_offsets_and_stages_a_source_edit(client, fresh_demo, editor):
    client.force_login(editor)
    page = "/clusters/fresh/connectors/file-source-audit/edits/"
    html = client.get(page + "?strategy=set").content.decode()
    assert 'id="current-offsets"' in html
    assert "{&quot;filename&quot;:&quot;/var/log/app/audit.log&quot;}" in html
    assert 'data-field="existing"' in html and 'data-field="partition"' not in html

    response = client.post(
        page,
        {
            "strategy": "set",
            "existing": '{"filename":"/var/log/app/audit.log"}',
            "offset": '{"position": 12}',
            "comment": "replay the last hour",
        },
    )

    edit = OffsetEdit.objects.get()
    assert response.status_code == 302 and response["Location"] == url(edit)
    assert edit.comment == "replay the last hour" and edit.state == "draft"
    html = client.get(url(edit)).content.decode()
    assert "{&quot;position&quot;:12}" in html


@pytest.mark.integration
def test_a_bad_stage_input_is_shown_by_its_field_and_stages_nothing(client, fresh_demo, editor):
    client.force_login(editor)
    page = "/clusters/fresh/connectors/file-source-audit/edits/"
    response = client.post(page, {"strategy": "add", "partition": "[1]", "offset": "{}"})
    assert response.status_code == 400
    html = response.content.decode()
    assert "must be a non-empty JSON object" in html
    response = client.post(
        page,
        {
            "strategy": "add",
            "partition": '{"filename":"/var/log/app/audit.log"}',
            "offset": '{"p":1}',
        },
    )
    assert response.status_code == 400
    assert "use &#x27;set&#x27; to change it" in response.content.decode()
    assert not OffsetEdit.objects.exists()


@pytest.mark.integration
def test_the_sink_page_stages_an_edit_for_chosen_partitions(client, fresh_demo, editor):
    client.force_login(editor)
    page = "/clusters/fresh/connectors/s3-sink-orders/edits/"
    html = client.get(page + "?strategy=offset").content.decode()
    assert "connect-s3-sink-orders" in html and 'data-partition="orders-0"' in html
    assert '<textarea name="partitions"' in html
    response = client.post(page, {"strategy": "offset", "partitions": "orders-0", "value": "0"})
    assert response.status_code == 302
    (change,) = OffsetEdit.objects.get().changes.all()
    assert (change.topic, change.kafka_partition, change.after) == (
        "orders",
        0,
        {"kafka_offset": 0},
    )


@pytest.mark.integration
def test_an_unknown_connector_page_is_a_404(logged_in_client, fresh_demo):
    assert logged_in_client.get("/clusters/fresh/connectors/nope/edits/").status_code == 404


@pytest.mark.integration
def test_the_import_page_dry_runs_then_stages(client, fresh_demo, editor):
    from django.core.files.uploadedfile import SimpleUploadedFile

    client.force_login(editor)
    document = (
        b'{"file-source-audit":[{"partition":{"filename":"/var/log/app/audit.log"},"offset":null}]}'
    )
    response = client.post(
        "/clusters/fresh/import/",
        {"file": SimpleUploadedFile("o.json", document), "dry_run": "on"},
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="import-preview"' in html and "DELETE" in html and "(deleted)" in html
    assert not OffsetEdit.objects.exists()
    response = client.post(
        "/clusters/fresh/import/", {"file": SimpleUploadedFile("o.json", document)}
    )
    assert response.status_code == 302
    assert OffsetEdit.objects.get().strategy == "import"
    response = client.post(
        "/clusters/fresh/import/", {"file": SimpleUploadedFile("o.json", b'{"x": 1}')}
    )
    assert response.status_code == 400
    assert "Nothing was staged. x: must be a list" in response.content.decode()


@pytest.mark.integration
def test_the_export_downloads_kip875_for_one_connector_and_kip199_for_all(
    logged_in_client, fresh_demo
):
    response = logged_in_client.get("/clusters/fresh/export/?connectors=es-sink-clicks")
    assert response.status_code == 200
    assert re.fullmatch(
        r'attachment; filename="fresh-es-sink-clicks-offsets-\d{8}T\d{4}Z\.json"',
        response["Content-Disposition"],
    )
    assert set(response.json()) == {"offsets"}
    response = logged_in_client.get("/clusters/fresh/export/?from_beginning=on")
    assert set(response.json()) == set(fresh_demo.demo.connectors)
    assert "history" in response["Content-Disposition"]
    assert logged_in_client.get("/clusters/fresh/export/?connectors=nope").status_code == 404


@pytest.mark.integration
def test_the_connectors_page_links_each_connector_to_its_edits_and_export(
    logged_in_client, fresh_demo
):
    # The live state page (the connectors list shows refresh results; `fresh` has none).
    html = logged_in_client.get("/clusters/fresh/live/").content.decode()
    assert 'href="/clusters/fresh/connectors/es-sink-clicks/edits/"' in html
    assert 'href="/clusters/fresh/export/?connector=es-sink-clicks"' in html


def test_the_edit_list_offers_an_export_of_several_connectors(logged_in_client, cluster):
    html = logged_in_client.get("/clusters/c1/edits/").content.decode()
    assert 'id="export-form"' in html and 'action="/clusters/c1/export/"' in html
    assert 'name="connectors"' in html and 'name="from_beginning"' in html
