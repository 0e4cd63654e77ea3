"""Offline edits of a stopped standalone worker's offsets file: staged, approved, applied.

No broker and no worker: the worker is "stopped" (no REST URL, or one nothing listens on).
tests/kafka/test_standalone_worker.py starts the real worker on an edited file.
"""

import itertools
import shutil
from pathlib import Path

import pytest

from offsets.edits import workflow
from offsets.edits.errors import EditInputError, EditStateConflict
from offsets.edits.workflow import OfflineChange, OffsetChange, StageRequest
from offsets.formats.standalone_offsets_file import decode, encode
from offsets.kafka import standalone_worker
from offsets.models import AuditEvent, Cluster, OffsetEdit
from tests.support.fake_connect_worker import FakeWorker, closed_port_url

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[1] / "support" / "fixtures" / "standalone"
KEY = b'["file-source",{"filename":"/tmp/sa-vec/input.txt"}]'
RESET_KEY = b'["file-source-2",{"filename":"/tmp/sa-vec/input-2.txt"}]'
PARTITION = {"filename": "/tmp/sa-vec/input.txt"}


@pytest.fixture
def offsets_file(tmp_path) -> Path:
    folder = tmp_path / "worker"
    folder.mkdir()
    path = folder / "connect.offsets"
    shutil.copy(FIXTURES / "two-sources-one-reset.offsets", path)
    return path


@pytest.fixture
def worker(offsets_file) -> Cluster:
    # A closed port: nothing listens there, as on a host whose worker is stopped.
    return Cluster.objects.create(
        name="edge",
        kind=Cluster.Kind.STANDALONE,
        offsets_file=str(offsets_file),
        connect_url=closed_port_url(),
    )


def staged(worker, editor, offset=None) -> OffsetEdit:
    request = StageRequest("set", partition=PARTITION, offset=offset or {"position": 10})
    return workflow.stage(
        cluster=worker,
        connector="file-source",
        user=editor,
        change=OfflineChange(request),
        comment="rewind",
    )


def approved(edit, editor, approver) -> OffsetEdit:
    edit = workflow.submit_edit(edit=edit, user=editor)
    return workflow.approve_edit(edit=edit, user=approver)


def test_it_writes_the_file_as_the_worker_does_and_keeps_a_backup(
    worker, offsets_file, editor, approver
):
    before = offsets_file.read_bytes()
    edit = approved(staged(worker, editor), editor, approver)
    edit = workflow.apply_edit(edit=edit, user=approver)
    assert (edit.state, edit.error) == (OffsetEdit.State.APPLIED, "")
    assert edit.applied_via == OffsetEdit.AppliedVia.FILE
    assert decode(offsets_file.read_bytes()) == {RESET_KEY: None, KEY: b'{"position":10}'}
    applied = AuditEvent.objects.get(edit=edit, action=AuditEvent.Action.APPLIED)
    backup = Path(applied.details["backup"])
    assert backup.parent == offsets_file.parent
    assert backup.name.startswith(f"connect.offsets.bak-{edit.pk}-")
    assert backup.read_bytes() == before
    assert sorted(p.name for p in offsets_file.parent.iterdir()) == sorted(
        ["connect.offsets", backup.name]
    )  # nothing left aside
    checks = {c["name"]: c["passed"] for c in edit.lock_checks}
    assert checks["worker-not-answering"] and checks["file-as-staged"]
    assert checks["file-not-changing"]


def test_the_staged_audit_entry_names_the_file_and_its_hash(worker, offsets_file, editor):
    edit = staged(worker, editor)
    entry = AuditEvent.objects.get(edit=edit, action=AuditEvent.Action.STAGED)
    assert entry.details["offsets_file"] == str(offsets_file)
    assert (
        entry.details["file_sha256"]
        == standalone_worker.read_offsets_file(str(offsets_file)).sha256
    )
    assert [(c.before, c.after) for c in edit.changes.all()] == [
        ({"position": 34}, {"position": 10})
    ]


def test_a_file_changed_since_staging_is_not_written(worker, offsets_file, editor, approver):
    edit = approved(staged(worker, editor), editor, approver)
    changed = decode(offsets_file.read_bytes()) | {KEY: b'{"position":99}'}
    offsets_file.write_bytes(encode(changed))
    written = offsets_file.read_bytes()
    edit = workflow.apply_edit(edit=edit, user=approver)
    assert edit.state != OffsetEdit.State.APPLIED
    assert offsets_file.read_bytes() == written
    assert [p.name for p in offsets_file.parent.iterdir()] == ["connect.offsets"]


@pytest.mark.parametrize(
    "damage", [lambda data: data[:-3], lambda data: data[:6] + b"\x01" + data[7:]]
)
def test_a_corrupt_file_is_never_overwritten(worker, offsets_file, editor, approver, damage):
    edit = approved(staged(worker, editor), editor, approver)
    broken = damage(offsets_file.read_bytes())
    offsets_file.write_bytes(broken)
    edit = workflow.apply_edit(edit=edit, user=approver)
    assert edit.state != OffsetEdit.State.APPLIED
    assert "at byte" in edit.error and str(offsets_file) in edit.error
    assert offsets_file.read_bytes() == broken
    assert [p.name for p in offsets_file.parent.iterdir()] == ["connect.offsets"]


def test_a_worker_answering_at_the_rest_url_refuses_the_write(
    worker, offsets_file, editor, approver
):
    edit = approved(staged(worker, editor), editor, approver)
    before = offsets_file.read_bytes()
    with FakeWorker() as fake:
        fake.answer("GET", "/", 200, {"version": "4.3.1", "commit": "x"})
        Cluster.objects.filter(pk=worker.pk).update(connect_url=fake.url)
        edit = workflow.apply_edit(edit=edit, user=approver)
    assert edit.state == OffsetEdit.State.APPROVED  # the claim given back
    assert "answers" in edit.error
    assert offsets_file.read_bytes() == before


def test_only_a_standalone_worker_has_offline_edits(editor):
    cluster = Cluster.objects.create(name="prod", bootstrap_servers="127.0.0.1:1")
    with pytest.raises(EditInputError, match="not a standalone worker"):
        staged(cluster, editor)


def test_a_file_changing_while_staging_refuses_the_edit(worker, offsets_file, editor, monkeypatch):
    # A worker flushing while the edit is staged: every read finds other bytes.
    reads = (f"read {n}" for n in itertools.count())
    real = standalone_worker.read_offsets_file

    def changing(path):
        found = real(path)
        return standalone_worker.OffsetsFile(path, found.entries, next(reads), found.size)

    monkeypatch.setattr(standalone_worker, "read_offsets_file", changing)
    with pytest.raises(EditStateConflict, match="changed while the edit was staged"):
        staged(worker, editor)


def test_a_source_change_of_a_stopped_worker_is_staged_as_an_offline_edit(worker, editor):
    request = StageRequest("set", partition=PARTITION, offset={"position": 10})
    edit = workflow.stage(
        cluster=worker, connector="file-source", user=editor, change=OffsetChange(request)
    )
    assert edit.strategy == OffsetEdit.Strategy.OFFLINE_FILE
    assert edit.parameters["as"] == "set"


def test_a_restore_is_not_an_offline_edit(worker, editor):
    with pytest.raises(EditInputError, match="not 'restore'"):
        staged_as(worker, editor, StageRequest("restore"))


def staged_as(worker, editor, request):
    return workflow.stage(
        cluster=worker, connector="file-source", user=editor, change=OfflineChange(request)
    )


def test_the_edit_page_shows_an_offline_edit_and_its_checks(
    worker, offsets_file, editor, approver, client
):
    edit = workflow.apply_edit(
        edit=approved(staged(worker, editor), editor, approver), user=approver
    )
    client.force_login(approver)
    page = client.get(f"/clusters/{worker.name}/edits/{edit.pk}/")
    assert page.status_code == 200
    text = page.content.decode()
    assert "Written to a stopped standalone worker&#x27;s offsets file" in text
    assert "No worker answers at the REST URL" in text
    connector_page = client.get(f"/clusters/{worker.name}/connectors/file-source/edits/")
    assert connector_page.status_code == 200


def test_an_import_for_a_stopped_worker_is_staged_as_offline_edits(worker, editor):
    document = {"offsets": [{"partition": PARTITION, "offset": {"position": 3}}]}
    result = workflow.import_document(
        cluster=worker, user=editor, data=document, connector="file-source"
    )
    [edit] = result.edits
    assert (edit.strategy, edit.parameters["as"]) == (OffsetEdit.Strategy.OFFLINE_FILE, "import")
    assert [c.after for c in edit.changes.all()] == [{"position": 3}]
    entry = AuditEvent.objects.get(edit=edit, action=AuditEvent.Action.IMPORTED)
    assert entry.details["offsets_file"] == str(worker.offsets_file)


def test_an_offline_edit_is_staged_again_with_the_same_inputs(worker, editor):
    edit = staged(worker, editor)
    OffsetEdit.objects.filter(pk=edit.pk).update(state=OffsetEdit.State.CONFLICT)
    edit.refresh_from_db()
    again = workflow.restage_edit(edit=edit, user=editor)
    assert again.strategy == OffsetEdit.Strategy.OFFLINE_FILE
    assert [(c.before, c.after) for c in again.changes.all()] == [
        ({"position": 34}, {"position": 10})
    ]
