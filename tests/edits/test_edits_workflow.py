"""The whole workflow around edits: roles, reconcile after a crash, import, export, commands."""

import gc
import io
import json

import pytest
from django.core.management import CommandError, call_command

from offsets.domain.edits import runtime_view
from offsets.edits.apply import apply_edit
from offsets.edits.errors import ConnectorNotFound, EditForbidden, EditInputError, EditStateConflict
from offsets.edits.imports import import_document
from offsets.edits.kinds.offset_changes.kind import OffsetChangesKind
from offsets.edits.review import approve_edit, submit_edit
from offsets.edits.workflow import OffsetChange, StageRequest, stage
from offsets.formats import jackson
from offsets.kafka import groups
from offsets.models import AuditEvent, OffsetEdit
from offsets.queries import offsets_export
from offsets.rights.grants import SHELL_OPERATOR
from tests.support.connect_sim import stop_connector
from tests.support.demo_data import AUDIT, AUDIT_KEY, AUDIT_PARTITION
from tests.support.edit_steps import approved_audit_edit
from tests.support.offsets_reads import latest

pytestmark = pytest.mark.integration


class Crash(BaseException):
    """The process dies: nothing after this point runs, no handler sees it."""


def test_an_edit_left_applying_after_its_commit_is_reconciled_as_applied(
    fresh_demo, editor, approver, monkeypatch
):
    edit = approved_audit_edit(fresh_demo.cluster, editor, approver, {"position": 5})

    def crash(*args, **kwargs):
        raise Crash

    monkeypatch.setattr(OffsetChangesKind, "verify", crash)
    with pytest.raises(Crash):
        apply_edit(edit=edit, user=approver)
    monkeypatch.undo()
    edit.refresh_from_db()
    assert edit.state == OffsetEdit.State.APPLYING  # what a restart finds

    out = io.StringIO()
    call_command("reconcile_edits", "--cluster", "fresh", "--min-age", "0", stdout=out)

    edit.refresh_from_db()
    assert edit.state == OffsetEdit.State.APPLIED
    assert f"Edit #{edit.pk} (file-source-audit): applied" in out.getvalue()
    reconciled = AuditEvent.objects.get(edit=edit, action="reconciled")
    assert reconciled.actor_name == "system"
    assert "hold their new value" in reconciled.details["reconciled"]
    assert latest(fresh_demo.settings)[AUDIT_KEY].value_bytes == b'{"position":5}'


def test_an_edit_left_applying_before_its_commit_is_reconciled_as_failed(
    fresh_demo, editor, approver
):
    before = latest(fresh_demo.settings)[AUDIT_KEY].value_bytes
    edit = approved_audit_edit(fresh_demo.cluster, editor, approver, {"position": 6})

    def crash():
        raise Crash

    with pytest.raises(Crash) as crashed:
        apply_edit(edit=edit, user=approver, before_commit=crash)
    # The dead process's producer goes away with it, its open transaction on the broker.
    del crashed
    gc.collect()
    edit.refresh_from_db()
    assert edit.state == OffsetEdit.State.APPLYING
    # Another apply of the same connector is refused while this one is unsettled.
    other = approved_audit_edit(fresh_demo.cluster, editor, approver, {"position": 7})
    with pytest.raises(EditStateConflict, match="being applied"):
        apply_edit(edit=other, user=approver)

    call_command("reconcile_edits", "--min-age", "0", stdout=io.StringIO())

    edit.refresh_from_db()
    assert edit.state == OffsetEdit.State.FAILED
    assert "interrupted before its write committed" in edit.error
    assert latest(fresh_demo.settings)[AUDIT_KEY].value_bytes == before
    # Settled, the connector can take the other edit.
    assert apply_edit(edit=other, user=approver).state == "applied"


# --- Roles ------------------------------------------------------------------------------------


def test_the_review_rules_hold_in_the_service_for_pages_api_and_commands_alike(
    fresh_demo, editor, approver, second_approver
):
    edit = stage(
        cluster=fresh_demo.cluster,
        connector=AUDIT,
        user=approver,  # approvers may stage too ...
        change=OffsetChange(
            StageRequest(strategy="set", partition=AUDIT_PARTITION, offset={"position": 1})
        ),
    )
    with pytest.raises(EditForbidden):
        submit_edit(edit=edit, user=editor)  # ... and only the author submits
    submit_edit(edit=edit, user=approver, comment="mine")
    with pytest.raises(EditForbidden, match="own edit"):
        approve_edit(edit=edit, user=approver)  # ... but never approve their own
    with pytest.raises(EditForbidden):
        approve_edit(edit=edit, user=editor)  # editors do not approve
    approve_edit(edit=edit, user=second_approver, comment="looks right")
    with pytest.raises(EditForbidden):
        apply_edit(edit=edit, user=editor)
    with pytest.raises(EditStateConflict):
        approve_edit(edit=edit, user=second_approver)  # approved already
    edit = apply_edit(edit=edit, user=approver)
    assert edit.state == "applied"
    assert edit.approved_by == second_approver and edit.applied_by == approver
    comments = dict(AuditEvent.objects.filter(edit=edit).values_list("action", "comment"))
    assert comments["submitted"] == "mine" and comments["approved"] == "looks right"


def test_an_unknown_connector_is_not_found(fresh_demo, editor):
    with pytest.raises(ConnectorNotFound):
        stage(
            cluster=fresh_demo.cluster,
            connector="nope",
            user=editor,
            change=OffsetChange(StageRequest(strategy="latest")),
        )


# --- Export -----------------------------------------------------------------------------------


def test_exporting_one_connector_gives_the_kip875_document_of_its_latest_offsets(fresh_demo):
    document = offsets_export.export_connector(
        user=SHELL_OPERATOR, cluster=fresh_demo.cluster, connector="jdbc-source-inventory"
    )
    view = runtime_view("jdbc-source-inventory", latest(fresh_demo.settings))
    assert set(document) == {"offsets"}
    assert len(document["offsets"]) == len(view) == 3
    assert {jackson.dumps(e["offset"]) for e in document["offsets"]} == {
        r.value_bytes for r in view.values()
    }


def test_exporting_a_sink_gives_its_groups_committed_offsets(fresh_demo):
    document = offsets_export.export_connector(
        user=SHELL_OPERATOR, cluster=fresh_demo.cluster, connector="es-sink-clicks"
    )
    committed = groups.committed_offsets(fresh_demo.settings, "search-indexer-clicks")
    assert document["offsets"] == [
        {"partition": {"kafka_topic": t, "kafka_partition": p}, "offset": {"kafka_offset": o}}
        for (t, p), o in sorted(committed.items())
    ]


def test_exporting_all_connectors_with_history_lists_every_commit_and_tombstone(fresh_demo):
    latest_doc = offsets_export.export_connectors(user=SHELL_OPERATOR, cluster=fresh_demo.cluster)
    history = offsets_export.export_connectors(
        user=SHELL_OPERATOR, cluster=fresh_demo.cluster, connectors=[AUDIT], from_beginning=True
    )
    assert set(latest_doc) == set(fresh_demo.demo.connectors)
    assert len(history[AUDIT]) > len(latest_doc[AUDIT])
    # The rotated file's offset was deleted by a tombstone: history shows it as null.
    rotated = [e for e in history[AUDIT] if e["partition"]["filename"].endswith("audit.log.1")]
    assert rotated[-1]["offset"] is None
    assert not any(e["partition"]["filename"].endswith(".1") for e in latest_doc[AUDIT])


def test_the_export_command_prints_kip875_for_one_and_kip199_for_several(fresh_demo):
    out = io.StringIO()
    call_command("export_offsets", "--cluster", "fresh", "--connectors", AUDIT, stdout=out)
    assert set(json.loads(out.getvalue())) == {"offsets"}
    out = io.StringIO()
    call_command(
        "export_offsets",
        "--cluster",
        "fresh",
        "--connectors",
        f"{AUDIT},s3-sink-orders",
        stdout=out,
    )
    assert set(json.loads(out.getvalue())) == {AUDIT, "s3-sink-orders"}
    with pytest.raises(CommandError, match="one connector"):
        call_command(
            "export_offsets", "--cluster", "fresh", "--format", "kip875", stdout=io.StringIO()
        )
    with pytest.raises(CommandError, match="No connector"):
        call_command(
            "export_offsets", "--cluster", "fresh", "--connectors", "nope", stdout=io.StringIO()
        )


# --- Import -----------------------------------------------------------------------------------


def test_importing_a_kip199_document_stages_one_draft_per_connector_and_applies_nothing(
    fresh_demo, editor, tmp_path
):
    settings = fresh_demo.settings
    before_offsets = latest(settings)
    before_group = groups.committed_offsets(settings, "connect-s3-sink-orders")
    document = {
        AUDIT: [{"partition": AUDIT_PARTITION, "offset": {"position": 1}}],
        "s3-sink-orders": [
            {
                "partition": {"kafka_topic": "orders", "kafka_partition": 0},
                "offset": {"kafka_offset": 10**9},
            },
            {"partition": {"kafka_topic": "orders", "kafka_partition": 1}, "offset": None},
        ],
    }
    path = tmp_path / "offsets.json"
    path.write_text(json.dumps(document))

    out = io.StringIO()
    call_command(
        "import_offsets", "--cluster", "fresh", "--file", str(path), "--user", "erin", stdout=out
    )

    staged = {edit.connector: edit for edit in OffsetEdit.objects.all()}
    assert set(staged) == {AUDIT, "s3-sink-orders"}
    assert all(edit.state == "draft" and edit.strategy == "import" for edit in staged.values())
    sink_changes = {(c.topic, c.kafka_partition): c for c in staged["s3-sink-orders"].changes.all()}
    assert set(sink_changes) == {
        ("orders", 0),
        ("orders", 1),
    }  # partitions not named are left alone
    assert "clamped" in sink_changes[("orders", 0)].warnings[0]
    assert sink_changes[("orders", 1)].is_delete
    # Deleting one partition's offset while others stay takes two steps: said up front.
    assert any("not one atomic write" in w for w in staged["s3-sink-orders"].warnings)
    assert AuditEvent.objects.filter(action="imported").count() == 2
    assert "Staged edit" in out.getvalue()
    # Nothing applied.
    assert latest(settings) == before_offsets
    assert groups.committed_offsets(settings, "connect-s3-sink-orders") == before_group


def test_an_import_dry_run_prints_the_diff_and_stages_nothing(fresh_demo, tmp_path):
    path = tmp_path / "one.json"
    path.write_text(
        json.dumps({"offsets": [{"partition": AUDIT_PARTITION, "offset": {"position": 3}}]})
    )
    out = io.StringIO()
    call_command(
        "import_offsets",
        "--cluster",
        "fresh",
        "--file",
        str(path),
        "--connector",
        AUDIT,
        "--dry-run",
        stdout=out,
    )
    text = out.getvalue()
    assert AUDIT_KEY.decode() in text and '-> {"position":3}' in text
    assert "nothing was" in text
    assert not OffsetEdit.objects.exists()


def test_a_bad_entry_anywhere_in_an_import_stages_nothing_and_names_the_field(
    fresh_demo, editor, tmp_path
):
    document = {
        AUDIT: [{"partition": AUDIT_PARTITION, "offset": {"position": 1}}],
        "s3-sink-orders": [
            {
                "partition": {"kafka_topic": "orders", "kafka_partition": -1},
                "offset": {"kafka_offset": 1},
            }
        ],
    }
    with pytest.raises(EditInputError) as error:
        import_document(cluster=fresh_demo.cluster, user=editor, data=json.dumps(document))
    assert error.value.field == "s3-sink-orders[0].partition.kafka_partition"
    path = tmp_path / "bad.json"
    path.write_text('{"file-source-audit": [')
    with pytest.raises(CommandError, match=r"Nothing was staged\. document: invalid JSON"):
        call_command("import_offsets", "--cluster", "fresh", "--file", str(path), "--user", "erin")
    with pytest.raises(EditInputError) as error:
        import_document(cluster=fresh_demo.cluster, user=editor, data=json.dumps({"nope": []}))
    assert error.value.field == "nope"
    assert not OffsetEdit.objects.exists() and not AuditEvent.objects.exists()


def test_an_export_imported_back_changes_nothing(fresh_demo, editor):
    document = offsets_export.export_connectors(
        user=SHELL_OPERATOR, cluster=fresh_demo.cluster, connectors=[AUDIT, "s3-sink-orders"]
    )
    result = import_document(cluster=fresh_demo.cluster, user=editor, data=document)
    assert result.edits == []
    assert set(result.unchanged) == {AUDIT, "s3-sink-orders"}


def test_a_stopped_sink_edit_from_an_import_applies_like_any_other(fresh_demo, editor, approver):
    stop_connector(fresh_demo.settings, "s3-sink-orders", tasks=2)
    document = {
        "offsets": [
            {
                "partition": {"kafka_topic": "payments", "kafka_partition": 0},
                "offset": {"kafka_offset": 1},
            }
        ]
    }
    result = import_document(
        cluster=fresh_demo.cluster, user=editor, data=document, connector="s3-sink-orders"
    )
    (edit,) = result.edits
    submit_edit(edit=edit, user=editor)
    approve_edit(edit=edit, user=approver)
    assert apply_edit(edit=edit, user=approver).state == "applied"
    assert (
        groups.committed_offsets(fresh_demo.settings, "connect-s3-sink-orders")[("payments", 0)]
        == 1
    )
