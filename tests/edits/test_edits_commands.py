"""The edit commands' checks that need no broker: arguments, users, nothing to do."""

import io

import pytest
from django.core.management import CommandError, call_command

from offsets.edits.roles import can_approve, can_stage
from offsets.models import OffsetEdit
from tests.support import factories
from tests.support.edits_factory import make_edit, make_stuck

pytestmark = pytest.mark.django_db


def test_reconcile_with_nothing_applying_says_so(db):
    out = io.StringIO()
    call_command("reconcile_edits", stdout=out)
    assert "No edit is left" in out.getvalue()


def test_reconcile_by_default_leaves_an_edit_that_may_still_be_applying(django_user_model):
    # A live apply must not be judged (or its transaction fenced) under its feet: without
    # --min-age only edits older than the safe age are settled, and the command says so.
    user = django_user_model.objects.create_user("approver")
    edit = make_stuck(make_edit(factories.cluster("c1"), user), stale=False)
    out = io.StringIO()
    call_command("reconcile_edits", stdout=out)
    assert "1 younger one(s) may still be running" in out.getvalue()
    edit.refresh_from_db()
    assert edit.state == OffsetEdit.State.APPLYING


def test_the_demo_users_command_creates_an_editor_and_an_approver(db):
    out = io.StringIO()
    call_command("demo_users", stdout=out)
    call_command("demo_users", stdout=io.StringIO())  # idempotent
    from django.contrib.auth import get_user_model

    users = get_user_model().objects
    cluster = factories.cluster("any-cluster")
    assert can_stage(users.get(username="editor"), cluster)
    assert not can_approve(users.get(username="editor"), cluster)
    assert can_approve(users.get(username="approver"), cluster)
    assert "'editor'" in out.getvalue() and "'approver'" in out.getvalue()


def test_the_commands_refuse_unknown_clusters_and_users(tmp_path):
    factories.cluster("c1")
    path = tmp_path / "doc.json"
    path.write_text("{}")
    with pytest.raises(CommandError, match="Unknown cluster"):
        call_command("export_offsets", "--cluster", "nope")
    with pytest.raises(CommandError, match="Unknown cluster"):
        call_command("import_offsets", "--cluster", "nope", "--file", str(path), "--dry-run")
    with pytest.raises(CommandError, match="Unknown user"):
        call_command("import_offsets", "--cluster", "c1", "--file", str(path), "--user", "ghost")
    with pytest.raises(CommandError, match="needs --user"):
        call_command("import_offsets", "--cluster", "c1", "--file", str(path))
    with pytest.raises(CommandError, match="Cannot read"):
        call_command(
            "import_offsets", "--cluster", "c1", "--file", str(tmp_path / "missing"), "--dry-run"
        )
    with pytest.raises(CommandError, match="Unknown cluster"):
        call_command("reconcile_edits", "--cluster", "nope")


def test_importing_as_a_user_without_the_editor_role_stages_nothing(tmp_path, user):
    factories.cluster("c1")
    path = tmp_path / "doc.json"
    path.write_text("{}")
    with pytest.raises(CommandError, match="editor role"):
        call_command("import_offsets", "--cluster", "c1", "--file", str(path), "--user", "alice")
