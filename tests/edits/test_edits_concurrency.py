"""Two approvers click Apply at once: exactly one applies. Runs on SQLite and PostgreSQL."""

import threading

import pytest
from django.db import connection

from offsets.edits.apply import apply_edit
from offsets.edits.errors import EditStateConflict
from offsets.kafka import reading
from offsets.models import AuditEvent, OffsetEdit
from tests.support.demo_data import AUDIT, AUDIT_KEY
from tests.support.edit_steps import approved_audit_edit

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def run_in_thread(target, results, name):
    def run():
        try:
            results[name] = target()
        except Exception as exc:
            results[name] = exc
        finally:
            # Each thread has its own database connection; leave none open behind.
            connection.close()

    return threading.Thread(target=run, name=name)


def audit_writes(fresh_demo):
    fast = {**fresh_demo.settings, "fetch.wait.max.ms": 10}
    records = reading.read_topic(fast, "connect-offsets", timeout=5, batch_size=1)
    return [r for r in records if r.key == AUDIT_KEY]


def test_two_approvers_applying_the_same_edit_at_once_apply_it_exactly_once(
    fresh_demo, editor, approver, second_approver
):
    edit = approved_audit_edit(fresh_demo.cluster, editor, approver, {"position": 11})
    writes_before = len(audit_writes(fresh_demo))
    start = threading.Barrier(2)
    results: dict[str, object] = {}

    def apply_as(user):
        def go():
            start.wait(5)
            return apply_edit(edit=OffsetEdit.objects.get(pk=edit.pk), user=user)

        return go

    threads = [
        run_in_thread(apply_as(approver), results, "abe"),
        run_in_thread(apply_as(second_approver), results, "amy"),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)

    outcomes = sorted(type(result).__name__ for result in results.values())
    assert outcomes == ["EditStateConflict", "OffsetEdit"], results
    applied = next(r for r in results.values() if isinstance(r, OffsetEdit))
    assert applied.state == "applied"
    edit.refresh_from_db()
    assert edit.state == "applied"
    # One write reached the topic, one "applied" entry in the audit log.
    assert len(audit_writes(fresh_demo)) == writes_before + 1
    assert AuditEvent.objects.filter(edit=edit, action="apply-started").count() == 1
    assert AuditEvent.objects.filter(edit=edit, action="applied").count() == 1


def test_a_second_edit_of_the_same_connector_cannot_start_while_one_is_applying(
    fresh_demo, editor, approver, second_approver
):
    first = approved_audit_edit(fresh_demo.cluster, editor, approver, {"position": 21})
    second = approved_audit_edit(fresh_demo.cluster, editor, approver, {"position": 22})
    inside = threading.Event()
    release = threading.Event()
    results: dict[str, object] = {}

    def hold_before_commit():
        inside.set()
        release.wait(30)

    thread = run_in_thread(
        lambda: apply_edit(edit=first, user=approver, before_commit=hold_before_commit),
        results,
        "first",
    )
    thread.start()
    try:
        assert inside.wait(30), results
        # The first apply holds the claim: the database itself refuses a second "applying"
        # edit for the connector (the partial unique constraint).
        with pytest.raises(EditStateConflict, match="being applied right now"):
            apply_edit(edit=second, user=second_approver)
        second.refresh_from_db()
        assert second.state == "approved"
    finally:
        release.set()
        thread.join(60)
    assert results["first"].state == "applied"
    # Now the second may go, and its lock check sees the first's write: a conflict.
    assert apply_edit(edit=second, user=second_approver).state == "conflict"


def test_the_database_refuses_two_applying_edits_for_one_connector(fresh_demo, editor, approver):
    from django.db import IntegrityError, transaction

    first = approved_audit_edit(fresh_demo.cluster, editor, approver, {"position": 31})
    second = approved_audit_edit(fresh_demo.cluster, editor, approver, {"position": 32})
    OffsetEdit.objects.filter(pk=first.pk).update(state="applying")
    with pytest.raises(IntegrityError), transaction.atomic():
        OffsetEdit.objects.filter(pk=second.pk).update(state="applying")


def test_another_dashboard_process_using_the_connectors_transactional_id_fences_this_one(
    fresh_demo, editor, approver, settings
):
    from offsets.kafka import offsets_writer

    settings.KAFKA_WRITE_TIMEOUT = 3
    edit = approved_audit_edit(fresh_demo.cluster, editor, approver, {"position": 41})
    writes_before = audit_writes(fresh_demo)
    transactional_id = offsets_writer.transactional_id("fresh", AUDIT)
    assert transactional_id == "connect-offsets-dashboard.fresh.file-source-audit"

    def another_process_starts():
        # A second dashboard process (or reconcile_edits) initialises the same id.
        offsets_writer.fence(fresh_demo.settings, transactional_id, timeout=5)

    edit = apply_edit(edit=edit, user=approver, before_commit=another_process_starts)

    # The fenced commit is refused by the broker; reading back settles the edit as not applied.
    assert edit.state == OffsetEdit.State.FAILED
    # Apache Kafka: "transactional producer fenced by newer producer instance".
    assert "fenced" in edit.error
    assert audit_writes(fresh_demo) == writes_before
    assert AuditEvent.objects.filter(edit=edit, action="reconciled").exists()
