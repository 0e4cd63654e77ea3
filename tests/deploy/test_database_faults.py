"""A database that is locked for a moment: a clear 503, nothing half-written, the audit whole.

The lock is real: a second SQLite connection holds it (tests/support/db_faults.py), as a refresh's
long write or another process would. The data must be committed for the second connection
to see it, hence ``transactional_db``.
"""

import pytest
from django.db import OperationalError, connection

from offsets.edits.apply import apply_edit
from offsets.edits.reconcile import reconcile_edits
from offsets.edits.review import approve_edit, submit_edit
from offsets.edits.workflow import OffsetChange, StageRequest, stage
from offsets.models import AuditEvent, OffsetEdit
from tests.support import factories
from tests.support.db_faults import SqliteLock, require_sqlite, short_busy_timeout
from tests.support.edits_factory import make_edit

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def cluster():
    return factories.cluster("c1")


def actions(edit):
    return list(
        AuditEvent.objects.filter(edit=edit).order_by("at", "id").values_list("action", flat=True)
    )


def test_a_page_answers_503_with_a_message_while_the_database_is_locked(client, user):
    client.force_login(user)
    with short_busy_timeout(), SqliteLock("EXCLUSIVE"):
        response = client.get("/")
    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    page = response.content.decode()
    assert "Database unavailable" in page and "database is locked" in page
    assert 'data-error="database-unavailable"' in page
    assert "Traceback" not in page


def test_an_htmx_partial_gets_the_503_too(client, user):
    client.force_login(user)
    with short_busy_timeout(), SqliteLock("EXCLUSIVE"):
        response = client.get("/", HTTP_HX_REQUEST="true")
    assert response.status_code == 503
    assert "database is locked" in response.content.decode()


def test_the_api_answers_503_json_while_the_database_is_locked(client, user):
    client.force_login(user)
    with short_busy_timeout(), SqliteLock("EXCLUSIVE"):
        response = client.get("/api/v1/clusters/")
    assert response.status_code == 503
    body = response.json()
    assert body["code"] == "database_unavailable"
    assert "database is locked" in body["detail"]


def test_the_page_works_again_once_the_lock_is_gone(client, user):
    client.force_login(user)
    with short_busy_timeout():
        with SqliteLock("EXCLUSIVE"):
            assert client.get("/").status_code == 503
        assert client.get("/").status_code == 200


def test_approving_while_another_writer_holds_the_lock_changes_nothing(
    client, cluster, editor, approver
):
    edit = make_edit(cluster, editor, state="submitted")
    client.force_login(approver)
    url = f"/clusters/{cluster.name}/edits/{edit.pk}/approve/"
    with short_busy_timeout(), SqliteLock("IMMEDIATE"):
        response = client.post(url, {"comment": "ok"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 503
    assert "database is locked" in response.content.decode()
    edit.refresh_from_db()
    assert edit.state == OffsetEdit.State.SUBMITTED and edit.approved_by is None
    assert actions(edit) == []
    # Once the lock is gone the same click works, and is audited once.
    response = client.post(url, {"comment": "ok"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    edit.refresh_from_db()
    assert edit.state == OffsetEdit.State.APPROVED and actions(edit) == ["approved"]


def test_applying_while_the_database_is_locked_claims_nothing_and_touches_no_broker(
    client, cluster, editor, approver
):
    # The cluster's broker is 127.0.0.1:1: any Kafka access would fail as "unreachable" and
    # release the claim with an apply-refused entry; the lock must stop the apply first.
    edit = make_edit(cluster, editor, state="approved")
    client.force_login(approver)
    with short_busy_timeout(), SqliteLock("IMMEDIATE"):
        response = client.post(
            f"/api/v1/edits/{edit.pk}/apply/", {"comment": "go"}, content_type="application/json"
        )
    assert response.status_code == 503
    assert response.json()["code"] == "database_unavailable"
    edit.refresh_from_db()
    assert edit.state == OffsetEdit.State.APPROVED and edit.applied_by is None
    assert actions(edit) == []


def test_a_state_change_and_its_audit_entry_are_written_together(cluster, editor, approver):
    """If the audit entry cannot be written, the approval is not kept either."""
    require_sqlite()
    edit = make_edit(cluster, editor, state="submitted")
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE TRIGGER refuse_approved_audit BEFORE INSERT ON offsets_auditevent "
            "WHEN NEW.action = 'approved' BEGIN SELECT RAISE(ABORT, 'disk I/O error'); END"
        )
    try:
        with pytest.raises(Exception, match="disk I/O error"):
            approve_edit(edit=edit, user=approver)
    finally:
        with connection.cursor() as cursor:
            cursor.execute("DROP TRIGGER refuse_approved_audit")
    edit.refresh_from_db()
    assert edit.state == OffsetEdit.State.SUBMITTED and edit.approved_by is None


def test_an_apply_claim_and_its_audit_entry_are_written_together(cluster, editor, approver):
    require_sqlite()
    edit = make_edit(cluster, editor, state="approved")
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE TRIGGER refuse_apply_audit BEFORE INSERT ON offsets_auditevent "
            "WHEN NEW.action = 'apply-started' BEGIN SELECT RAISE(ABORT, 'disk I/O error'); END"
        )
    try:
        with pytest.raises(Exception, match="disk I/O error"):
            apply_edit(edit=edit, user=approver)
    finally:
        with connection.cursor() as cursor:
            cursor.execute("DROP TRIGGER refuse_apply_audit")
    edit.refresh_from_db()
    # Not stranded in "applying" with no trace in the audit log.
    assert edit.state == OffsetEdit.State.APPROVED and edit.applied_by is None


def test_a_lock_that_outlasts_the_busy_timeout_raises_operational_error(cluster):
    """The premise of the tests above: the lock really blocks this process's writes."""
    with short_busy_timeout(), SqliteLock("IMMEDIATE"), pytest.raises(OperationalError):
        factories.cluster("c2")


@pytest.mark.integration
def test_staging_while_another_writer_holds_the_lock_stores_nothing(client, fresh_demo, editor):
    """The diff is read from the live broker, then the save meets the lock: 503, no edit."""
    client.force_login(editor)
    payload = {
        "cluster": fresh_demo.cluster.name,
        "connector": "orders-cdc-eos",
        "strategy": "set",
        "partition": {"server": "orders-db"},
        "offset": {"lsn": 1},
    }
    with short_busy_timeout(), SqliteLock("IMMEDIATE"):
        response = client.post("/api/v1/edits/", payload, content_type="application/json")
    assert response.status_code == 503
    assert "database is locked" in response.json()["detail"]
    assert not OffsetEdit.objects.exists() and not AuditEvent.objects.exists()
    # The same request once the lock is gone stages the edit, audited once.
    response = client.post("/api/v1/edits/", payload, content_type="application/json")
    assert response.status_code == 201, response.content
    (edit,) = OffsetEdit.objects.all()
    assert actions(edit) == ["staged"] and edit.changes.count() == 1


@pytest.mark.integration
def test_a_lock_after_the_kafka_commit_leaves_the_edit_applying_until_reconciled(
    fresh_demo, editor, approver
):
    """Kafka has the edit, the database cannot say so: the edit stays "applying" (in doubt),
    never "failed", and reconcile_edits finds it applied."""
    from tests.support.connect_sim import stop_connector

    stop_connector(fresh_demo.settings, "orders-cdc-eos")
    edit = stage(
        cluster=fresh_demo.cluster,
        connector="orders-cdc-eos",
        user=editor,
        change=OffsetChange(
            StageRequest(strategy="set", partition={"server": "orders-db"}, offset={"lsn": 1})
        ),
    )
    submit_edit(edit=edit, user=editor)
    edit = approve_edit(edit=edit, user=approver)
    lock = SqliteLock("IMMEDIATE")
    try:
        with short_busy_timeout(), pytest.raises(OperationalError, match="locked"):
            # The lock is taken as the transaction is about to commit, and kept.
            apply_edit(edit=edit, user=approver, before_commit=lock.acquire)
    finally:
        lock.release()
    edit.refresh_from_db()
    assert edit.state == OffsetEdit.State.APPLYING
    assert actions(edit) == ["staged", "submitted", "approved", "apply-started"]

    ((_settled, error),) = reconcile_edits()
    assert error == ""
    edit.refresh_from_db()
    assert edit.state == OffsetEdit.State.APPLIED
    assert actions(edit)[-1] == "reconciled"
