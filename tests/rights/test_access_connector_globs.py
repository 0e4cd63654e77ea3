"""A grant on the connectors matching a glob: the others of that cluster stay out of sight.

Team "payments" may edit `pay-*` on a cluster it shares with other teams: the list, the
overview's counts and worst connector, the API, edits, audit entries and orphans show only
`pay-*`; any other connector's pages answer 404 as an unknown connector does, and staging
on one is refused.
"""

import json

import pytest
from django.contrib.auth.models import Group
from django.core.management import CommandError, call_command

from offsets.models import AuditEvent, Grant, OffsetEdit, Role
from offsets.rights.grants import connector_filter
from tests.support import factories
from tests.support.edits_factory import make_edit
from tests.support.users import user_with

# The lists filter by a regular expression the database evaluates (the grants' globs): SQLite
# through Python's re, PostgreSQL its own. Run on both (docs/testing.md, the database rule).
pytestmark = [pytest.mark.django_db, pytest.mark.db_engine]

OTHER = "orders-secret-sink"


@pytest.fixture
def shared(django_user_model):
    cluster = factories.cluster("shared")
    factories.run(cluster)
    factories.snapshot(cluster, "pay-src")
    factories.snapshot(cluster, "pay-sink", "sink")
    factories.snapshot(cluster, OTHER, "sink", runtime_state="FAILED")
    someone = user_with(django_user_model, "someone", "stage_offsetedit")
    for name in ("pay-src", OTHER):
        edit = make_edit(cluster, someone, connector=name)
        AuditEvent.objects.create(
            cluster=cluster, connector=name, edit=edit, action="staged", actor_name="someone"
        )
    return cluster


@pytest.fixture
def payments(django_user_model, shared):
    team = Group.objects.create(name="payments")
    Grant.objects.create(group=team, role=Role.EDITOR, cluster=shared, connectors="pay-*")
    user = django_user_model.objects.create_user("pat", password="pat-password")
    user.groups.add(team)
    return user


def test_the_lists_show_only_the_granted_connectors(client, shared, payments):
    client.force_login(payments)
    page = client.get("/clusters/shared/connectors/").content.decode()
    assert "pay-src" in page and "pay-sink" in page and OTHER not in page
    api = client.get("/api/v1/clusters/shared/connectors/").json()
    assert sorted(row["name"] for row in api["connectors"]) == ["pay-sink", "pay-src"]
    (summary,) = client.get("/api/v1/clusters/").json()
    assert summary["connectors"] == 2
    home = client.get("/").content.decode()
    # The failed connector would be the worst one named: it is not this user's to see.
    assert OTHER not in home
    edits = client.get("/clusters/shared/edits/").content.decode()
    assert "pay-src" in edits and OTHER not in edits
    assert {row["connector"] for row in client.get("/api/v1/edits/").json()} == {"pay-src"}


def test_another_teams_connector_answers_as_if_it_did_not_exist(client, shared, payments):
    client.force_login(payments)
    for path in (
        f"/clusters/shared/connectors/{OTHER}/",
        f"/clusters/shared/connectors/{OTHER}/edits/",
        f"/api/v1/clusters/shared/connectors/{OTHER}/",
        f"/clusters/shared/export/?connector={OTHER}",
        f"/api/v1/edits/export/?cluster=shared&connector={OTHER}",
    ):
        answer = client.get(path)
        assert answer.status_code == 404, path
    detail = client.get(f"/api/v1/clusters/shared/connectors/{OTHER}/").json()["detail"]
    assert detail == client.get("/api/v1/clusters/shared/connectors/no-such/").json()[
        "detail"
    ].replace("no-such", OTHER)
    other_edit = shared.offset_edits.get(connector=OTHER)
    assert client.get(f"/clusters/shared/edits/{other_edit.pk}/").status_code == 404
    assert client.get(f"/api/v1/edits/{other_edit.pk}/").status_code == 404


def test_staging_is_refused_outside_the_glob_and_allowed_inside(client, shared, payments):
    client.force_login(payments)
    refused = client.post(f"/clusters/shared/connectors/{OTHER}/edits/", {"strategy": "earliest"})
    assert refused.status_code == 404
    page = client.get("/clusters/shared/connectors/pay-src/").content.decode()
    assert "pay-src" in page


def test_the_filter_is_none_for_a_grant_on_every_connector(shared, payments, django_user_model):
    viewer = user_with(django_user_model, "vera")
    assert connector_filter(viewer, shared) is None
    assert connector_filter(payments, shared) is not None


def _kip199(tmp_path, *names):
    entry = {"partition": {"filename": "a"}, "offset": {"position": 1}}
    path = tmp_path / "offsets.json"
    path.write_text(json.dumps({name: [entry] for name in names}))
    return path


@pytest.mark.parametrize("names", [[OTHER], ["pay-src", OTHER]])
def test_the_import_page_refuses_a_document_naming_another_teams_connector(
    client, shared, payments, tmp_path, names
):
    # The cluster listens nowhere: the refusal comes before anything is read.
    client.force_login(payments)
    edits = OffsetEdit.objects.count()
    for dry_run in (True, False):
        with _kip199(tmp_path, *names).open("rb") as upload:
            form = {"file": upload, "comment": "x", **({"dry_run": "on"} if dry_run else {})}
            answer = client.post("/clusters/shared/import/", form)
        page = answer.content.decode()
        assert f"No connector named &#x27;{OTHER}&#x27; on shared." in page
        assert "did not answer" not in page
    with _kip199(tmp_path, "no-such-sink").open("rb") as upload:
        unknown = client.post("/clusters/shared/import/", {"file": upload, "comment": "x"})
    assert "No connector named &#x27;no-such-sink&#x27; on shared." in unknown.content.decode()
    assert OffsetEdit.objects.count() == edits


def test_import_offsets_as_a_user_refuses_another_teams_connector(shared, payments, tmp_path):
    path = _kip199(tmp_path, "pay-src", OTHER)
    with pytest.raises(CommandError, match=f"Nothing was staged. No connector named '{OTHER}'"):
        call_command("import_offsets", "--cluster", "shared", "--file", str(path), "--user", "pat")
    assert not OffsetEdit.objects.filter(connector=OTHER).exclude(created_by__username="someone")
