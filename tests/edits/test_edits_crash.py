"""The process applying an edit is killed (SIGKILL) at the worst moments.

The apply runs in a child process (the same service a page calls) that pauses at a fault
point (offsets/faults.py: OFFSETS_FAULT_PAUSE) and is then killed outright, as an OOM kill or
a lost machine would. Then: Kafka holds either the whole edit or none of it (read_committed
and read_uncommitted), the edit is still "applying", and `reconcile_edits` settles it
truthfully from what Kafka holds, with the audit log complete.
"""

import os
import signal
import subprocess
import sys
import time
from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.core.management import call_command
from django.utils import timezone

from offsets.edits.apply import apply_edit
from offsets.edits.reconcile import stale_after
from offsets.edits.review import approve_edit, submit_edit
from offsets.edits.workflow import OffsetChange, StageRequest, stage
from offsets.formats import jackson
from offsets.models import AuditEvent, OffsetEdit
from tests.support.connect_sim import stop_connector
from tests.support.db_faults import database_url
from tests.support.demo_data import DELETED, EOS, EOS_TOPICS, S3
from tests.support.edit_steps import approved_eos_edit, approved_sink_edit
from tests.support.offsets_reads import committed, eos_records

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


CHILD = """
import sys

import django

django.setup()
from django.contrib.auth import get_user_model

from offsets.edits.apply import apply_edit
from offsets.models import OffsetEdit

edit = OffsetEdit.objects.get(pk=int(sys.argv[1]))
user = get_user_model().objects.get(username=sys.argv[2])
print(apply_edit(edit=edit, user=user).state, flush=True)
"""


def approved_edit(fresh_demo, editor, approver, kind: str) -> OffsetEdit:
    if kind == "source":
        stop_connector(fresh_demo.settings, EOS)
        return approved_eos_edit(fresh_demo.cluster, editor, approver)
    stop_connector(fresh_demo.settings, S3, tasks=2)
    return approved_sink_edit(
        fresh_demo.cluster,
        editor,
        approver,
        strategy="earliest",
        partitions=(("orders", 0), ("orders", 1)),
    )


def apply_and_kill_at(edit: OffsetEdit, approver, point: str, tmp_path: Path) -> None:
    """Apply in a child process, wait until it reaches ``point``, SIGKILL it there."""
    marker = tmp_path / f"paused-{point}"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "dashboard.settings",
        "DATABASE_URL": database_url(),
        "OFFSETS_FAULT_PAUSE": point,
        "OFFSETS_FAULT_PAUSE_FILE": str(marker),
        "KAFKA_READ_TIMEOUT": "5",
    }
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(edit.pk), approver.username],
        cwd=django_settings.BASE_DIR,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 90
        while not marker.exists():
            if child.poll() is not None:
                out, err = child.communicate()
                pytest.fail(f"the apply ended before {point}: {out.decode()} {err.decode()}")
            if time.monotonic() > deadline:
                pytest.fail(f"the apply never reached {point}")
            time.sleep(0.05)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        if child.poll() is None:
            child.kill()
        child.communicate(timeout=30)
    assert child.returncode == -signal.SIGKILL


def reconcile() -> str:
    out = StringIO()
    # The process is dead (killed above), so no need to wait for the safe age.
    call_command("reconcile_edits", "--min-age", "0", stdout=out)
    return out.getvalue()


def audit_actions(edit: OffsetEdit) -> list[str]:
    return list(
        AuditEvent.objects.filter(edit=edit).order_by("at", "id").values_list("action", flat=True)
    )


AUDIT_BEFORE_THE_CRASH = ["staged", "submitted", "approved", "apply-started"]


def test_killed_before_the_source_transaction_commits_nothing_is_written_and_it_reconciles_failed(
    fresh_demo, editor, approver, tmp_path
):
    edit = approved_edit(fresh_demo, editor, approver, "source")
    before = eos_records(fresh_demo.settings)

    apply_and_kill_at(edit, approver, "apply-before-commit", tmp_path)

    edit.refresh_from_db()
    assert edit.state == OffsetEdit.State.APPLYING
    assert audit_actions(edit) == AUDIT_BEFORE_THE_CRASH
    out = reconcile()
    assert f"Edit #{edit.pk} ({EOS}): failed" in out
    edit.refresh_from_db()
    assert edit.state == OffsetEdit.State.FAILED
    assert "interrupted before its write committed" in edit.error
    assert audit_actions(edit) == [*AUDIT_BEFORE_THE_CRASH, "reconciled"]
    # Not one record of the edit reached the topics, committed or not.
    assert eos_records(fresh_demo.settings) == before


def test_killed_after_the_source_transaction_committed_it_reconciles_applied(
    fresh_demo, editor, approver, tmp_path
):
    edit = approved_edit(fresh_demo, editor, approver, "source")
    before = eos_records(fresh_demo.settings)

    apply_and_kill_at(edit, approver, "apply-after-commit", tmp_path)

    edit.refresh_from_db()
    assert edit.state == OffsetEdit.State.APPLYING
    after = eos_records(fresh_demo.settings)
    key = jackson.dumps_key(EOS, {"server": "orders-db"})
    for topic in EOS_TOPICS:
        # The whole transaction, committed: one new record in each topic, under both levels.
        for level in ("read_committed", "read_uncommitted"):
            new = set(after[(topic, level)]) - set(before[(topic, level)])
            assert [(k, v) for _p, _o, k, v in new] == [(key, jackson.dumps({"lsn": 1}))]

    assert f"Edit #{edit.pk} ({EOS}): applied" in reconcile()
    edit.refresh_from_db()
    assert edit.state == OffsetEdit.State.APPLIED and edit.error == ""
    assert audit_actions(edit) == [*AUDIT_BEFORE_THE_CRASH, "reconciled"]
    reconciled = AuditEvent.objects.get(edit=edit, action="reconciled")
    assert reconciled.actor_name == "system" and reconciled.details["state"] == "applied"


def test_killed_before_the_sink_group_changed_nothing_moved_and_it_reconciles_failed(
    fresh_demo, editor, approver, tmp_path
):
    edit = approved_edit(fresh_demo, editor, approver, "sink")
    before = committed(fresh_demo)

    apply_and_kill_at(edit, approver, "apply-before-commit", tmp_path)

    assert committed(fresh_demo) == before
    edit.refresh_from_db()
    assert edit.state == OffsetEdit.State.APPLYING
    assert f"Edit #{edit.pk} ({S3}): failed" in reconcile()
    edit.refresh_from_db()
    assert edit.state == OffsetEdit.State.FAILED
    assert audit_actions(edit) == [*AUDIT_BEFORE_THE_CRASH, "reconciled"]
    assert committed(fresh_demo) == before


def test_killed_after_the_sink_group_changed_it_reconciles_applied(
    fresh_demo, editor, approver, tmp_path
):
    edit = approved_edit(fresh_demo, editor, approver, "sink")
    before = committed(fresh_demo)

    apply_and_kill_at(edit, approver, "apply-after-commit", tmp_path)

    now = committed(fresh_demo)
    assert now[("orders", 0)] == 0 and now[("orders", 1)] == 0
    assert {tp: o for tp, o in now.items() if tp[1] > 1 or tp[0] != "orders"} == {
        tp: o for tp, o in before.items() if tp[1] > 1 or tp[0] != "orders"
    }
    assert f"Edit #{edit.pk} ({S3}): applied" in reconcile()
    edit.refresh_from_db()
    assert edit.state == OffsetEdit.State.APPLIED
    assert audit_actions(edit) == [*AUDIT_BEFORE_THE_CRASH, "reconciled"]


# --- A partial sink delete killed between its two steps ----------------------------------------
# Kafka cannot delete one partition's committed offset of a group: the apply reads the group,
# stores what must come back on the edit, deletes the group, then commits those back. Killed
# between the delete and the re-commit, the group is empty. The edit's own (deleted)
# partition is then "at its new value", so only comparing the WHOLE group with what was
# stored tells that the other partitions' offsets are gone, and which ones to restore.


def killed_between_the_sink_steps(fresh_demo, editor, approver, tmp_path) -> tuple:
    """Stage, approve and apply a delete of DELETED; kill the apply after the group delete.

    Returns the edit (still "applying") and the other partitions' offsets as read from the
    group before the apply: what must be restored.
    """
    stop_connector(fresh_demo.settings, S3, tasks=2)
    edit = approved_sink_edit(
        fresh_demo.cluster, editor, approver, strategy="delete-offsets", partitions=(DELETED,)
    )
    before = committed(fresh_demo)
    others = {tp: offset for tp, offset in before.items() if tp != DELETED}
    assert DELETED in before and len(others) >= 3, before

    apply_and_kill_at(edit, approver, "apply-between-sink-steps", tmp_path)

    assert committed(fresh_demo) == {}  # the group is gone and nothing was committed back
    edit.refresh_from_db()
    assert edit.state == OffsetEdit.State.APPLYING
    # Stored (and committed to the database) before the delete.
    assert edit.sink_keep == [[t, p, o] for (t, p), o in sorted(others.items())]
    assert audit_actions(edit) == AUDIT_BEFORE_THE_CRASH
    return edit, others


def assert_failed_with_restore_list(edit: OffsetEdit, others: dict, actor_name: str) -> None:
    edit.refresh_from_db()
    assert edit.state == OffsetEdit.State.FAILED
    listed = ", ".join(f"{t}-{p}={o}" for (t, p), o in sorted(others.items()))
    assert f"Commit these offsets to restore them: {listed}" in edit.error
    assert f"{DELETED[0]}-{DELETED[1]}=" not in edit.error
    assert audit_actions(edit) == [*AUDIT_BEFORE_THE_CRASH, "reconciled"]
    reconciled = AuditEvent.objects.get(edit=edit, action="reconciled")
    assert reconciled.actor_name == actor_name
    assert reconciled.details["state"] == "failed"
    assert reconciled.details["committed"] == "partial"
    assert reconciled.details["restore"] == {f"{t}-{p}": o for (t, p), o in others.items()}
    assert reconciled.details["error"] == edit.error
    # The audit entry also carries the diff: the deleted partition, before -> deleted.
    (change,) = reconciled.details["changes"]
    assert change["partition"] == {"kafka_topic": DELETED[0], "kafka_partition": DELETED[1]}
    assert change["is_delete"] and change["after"] is None


def test_killed_between_the_steps_of_a_partial_sink_delete_it_reconciles_failed_with_what_to_restore(
    fresh_demo, editor, approver, tmp_path
):
    edit, others = killed_between_the_sink_steps(fresh_demo, editor, approver, tmp_path)

    out = reconcile()

    assert f"Edit #{edit.pk} ({S3}): failed" in out
    assert_failed_with_restore_list(edit, others, "system")
    assert committed(fresh_demo) == {}  # reconciling reports; it never writes offsets


def test_the_page_stages_an_edit_that_commits_back_what_the_failed_delete_lost(
    client, fresh_demo, editor, approver, tmp_path
):
    edit, others = killed_between_the_sink_steps(fresh_demo, editor, approver, tmp_path)
    reconcile()
    assert_failed_with_restore_list(edit, others, "system")
    client.force_login(editor)
    page = f"/clusters/{fresh_demo.cluster.name}/edits/{edit.pk}/"
    assert 'value="stage-restore"' in client.get(page).content.decode()

    response = client.post(f"{page}stage-restore/", HTTP_HX_REQUEST="true")

    # A new draft, staged by the editor, for the same group: its diff is what was lost.
    restore = OffsetEdit.objects.exclude(pk=edit.pk).get()
    assert response.status_code == 204
    assert response["HX-Redirect"] == f"/clusters/{fresh_demo.cluster.name}/edits/{restore.pk}/"
    assert (restore.state, restore.strategy, restore.connector) == ("draft", "import", S3)
    assert restore.created_by == editor and f"edit #{edit.pk}" in restore.comment
    assert {
        (c.topic, c.kafka_partition): c.after["kafka_offset"] for c in restore.changes.all()
    } == (others)
    assert committed(fresh_demo) == {}  # staging writes nothing

    # Four eyes and the lock check, as any edit: then the group holds what the delete meant.
    submit_edit(edit=restore, user=editor)
    approve_edit(edit=restore, user=approver)
    assert apply_edit(edit=restore, user=approver).state == OffsetEdit.State.APPLIED
    assert committed(fresh_demo) == others  # every other partition back, DELETED still gone

    # Nothing is left to commit back, and the page says so.
    response = client.post(f"{page}stage-restore/", HTTP_HX_REQUEST="true")
    assert response.status_code == 400 and "Nothing to change" in response.content.decode()
    assert OffsetEdit.objects.count() == 2


def test_the_api_reconciles_a_stale_partial_sink_delete_as_failed_with_what_to_restore(
    client, fresh_demo, editor, approver, tmp_path
):
    edit, others = killed_between_the_sink_steps(fresh_demo, editor, approver, tmp_path)
    client.force_login(approver)
    url = f"/api/v1/edits/{edit.pk}/reconcile/"

    # Just killed: as far as anyone can tell the apply may still be running.
    response = client.post(url, {"comment": "web pod restarted"}, content_type="application/json")
    assert response.status_code == 409
    OffsetEdit.objects.filter(pk=edit.pk).update(
        apply_started_at=edit.apply_started_at - stale_after()
    )
    response = client.post(url, {"comment": "web pod restarted"}, content_type="application/json")

    assert response.status_code == 200, response.content
    assert response.json()["state"] == "failed"
    assert_failed_with_restore_list(edit, others, approver.username)
    assert AuditEvent.objects.get(edit=edit, action="reconciled").comment == "web pod restarted"


def test_the_page_reconciles_a_stale_partial_sink_delete_as_failed_with_what_to_restore(
    client, fresh_demo, editor, approver, tmp_path
):
    edit, others = killed_between_the_sink_steps(fresh_demo, editor, approver, tmp_path)
    OffsetEdit.objects.filter(pk=edit.pk).update(
        apply_started_at=edit.apply_started_at - stale_after()
    )
    client.force_login(approver)
    page = f"/clusters/{fresh_demo.cluster.name}/edits/{edit.pk}/"
    assert 'value="reconcile"' in client.get(page).content.decode()

    response = client.post(f"{page}reconcile/", HTTP_HX_REQUEST="true")

    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="edit-state">failed<' in html and "Commit these offsets to restore them" in html
    assert 'value="reconcile"' not in html
    assert_failed_with_restore_list(edit, others, approver.username)


def test_the_refresh_loop_reconciles_a_stale_partial_sink_delete(
    fresh_demo, editor, approver, tmp_path
):
    edit, others = killed_between_the_sink_steps(fresh_demo, editor, approver, tmp_path)
    young = stage(
        cluster=fresh_demo.cluster,
        connector="orders-cdc-eos",
        user=editor,
        change=OffsetChange(
            StageRequest(strategy="set", partition={"server": "orders-db"}, offset={"lsn": 1})
        ),
    )
    OffsetEdit.objects.filter(pk=edit.pk).update(
        apply_started_at=edit.apply_started_at - stale_after()
    )
    # Another connector's edit whose apply might still be running: the loop leaves it alone.
    OffsetEdit.objects.filter(pk=young.pk).update(
        state=OffsetEdit.State.APPLYING, apply_started_at=timezone.now()
    )
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "dashboard.settings",
        "DATABASE_URL": database_url(),
        "OFFSETS_HISTORY_PATH": str(tmp_path / "history"),
        "RUN_DIR": str(tmp_path / "run"),
        "PYTHONUNBUFFERED": "1",  # each line as it is written, not when the pipe buffer fills
    }
    process = subprocess.Popen(
        [sys.executable, "manage.py", "refresh_offsets", "--cluster", "fresh", "--every", "1"],
        cwd=django_settings.BASE_DIR,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    lines: list[str] = []
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                break
            lines.append(line)
            if "Reconciled edit" in line:
                break
        process.send_signal(signal.SIGTERM)
        out, _ = process.communicate(timeout=60)
    finally:
        process.kill()
    lines.append(out)
    assert f"Reconciled edit #{edit.pk} ({S3}): failed\n" in lines, "".join(lines)
    assert_failed_with_restore_list(edit, others, "system")
    young.refresh_from_db()
    assert young.state == OffsetEdit.State.APPLYING
    # "edit #N": a refresh run's "#N" may carry the same number.
    assert f"edit #{young.pk}" not in "".join(lines).lower()
